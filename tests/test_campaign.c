/*
 * test_campaign.c -- campaigns (torture/campaign.h): the flat JSON parser of
 * the result lines (refusals, every cut-short prefix, random damage, right
 * up against a guard page), the JSON string writer, --shard I/N, and the
 * campaign file's expansion, normalized text and id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "campaign.h"

static campaign_field fields[CAMPAIGN_FIELDS_MAX];
static char why[200];

static const char good[] =
	"{\"campaign\": \"735f3090f9493ef4\", \"run\": 3, \"shard\": \"1/2\", "
	"\"elapsed_s\": 2.594, \"neg\": -1.5e+3, \"ok\": true, \"no\": false, "
	"\"first_violation\": null, \"text\": \"a \\\"q\\\" \\\\ \\/ \\n\\u0041\\u00e9\"}";

static int parse(const char *s)
{
	return campaign_json_parse(s, strlen(s), fields, CAMPAIGN_FIELDS_MAX,
	                           why, sizeof why);
}

static void a_result_line_parses(void **state)
{
	const campaign_field *f;
	(void)state;

	assert_int_equal(parse(good), 9);
	f = campaign_json_get(fields, 9, "campaign");
	assert_non_null(f);
	assert_int_equal(f->kind, CAMPAIGN_JSON_STRING);
	assert_string_equal(f->value, "735f3090f9493ef4");
	f = campaign_json_get(fields, 9, "run");
	assert_int_equal(f->kind, CAMPAIGN_JSON_NUMBER);
	assert_string_equal(f->value, "3");
	assert_string_equal(campaign_json_get(fields, 9, "neg")->value, "-1.5e+3");
	assert_int_equal(campaign_json_get(fields, 9, "ok")->kind,
	                 CAMPAIGN_JSON_TRUE);
	assert_int_equal(campaign_json_get(fields, 9, "no")->kind,
	                 CAMPAIGN_JSON_FALSE);
	assert_int_equal(campaign_json_get(fields, 9, "first_violation")->kind,
	                 CAMPAIGN_JSON_NULL);
	/* escapes decoded; a \u escape beyond ASCII becomes '?' */
	assert_string_equal(campaign_json_get(fields, 9, "text")->value,
	                    "a \"q\" \\ / \nA?");
	assert_null(campaign_json_get(fields, 9, "nosuch"));
	assert_int_equal(parse("  {}  \n"), 0);
}

static void malformed_objects_are_refused(void **state)
{
	static const char *const bad[] = {
		"", "   ", "[]", "\"x\"", "{", "}", "{\"a\"}", "{\"a\": }",
		"{\"a\": 1,}", "{\"a\": 1 \"b\": 2}", "{a: 1}", "{\"a\": 1} x",
		"{\"a\": 1}{}", "{\"a\": {\"b\": 1}}", "{\"a\": [1]}",
		"{\"a\": 1, \"a\": 2}", "{\"a\": \"x\ty\"}", "{\"a\": \"\\x\"}",
		"{\"a\": \"\\u12\"}", "{\"a\": \"\\u0000\"}", "{\"a\": \"abc}",
		"{\"a\": tru}", "{\"a\": nul}", "{\"a\": -}", "{\"a\": 1.}",
		"{\"a\": .5}", "{\"a\": 1e}", "{\"a\": +1}", "{\"a\": 0x10}",
		"{\"a\": \"\\",
		"{\"a_key_that_is_longer_than_31_bytes\": 1}",
	};
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (parse(bad[i]) != -1)
			fail_msg("accepted: %s", bad[i]);
	/* a NUL inside the line's length is no terminator */
	assert_int_equal(campaign_json_parse("{\"a\": \"x\0y\"}", 12, fields,
	                                     CAMPAIGN_FIELDS_MAX, why,
	                                     sizeof why), -1);
	assert_non_null(strstr(why, "at byte"));
}

static void too_many_fields_are_refused(void **state)
{
	char buf[4096];
	size_t n = 0;
	(void)state;

	n += (size_t)snprintf(buf + n, sizeof buf - n, "{");
	for (int i = 0; i <= CAMPAIGN_FIELDS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"k%d\": %d",
		                      i ? ", " : "", i, i);
	snprintf(buf + n, sizeof buf - n, "}");
	assert_int_equal(parse(buf), -1);
	assert_non_null(strstr(why, "too many fields"));
}

static void a_long_string_is_cut_not_refused(void **state)
{
	char *buf = malloc(CAMPAIGN_VALUE_MAX * 3);
	size_t n;
	(void)state;

	assert_non_null(buf);
	n = (size_t)sprintf(buf, "{\"r\": \"");
	memset(buf + n, 'x', CAMPAIGN_VALUE_MAX * 2);
	strcpy(buf + n + CAMPAIGN_VALUE_MAX * 2, "\"}");
	assert_int_equal(parse(buf), 1);
	assert_int_equal(strlen(fields[0].value), CAMPAIGN_VALUE_MAX - 1);
	free(buf);
}

/* Every proper prefix of a line is a line cut short: refused, and read
 * no further than its length (the text sits right before a page that
 * cannot be read). */
static void every_prefix_is_refused_at_a_guard_page(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t len = strlen(good);
	(void)state;

	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	for (size_t cut = 0; cut <= len; cut++) {
		char *at = map + page - cut;
		memcpy(at, good, cut);
		int n = campaign_json_parse(at, cut, fields, CAMPAIGN_FIELDS_MAX,
		                            why, sizeof why);
		if (cut < len && n != -1)
			fail_msg("a prefix of %zu bytes was accepted", cut);
		if (cut == len && n != 9)
			fail_msg("the whole line gave %d: %s", n, why);
	}
	munmap(map, (size_t)page * 2);
}

/* Random damage: flipped, dropped and inserted bytes.  Whatever comes out,
 * the parser answers (ASan and UBSan watch it in make asan). */
static void random_damage_never_crashes(void **state)
{
	char buf[sizeof good + 8];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int accepted = 0;
	(void)state;

	for (int i = 0; i < 20000; i++) {
		size_t len = sizeof good - 1;
		memcpy(buf, good, len);
		for (int k = 0; k < 1 + i % 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (size_t)(x % len);
			switch ((x >> 32) % 3) {
			case 0: buf[at] = (char)(x >> 40); break;
			case 1: memmove(buf + at, buf + at + 1, len - at - 1);
			        len--; break;
			default: memmove(buf + at + 1, buf + at, len - at);
			         buf[at] = (char)(x >> 48); len++;
			         if (len > sizeof good) len = sizeof good;
			         break;
			}
		}
		int n = campaign_json_parse(buf, len, fields, CAMPAIGN_FIELDS_MAX,
		                            why, sizeof why);
		assert_true(n >= -1 && n <= CAMPAIGN_FIELDS_MAX);
		accepted += n >= 0;
	}
	/* some damage lands inside a string and stays valid: both paths ran */
	assert_true(accepted > 0 && accepted < 20000);
}

static void strings_are_written_escaped_and_bounded(void **state)
{
	char buf[64];
	size_t n = 0;
	(void)state;

	campaign_json_string(buf, &n, sizeof buf, "a\"b\\c\n\x01|", 100);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\u000a\\u0001|\"");
	assert_int_equal(n, strlen(buf));
	n = 0;
	campaign_json_string(buf, &n, sizeof buf, "abcdef", 3);
	assert_string_equal(buf, "\"abc\"");
	/* what it writes parses back to what it was given */
	char line[128], text[] = "tab\there \"q\" \\ end";
	n = (size_t)sprintf(line, "{\"k\": ");
	campaign_json_string(line, &n, sizeof line, text, sizeof text);
	strcpy(line + n, "}");
	assert_int_equal(parse(line), 1);
	assert_string_equal(fields[0].value, text);
	/* too small a buffer: marked full (n = cap - 1), never overrun */
	char small[8];
	n = 0;
	campaign_json_string(small, &n, sizeof small, "0123456789", 10);
	assert_int_equal(n, sizeof small - 1);
}

static void shards_are_numbered_from_zero(void **state)
{
	static const char *const bad[] = {
		"2/2", "3/2", "0/0", "", "1", "/2", "1/", "a/b", "-1/2", "1/-2",
		"0/100001", "99999999999999999999/2", "1/2/3", " 0/2", "0/2 ",
	};
	uint64_t i, n;
	(void)state;

	assert_int_equal(campaign_shard_parse("0/2", &i, &n, why, sizeof why), 0);
	assert_true(i == 0 && n == 2);
	assert_int_equal(campaign_shard_parse("1/2", &i, &n, why, sizeof why), 0);
	assert_true(i == 1 && n == 2);
	assert_int_equal(campaign_shard_parse("0/1", &i, &n, why, sizeof why), 0);
	assert_int_equal(campaign_shard_parse("99999/100000", &i, &n, why,
	                                      sizeof why), 0);
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		if (campaign_shard_parse(bad[k], &i, &n, why, sizeof why) != -1)
			fail_msg("accepted --shard %s", bad[k]);
	campaign_shard_parse("3/2", &i, &n, why, sizeof why);
	assert_non_null(strstr(why, "numbered from 0"));
}

static char path[64];

static void write_campaign(const char *text)
{
	FILE *f;

	snprintf(path, sizeof path, "/tmp/keel-test-campaign.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int parse_campaign(const char *text, campaign *c)
{
	int rc;

	write_campaign(text);
	rc = campaign_parse(path, c);
	unlink(path);
	return rc;
}

/* The normalized text is the documented one, and the id its FNV-1a: an
 * unnoticed change here would make old results unmergeable with new. */
static void the_campaign_text_and_id_are_pinned(void **state)
{
	campaign c;
	char text[512];
	(void)state;

	assert_int_equal(parse_campaign(
		"targets = files:append-log\nfaults = kill power-cut\n"
		"devices = torn reorder\nseeds = 7 1-2\ncycles = 5\n"
		"duration = 1m\nrun = keel:default eio garbage 9\n", &c), 0);
	assert_int_equal(c.nruns, 3 + 3 * 2 + 1);
	size_t full = campaign_normalized(&c, text, sizeof text);
	assert_int_equal(full, strlen(text));
	assert_string_equal(text,
		"keel-campaign 1\ncycles 5\nduration_ns 60000000000\n"
		"files:append-log kill none 7\n"
		"files:append-log kill none 1\n"
		"files:append-log kill none 2\n"
		"files:append-log power-cut torn 7\n"
		"files:append-log power-cut torn 1\n"
		"files:append-log power-cut torn 2\n"
		"files:append-log power-cut reorder 7\n"
		"files:append-log power-cut reorder 1\n"
		"files:append-log power-cut reorder 2\n"
		"keel:default eio garbage 9\n");
	/* FNV-1a 64 of that text, computed apart */
	uint64_t h = 0xcbf29ce484222325ull;
	char want[17];
	for (const char *p = text; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	snprintf(want, sizeof want, "%016llx", (unsigned long long)h);
	assert_string_equal(c.id, want);
	/* a short buffer still gives the full length */
	assert_int_equal(campaign_normalized(&c, text, 10), full);
	assert_int_equal(strlen(text), 9);
	campaign_free(&c);
}

static void spelling_does_not_change_the_id(void **state)
{
	campaign a, b, d;
	(void)state;

	assert_int_equal(parse_campaign(
		"targets = files:*\nfaults = kill\nseeds = 1-2\nduration = 120s\n",
		&a), 0);
	assert_int_equal(parse_campaign(
		"# comment\r\n\tseeds=1 2\r\n\n  duration =2m\nfaults\t= kill\n"
		"targets = files:rename-full files:rename-fsync-file "
		"files:rename-nosync files:overwrite files:append-log", &b), 0);
	assert_string_equal(a.id, b.id);
	assert_int_equal(a.nruns, 10);
	assert_int_equal(parse_campaign(
		"targets = files:*\nfaults = kill\nseeds = 2 1\nduration = 120s\n",
		&d), 0);
	assert_string_not_equal(a.id, d.id); /* another order, another list */
	campaign_free(&d);
	/* a kill-every is a line of its own in the text, so in the id */
	assert_int_equal(parse_campaign(
		"targets = files:*\nfaults = kill\nseeds = 1-2\nduration = 120s\n"
		"kill-every = 0.1s\n", &d), 0);
	assert_int_equal(d.kill_every_ns, 100000000);
	assert_string_not_equal(a.id, d.id);
	char text[128];
	campaign_normalized(&d, text, sizeof text);
	assert_non_null(strstr(text, "\nduration_ns 120000000000\n"
	                             "kill_every_ns 100000000\nfiles:"));
	campaign_free(&a);
	campaign_free(&b);
	campaign_free(&d);
}

/* The bounds are what docs/campaigns.md says: 10,000 lines of 1,024
 * bytes pass, one more line or byte does not. */
static void the_bounds_are_exact(void **state)
{
	size_t cap = 10001 * 8 + 2048;
	char *text = malloc(cap);
	campaign c;
	size_t n = 0;
	(void)state;

	assert_non_null(text);
	for (int i = 0; i < 9999; i++)
		n += (size_t)sprintf(text + n, "# x\n");
	n += (size_t)sprintf(text + n, "run = files:overwrite kill none 1\n");
	assert_int_equal(parse_campaign(text, &c), 0);
	campaign_free(&c);
	strcpy(text + n, "#\n");
	assert_int_equal(parse_campaign(text, &c), -1);
	n = (size_t)sprintf(text, "run = files:overwrite kill none 1");
	memset(text + n, ' ', 1024 - n);
	strcpy(text + 1024, "\n");
	assert_int_equal(parse_campaign(text, &c), 0);
	campaign_free(&c);
	strcpy(text + 1024, " \n");
	assert_int_equal(parse_campaign(text, &c), -1);
	free(text);
}

static void bad_campaign_files_are_refused(void **state)
{
	static const char *const bad[] = {
		"", "# only a comment\n", "fautls = kill\n", "targets\n",
		"targets =\n", "targets = nosuch:x\n", "targets = files:nosuch\n",
		"targets = files\n", "cycles = 0\n", "cycles = 1000000001\n",
		"cycles = 5\ncycles = 5\n", "duration = 0\n", "duration = -1s\n",
		"kill-every = 0\n", "kill-every = 1x\n",
		"seeds = 3-1\n", "seeds = 1-100000\n", "seeds = x\n",
		"targets = files:*\nfaults = kill\n",
		"targets = files:*\nfaults = power-cut\nseeds = 1\n",
		"targets = files:*\nfaults = kill\ndevices = torn\nseeds = 1\n",
		"targets = files:* files:overwrite\nfaults = kill\nseeds = 1\n",
		"faults = kill kill\n", "devices = torn torn\n",
		"run = files:overwrite kill torn 1\n",
		"run = files:overwrite power-cut none 1\n",
		"run = files:* kill none 1\n", "run = files:overwrite kill none\n",
		"run = files:overwrite kill none 1\nrun = files:overwrite kill none 1\n",
		"targets = files:overwrite\nfaults = kill\nseeds = 1\n"
		"run = files:overwrite kill none 1\n",
		"cycles = 5\x01\n", "cycles = 5 \xc3\xa9\n", "cycles = 5\r6\n",
		"cycles = 5\r",
		"targets = sqlite:* lmdb:*\nfaults = kill power-cut eio\n"
		"devices = torn reorder\nseeds = 1-9999\n",
	};
	campaign c;
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (parse_campaign(bad[i], &c) != -1)
			fail_msg("accepted: %s", bad[i]);
		assert_null(c.runs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_result_line_parses),
		cmocka_unit_test(malformed_objects_are_refused),
		cmocka_unit_test(too_many_fields_are_refused),
		cmocka_unit_test(a_long_string_is_cut_not_refused),
		cmocka_unit_test(every_prefix_is_refused_at_a_guard_page),
		cmocka_unit_test(random_damage_never_crashes),
		cmocka_unit_test(strings_are_written_escaped_and_bounded),
		cmocka_unit_test(shards_are_numbered_from_zero),
		cmocka_unit_test(the_campaign_text_and_id_are_pinned),
		cmocka_unit_test(spelling_does_not_change_the_id),
		cmocka_unit_test(the_bounds_are_exact),
		cmocka_unit_test(bad_campaign_files_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
