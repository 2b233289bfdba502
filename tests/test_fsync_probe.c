/*
 * test_fsync_probe.c -- fsync-probe's modules: histogram arithmetic against
 * known samples, JSON and SVG output well-formed (checked by small strict
 * parsers that are themselves shown to reject bad input), option parsing,
 * the power-cut block format.  The whole program is exercised by
 * tests/fsync_probe.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../probe/probe_hist.h"
#include "../probe/probe_json.h"
#include "../probe/probe_device.h"
#include "../probe/probe_run.h"
#include "../probe/probe_svg.h"
#include "../probe/probe_powercut.h"

/* ---- a strict JSON checker (RFC 8259 grammar, no extensions) ---------- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL; /* raw control byte, including '\0' */
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!strchr("\"\\/bfnrt", *p) || !*p) {
				return NULL;
			}
		}
		p++;
	}
	return p + 1;
}

static const char *json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (isdigit((unsigned char)*p))
			p++;
	else
		return NULL;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return p;
}

static const char *json_container(const char *p, int depth, char close, int obj)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			p = json_string(json_ws(p));
			if (!p || *(p = json_ws(p)) != ':')
				return NULL;
			p++;
		}
		p = json_value(p, depth + 1);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p, int depth)
{
	if (depth > 32)
		return NULL;
	p = json_ws(p);
	switch (*p) {
	case '{': return json_container(p, depth, '}', 1);
	case '[': return json_container(p, depth, ']', 0);
	case '"': return json_string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return json_number(p);
	}
}

/* 1 when s is exactly one JSON value (surrounding whitespace allowed). */
static int json_ok(const char *s)
{
	const char *end = json_value(s, 0);

	return end && *json_ws(end) == '\0';
}

/* ---- a strict-enough XML well-formedness checker -------------------------- */

/* Checks: tags nest and match, attributes are name="value" without '<' in
 * values, text has no raw '<', every '&' starts a known entity, and there
 * is exactly one root element. */
static int xml_ok(const char *p)
{
	char stack[64][32];
	int depth = 0, roots = 0;

	if (strncmp(p, "<?xml", 5) == 0) {
		p = strstr(p, "?>");
		if (!p)
			return 0;
		p += 2;
	}
	while (*p) {
		if (*p == '&') {
			if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) &&
			    strncmp(p, "&gt;", 4) && strncmp(p, "&quot;", 6) &&
			    strncmp(p, "&apos;", 6))
				return 0;
			p++;
		} else if (*p == '>') {
			return 0; /* allowed by XML, but our writer escapes it */
		} else if (*p != '<') {
			if ((unsigned char)*p < 0x20 && !strchr("\t\n\r", *p))
				return 0;
			p++;
		} else if (p[1] == '/') {
			size_t n = strcspn(p + 2, ">");

			if (depth == 0 || p[2 + n] != '>' ||
			    strncmp(stack[depth - 1], p + 2, n) || stack[depth - 1][n])
				return 0;
			depth--;
			p += 3 + n;
		} else {
			size_t n = strcspn(p + 1, " \t\n/>");

			if (n == 0 || n >= sizeof(stack[0]) || depth == 64)
				return 0;
			if (depth == 0 && ++roots > 1)
				return 0;
			memcpy(stack[depth], p + 1, n);
			stack[depth][n] = '\0';
			p += 1 + n;
			for (;;) { /* attributes */
				while (isspace((unsigned char)*p))
					p++;
				if (*p == '>' || (p[0] == '/' && p[1] == '>'))
					break;
				n = strcspn(p, "=> \t\n");
				if (n == 0 || p[n] != '=' || p[n + 1] != '"')
					return 0;
				p += n + 2;
				n = strcspn(p, "\"<");
				if (p[n] != '"')
					return 0;
				p += n + 1;
			}
			if (*p == '/')
				p += 2; /* self-closing: nothing pushed */
			else {
				depth++;
				p++;
			}
		}
	}
	return depth == 0 && roots == 1;
}

/* ---- histogram -------------------------------------------------------------- */

/* exact <= got <= exact * (1 + 1/32): the documented error bound */
static void assert_close_above(uint64_t got, uint64_t exact)
{
	if (!(got >= exact && (double)got <= (double)exact * (1.0 + 1.0 / 32) + 1)) {
		print_error("percentile %llu not within [%llu, +1/32]\n",
			    (unsigned long long)got, (unsigned long long)exact);
		fail();
	}
}

static void hist_values_below_32_are_exact(void **state)
{
	struct probe_hist h;
	uint64_t v;

	(void)state;
	probe_hist_reset(&h);
	for (v = 0; v < 32; v++)
		probe_hist_record(&h, v);
	for (v = 0; v < 32; v++)
		assert_int_equal(probe_hist_index(v), v);
	assert_int_equal(probe_hist_percentile(&h, 50), 15);  /* rank 16 */
	assert_int_equal(probe_hist_percentile(&h, 100), 31);
	assert_int_equal(h.min, 0);
}

static void hist_known_samples_uniform(void **state)
{
	struct probe_hist h;
	uint64_t v;

	(void)state;
	probe_hist_reset(&h);
	/* 1 us .. 1 ms in 1 us steps: p50 = 500 us, p99 = 990 us, p99.9 = 999 us */
	for (v = 1; v <= 1000; v++)
		probe_hist_record(&h, v * 1000);
	assert_int_equal(h.count, 1000);
	assert_close_above(probe_hist_percentile(&h, 50), 500000);
	assert_close_above(probe_hist_percentile(&h, 99), 990000);
	assert_close_above(probe_hist_percentile(&h, 99.9), 999000);
	assert_int_equal(probe_hist_percentile(&h, 100), 1000000);
	assert_int_equal(h.max, 1000000);
	assert_int_equal(h.min, 1000);
	assert_true(fabs(probe_hist_mean(&h) - 500500.0) < 1e-6);
}

static void hist_tail_is_not_hidden(void **state)
{
	struct probe_hist h;
	int i;

	(void)state;
	probe_hist_reset(&h);
	/* 990 fast syncs and 10 seven-second stalls, as an SD card gives */
	for (i = 0; i < 990; i++)
		probe_hist_record(&h, 6000000);
	for (i = 0; i < 10; i++)
		probe_hist_record(&h, 7000000000ull);
	assert_close_above(probe_hist_percentile(&h, 50), 6000000);
	assert_close_above(probe_hist_percentile(&h, 99), 6000000);
	/* rank 999 is a stall; the bucket top is clamped to the exact max */
	assert_int_equal(probe_hist_percentile(&h, 99.9), 7000000000ull);
}

static void hist_buckets_cover_every_value(void **state)
{
	uint64_t v, probes[] = { 32, 33, 63, 64, 65, 1000, 4095, 4096, 123456789,
				 1ull << 40, (1ull << 40) + 12345, UINT64_MAX - 1,
				 UINT64_MAX };
	unsigned i, prev = 0;

	(void)state;
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		unsigned idx = probe_hist_index(probes[i]);

		v = probes[i];
		assert_true(idx < PROBE_HIST_BUCKETS);
		assert_true(probe_hist_bucket_low(idx) <= v);
		assert_true(probe_hist_bucket_high(idx) >= v);
		assert_true(idx >= prev);
		prev = idx;
		/* the relative width of a bucket is at most 1/32 */
		assert_true((double)(probe_hist_bucket_high(idx) -
				     probe_hist_bucket_low(idx)) <=
			    (double)probe_hist_bucket_low(idx) / 32.0);
	}
	assert_int_equal(probe_hist_index(UINT64_MAX), PROBE_HIST_BUCKETS - 1);
	assert_true(probe_hist_bucket_high(PROBE_HIST_BUCKETS - 1) == UINT64_MAX);
	/* adjacent buckets touch: no value falls between them */
	for (i = 1; i < PROBE_HIST_BUCKETS; i++)
		assert_true(probe_hist_bucket_low(i) == probe_hist_bucket_high(i - 1) + 1);
}

static void hist_empty_single_and_merge(void **state)
{
	struct probe_hist a, b, all;
	uint64_t v;

	(void)state;
	probe_hist_reset(&a);
	assert_int_equal(probe_hist_percentile(&a, 99), 0);
	assert_true(probe_hist_mean(&a) == 0);
	probe_hist_record(&a, 12345);
	assert_int_equal(probe_hist_percentile(&a, 1), 12345);
	assert_int_equal(probe_hist_percentile(&a, 99.9), 12345);
	probe_hist_reset(&a);
	probe_hist_reset(&b);
	probe_hist_reset(&all);
	for (v = 1; v <= 2000; v++) {
		probe_hist_record(v % 2 ? &a : &b, v * 777);
		probe_hist_record(&all, v * 777);
	}
	probe_hist_merge(&a, &b);
	assert_int_equal(a.count, all.count);
	assert_int_equal(a.sum, all.sum);
	assert_int_equal(a.min, all.min);
	assert_int_equal(a.max, all.max);
	assert_memory_equal(a.bucket, all.bucket, sizeof(a.bucket));
	assert_int_equal(probe_hist_percentile(&a, 99), probe_hist_percentile(&all, 99));
}

/* ---- the checkers themselves can fail -------------------------------------- */

static void checkers_reject_malformed_documents(void **state)
{
	(void)state;
	assert_true(json_ok("{\"a\":[1,-2.5e3,true,null,\"x\\u00e9\"]}"));
	assert_false(json_ok("{\"a\":1,}"));
	assert_false(json_ok("{\"a\":\"x\\q\"}"));
	assert_false(json_ok("{\"a\":\"line\nbreak\"}"));
	assert_false(json_ok("{\"a\":01}"));
	assert_false(json_ok("{\"a\":nan}"));
	assert_false(json_ok("{} {}"));
	assert_true(xml_ok("<?xml version=\"1.0\"?>\n<svg a=\"1\"><g><text>a &amp; b</text>"
			   "<line x=\"2\"/></g></svg>\n"));
	assert_false(xml_ok("<svg><g></svg></g>"));
	assert_false(xml_ok("<svg><text>a & b</text></svg>"));
	assert_false(xml_ok("<svg><text>a < b</text></svg>"));
	assert_false(xml_ok("<svg a=1></svg>"));
	assert_false(xml_ok("<svg></svg><svg></svg>"));
	assert_false(xml_ok("<svg><g>"));
}

/* ---- JSON output ------------------------------------------------------------------ */

/* Run fn(f) into a memory stream and return what it wrote (caller frees). */
static char *capture_json_str(const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	probe_json_str(f, in);
	fclose(f);
	return buf;
}

static void json_strings_are_escaped(void **state)
{
	char *out;

	(void)state;
	out = capture_json_str("Model \"X\" \\ tab\there\x01 caf\xc3\xa9 bad\xff  \n");
	assert_string_equal(out, "\"Model \\\"X\\\" \\\\ tab\\u0009here\\u0001 "
			    "caf\xc3\xa9 bad\\u00ff\"");
	assert_true(json_ok(out));
	free(out);
	out = capture_json_str(NULL);
	assert_string_equal(out, "null");
	free(out);
}

static void json_device_identity_is_wellformed(void **state)
{
	struct probe_dev_info info;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(probe_dev_identify(".", &info), PROBE_OK);
	/* a hostile model name must not break the line */
	info.nattrs = 1;
	strcpy(info.attr[0].name, "model");
	strcpy(info.attr[0].value, "ACME \"Fast\" \\ \x02 SD");
	f = open_memstream(&buf, &len);
	probe_dev_write_json(f, &info);
	fclose(f);
	assert_true(json_ok(buf));
	assert_non_null(strstr(buf, "\"kernel\":\""));
	free(buf);
}

/* Checks a run's JSONL against its result: every line parses and is a
 * "second" or a "stall" record (a write over 100 ms is a stall, and a loaded
 * disk gives them at any time), one "second" line per closed second, one
 * "stall" line per stall, the per-second stall counts add up to the total,
 * and the seconds' writes add up to the run's. */
static void check_run_jsonl(char *buf, const struct probe_run_result *r)
{
	char *line, *save;
	size_t seconds = 0, stalls = 0, i;
	uint64_t ops = 0, sec_stalls = 0;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!json_ok(line)) {
			print_error("bad JSONL line: %s\n", line);
			fail();
		}
		if (strstr(line, "\"type\":\"second\""))
			seconds++;
		else if (strstr(line, "\"type\":\"stall\""))
			stalls++;
		else {
			print_error("JSONL line of no known type: %s\n", line);
			fail();
		}
	}
	assert_int_equal(seconds, r->nseconds);
	assert_int_equal(stalls, r->stall_count);
	for (i = 0; i < r->nseconds; i++) {
		ops += r->seconds[i].ops;
		sec_stalls += r->seconds[i].stalls;
	}
	assert_int_equal(sec_stalls, r->stall_count);
	assert_int_equal(ops, r->ops);
	assert_int_equal(r->total.count, r->ops);
}

/* A real (short) run: every JSONL line it writes parses, and the seconds add
 * up to the total.  Whether the disk stalls or not is the machine's business:
 * the check holds either way. */
static void jsonl_lines_of_a_run_are_wellformed(void **state)
{
	char path[] = "/tmp/fsync-probe-test-XXXXXX", *buf = NULL;
	struct probe_config cfg = { 0 };
	struct probe_run_result *r = probe_run_result_new();
	struct probe_dev_info info;
	size_t len = 0;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	cfg.path = path;
	cfg.mode = PROBE_MODE_FDATASYNC;
	cfg.layout = PROBE_LAYOUT_OVERWRITE;
	cfg.write_size = 4096;
	cfg.file_size = 256 * 1024;
	cfg.duration_s = 1.3;
	cfg.force = 1;
	cfg.quiet = 1;
	assert_int_equal(probe_dev_identify(path, &info), PROBE_OK);
	f = open_memstream(&buf, &len);
	assert_int_equal(probe_run(&cfg, &info, f, r), PROBE_OK);
	fclose(f);
	assert_true(access(path, F_OK) != 0 || unlink(path) == 0);
	assert_true(r->nseconds >= 2);
	assert_true(r->ops > 0);
	check_run_jsonl(buf, r);
	free(buf);
	probe_run_result_free(r);
}

/* The same check on a run that stalled: a stall line between two seconds is
 * part of a well-formed run, and a stall line the result does not count is
 * not. */
static void jsonl_check_accepts_stalls_and_counts_them(void **state)
{
	static const char text[] =
		"{\"type\":\"second\",\"t\":0,\"ops\":3}\n"
		"{\"type\":\"stall\",\"t\":1.2,\"latency_ms\":350}\n"
		"{\"type\":\"second\",\"t\":1,\"ops\":1}\n";
	struct probe_second s[2];
	struct probe_run_result r;
	char buf[sizeof(text)];

	(void)state;
	memset(&r, 0, sizeof(r));
	memset(s, 0, sizeof(s));
	s[0].ops = 3;
	s[1].ops = 1;
	s[1].stalls = 1;
	r.seconds = s;
	r.nseconds = 2;
	r.ops = 4;
	r.total.count = 4;
	r.stall_count = 1;
	memcpy(buf, text, sizeof(text));
	check_run_jsonl(buf, &r);
}

/* ---- SVG output ------------------------------------------------------------------- */

static char *render_svg(const struct probe_svg_input *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(probe_svg_write(f, in), PROBE_OK);
	fclose(f);
	return buf;
}

static void svg_is_wellformed_with_gaps_and_stalls(void **state)
{
	struct probe_second s[40];
	struct probe_stall st[2];
	struct probe_svg_input in;
	char *out;
	int i;

	(void)state;
	memset(s, 0, sizeof(s));
	memset(st, 0, sizeof(st));
	for (i = 0; i < 40; i++) {
		s[i].t_s = i;
		s[i].len_s = 1;
		s[i].ops = i >= 10 && i < 13 ? 0 : 100 + (uint64_t)i; /* a 3 s hole */
		s[i].p50_ns = 6000000;
		s[i].p99_ns = 20000000;
		s[i].p999_ns = 40000000;
		s[i].max_ns = i == 13 ? 3100000000ull : 50000000;
	}
	st[0].t_s = 9.9;
	st[0].latency_ns = 3100000000ull;
	st[1].t_s = 20.5;
	st[1].latency_ns = 150000000;
	memset(&in, 0, sizeof(in));
	in.title = "fsync-probe <test> & \"quotes\" 'single' \x01";
	in.subtitle = "mmcblk0 (SD <card>)";
	in.write_size = 4096;
	in.seconds = s;
	in.nseconds = 40;
	in.stalls = st;
	in.nstalls = 2;
	out = render_svg(&in);
	assert_true(xml_ok(out));
	assert_non_null(strstr(out, "&lt;test&gt; &amp; &quot;quotes&quot;"));
	assert_non_null(strstr(out, "stall 3100.0 ms"));
	/* the hole breaks the latency lines: a new subpath starts after it */
	assert_non_null(strstr(out, "<path"));
	free(out);
	/* an empty run still gives a document */
	in.nseconds = 0;
	in.nstalls = 0;
	out = render_svg(&in);
	assert_true(xml_ok(out));
	free(out);
}

/* ---- option parsing -------------------------------------------------------------- */

static void sizes_and_durations_parse(void **state)
{
	uint64_t v;
	double d;
	enum probe_mode m;
	enum probe_layout l;

	(void)state;
	assert_int_equal(probe_run_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(probe_run_parse_size("4k", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(probe_run_parse_size("1MiB", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(probe_run_parse_size("2G", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(probe_run_parse_size("4q", &v), -1);
	assert_int_equal(probe_run_parse_size("-1", &v), -1);
	assert_int_equal(probe_run_parse_size("", &v), -1);
	assert_int_equal(probe_run_parse_duration("500ms", &d), 0);
	assert_true(fabs(d - 0.5) < 1e-9);
	assert_int_equal(probe_run_parse_duration("5m", &d), 0);
	assert_true(d == 300);
	assert_int_equal(probe_run_parse_duration("2h", &d), 0);
	assert_true(d == 7200);
	assert_int_equal(probe_run_parse_duration("10", &d), 0);
	assert_true(d == 10);
	assert_int_equal(probe_run_parse_duration("0", &d), -1);
	assert_int_equal(probe_run_parse_duration("10x", &d), -1);
	assert_int_equal(probe_run_mode_parse("sync_file_range", &m), 0);
	assert_int_equal(m, PROBE_MODE_SFR);
	assert_false(probe_run_mode_durable(m));
	assert_int_equal(probe_run_mode_parse("osync", &m), -1);
	assert_int_equal(probe_run_layout_parse("overwrite", &l), 0);
	assert_int_equal(l, PROBE_LAYOUT_OVERWRITE);
	assert_int_equal(probe_run_layout_parse("sparse", &l), -1);
}

/* ---- power-cut block format --------------------------------------------------------- */

static void powercut_blocks_detect_damage(void **state)
{
	unsigned char buf[4096];
	uint64_t seq = 0, slot = 0;
	char host[64], port[8];

	(void)state;
	probe_cut_block_fill(buf, sizeof(buf), 77, 5);
	assert_int_equal(probe_cut_block_check(buf, sizeof(buf), &seq, &slot),
			 PROBE_CUT_VALID);
	assert_int_equal(seq, 77);
	assert_int_equal(slot, 5);
	buf[3000] ^= 0x01; /* one bit in the payload */
	assert_int_equal(probe_cut_block_check(buf, sizeof(buf), &seq, &slot),
			 PROBE_CUT_BAD);
	probe_cut_block_fill(buf, sizeof(buf), 78, 5);
	memset(buf + 2048, 0, 2048); /* a torn write: second half never landed */
	assert_int_equal(probe_cut_block_check(buf, sizeof(buf), &seq, &slot),
			 PROBE_CUT_BAD);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(probe_cut_block_check(buf, sizeof(buf), &seq, &slot),
			 PROBE_CUT_ZERO);
	assert_int_equal(probe_cut_split_hostport("10.0.0.2:7000", host, sizeof(host),
						  port, sizeof(port)), 0);
	assert_string_equal(host, "10.0.0.2");
	assert_string_equal(port, "7000");
	assert_int_equal(probe_cut_split_hostport("[::1]:9", host, sizeof(host),
						  port, sizeof(port)), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(probe_cut_split_hostport("nohost", host, sizeof(host),
						  port, sizeof(port)), -1);
	assert_int_equal(probe_cut_split_hostport("h:80x", host, sizeof(host),
						  port, sizeof(port)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hist_values_below_32_are_exact),
		cmocka_unit_test(hist_known_samples_uniform),
		cmocka_unit_test(hist_tail_is_not_hidden),
		cmocka_unit_test(hist_buckets_cover_every_value),
		cmocka_unit_test(hist_empty_single_and_merge),
		cmocka_unit_test(checkers_reject_malformed_documents),
		cmocka_unit_test(json_strings_are_escaped),
		cmocka_unit_test(json_device_identity_is_wellformed),
		cmocka_unit_test(jsonl_lines_of_a_run_are_wellformed),
		cmocka_unit_test(jsonl_check_accepts_stalls_and_counts_them),
		cmocka_unit_test(svg_is_wellformed_with_gaps_and_stalls),
		cmocka_unit_test(sizes_and_durations_parse),
		cmocka_unit_test(powercut_blocks_detect_damage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
