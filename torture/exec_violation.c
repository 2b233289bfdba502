/*
 * exec_violation.c -- a violation as `torture --target exec` reports it
 * (exec_internal.h): its line, the first one kept for the summary, the
 * program's last tracked calls before the crash with whether each was
 * synced, and the replay that explains it (exec_crash.c).
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- explaining a violation --------------------------------------------------- */

static int later_sync(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	for (uint64_t j = i + 1; j < r->ring_n; j++) {
		const shim_call *d = &r->ring[j];
		if (d->result < 0)
			continue;
		if (d->op == SHIM_OP_SYNC_ALL)
			return 1;
		if ((d->op == SHIM_OP_FSYNC || d->op == SHIM_OP_FDATASYNC ||
		     d->op == SHIM_OP_MSYNC) &&
		    d->file == c->file && c->file >= 0)
			return 1;
	}
	return 0;
}

/* A namespace call: was its directory synced after it? */
static int later_dir_sync(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	char dir[SHIM_LABEL];
	const char *arrow = strstr(c->path, " -> ");
	const char *name = arrow ? arrow + 4 : c->path, *slash;

	slash = strrchr(name, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - name) : 0, name);
	for (uint64_t j = i + 1; j < r->ring_n; j++) {
		const shim_call *d = &r->ring[j];
		if (d->result < 0)
			continue;
		if (d->op == SHIM_OP_SYNC_ALL)
			return 1;
		if (d->op != SHIM_OP_DIR_FSYNC)
			continue;
		/* the label of the watched directory itself is its full path */
		if ((!dir[0] && d->path[0] == '/') || strcmp(d->path, dir) == 0)
			return 1;
	}
	return 0;
}

static void show_call(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	char state[64] = "";

	switch (c->inflight ? 0 : c->op) {
	case 0:
		snprintf(state, sizeof state, "IN FLIGHT at the kill");
		break;
	case SHIM_OP_WRITE: case SHIM_OP_TRUNCATE: case SHIM_OP_ALLOCATE:
	case SHIM_OP_MAP_WRITE:
		snprintf(state, sizeof state, "%s", c->durable ? "synced (O_SYNC)"
		         : later_sync(r, i) ? "synced later" : "NOT synced");
		break;
	case SHIM_OP_CREATE: case SHIM_OP_RENAME: case SHIM_OP_UNLINK:
	case SHIM_OP_LINK:
		snprintf(state, sizeof state, "%s", later_dir_sync(r, i) ?
		         "directory synced later" : "directory NOT synced");
		break;
	default:
		break;
	}
	if (c->op == SHIM_OP_WRITE || c->op == SHIM_OP_ALLOCATE ||
	    c->op == SHIM_OP_MAP_WRITE)
		fprintf(stderr, "    %-16s %-28s off %" PRIu64 " len %" PRIu64
		        " -> %" PRId64 "  %s\n", shim_op_name(c->op), c->path,
		        c->off, c->len, c->result, state);
	else if (c->op == SHIM_OP_TRUNCATE)
		fprintf(stderr, "    %-16s %-28s to %" PRIu64 " -> %" PRId64
		        "  %s\n", shim_op_name(c->op), c->path, c->off,
		        c->result, state);
	else
		fprintf(stderr, "    %-16s %-28s -> %" PRId64 "  %s\n",
		        shim_op_name(c->op), c->path, c->result, state);
}

/* The program's last tracked calls before the crash: on the files whose
 * name contains KEY when there are such, else on every file. */
static void explain_calls(const xrun *r, const char *key)
{
	uint64_t shown = 0, idx[CALLS_SHOWN];
	int by_name = 0;

	/* the workload's protocol lines (in the ring for the trace and the
	 * minimised cause) are not calls: the list shows calls on files */
	for (uint64_t i = 0; key[0] && i < r->ring_n; i++)
		if (r->ring[i].op != SHIM_OP_PROTOCOL &&
		    strstr(r->ring[i].path, key))
			by_name = 1;
	for (uint64_t i = r->ring_n; i-- > 0 && shown < CALLS_SHOWN;)
		if (r->ring[i].op != SHIM_OP_PROTOCOL &&
		    (!by_name || strstr(r->ring[i].path, key)))
			idx[shown++] = i;
	if (!shown)
		return;
	fprintf(stderr, "  the program's last tracked calls%s%s%s before the "
	        "crash (oldest first):\n", by_name ? " on files named for \"" :
	        "", by_name ? key : "", by_name ? "\"" : "");
	while (shown-- > 0)
		show_call(r, idx[shown]);
}

void exec_on_violation(void *arg, int kind, const char *key,
                       const char *what)
{
	vctx *v = arg;
	xrun *r = v->r;
	char line[900];

	if (key[0])
		snprintf(line, sizeof line, "%s: key \"%s\": %s",
		         oracle_kind_name(kind), key, what);
	else
		snprintf(line, sizeof line, "%s: %s", oracle_kind_name(kind),
		         what);
	fprintf(stderr, "torture: cycle %" PRIu64 ": %s\n", v->cycle, line);
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "%s", line);
		r->first_cycle = v->cycle;
		snprintf(r->first_key, sizeof r->first_key, "%s", key);
		explain_calls(r, key);
		exec_explain_violation(r, v->cycle, key[0] ? key : NULL);
	}
	v->printed++;
}

void exec_structure_violation(xrun *r, uint64_t cycle, const char *what)
{
	fprintf(stderr, "torture: cycle %" PRIu64 ": structure: %s\n", cycle,
	        what);
	r->structure++;
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "structure: %s", what);
		r->first_cycle = cycle;
		explain_calls(r, "");
		exec_explain_violation(r, cycle, NULL);
	}
}

/* The checker exited CHECKER_UNAVAILABLE: the program refuses to start or
 * needs a person to repair it (a stale lock, a paranoid check, a torn log
 * it will not truncate) -- an availability verdict, kept apart from lost
 * data. */
void exec_availability_violation(xrun *r, uint64_t cycle)
{
	fprintf(stderr, "torture: cycle %" PRIu64 ": availability: the checker "
	        "exited %d after the crash: the program refuses to start or "
	        "needs manual repair\n", cycle, CHECKER_UNAVAILABLE);
	r->unavailable++;
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "availability: the checker "
		         "exited %d after the crash: the program refuses to "
		         "start or needs manual repair", CHECKER_UNAVAILABLE);
		r->first_cycle = cycle;
		explain_calls(r, "");
	}
}
