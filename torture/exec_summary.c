/*
 * exec_summary.c -- what a run of `torture --target exec` says when it
 * ends (exec_internal.h): the command that replays it, the summary block,
 * the JSON line.
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the summary ------------------------------------------------------------- */

void exec_replay_line(const xrun *r, char *buf, size_t cap)
{
	char qw[4096], qc[4096];
	size_t n;

	exec_shell_quote(r->o->workload, qw, sizeof qw);
	exec_shell_quote(r->o->checker, qc, sizeof qc);
	if (r->o->adapter)
		n = (size_t)snprintf(buf, cap, "%s --target %s:%s", r->prog,
		                     r->o->adapter->name, r->o->adapter_config);
	else
		n = (size_t)snprintf(buf, cap, "%s --target exec --workload %s "
		                     "--checker %s", r->prog, qw, qc);
	/* the period in force at the end, never "auto": under --kill-every
	 * auto the earlier cycles had shorter lives (docs/targets.md) */
	n += (size_t)snprintf(buf + n, cap - n, " --kill-every %.3fms "
	                      "--jitter %u --keys %u --seed %" PRIu64,
	                      (double)r->kill_every_ns / 1e6,
	                      r->o->jitter_pct, r->o->keys, r->o->seed);
	if (n < cap && (r->first[0] || r->stopped))
		n += (size_t)snprintf(buf + n, cap - n, " --cycles %" PRIu64,
		                      r->first[0] ? r->first_cycle :
		                      r->cycle_now);
	if (n < cap && (r->o->power_loss || r->o->enumerate))
		n += (size_t)snprintf(buf + n, cap - n, "%s%s --device %s "
		                      "--sector %u",
		                      r->o->power_loss ? " --power-loss" : "",
		                      r->o->enumerate ? " --enumerate" : "",
		                      faultsim_device_name(
		                              (faultsim_device)r->o->device),
		                      r->o->sector);
	if (n < cap && r->o->fs != FAULTSIM_FS_POSIX)
		n += (size_t)snprintf(buf + n, cap - n, " --fs %s",
		                      faultsim_fs_name((faultsim_fs)r->o->fs));
	for (unsigned i = 0; i < r->o->nfail && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, " --fail %s",
		                      r->o->fail[i]);
	if (n < cap && r->o->nfail)
		n += (size_t)snprintf(buf + n, cap - n, " --fsync-profile %s",
		                      faultsim_profile_name(
		                              (faultsim_profile)r->o->profile));
	if (n < cap && r->o->volatile_files &&
	    !(r->o->adapter &&
	      r->o->volatile_files == r->o->adapter->volatile_files)) {
		char qv[1100];
		exec_shell_quote(r->o->volatile_files, qv, sizeof qv);
		n += (size_t)snprintf(buf + n, cap - n, " --volatile %s", qv);
	}
	if (n < cap && r->o->setup) {
		char qs[4096];
		exec_shell_quote(r->o->setup, qs, sizeof qs);
		n += (size_t)snprintf(buf + n, cap - n, " --setup %s", qs);
	}
	if (n < cap && r->o->syscall_backstop)
		n += (size_t)snprintf(buf + n, cap - n, " --syscall-backstop");
	if (n < cap && r->o->front_end)
		n += (size_t)snprintf(buf + n, cap - n, " --front-end %s",
		                      r->o->front_end == TORTURE_FRONT_SHIM ?
		                      "shim" : "supervisor");
	if (n < cap && r->o->user) {
		char qu[300];
		exec_shell_quote(r->o->user, qu, sizeof qu);
		n += (size_t)snprintf(buf + n, cap - n, " --user %s", qu);
	}
	/* no --dir: the one given holds what the crash left now, and a
	 * replay starts from a fresh directory (and --setup, if any) */
}

uint64_t exec_total_violations(const xrun *r)
{
	uint64_t n = r->structure + r->writer + r->unavailable;
	for (int i = 0; i < ORACLE_KINDS; i++)
		n += r->violations[i];
	return n;
}

/* The lives: the period, how many cycles acknowledged nothing, and
 * whether that many means the lives are too short. */
static void summary_lives(const xrun *r)
{
	char per[32], from[32];

	exec_period_text(r->kill_every_ns, per, sizeof per);
	exec_period_text(r->o->kill_every_ns, from, sizeof from);
	if (r->o->kill_every_auto)
		printf("  kill every             %s +-%u%% (--kill-every auto, "
		       "from %s, lengthened %" PRIu64 " times)\n", per,
		       r->o->jitter_pct, from, r->doublings);
	else
		printf("  kill every             %s +-%u%%\n", per,
		       r->o->jitter_pct);
	/* counted over the cycles that passed: none when the first failed */
	if (r->observed)
		printf("  acknowledged nothing   %" PRIu64 " of %" PRIu64
		       " cycles%s\n", r->dry, r->observed,
		       r->observed < r->cycles ? " that passed" : "");
	if (exec_lives_too_short(r))
		printf("  lives too short        %" PRIu64 " of %" PRIu64 " cycles "
		       "at %s acknowledged nothing: the lives are too short for "
		       "this program; %s\n", r->period_dry, r->period_cycles, per,
		       r->o->kill_every_auto ? "--kill-every auto is at its cap"
		       : "try --kill-every auto or a longer --kill-every");
}

void exec_summary(const xrun *r, int rc, const char *replay)
{
	double el = (double)(now_ns() - r->start_ns) / 1e9;

	printf("torture: %s -- %" PRIu64 " cycles %sin %.1fs (%.1f cycles/s), "
	       "%" PRIu64 " kills, %" PRIu64 " ended on their own\n",
	       rc == 0 ? "PASS" : rc == 1 ? "FAIL" : rc == 3 ? "UNAVAILABLE"
	                                                        : "STOPPED",
	       r->cycles,
	       rc == 2 ? "passed " : "", el,
	       el > 0 ? (double)r->cycles / el : 0.0, r->kills, r->exits);
	printf("  workload               %s\n", r->workload);
	printf("  checker                %s\n", r->checker);
	printf("  acknowledged           %" PRIu64 " of %" PRIu64 " operations "
	       "issued\n", r->acked, r->issued);
	if (!r->o->enumerate)
		summary_lives(r);
	printf("  violations             lost %" PRIu64 "  phantom %" PRIu64
	       "  structure %" PRIu64 "  writer %" PRIu64 "  unavailable %"
	       PRIu64 "\n",
	       r->violations[ORACLE_LOST], r->violations[ORACLE_PHANTOM],
	       r->structure, r->writer, r->unavailable);
	if (r->o->power_loss || r->o->enumerate || r->o->nfail)
		printf("  file system model      %s\n",
		       faultsim_fs_name((faultsim_fs)r->o->fs));
	if (r->o->power_loss || r->o->enumerate)
		printf("  power cuts             %" PRIu64 " (unsynced writes lost "
		       "%" PRIu64 ", torn %" PRIu64 ", namespace ops undone %"
		       PRIu64 ")\n", r->power_cuts, r->cut_lost, r->cut_torn,
		       r->cut_undone);
	if (r->o->enumerate)
		printf("  crash states           %" PRIu64 " of %" PRIu64
		       " durability-relevant calls checked\n", r->cycles,
		       r->steps);
	if (r->o->nfail)
		printf("  faults injected        %" PRIu64 " (workloads that "
		       "stopped on one: %" PRIu64 ")\n", r->faults_fired,
		       r->fault_stops);
	printf("  tracked calls          %" PRIu64 " bytes written through "
	       "the %s\n", r->ctl ? r->ctl->bytes : 0,
	       r->sup_workload ? "supervisor" : "shim");
	printf("  front end              workload: %s, checker: %s",
	       r->sup_workload ? "supervisor" : "shim",
	       r->sup_checker ? "supervisor" : "shim");
	if (r->sup_workload || r->sup_checker)
		printf(" (%" PRIu64 " calls answered%s%s)", r->sup_calls,
		       r->front_why[0][0] || r->front_why[1][0] ? "; " : "",
		       r->front_why[0][0] ? r->front_why[0] : r->front_why[1]);
	printf("\n");
	printf("  seed                   %" PRIu64 "\n", r->o->seed);
	printf("  directory              %s (%s)\n", r->dir,
	       rc != 0 || !r->dir_made ? "kept" : "removed");
	if (rc == 1) {
		printf("  first violation        cycle %" PRIu64 ": %s\n",
		       r->first_cycle, r->first);
		printf("  replay with            %s\n", replay);
	}
	if (rc == 2) {
		printf("  stopped in             cycle %" PRIu64 ", by the %s: "
		       "%s\n", r->cycle_now, r->stage, exec_setup_said);
		printf("  try                    %s\n",
		       exec_setup_try ? exec_setup_try : TRY_OTHER);
		printf("  replay with            %s\n", replay);
		printf("  exit status            2: a set-up error, no verdict on "
		       "cycle %" PRIu64 "; the %" PRIu64 " cycles before it "
		       "passed\n",
		       r->cycle_now, r->cycles);
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_lives(FILE *f, const xrun *r)
{
	fprintf(f, ", \"kill_every_ms\": %.3f, \"kill_every_auto\": %s"
	        ", \"kill_every_doublings\": %" PRIu64
	        ", \"cycles_without_acks\": %" PRIu64
	        ", \"exec_lives_too_short\": %s", (double)r->kill_every_ns / 1e6,
	        r->o->kill_every_auto ? "true" : "false", r->doublings, r->dry,
	        exec_lives_too_short(r) ? "true" : "false");
}

/* A set-up error after cycles that passed: flat fields (campaign_json.c
 * reads flat objects), null when the run was not stopped. */
static void json_refusal(FILE *f, const xrun *r)
{
	if (!r->stopped) {
		fprintf(f, ", \"refusal\": null, \"refusal_cycle\": null, "
		        "\"refusal_by\": null, \"refusal_try\": null");
		return;
	}
	fprintf(f, ", \"refusal\": ");
	json_string(f, exec_setup_said);
	fprintf(f, ", \"refusal_cycle\": %" PRIu64 ", \"refusal_by\": \"%s\""
	        ", \"refusal_try\": ", r->cycle_now, r->stage);
	json_string(f, exec_setup_try ? exec_setup_try : TRY_OTHER);
}

int exec_write_json(const xrun *r, int rc, const char *replay)
{
	FILE *f = fopen(r->o->json, "w");
	double el = (double)(now_ns() - r->start_ns) / 1e9;

	if (!f)
		return -1;
	fprintf(f, "{\"target\": \"%s%s%s\", \"result\": \"%s\", "
	        "\"workload\": ", r->o->adapter ? r->o->adapter->name : "exec",
	        r->o->adapter ? ":" : "",
	        r->o->adapter ? r->o->adapter_config : "",
	        rc == 0 ? "pass" : rc == 1 ? "fail" : rc == 3 ? "unavailable"
	                                                    : "setup-error");
	json_string(f, r->o->workload);
	fprintf(f, ", \"checker\": ");
	json_string(f, r->o->checker);
	fprintf(f, ", \"cycles\": %" PRIu64 ", \"kills\": %" PRIu64
	        ", \"exits\": %" PRIu64 ", \"acked_writes\": %" PRIu64
	        ", \"issued\": %" PRIu64 ", \"lost\": %" PRIu64
	        ", \"phantom\": %" PRIu64 ", \"holes\": %" PRIu64
	        ", \"order\": %" PRIu64 ", \"structure_errors\": %" PRIu64
	        ", \"writer_errors\": %" PRIu64 ", \"unavailable\": %" PRIu64
	        ", \"elapsed_s\": %.3f"
	        ", \"cycles_per_second\": %.2f, \"power_loss\": %s"
	        ", \"enumerate\": %s, \"device\": \"%s\", \"sector\": %u"
	        ", \"power_cuts\": %" PRIu64 ", \"crash_states\": %" PRIu64
	        ", \"enum_steps\": %" PRIu64 ", \"faults_fired\": %" PRIu64
	        ", \"fault_stops\": %" PRIu64
	        ", \"seed\": %" PRIu64 ", \"dir\": ",
	        r->cycles, r->kills, r->exits, r->acked, r->issued,
	        r->violations[ORACLE_LOST], r->violations[ORACLE_PHANTOM],
	        r->violations[ORACLE_HOLE], r->violations[ORACLE_ORDER],
	        r->structure, r->writer, r->unavailable, el,
	        el > 0 ? (double)r->cycles / el : 0,
	        r->o->power_loss ? "true" : "false",
	        r->o->enumerate ? "true" : "false",
	        faultsim_device_name((faultsim_device)r->o->device),
	        r->o->sector, r->power_cuts, r->o->enumerate ? r->cycles : 0,
	        r->steps, r->faults_fired, r->fault_stops, r->o->seed);
	json_string(f, r->dir);
	fprintf(f, ", \"dir_kept\": %s, \"first_violation\": ",
	        rc != 0 || !r->dir_made ? "true" : "false");
	if (r->first[0])
		json_string(f, r->first);
	else
		fprintf(f, "null");
	fprintf(f, ", \"reproducer\": ");
	json_string(f, replay);
	json_lives(f, r);
	json_refusal(f, r);
	fprintf(f, ", \"front_end_workload\": \"%s\", \"front_end_checker\": "
	        "\"%s\", \"supervisor_calls\": %" PRIu64 ", \"recorded_bytes\": %"
	        PRIu64, r->sup_workload ? "supervisor" : "shim",
	        r->sup_checker ? "supervisor" : "shim", r->sup_calls,
	        r->ctl ? r->ctl->bytes : 0);
	fprintf(f, "}\n");
	return fclose(f);
}

