/*
 * report.c -- progress line, summary and JSON (see report.h).
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "faultsim.h"

#define TTY_EVERY_NS 250000000ull
#define PLAIN_EVERY_NS 5000000000ull

uint64_t report_violations(const report *r)
{
	uint64_t n = r->structure + r->writer;

	for (int i = 0; i < ORACLE_KINDS; i++)
		n += r->violations[i];
	return n;
}

void report_violation(report *r, const char *kind, const char *what)
{
	if (r->tty)
		fputs("\r\033[K", stderr); /* do not write over the status line */
	fprintf(stderr, "torture: cycle %" PRIu64 ": %s: %s\n", r->cycles + 1,
	        kind, what);
	if (r->first[0])
		return;
	snprintf(r->first, sizeof(r->first), "%s: %s", kind, what);
	r->first_cycle = r->cycles + 1;
}

static double seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

static double per_second(uint64_t n, uint64_t ns)
{
	return ns ? (double)n / seconds(ns) : 0.0;
}

/* "12.3s/30s" or "245/1000 cycles" */
static void show_elapsed(const report *r, const torture_options *o,
                         char *buf, size_t cap)
{
	if (o->duration_ns)
		snprintf(buf, cap, "%.1fs/%.0fs", seconds(r->elapsed_ns),
		         seconds(o->duration_ns));
	else
		snprintf(buf, cap, "%.1fs", seconds(r->elapsed_ns));
}

void report_progress(report *r, const torture_options *o, uint64_t now_ns,
                     int force)
{
	uint64_t every = r->tty ? TTY_EVERY_NS : PLAIN_EVERY_NS;
	char when[48], cycles[48];

	if (o->quiet || (!force && now_ns - r->last_progress_ns < every))
		return;
	r->last_progress_ns = now_ns;
	show_elapsed(r, o, when, sizeof(when));
	if (o->cycles)
		snprintf(cycles, sizeof(cycles), "%" PRIu64 "/%" PRIu64,
		         r->cycles, o->cycles);
	else
		snprintf(cycles, sizeof(cycles), "%" PRIu64, r->cycles);
	fprintf(stderr, "%s%s  cycles %s  kills %" PRIu64 "  acked %" PRIu64
	        "  verified %" PRIu64 "  lost %" PRIu64 "  %.1f cycles/s%s",
	        r->tty ? "\r\033[K" : "torture: ", when, cycles, r->kills,
	        r->acked, r->verified, r->violations[ORACLE_LOST],
	        per_second(r->cycles, r->elapsed_ns), r->tty ? "" : "\n");
	fflush(stderr);
}

static void show_latency(FILE *out, const char *what, samples *s)
{
	if (!s->n) {
		fprintf(out, "  %-22s not measured\n", what);
		return;
	}
	fprintf(out, "  %-22s p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%zu "
	        "samples)\n", what, samples_pct(s, 50) / 1e6,
	        samples_pct(s, 99) / 1e6, samples_pct(s, 100) / 1e6, s->n);
}

/* The fault simulator's and compaction's lines, when they took part. */
static void summary_faults(const report *r, const torture_options *o,
                           FILE *out)
{
	if (o->enumerate)
		fprintf(out, "  crash states           %" PRIu64 " of %" PRIu64
		        " I/O steps checked, %.1f/s\n", r->cycles,
		        r->enum_steps, per_second(r->cycles, r->elapsed_ns));
	if (options_faultsim(o))
		fprintf(out, "  file system model      %s\n",
		        faultsim_fs_name((faultsim_fs)o->fs));
	if (o->power_loss || o->enumerate || o->mixed)
		fprintf(out, "  power cuts             %" PRIu64 " (unsynced "
		        "writes lost %" PRIu64 ", torn %" PRIu64 ", namespace "
		        "ops undone %" PRIu64 ")\n", r->power_cuts, r->cut_lost,
		        r->cut_torn, r->cut_undone);
	if (o->mixed)
		fprintf(out, "  mixed schedule         %" PRIu64 " of %" PRIu64
		        " kills cut the power (--mixed %u); %" PRIu64 " cuts "
		        "deferred past an open that did not finish\n",
		        r->power_cuts, r->cycles, o->cut_pct, r->cuts_deferred);
	if (o->early_pct)
		fprintf(out, "  early kills            %" PRIu64 " of %" PRIu64
		        " writers died right after their open (--early-kills "
		        "%u)\n", r->early_kills, r->cycles, o->early_pct);
	if (o->crash_on_failed_sync)
		fprintf(out, "  crashes at a failed sync %" PRIu64 " of %" PRIu64
		        " writers\n", r->sync_crashes, r->cycles);
	if (o->readers)
		fprintf(out, "  readers                %u processes; %" PRIu64
		        " values they were shown, checked against recovery\n",
		        o->readers, r->reader_seen);
	if (o->snapshots)
		fprintf(out, "  held views             %" PRIu64 " checked "
		        "unchanged across snapshot refreshes\n", r->view_checks);
	if (o->bit_rot)
		fprintf(out, "  bit rot                %" PRIu64 " damaged copies "
		        "read (%" PRIu64 " in a hinted commit, %" PRIu64
		        " in a pending DELTA record), %" PRIu64
		        " answered with an error\n", r->rot_checks,
		        r->rot_hinted, r->rot_pending, r->rot_errors);
	if (o->nfail)
		fprintf(out, "  faults injected        %" PRIu64 " (commits that "
		        "reported one %" PRIu64 ", writer opens %" PRIu64 ")\n",
		        r->faults_fired, r->failed_commits, r->failed_opens);
	if (o->cache_lives)
		fprintf(out, "  device views verified  %" PRIu64 " (a failed "
		        "sync's pages still in the cache)\n", r->device_views);
	if (o->compact_every_ns)
		fprintf(out, "  kills in compaction    %" PRIu64 " of %" PRIu64
		        " kills\n", r->compact_kills, r->kills);
}

void report_summary(report *r, const torture_options *o, const char *prog,
                    FILE *out)
{
	uint64_t bad = report_violations(r);
	char repro[1200];

	if (r->tty && !o->quiet)
		fputs("\r\033[K", stderr);
	fprintf(out, "torture: %s -- %" PRIu64 " cycles in %.1fs (%.1f "
	        "cycles/s), %" PRIu64 " kills%s\n",
	        bad ? "FAIL" : r->no_verdict ? "NO VERDICT" : "PASS",
	        r->cycles, seconds(r->elapsed_ns),
	        per_second(r->cycles, r->elapsed_ns), r->kills,
	        r->interrupted ? ", interrupted" : "");
	fprintf(out, "  acknowledged writes    %" PRIu64 " operations (%" PRIu64
	        " changes), %.0f/s; %" PRIu64 " issued\n", r->acked,
	        r->acked_changes, per_second(r->acked, r->elapsed_ns),
	        r->issued);
	fprintf(out, "  keys verified          %" PRIu64 "\n", r->verified);
	fprintf(out, "  violations             lost %" PRIu64 "  phantom %"
	        PRIu64 "  hole %" PRIu64 "  order %" PRIu64 "  structure %"
	        PRIu64 "  writer %" PRIu64 "\n", r->violations[ORACLE_LOST],
	        r->violations[ORACLE_PHANTOM], r->violations[ORACLE_HOLE],
	        r->violations[ORACLE_ORDER], r->structure, r->writer);
	show_latency(out, "recovery (verify open)", &r->recovery_ns);
	show_latency(out, "recovery (writer open)", &r->writer_open_ns);
	fprintf(out, "  torn tails cut         %" PRIu64 " of %zu writer opens\n",
	        r->tails_cut, r->writer_open_ns.n);
	summary_faults(r, o, out);
	show_latency(out, "fdatasync before", &r->sync_before);
	show_latency(out, "fdatasync after", &r->sync_after);
	if (r->no_verdict && !bad)
		fprintf(out, "  no verdict             nothing was acknowledged in "
		        "%" PRIu64 " cycles and no writer met an injected fault: "
		        "the run tested nothing (%s)\n", r->cycles,
		        o->target_http
		        ? "does the server answer a PUT? try a longer "
		          "--kill-every or a longer --duration"
		        : "try a longer --kill-every, a longer --duration or "
		          "fewer --early-kills");
	else if (!bad && r->acked == 0 && r->cycles > 0)
		fprintf(out, "  acknowledged nothing   every writer met an injected "
		        "fault before its first answer (%" PRIu64 " failed opens, "
		        "%" PRIu64 " failed commits): this PASS is about how they "
		        "were handled, not about durability\n", r->failed_opens,
		        r->failed_commits);
	fprintf(out, "  seed                   %" PRIu64 "\n", o->seed);
	fprintf(out, "  store                  %s (%s)\n", r->dir,
	        r->dir_kept ? "kept" : "removed");
	if (!bad)
		return;
	options_reproducer(o, repro, sizeof(repro));
	fprintf(out, "  first violation        cycle %" PRIu64 ": %s\n",
	        r->first_cycle, r->first);
	fprintf(out, "  reproduce with         %s %s\n", prog, repro);
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_latency(FILE *f, const char *name, samples *s)
{
	fprintf(f, "  \"%s\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f, "
	        "\"samples\": %zu},\n", name, samples_pct(s, 50) / 1e6,
	        samples_pct(s, 99) / 1e6, samples_pct(s, 100) / 1e6, s->n);
}

/* The fault simulator's figures; zeros when it took no part. */
static void json_faults(FILE *f, const report *r, const torture_options *o)
{
	fprintf(f, "  \"power_loss\": %s,\n  \"enumerate\": %s,\n"
	        "  \"fail_specs\": %u,\n  \"power_cuts\": %" PRIu64 ",\n"
	        "  \"crash_states\": %" PRIu64 ",\n  \"enum_steps\": %" PRIu64
	        ",\n  \"faults_fired\": %" PRIu64 ",\n  \"failed_commits\": %"
	        PRIu64 ",\n  \"failed_opens\": %" PRIu64 ",\n"
	        "  \"compact_every_ms\": %.3f,\n  \"compact_kills\": %" PRIu64
	        ",\n  \"device_views\": %" PRIu64 ",\n  \"cuts_deferred\": %"
	        PRIu64 ",\n  \"reader_seen\": %" PRIu64 ",\n  \"rot_checks\": %"
	        PRIu64 ",\n  \"rot_errors\": %" PRIu64 ",\n  \"rot_hinted\": %" PRIu64
	        ",\n  \"rot_pending\": %" PRIu64 ",\n  \"view_checks\": %"
	        PRIu64 ",\n  \"early_kills\": %" PRIu64 ",\n  \"sync_crashes\": %"
	        PRIu64 ",\n", o->power_loss ? "true" : "false",
	        o->enumerate ? "true" : "false", o->nfail, r->power_cuts,
	        o->enumerate ? r->cycles : 0, r->enum_steps, r->faults_fired,
	        r->failed_commits, r->failed_opens, o->compact_every_ns / 1e6,
	        r->compact_kills, r->device_views, r->cuts_deferred,
	        r->reader_seen, r->rot_checks, r->rot_errors, r->rot_hinted,
	        r->rot_pending, r->view_checks,
	        r->early_kills, r->sync_crashes);
}

int report_json(report *r, const torture_options *o, const char *path)
{
	FILE *f = fopen(path, "w");
	char repro[1200], unsafe[80];
	int rc;

	if (!f)
		return -1;
	options_reproducer(o, repro, sizeof(repro));
	fprintf(f, "{\n  \"result\": \"%s\",\n", report_violations(r) ?
	        "fail" : r->no_verdict ? "no-verdict" : "pass");
	fprintf(f, "  \"cycles\": %" PRIu64 ",\n  \"kills\": %" PRIu64 ",\n"
	        "  \"acked_writes\": %" PRIu64 ",\n  \"acked_changes\": %" PRIu64
	        ",\n  \"issued\": %" PRIu64 ",\n  \"keys_verified\": %" PRIu64
	        ",\n", r->cycles, r->kills, r->acked, r->acked_changes,
	        r->issued, r->verified);
	fprintf(f, "  \"lost\": %" PRIu64 ",\n  \"phantom\": %" PRIu64 ",\n"
	        "  \"holes\": %" PRIu64 ",\n  \"order\": %" PRIu64 ",\n"
	        "  \"structure_errors\": %" PRIu64 ",\n  \"writer_errors\": %"
	        PRIu64 ",\n  \"tails_cut\": %" PRIu64 ",\n",
	        r->violations[ORACLE_LOST], r->violations[ORACLE_PHANTOM],
	        r->violations[ORACLE_HOLE], r->violations[ORACLE_ORDER],
	        r->structure, r->writer, r->tails_cut);
	fprintf(f, "  \"elapsed_s\": %.3f,\n  \"cycles_per_second\": %.2f,\n"
	        "  \"acked_per_second\": %.1f,\n", seconds(r->elapsed_ns),
	        per_second(r->cycles, r->elapsed_ns),
	        per_second(r->acked, r->elapsed_ns));
	json_latency(f, "recovery_ms", &r->recovery_ns);
	json_latency(f, "writer_open_ms", &r->writer_open_ns);
	json_latency(f, "fdatasync_before_ms", &r->sync_before);
	json_latency(f, "fdatasync_after_ms", &r->sync_after);
	fprintf(f, "  \"kill_every_ms\": %.3f,\n  \"jitter_pct\": %u,\n"
	        "  \"threads\": %u,\n  \"keys\": %u,\n  \"value_size\": [%u, %u],"
	        "\n  \"unsafe\": ", o->kill_every_ns / 1e6, o->jitter_pct,
	        o->threads, o->keys, o->value_min, o->value_max);
	options_unsafe_names(o, unsafe, sizeof(unsafe));
	if (o->unsafe)
		json_string(f, unsafe);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"interrupted\": %s,\n", r->interrupted ? "true" :
	        "false");
	json_faults(f, r, o);
	fprintf(f, "  \"seed\": %" PRIu64 ",\n  \"dir\": ", o->seed);
	json_string(f, r->dir);
	fprintf(f, ",\n  \"dir_kept\": %s,\n  \"first_violation\": ",
	        r->dir_kept ? "true" : "false");
	if (r->first[0])
		json_string(f, r->first);
	else
		fputs("null", f);
	fputs(",\n  \"reproducer\": ", f);
	json_string(f, repro);
	fputs("\n}\n", f);
	rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

void report_free(report *r)
{
	samples_free(&r->recovery_ns);
	samples_free(&r->writer_open_ns);
	samples_free(&r->sync_before);
	samples_free(&r->sync_after);
}
