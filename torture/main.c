/*
 * main.c -- torture: kill writers that embed keel, recover, and prove that
 * every acknowledged write survived and nothing else appeared.
 *
 * Exit status: 0 no violation, 1 a violation (first one and a reproducer
 * printed, store kept), 2 bad usage or set-up (message printed).
 * The flags are in options.c (--help); the loop in run.c; the oracle in
 * oracle.c; docs/torture.md explains all of it.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include "campaign.h"
#include "exec_target.h"
#include "faults.h"
#include "options.h"
#include "report.h"
#include "run.h"

static void on_signal(int sig)
{
	(void)sig;
	run_request_stop();
}

/* SIGINT / SIGTERM end the run after the current cycle, with a summary. */
static void catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int main(int argc, char **argv)
{
	torture_options opt;
	report r;
	int rc, report_mode;

	/* --campaign and --report are modes of their own (campaign.h) */
	if (campaign_wanted(argc, argv, &report_mode))
		return report_mode ? campaign_report_main(argc, argv) :
		       campaign_main(argc, argv);
	options_default(&opt);
	rc = options_parse(&opt, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : RUN_SETUP;
	if (opt.target_exec) /* any program, under the shim: its own loop */
		return exec_target_main(&opt, argv[0]);
	/* the simulator's shared memory must exist before the first fork */
	if (faults_setup(&opt) < 0)
		return RUN_SETUP;
	catch_stop_signals();
	memset(&r, 0, sizeof(r));
	rc = run_torture(&opt, &r);
	if (rc != RUN_SETUP || r.no_verdict) {
		report_summary(&r, &opt, argv[0], stdout);
		fflush(stdout);
		if (opt.json && report_json(&r, &opt, opt.json) < 0) {
			fprintf(stderr, "torture: --json %s: %s\n", opt.json,
			        strerror(errno));
			if (rc == RUN_PASS)
				rc = RUN_SETUP;
		}
	}
	report_free(&r);
	faults_free(opt.faults);
	return rc;
}
