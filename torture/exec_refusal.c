/*
 * exec_refusal.c -- how `torture --target exec` stops on what it cannot
 * judge (exec_internal.h): a set-up error, said at once and kept for the
 * summary with what to try, and a refusal of the shim, the seccomp guard
 * or the supervisor, turned into one.
 */
#include "exec_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- set-up errors ----------------------------------------------------------- */

/* The first set-up error's words and what to try, kept for the summary
 * of a run that stops on one after cycles that passed (set-up errors end
 * the run, so the first is the one that counts). */
char exec_setup_said[700];
const char *exec_setup_try;

#define TRY_REFUSED "avoid the call (a mode of the program without it), " \
	"name files it never needs after a crash in --volatile, or for a " \
	"full cache or file table a shorter --kill-every or kills alone " \
	"(docs/faults.md, \"The shim: what it sees\" and \"What the kit " \
	"sees\": the refusals of each front end)"

static int setup_verror(const char *hint, const char *fmt, va_list ap)
{
	va_list copy;

	va_copy(copy, ap);
	fprintf(stderr, "torture: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	if (!exec_setup_said[0]) {
		vsnprintf(exec_setup_said, sizeof exec_setup_said, fmt, copy);
		exec_setup_try = hint;
	}
	va_end(copy);
	return 2;
}

int exec_setup_error(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = setup_verror(NULL, fmt, ap);
	va_end(ap);
	return rc;
}

/* A set-up error that comes with what to try (HINT, one of TRY_*). */
int exec_setup_refusal(const char *hint, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = setup_verror(hint, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- refusals --------------------------------------------------------------- */

/* A refusal recorded by the program that ran last: 1 after its set-up
 * error, 0 when there is none. */
int exec_refused(xrun *r)
{
	if (!__atomic_load_n(&r->ctl->refused, __ATOMIC_ACQUIRE))
		return 0;
	if (strncmp(r->ctl->refusal, GUARD_SAYS, strlen(GUARD_SAYS)) == 0)
		exec_setup_refusal(TRY_REFUSED, "the seccomp guard refused: %s",
		              r->ctl->refusal + strlen(GUARD_SAYS));
	else if (strncmp(r->ctl->refusal, SUPERVISOR_SAYS,
	                 strlen(SUPERVISOR_SAYS)) == 0)
		exec_setup_refusal(TRY_REFUSED, "the supervisor refused: %s",
		              r->ctl->refusal + strlen(SUPERVISOR_SAYS));
	else
		exec_setup_refusal(TRY_REFUSED, "the shim refused: %s",
		              r->ctl->refusal);
	return 1;
}
