/*
 * campaign_report.c -- torture --report [--merge] FILE... (campaign.h):
 * merge the result lines of a campaign's shards and print the claims
 * table.
 *
 * MERGING
 *   Files are read in the order given, lines in file order.  Each line is
 *   one run's result, keyed by (campaign id, run index): a later line of
 *   the same run replaces the earlier one (a rerun shard), so merging a
 *   file twice, or a shard and its rerun, counts every run once.  All
 *   lines must carry the same campaign id, and a run index must name the
 *   same (target, config, fault, device, seed) wherever it appears;
 *   otherwise nothing is printed and the exit status is 2.
 *   Only a line's position is kept for --merge and the reproducers (they
 *   are read again from the file), so memory is bounded by the campaign's
 *   run count, not by the input.
 *
 * THE TABLE
 *   The shape of docs/claims.md's: a row per NAME:CONFIG, a column per
 *   (fault, device), both in campaign order.  A cell sums its seeds:
 *   "holds (C cycles, R/s)", "holds (C cycles over S seeds, R/s)" with ", F
 *   stopped on the error of I injected" when faults were injected;
 *   "BROKEN seed S cycle C: the first violation" (the lowest broken run)
 *   with "(B of S seeds)"; "set-up: why" when a run could not run; "-"
 *   when no line of the cell was merged.
 */
#include "campaign.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_MAX 48     /* target, config, device, fault names      */
#define ROWS_MAX 256
#define COLS_MAX 64
#define FILES_MAX 4096
#define SHOWN_MAX 72     /* bytes of a first violation in a cell     */

enum { V_HOLDS, V_BROKEN, V_SETUP };

/* One run's merged result: what the table needs, and where its line is. */
typedef struct result {
	int present;
	unsigned file;              /* index into the FILE arguments       */
	unsigned line;              /* its line number, for messages       */
	long offset;                /* its byte offset, to read it again   */
	char target[TOKEN_MAX], config[TOKEN_MAX], fault[TOKEN_MAX],
	     device[TOKEN_MAX];
	char version[80];
	uint64_t seed, cycles, faults_fired, fault_stops;
	double elapsed;
	int verdict;
	char shown[SHOWN_MAX + 1];  /* first violation or set-up message   */
} result;

typedef struct merge {
	char **files;
	int nfiles;
	char id[17];
	unsigned id_file, id_line;  /* where the id was first seen         */
	result *runs;               /* [nruns], allocated at the first line */
	size_t nruns;
	size_t lines, replaced;
} merge;

static int refuse(const merge *m, unsigned file, unsigned line,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(const merge *m, unsigned file, unsigned line,
                  const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "torture: --report: %s:%u: ", m->files[file], line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* 1..TOKEN_MAX-1 bytes of [A-Za-z0-9._-]. */
static int token_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                  "0123456789._-");
	return n > 0 && n < TOKEN_MAX && s[n] == '\0';
}

static int whole(const campaign_field *f, uint64_t max, uint64_t *v)
{
	const char *s;
	uint64_t n = 0;

	if (!f || f->kind != CAMPAIGN_JSON_NUMBER || !f->value[0])
		return -1;
	for (s = f->value; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (*s < '0' || *s > '9' || d > max || n > (max - d) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*v = n;
	return 0;
}

/* SRC as a table cell: printable ASCII, '|' made '/', quotes dropped (as
 * tools/claims.sh shows them), cut to CAP - 1 bytes. */
static void copy_clean(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	for (; src && *src && n + 1 < cap; src++) {
		unsigned char ch = (unsigned char)*src;
		if (ch == '"')
			continue;
		dst[n++] = ch == '|' ? '/' : ch < 0x20 || ch > 0x7e ? ' ' :
		           (char)ch;
	}
	dst[n] = '\0';
}

/* The fields of a result line into R; the message says which is wrong. */
static int read_result(const merge *m, unsigned file, unsigned line,
                       const campaign_field *f, int n, result *r,
                       uint64_t *run, uint64_t *runs, const char **id)
{
	static const char *const tokens[] = { "target", "config", "fault",
	                                      "device" };
	char *dst[] = { r->target, r->config, r->fault, r->device };
	const campaign_field *v;

	v = campaign_json_get(f, n, "campaign");
	if (!v || v->kind != CAMPAIGN_JSON_STRING || strlen(v->value) != 16 ||
	    strspn(v->value, "0123456789abcdef") != 16)
		return refuse(m, file, line, "not a campaign result: no "
		              "\"campaign\" id of 16 hex digits");
	*id = v->value;
	if (whole(campaign_json_get(f, n, "runs"), CAMPAIGN_RUNS_MAX, runs) < 0 ||
	    *runs == 0 ||
	    whole(campaign_json_get(f, n, "run"), *runs - 1, run) < 0)
		return refuse(m, file, line, "want \"run\" K and \"runs\" M, "
		              "whole numbers with K < M <= %u", CAMPAIGN_RUNS_MAX);
	for (size_t i = 0; i < 4; i++) {
		v = campaign_json_get(f, n, tokens[i]);
		if (!v || v->kind != CAMPAIGN_JSON_STRING || !token_ok(v->value))
			return refuse(m, file, line, "want \"%s\", a name of "
			              "letters, digits, '.', '_' and '-'",
			              tokens[i]);
		strcpy(dst[i], v->value);
	}
	if (campaign_fault_parse(r->fault) < 0)
		return refuse(m, file, line, "fault \"%s\" is none of kill, "
		              "power-cut, eio", r->fault);
	v = campaign_json_get(f, n, "verdict");
	r->verdict = !v || v->kind != CAMPAIGN_JSON_STRING ? -1 :
	             strcmp(v->value, "holds") == 0 ? V_HOLDS :
	             strcmp(v->value, "broken") == 0 ? V_BROKEN :
	             strcmp(v->value, "setup") == 0 ? V_SETUP : -1;
	if (r->verdict < 0)
		return refuse(m, file, line, "want \"verdict\": holds, broken or "
		              "setup");
	if (whole(campaign_json_get(f, n, "seed"), UINT64_MAX, &r->seed) < 0 ||
	    whole(campaign_json_get(f, n, "cycles"), UINT64_MAX, &r->cycles) < 0)
		return refuse(m, file, line, "want \"seed\" and \"cycles\", whole "
		              "numbers");
	if (whole(campaign_json_get(f, n, "faults_fired"), UINT64_MAX,
	          &r->faults_fired) < 0)
		r->faults_fired = 0;
	if (whole(campaign_json_get(f, n, "fault_stops"), UINT64_MAX,
	          &r->fault_stops) < 0)
		r->fault_stops = 0;
	v = campaign_json_get(f, n, "elapsed_s");
	r->elapsed = v && v->kind == CAMPAIGN_JSON_NUMBER ? strtod(v->value, NULL)
	             : 0;
	if (!(r->elapsed >= 0 && r->elapsed < 1e12))
		r->elapsed = 0;
	v = campaign_json_get(f, n, "version");
	copy_clean(r->version, sizeof r->version,
	           v && v->kind == CAMPAIGN_JSON_STRING ? v->value : "?");
	v = campaign_json_get(f, n, r->verdict == V_SETUP ? "message" :
	                      "first_violation");
	copy_clean(r->shown, sizeof r->shown,
	           v && v->kind == CAMPAIGN_JSON_STRING ? v->value : "");
	return 0;
}

static int same_run(const result *a, const result *b)
{
	return strcmp(a->target, b->target) == 0 &&
	       strcmp(a->config, b->config) == 0 &&
	       strcmp(a->fault, b->fault) == 0 &&
	       strcmp(a->device, b->device) == 0 && a->seed == b->seed;
}

/* One line (LEN bytes at TEXT) of FILE. */
static int merge_line(merge *m, unsigned file, unsigned line, long offset,
                      const char *text, size_t len)
{
	static campaign_field fields[CAMPAIGN_FIELDS_MAX];
	result r;
	uint64_t run = 0, runs = 0;
	const char *id = NULL;
	char why[120];
	int n;

	memset(&r, 0, sizeof r);
	n = campaign_json_parse(text, len, fields, CAMPAIGN_FIELDS_MAX, why,
	                        sizeof why);
	if (n < 0)
		return refuse(m, file, line, "not a JSON object: %s", why);
	if (read_result(m, file, line, fields, n, &r, &run, &runs, &id) < 0)
		return -1;
	if (!m->runs) {
		m->runs = calloc(runs, sizeof *m->runs);
		if (!m->runs)
			return refuse(m, file, line, "out of memory");
		m->nruns = runs;
		memcpy(m->id, id, sizeof m->id);
		m->id_file = file;
		m->id_line = line;
	} else if (strcmp(m->id, id) != 0) {
		return refuse(m, file, line, "campaign %s, but %s:%u is campaign "
		              "%s: results of different campaign definitions "
		              "cannot be merged (report each campaign's files on "
		              "their own)", id, m->files[m->id_file], m->id_line,
		              m->id);
	} else if (runs != m->nruns) {
		return refuse(m, file, line, "campaign %s with %" PRIu64 " runs, "
		              "but %s:%u says %zu: the file is damaged", id, runs,
		              m->files[m->id_file], m->id_line, m->nruns);
	}
	r.present = 1;
	r.file = file;
	r.line = line;
	r.offset = offset;
	if (m->runs[run].present) {
		const result *old = &m->runs[run];
		if (!same_run(old, &r))
			return refuse(m, file, line, "run %" PRIu64 " is %s:%s %s "
			              "%s %" PRIu64 " here but %s:%s %s %s %" PRIu64
			              " in %s:%u: the file is damaged", run,
			              r.target, r.config, r.fault, r.device, r.seed,
			              old->target, old->config, old->fault,
			              old->device, old->seed, m->files[old->file],
			              old->line);
		m->replaced++;
	}
	m->runs[run] = r;
	return 0;
}

/* Reads FILE line by line: bounded, NUL refused, blank lines skipped. */
static int merge_file(merge *m, unsigned file)
{
	static char line[CAMPAIGN_JSON_MAX + 1];
	FILE *f = fopen(m->files[file], "r");
	unsigned lineno = 1;
	long start = 0, pos = 0;
	size_t n = 0;
	int ch, rc = 0, blank = 1;

	if (!f) {
		fprintf(stderr, "torture: --report: %s: %s\n", m->files[file],
		        strerror(errno));
		return -1;
	}
	while (rc == 0 && (ch = getc(f)) != EOF) {
		pos++;
		if (ch == '\n') {
			if (!blank && m->lines++ >= CAMPAIGN_RESULT_LINES_MAX)
				rc = refuse(m, file, lineno, "more than %u lines in "
				            "all", CAMPAIGN_RESULT_LINES_MAX);
			else if (!blank)
				rc = merge_line(m, file, lineno, start, line, n);
			n = 0;
			blank = 1;
			start = pos;
			lineno++;
			continue;
		}
		if (ch == 0)
			rc = refuse(m, file, lineno, "a NUL byte: not a result "
			            "line");
		else if (n >= CAMPAIGN_JSON_MAX)
			rc = refuse(m, file, lineno, "line longer than %u bytes: "
			            "not a result line", CAMPAIGN_JSON_MAX);
		else
			line[n++] = (char)ch;
		if (ch != ' ' && ch != '\t' && ch != '\r')
			blank = 0;
	}
	if (rc == 0 && ferror(f))
		rc = refuse(m, file, lineno, "%s", strerror(errno));
	if (rc == 0 && !blank) /* a last line without its newline: a shard
	                          killed while writing it */
		rc = refuse(m, file, lineno, "the last line has no newline: cut "
		            "short (run the shard again)");
	fclose(f);
	return rc;
}

/* Reads the line of R again, as it is in its file, into LINE (newline
 * included).  0, or -1 when the file changed since it was merged. */
static int reread_line(const merge *m, const result *r, char *line,
                       size_t cap)
{
	FILE *f = fopen(m->files[r->file], "r");
	int ok;

	if (!f)
		return -1;
	ok = fseek(f, r->offset, SEEK_SET) == 0 && fgets(line, (int)cap, f) &&
	     strchr(line, '\n');
	fclose(f);
	return ok ? 0 : -1;
}

/* ---- the table ---------------------------------------------------------- */

typedef struct cell {
	size_t present, holds, broken, setup;
	uint64_t cycles, faults_fired, fault_stops;
	double elapsed;
	const result *first_broken, *first_setup;
} cell;

typedef struct table {
	const result *row[ROWS_MAX]; /* a run naming the row's target:config */
	const result *col[COLS_MAX]; /* and the column's fault, device       */
	size_t nrows, ncols;
	cell *cells;                 /* [nrows * ncols]                      */
} table;

static int find_row(table *t, const result *r)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(t->row[i]->target, r->target) == 0 &&
		    strcmp(t->row[i]->config, r->config) == 0)
			return (int)i;
	if (t->nrows >= ROWS_MAX)
		return -1;
	t->row[t->nrows] = r;
	return (int)t->nrows++;
}

static int find_col(table *t, const result *r)
{
	for (size_t i = 0; i < t->ncols; i++)
		if (strcmp(t->col[i]->fault, r->fault) == 0 &&
		    strcmp(t->col[i]->device, r->device) == 0)
			return (int)i;
	if (t->ncols >= COLS_MAX)
		return -1;
	t->col[t->ncols] = r;
	return (int)t->ncols++;
}

static int build_table(const merge *m, table *t)
{
	memset(t, 0, sizeof *t);
	for (size_t k = 0; k < m->nruns; k++)
		if (m->runs[k].present &&
		    (find_row(t, &m->runs[k]) < 0 || find_col(t, &m->runs[k]) < 0)) {
			fprintf(stderr, "torture: --report: more than %d "
			        "configurations or %d fault columns: too many for "
			        "one table\n", ROWS_MAX, COLS_MAX);
			return -1;
		}
	t->cells = calloc(t->nrows * t->ncols + 1, sizeof *t->cells);
	if (!t->cells) {
		fprintf(stderr, "torture: --report: out of memory\n");
		return -1;
	}
	for (size_t k = 0; k < m->nruns; k++) {
		const result *r = &m->runs[k];
		cell *c;

		if (!r->present)
			continue;
		c = &t->cells[(size_t)find_row(t, r) * t->ncols +
		              (size_t)find_col(t, r)];
		c->present++;
		c->cycles += r->cycles;
		c->elapsed += r->elapsed;
		c->faults_fired += r->faults_fired;
		c->fault_stops += r->fault_stops;
		if (r->verdict == V_HOLDS)
			c->holds++;
		if (r->verdict == V_BROKEN && !c->broken++)
			c->first_broken = r;
		if (r->verdict == V_SETUP && !c->setup++)
			c->first_setup = r;
	}
	return 0;
}

static void print_column_name(FILE *out, const result *r)
{
	if (strcmp(r->fault, "kill") == 0)
		fprintf(out, " process kill |");
	else if (strcmp(r->fault, "power-cut") == 0)
		fprintf(out, " power cut, %s |", r->device);
	else
		fprintf(out, " fsync EIO (ext4) + power cut, %s |", r->device);
}

static void print_cell(FILE *out, const cell *c)
{
	if (!c->present) {
		fprintf(out, " - |");
	} else if (c->broken) {
		fprintf(out, " BROKEN seed %" PRIu64 " cycle %" PRIu64 ": %s",
		        c->first_broken->seed, c->first_broken->cycles,
		        c->first_broken->shown);
		if (c->present > 1)
			fprintf(out, " (%zu of %zu seeds)", c->broken, c->present);
		fprintf(out, " |");
	} else if (c->setup) {
		fprintf(out, " set-up: %s", c->first_setup->shown);
		if (c->present > 1)
			fprintf(out, " (%zu of %zu seeds)", c->setup, c->present);
		fprintf(out, " |");
	} else {
		fprintf(out, " holds (%" PRIu64 " cycles", c->cycles);
		if (c->present > 1)
			fprintf(out, " over %zu seeds", c->present);
		fprintf(out, ", %.2f/s", c->elapsed > 0 ?
		        (double)c->cycles / c->elapsed : 0.0);
		if (c->faults_fired)
			fprintf(out, ", %" PRIu64 " stopped on the error of %"
			        PRIu64 " injected", c->fault_stops,
			        c->faults_fired);
		fprintf(out, ") |");
	}
}

/* The versions the row's runs reported: one, or "A / B" when they differ
 * (shards on machines with different packages). */
static void print_versions(FILE *out, const merge *m, const result *row)
{
	const char *seen[3];
	size_t n = 0;

	for (size_t k = 0; k < m->nruns && n < 3; k++) {
		const result *r = &m->runs[k];
		size_t i;

		if (!r->present || strcmp(r->target, row->target) ||
		    strcmp(r->config, row->config))
			continue;
		for (i = 0; i < n && strcmp(seen[i], r->version); i++)
			;
		if (i == n)
			seen[n++] = r->version;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? " / " : " ", seen[i]);
	fprintf(out, " |");
}

/* Each broken run's reproducer, from its line. */
static int print_reproducers(const merge *m, FILE *out)
{
	static char line[CAMPAIGN_JSON_MAX + 2];
	static campaign_field fields[CAMPAIGN_FIELDS_MAX];
	const campaign_field *repro;
	char why[120];
	int n;

	fprintf(out, "\nReproducers:\n\n");
	for (size_t k = 0; k < m->nruns; k++) {
		const result *r = &m->runs[k];

		if (!r->present || r->verdict != V_BROKEN)
			continue;
		if (reread_line(m, r, line, sizeof line) < 0 ||
		    (n = campaign_json_parse(line, strlen(line), fields,
		                             CAMPAIGN_FIELDS_MAX, why,
		                             sizeof why)) < 0)
			return refuse(m, r->file, r->line, "changed while it was "
			              "read");
		repro = campaign_json_get(fields, n, "reproducer");
		fprintf(out, "    %s:%s %s %s seed %" PRIu64 ": ", r->target,
		        r->config, r->fault, r->device, r->seed);
		for (const char *s = repro && repro->kind == CAMPAIGN_JSON_STRING ?
		                     repro->value : "?"; *s; s++)
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
		fputc('\n', out);
	}
	return 0;
}

static void print_table(const merge *m, const table *t, FILE *out)
{
	size_t present = 0, shown = 0;

	fprintf(out, "| configuration | version |");
	for (size_t j = 0; j < t->ncols; j++)
		print_column_name(out, t->col[j]);
	fprintf(out, "\n|---|---|");
	for (size_t j = 0; j < t->ncols; j++)
		fprintf(out, "---|");
	fputc('\n', out);
	for (size_t i = 0; i < t->nrows; i++) {
		fprintf(out, "| %s:%s |", t->row[i]->target, t->row[i]->config);
		print_versions(out, m, t->row[i]);
		for (size_t j = 0; j < t->ncols; j++)
			print_cell(out, &t->cells[i * t->ncols + j]);
		fputc('\n', out);
	}
	for (size_t k = 0; k < m->nruns; k++)
		present += m->runs[k].present;
	fprintf(out, "\nCampaign %s: %zu of %zu runs merged from %d file%s "
	        "(%zu lines, %zu replaced by a later line of the same run).\n",
	        m->id, present, m->nruns, m->nfiles, m->nfiles == 1 ? "" : "s",
	        m->lines, m->replaced);
	if (present < m->nruns) {
		fprintf(out, "Missing runs:");
		for (size_t k = 0; k < m->nruns && shown < 20; k++)
			if (!m->runs[k].present)
				fprintf(out, " %zu", k), shown++;
		fprintf(out, "%s (run k is in shard k mod N; torture --campaign "
		        "FILE --shard I/N --list names them).\n",
		        m->nruns - present > shown ? " ..." : "");
	}
}

int campaign_report_main(int argc, char **argv)
{
	merge m;
	table t;
	int merge_only = 0, rc = 2;
	char **files = calloc((size_t)argc, sizeof *files);

	memset(&m, 0, sizeof m);
	memset(&t, 0, sizeof t);
	if (!files) {
		fprintf(stderr, "torture: --report: out of memory\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--report") == 0)
			continue;
		if (strcmp(argv[i], "--merge") == 0) {
			merge_only = 1;
			continue;
		}
		if (strncmp(argv[i], "--", 2) == 0) {
			fprintf(stderr, "torture: --report: '%s' is not a report "
			        "flag (usage: torture --report [--merge] "
			        "FILE...)\n", argv[i]);
			goto out;
		}
		if (m.nfiles >= FILES_MAX) {
			fprintf(stderr, "torture: --report: more than %d files\n",
			        FILES_MAX);
			goto out;
		}
		files[m.nfiles++] = argv[i];
	}
	m.files = files;
	if (m.nfiles == 0) {
		fprintf(stderr, "torture: --report needs the result files of a "
		        "campaign (usage: torture --report [--merge] FILE...)\n");
		goto out;
	}
	for (int i = 0; i < m.nfiles; i++)
		if (merge_file(&m, (unsigned)i) < 0)
			goto out;
	if (!m.runs) {
		fprintf(stderr, "torture: --report: no result lines in the %d "
		        "file%s\n", m.nfiles, m.nfiles == 1 ? "" : "s");
		goto out;
	}
	if (merge_only) {
		static char line[CAMPAIGN_JSON_MAX + 2];

		for (size_t k = 0; k < m.nruns; k++) {
			if (!m.runs[k].present)
				continue;
			if (reread_line(&m, &m.runs[k], line, sizeof line) < 0) {
				refuse(&m, m.runs[k].file, m.runs[k].line,
				       "changed while it was read");
				goto out;
			}
			fputs(line, stdout);
		}
	} else {
		if (build_table(&m, &t) < 0)
			goto out;
		print_table(&m, &t, stdout);
		if (print_reproducers(&m, stdout) < 0)
			goto out;
	}
	rc = fflush(stdout) == 0 ? 0 : 2;
out:
	free(t.cells);
	free(m.runs);
	free(files);
	return rc;
}
