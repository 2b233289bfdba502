/*
 * campaign.c -- the campaign file (campaign.h): read it, expand it into
 * its run list, name it by its id; and the --shard I/N argument.
 *
 * THE FILE (docs/campaigns.md has it with examples)
 *   Text, at most CAMPAIGN_LINES_MAX lines of at most CAMPAIGN_LINE_MAX
 *   bytes; bytes other than printable ASCII, tab and the line's end (LF,
 *   or CR LF) are refused.  Blank lines and lines whose first non-blank
 *   byte is '#' are skipped.  Every other line is KEY = VALUE: spaces or
 *   tabs may surround '='; VALUE is a list of words split by spaces/tabs.
 *     targets  = NAME:CONFIG... | NAME:*...   the adapters (--list-targets)
 *     faults   = kill | power-cut | eio ...   campaign_fault
 *     devices  = ordered reorder torn garbage payload   (power-cut, eio)
 *     seeds    = N | A-B ...                  --seed values
 *     cycles   = N            per-run cycle bound; default 200
 *     duration = DUR          per-run time bound; default 90s
 *     kill-every = DUR        every run's --kill-every; default each
 *                             adapter's own
 *     run      = NAME:CONFIG FAULT DEVICE SEED   one more run (DEVICE
 *                             "none" for kill); may repeat
 *   Every key but run appears at most once.  targets, faults and seeds
 *   together make a cross product (devices too when a fault cuts the
 *   power): for each target, each fault, each device (just "none" for
 *   kill), each seed -- in the order written.  The run lines follow it in
 *   file order.  The same run twice is refused.
 *
 * THE RESULT LINE (one per run; docs/campaigns.md lists the fields)
 *   {"campaign": ID, "run": K, "runs": M, "shard": "I/N", "target": NAME,
 *    "config": CONFIG, "version": ..., "kit": ..., "fault": ..., "device":
 *    ..., "seed": S, "cycles_bound": C, "duration_bound_s": D, "verdict":
 *    "holds"|"broken"|"setup", "cycles": ..., counters ..., "host": ...}
 *   campaign_run.c runs the shard and writes them.
 */
#include "campaign.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "faultsim.h"

#define DEFAULT_CYCLES 200
#define DEFAULT_DURATION_NS (90ull * 1000000000ull)
#define SEED_RANGES_MAX 256
#define DEVICES_MAX 8
#define TARGETS_MAX 256

static const char *const fault_names[CAMPAIGN_FAULTS] = {
	"kill", "power-cut", "eio"
};

const char *campaign_fault_name(int fault)
{
	return fault >= 0 && fault < CAMPAIGN_FAULTS ? fault_names[fault] : "?";
}

int campaign_fault_parse(const char *s)
{
	for (int i = 0; i < CAMPAIGN_FAULTS; i++)
		if (strcmp(s, fault_names[i]) == 0)
			return i;
	return -1;
}

const char *campaign_device_name(int device)
{
	return device < 0 ? "none" : faultsim_device_name((faultsim_device)device);
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct target_ref {
	const torture_adapter *adapter;
	const char *config;
} target_ref;

/* What the file said, before expansion. */
typedef struct spec {
	const char *path;
	unsigned line;                   /* the line being read               */
	unsigned seen[8];                /* line of each key (0: not given)    */
	target_ref targets[TARGETS_MAX];
	size_t ntargets;
	int faults[CAMPAIGN_FAULTS];
	size_t nfaults;
	int devices[DEVICES_MAX];
	size_t ndevices;
	uint64_t seed_lo[SEED_RANGES_MAX], seed_hi[SEED_RANGES_MAX];
	size_t nseeds;                   /* ranges                            */
	campaign_run *extra;             /* run lines                         */
	unsigned *extra_line;
	size_t nextra, extra_cap;
	uint64_t cycles, duration_ns;
	uint64_t kill_every_ns;          /* 0: each adapter's own             */
} spec;

enum { K_TARGETS, K_FAULTS, K_DEVICES, K_SEEDS, K_CYCLES, K_DURATION,
       K_KILL_EVERY, K_RUN };
static const char *const keys[] = {
	"targets", "faults", "devices", "seeds", "cycles", "duration",
	"kill-every", "run"
};
#define NKEYS (sizeof keys / sizeof keys[0])
#define KEYS_KNOWN "targets, faults, devices, seeds, cycles, duration, " \
	"kill-every, run"

static int complain(const spec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int complain(const spec *s, const char *fmt, ...)
{
	va_list ap;

	if (s->line)
		fprintf(stderr, "torture: %s:%u: ", s->path, s->line);
	else
		fprintf(stderr, "torture: %s: ", s->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* A whole decimal number up to MAX, no sign. */
static int parse_number(const char *w, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;

	if (!*w)
		return -1;
	for (; *w; w++) {
		uint64_t d = (uint64_t)(*w - '0');
		if (*w < '0' || *w > '9' || d > max || n > (max - d) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*w - '0');
	}
	*v = n;
	return 0;
}

/* NAME:CONFIG into R; NAME:* into every configuration of NAME (ALL set).
 * An unknown one is explained with the list of valid ones. */
static int parse_target(const spec *s, const char *w, int star_ok,
                        target_ref *r, int *all)
{
	const torture_adapter *a = adapter_find(w);
	const char *colon = strchr(w, ':');

	*all = 0;
	if (a && colon && strcmp(colon + 1, "*") == 0 && star_ok) {
		r->adapter = a;
		*all = 1;
		return 0;
	}
	if (a && colon && strcmp(colon + 1, "*") == 0)
		return complain(s, "%s: a run names one configuration "
		                "(NAME:CONFIG), not all of them", w);
	if (a && colon && adapter_parse(w, &r->config)) {
		r->adapter = a;
		return 0;
	}
	if (a) {
		complain(s, "%s: %s; the configurations of %s are:", w,
		         colon ? "unknown configuration" :
		         "name a configuration (NAME:CONFIG, or NAME:* for all)",
		         a->name);
		adapter_list(stderr, a);
		return -1;
	}
	complain(s, "%s: unknown target; the targets are (NAME:* is all of "
	         "NAME's):", w);
	adapter_list(stderr, NULL);
	return -1;
}

static int add_target(spec *s, const torture_adapter *a, const char *config)
{
	for (size_t i = 0; i < s->ntargets; i++)
		if (s->targets[i].adapter == a && s->targets[i].config == config)
			return complain(s, "target %s:%s named twice", a->name,
			                config);
	if (s->ntargets >= TARGETS_MAX)
		return complain(s, "too many targets (at most %u)", TARGETS_MAX);
	s->targets[s->ntargets].adapter = a;
	s->targets[s->ntargets++].config = config;
	return 0;
}

static int key_targets(spec *s, char **w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		target_ref r;
		int all;

		if (parse_target(s, w[i], 1, &r, &all) < 0)
			return -1;
		if (!all) {
			if (add_target(s, r.adapter, r.config) < 0)
				return -1;
			continue;
		}
		for (int j = 0; r.adapter->configs[j]; j++)
			if (add_target(s, r.adapter, r.adapter->configs[j]) < 0)
				return -1;
	}
	return 0;
}

static int key_faults(spec *s, char **w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		int f = campaign_fault_parse(w[i]);

		if (f < 0)
			return complain(s, "%s: unknown fault (known: kill, "
			                "power-cut, eio)", w[i]);
		for (size_t j = 0; j < s->nfaults; j++)
			if (s->faults[j] == f)
				return complain(s, "fault %s named twice", w[i]);
		s->faults[s->nfaults++] = f;
	}
	return 0;
}

static int device_word(const spec *s, const char *w, int *d)
{
	faultsim_device dev;

	if (faultsim_device_parse(w, &dev) < 0)
		return complain(s, "%s: unknown device model (known: ordered, "
		                "reorder, torn, garbage, payload)", w);
	*d = (int)dev;
	return 0;
}

static int key_devices(spec *s, char **w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		int d = -1;

		if (device_word(s, w[i], &d) < 0)
			return -1;
		for (size_t j = 0; j < s->ndevices; j++)
			if (s->devices[j] == d)
				return complain(s, "device %s named twice", w[i]);
		if (s->ndevices >= DEVICES_MAX)
			return complain(s, "too many devices");
		s->devices[s->ndevices++] = d;
	}
	return 0;
}

static int key_seeds(spec *s, char **w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		char *dash = strchr(w[i], '-');
		uint64_t lo, hi;

		if (dash)
			*dash = '\0';
		if (parse_number(w[i], CAMPAIGN_SEED_MAX, &lo) < 0 ||
		    (dash && parse_number(dash + 1, CAMPAIGN_SEED_MAX, &hi) < 0))
			return complain(s, "seeds: want whole numbers N or ranges "
			                "A-B, each at most %llu",
			                (unsigned long long)CAMPAIGN_SEED_MAX);
		if (!dash)
			hi = lo;
		if (lo > hi || hi - lo >= CAMPAIGN_RUNS_MAX)
			return complain(s, "seeds %" PRIu64 "-%" PRIu64 ": want A <= "
			                "B and at most %u seeds", lo, hi,
			                CAMPAIGN_RUNS_MAX);
		if (s->nseeds >= SEED_RANGES_MAX)
			return complain(s, "too many seed ranges (at most %u)",
			                SEED_RANGES_MAX);
		s->seed_lo[s->nseeds] = lo;
		s->seed_hi[s->nseeds++] = hi;
	}
	return 0;
}

static int key_run(spec *s, char **w, size_t nw)
{
	campaign_run r;
	target_ref t;
	int all;
	uint64_t seed;

	if (nw != 4)
		return complain(s, "run: want NAME:CONFIG FAULT DEVICE SEED "
		                "(DEVICE none for kill)");
	if (parse_target(s, w[0], 0, &t, &all) < 0)
		return -1;
	r.adapter = t.adapter;
	r.config = t.config;
	r.fault = campaign_fault_parse(w[1]);
	if (r.fault < 0)
		return complain(s, "%s: unknown fault (known: kill, power-cut, "
		                "eio)", w[1]);
	if (r.fault == CAMPAIGN_KILL) {
		if (strcmp(w[2], "none") != 0)
			return complain(s, "run: a kill cuts no power: its device "
			                "is none, not %s", w[2]);
		r.device = -1;
	} else if (device_word(s, w[2], &r.device) < 0) {
		return -1;
	}
	if (parse_number(w[3], CAMPAIGN_SEED_MAX, &seed) < 0)
		return complain(s, "%s: not a seed (a whole number up to %llu)",
		                w[3], (unsigned long long)CAMPAIGN_SEED_MAX);
	r.seed = seed;
	if (s->nextra >= CAMPAIGN_RUNS_MAX)
		return complain(s, "too many runs (at most %u)", CAMPAIGN_RUNS_MAX);
	if (s->nextra == s->extra_cap) {
		size_t cap = s->extra_cap ? s->extra_cap * 2 : 64;
		campaign_run *e = realloc(s->extra, cap * sizeof *e);
		unsigned *l = e ? realloc(s->extra_line, cap * sizeof *l) : NULL;
		if (e)
			s->extra = e;
		if (l)
			s->extra_line = l;
		if (!e || !l)
			return complain(s, "out of memory");
		s->extra_cap = cap;
	}
	s->extra_line[s->nextra] = s->line;
	s->extra[s->nextra++] = r;
	return 0;
}

static int key_bound(spec *s, int key, char **w, size_t nw)
{
	if (nw != 1)
		return complain(s, "%s: want one value", keys[key]);
	if (key == K_CYCLES) {
		if (parse_number(w[0], CAMPAIGN_CYCLES_MAX, &s->cycles) < 0 ||
		    s->cycles == 0)
			return complain(s, "cycles %s: want a whole number from 1 "
			                "to %llu", w[0],
			                (unsigned long long)CAMPAIGN_CYCLES_MAX);
		return 0;
	}
	if (duration_parse(w[0], key == K_DURATION ? &s->duration_ns :
	                   &s->kill_every_ns) < 0)
		return complain(s, "%s %s: not a duration: " DURATION_RULE,
		                keys[key], w[0]);
	return 0;
}

/* One KEY = VALUE line (LINE is the line's bytes, NUL-terminated). */
static int parse_line(spec *s, char *line)
{
	char *w[CAMPAIGN_WORDS_MAX], *p = line, *eq, *key_end;
	size_t nw = 0, k;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '#')
		return 0;
	eq = strchr(p, '=');
	if (!eq)
		return complain(s, "want KEY = VALUE (keys: " KEYS_KNOWN ")");
	key_end = eq;
	while (key_end > p && (key_end[-1] == ' ' || key_end[-1] == '\t'))
		key_end--;
	*key_end = '\0';
	for (k = 0; k < NKEYS; k++)
		if (strcmp(p, keys[k]) == 0)
			break;
	if (k == NKEYS)
		return complain(s, "unknown key '%.40s' (known: " KEYS_KNOWN ")",
		                p);
	if (k != K_RUN && s->seen[k])
		return complain(s, "%s given twice (first on line %u)", keys[k],
		                s->seen[k]);
	s->seen[k] = s->line;
	for (p = strtok(eq + 1, " \t"); p; p = strtok(NULL, " \t")) {
		if (nw >= CAMPAIGN_WORDS_MAX)
			return complain(s, "%s: more than %u words", keys[k],
			                CAMPAIGN_WORDS_MAX);
		w[nw++] = p;
	}
	if (nw == 0)
		return complain(s, "%s: no value", keys[k]);
	switch (k) {
	case K_TARGETS: return key_targets(s, w, nw);
	case K_FAULTS: return key_faults(s, w, nw);
	case K_DEVICES: return key_devices(s, w, nw);
	case K_SEEDS: return key_seeds(s, w, nw);
	case K_RUN: return key_run(s, w, nw);
	default: return key_bound(s, (int)k, w, nw);
	}
}

/* Reads PATH line by line into S, bounded and byte-checked. */
static int read_file(spec *s)
{
	char line[CAMPAIGN_LINE_MAX + 1];
	size_t n = 0;
	FILE *f = fopen(s->path, "r");
	int ch, rc = 0;

	if (!f)
		return complain(s, "%s", strerror(errno));
	s->line = 1;
	while (rc == 0 && (ch = getc(f)) != EOF) {
		if (s->line > CAMPAIGN_LINES_MAX) { /* a byte of one line more */
			rc = complain(s, "more than %u lines", CAMPAIGN_LINES_MAX);
			break;
		}
		if (ch == '\n') {
			line[n] = '\0';
			rc = parse_line(s, line);
			n = 0;
			s->line++;
			continue;
		}
		if (ch == '\r' && (ch = getc(f)) != '\n') /* only in CR LF */
			rc = complain(s, "a CR not followed by LF");
		else if (ch == '\n')
			ungetc(ch, f);
		else if ((ch < 0x20 && ch != '\t') || ch > 0x7e)
			rc = complain(s, "byte 0x%02x: a campaign file is "
			              "printable ASCII text", ch);
		else if (n >= CAMPAIGN_LINE_MAX)
			rc = complain(s, "line longer than %u bytes",
			              CAMPAIGN_LINE_MAX);
		else
			line[n++] = (char)ch;
	}
	if (rc == 0 && ferror(f))
		rc = complain(s, "%s", strerror(errno));
	if (rc == 0 && n > 0) { /* a last line without its newline */
		line[n] = '\0';
		rc = parse_line(s, line);
	}
	fclose(f);
	return rc;
}

/* ---- expansion ---------------------------------------------------------- */

static int run_cmp(const void *a, const void *b)
{
	const campaign_run *x = *(campaign_run *const *)a;
	const campaign_run *y = *(campaign_run *const *)b;
	int c = strcmp(x->adapter->name, y->adapter->name);

	if (!c)
		c = strcmp(x->config, y->config);
	if (!c)
		c = x->fault - y->fault;
	if (!c)
		c = x->device - y->device;
	if (!c)
		c = x->seed < y->seed ? -1 : x->seed > y->seed;
	return c;
}

/* The same run twice would make two lines with one meaning. */
static int refuse_duplicates(spec *s, const campaign *c)
{
	campaign_run **v = malloc(c->nruns * sizeof *v);
	int rc = 0;

	if (!v)
		return complain(s, "out of memory");
	for (size_t i = 0; i < c->nruns; i++)
		v[i] = &c->runs[i];
	qsort(v, c->nruns, sizeof *v, run_cmp);
	for (size_t i = 1; i < c->nruns && rc == 0; i++)
		if (run_cmp(&v[i - 1], &v[i]) == 0) {
			s->line = 0;
			rc = complain(s, "the run %s:%s %s %s %" PRIu64 " is "
			              "listed twice", v[i]->adapter->name,
			              v[i]->config, campaign_fault_name(v[i]->fault),
			              campaign_device_name(v[i]->device),
			              v[i]->seed);
		}
	free(v);
	return rc;
}

/* How many runs the cross product makes (0 when it is not asked for). */
static int cross_count(spec *s, uint64_t *count)
{
	uint64_t seeds = 0, per_target = 0;
	int cuts = 0;

	*count = 0;
	s->line = 0;
	if (!s->seen[K_TARGETS] && !s->seen[K_FAULTS] && !s->seen[K_SEEDS] &&
	    !s->seen[K_DEVICES])
		return 0;
	if (!s->seen[K_TARGETS] || !s->seen[K_FAULTS] || !s->seen[K_SEEDS])
		return complain(s, "a cross product needs targets, faults and "
		                "seeds (and devices for power-cut or eio)");
	for (size_t i = 0; i < s->nfaults; i++)
		cuts |= s->faults[i] != CAMPAIGN_KILL;
	if (cuts && !s->ndevices)
		return complain(s, "power-cut and eio need devices (e.g. devices "
		                "= torn)");
	if (!cuts && s->ndevices)
		return complain(s, "devices describe a power cut: the faults "
		                "name none (add power-cut or eio)");
	for (size_t i = 0; i < s->nseeds; i++)
		seeds += s->seed_hi[i] - s->seed_lo[i] + 1;
	for (size_t i = 0; i < s->nfaults; i++)
		per_target += s->faults[i] == CAMPAIGN_KILL ? 1 : s->ndevices;
	if (seeds > CAMPAIGN_RUNS_MAX || per_target * seeds > CAMPAIGN_RUNS_MAX ||
	    s->ntargets * per_target * seeds > CAMPAIGN_RUNS_MAX)
		return complain(s, "the cross product is more than %u runs",
		                CAMPAIGN_RUNS_MAX);
	*count = s->ntargets * per_target * seeds;
	return 0;
}

static void expand_cross(const spec *s, campaign *c)
{
	static const int no_device = -1;

	for (size_t t = 0; t < s->ntargets; t++)
		for (size_t f = 0; f < s->nfaults; f++) {
			int kill = s->faults[f] == CAMPAIGN_KILL;
			const int *devs = kill ? &no_device : s->devices;
			size_t ndevs = kill ? 1 : s->ndevices;

			for (size_t d = 0; d < ndevs; d++)
				for (size_t r = 0; r < s->nseeds; r++)
					for (uint64_t seed = s->seed_lo[r];
					     seed <= s->seed_hi[r]; seed++) {
						campaign_run *run = &c->runs[c->nruns++];
						run->adapter = s->targets[t].adapter;
						run->config = s->targets[t].config;
						run->fault = s->faults[f];
						run->device = devs[d];
						run->seed = seed;
					}
		}
}

/* FNV-1a, 64 bits, over the normalized definition. */
static void make_id(campaign *c)
{
	size_t len = campaign_normalized(c, NULL, 0);
	char *text = malloc(len + 1);
	uint64_t h = 0xcbf29ce484222325ull;

	if (text) {
		campaign_normalized(c, text, len + 1);
		for (size_t i = 0; i < len; i++) {
			h ^= (unsigned char)text[i];
			h *= 0x100000001b3ull;
		}
	} else {
		h = 0; /* the caller sees an all-zero id only without memory */
	}
	free(text);
	snprintf(c->id, sizeof c->id, "%016" PRIx64, h);
}

size_t campaign_normalized(const campaign *c, char *buf, size_t cap)
{
	size_t n = 0;
	int k;

	k = snprintf(buf, cap, "keel-campaign 1\ncycles %" PRIu64 "\nduration_ns %"
	             PRIu64 "\n", c->cycles, c->duration_ns);
	n += (size_t)k;
	if (c->kill_every_ns) { /* only when given: older ids stay valid */
		k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0,
		             "kill_every_ns %" PRIu64 "\n", c->kill_every_ns);
		n += (size_t)k;
	}
	for (size_t i = 0; i < c->nruns; i++) {
		const campaign_run *r = &c->runs[i];
		k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0,
		             "%s:%s %s %s %" PRIu64 "\n", r->adapter->name,
		             r->config, campaign_fault_name(r->fault),
		             campaign_device_name(r->device), r->seed);
		n += (size_t)k;
	}
	return n;
}

static void spec_free(spec *s)
{
	free(s->extra);
	free(s->extra_line);
}

int campaign_parse(const char *path, campaign *c)
{
	spec *s = calloc(1, sizeof *s);
	uint64_t cross;
	int rc = -1;

	memset(c, 0, sizeof *c);
	if (!s) {
		fprintf(stderr, "torture: %s: out of memory\n", path);
		return -1;
	}
	s->path = path;
	s->cycles = DEFAULT_CYCLES;
	s->duration_ns = DEFAULT_DURATION_NS;
	if (read_file(s) < 0 || cross_count(s, &cross) < 0)
		goto out;
	if (cross + s->nextra == 0) {
		complain(s, "no runs: give targets, faults, devices and seeds, "
		         "or run lines (docs/campaigns.md)");
		goto out;
	}
	if (cross + s->nextra > CAMPAIGN_RUNS_MAX) {
		complain(s, "more than %u runs", CAMPAIGN_RUNS_MAX);
		goto out;
	}
	c->runs = malloc((cross + s->nextra) * sizeof *c->runs);
	if (!c->runs) {
		complain(s, "out of memory");
		goto out;
	}
	expand_cross(s, c);
	if (s->nextra) /* memcpy may not be given NULL, even for 0 bytes */
		memcpy(c->runs + c->nruns, s->extra,
		       s->nextra * sizeof *s->extra);
	c->nruns += s->nextra;
	c->cycles = s->cycles;
	c->duration_ns = s->duration_ns;
	c->kill_every_ns = s->kill_every_ns;
	if (refuse_duplicates(s, c) < 0)
		goto out;
	make_id(c);
	rc = 0;
out:
	if (rc < 0)
		campaign_free(c);
	spec_free(s);
	free(s);
	return rc;
}

void campaign_free(campaign *c)
{
	free(c->runs);
	memset(c, 0, sizeof *c);
}

int campaign_shard_parse(const char *s, uint64_t *i, uint64_t *n, char *why,
                         size_t cap)
{
	char buf[48];
	const char *slash = strchr(s, '/');

	if (!slash || strlen(s) >= sizeof buf) {
		snprintf(why, cap, "want I/N: shard I of N, numbered from 0 "
		         "(0/2 and 1/2 are the two halves)");
		return -1;
	}
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (parse_number(buf, UINT64_MAX, i) < 0 ||
	    parse_number(slash + 1, UINT64_MAX, n) < 0) {
		snprintf(why, cap, "want I/N, two whole numbers: shard I of N, "
		         "numbered from 0 (0/2 and 1/2 are the two halves)");
		return -1;
	}
	if (*n == 0 || *n > CAMPAIGN_SHARDS_MAX) {
		snprintf(why, cap, "N must be from 1 to %u", CAMPAIGN_SHARDS_MAX);
		return -1;
	}
	if (*i >= *n) {
		snprintf(why, cap, "there is no shard %" PRIu64 " of %" PRIu64
		         ": shards are numbered from 0, so I goes from 0 to %"
		         PRIu64, *i, *n, *n - 1);
		return -1;
	}
	return 0;
}
