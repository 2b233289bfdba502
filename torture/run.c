/*
 * run.c -- the kill / recover / verify loop (see run.h).
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"
#include "oracle.h"
#include "proto.h"
#include "setup.h"
#include "synclat.h"
#include "writer.h"

static volatile sig_atomic_t stop_requested;

/* A recovery or check that hangs is a finding too: after this long the
 * harness gives up, says so and leaves the store where it is. */
#define VERIFY_WATCHDOG_S 60u

static void on_watchdog(int sig)
{
	static const char msg[] = "\ntorture: FAIL -- recovery or verification "
	                          "hung for 60 s (an engine deadlock?); the "
	                          "store is kept\n";
	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(RUN_FAIL);
	_exit(RUN_FAIL);
}

void run_request_stop(void)
{
	stop_requested = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* How long this cycle's writer lives: --kill-every +- --jitter percent,
 * drawn from the seed so a reproducer kills at the same moments. */
static uint64_t kill_delay(const torture_options *o, uint64_t cycle)
{
	double u = (double)(mix(o->seed ^ mix(cycle) ^ 0x6b696c6cull) >> 11) /
	           (double)(1ull << 53);
	double f = 1.0 + (double)o->jitter_pct / 100.0 * (2.0 * u - 1.0);

	return (uint64_t)((double)o->kill_every_ns * f);
}

/* Per-cycle state of the harness while a writer runs. */
typedef struct cycle {
	const torture_options *opt;
	oracle *model;
	report *r;
	int errors;       /* violations reported this cycle          */
} cycle;

static void cycle_violation(cycle *c, uint64_t *counter, const char *kind,
                            const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void cycle_violation(cycle *c, uint64_t *counter, const char *kind,
                            const char *fmt, ...)
{
	char what[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	(*counter)++;
	c->errors++;
	report_violation(c->r, kind, what);
}

/* One record from the writer: into the oracle, and into the counters. */
static void take_record(cycle *c, const proto_rec *rec)
{
	int unsafe = (c->opt->unsafe & TORTURE_UNSAFE_ACK_BEFORE_COMMIT) != 0;
	const char *why = "";

	if (oracle_record(c->model, rec, &why) < 0) {
		cycle_violation(c, &c->r->writer, "harness",
		                "record from the writer refused: %s", why);
		return;
	}
	switch (rec->kind) {
	case PROTO_OPENED:
		if (rec->rc == KEEL_OK) {
			samples_add(&c->r->writer_open_ns, rec->ns);
			c->r->tails_cut += rec->count == KEEL_RECOVERY_TRUNCATED;
		} else {
			cycle_violation(c, &c->r->structure, "structure",
			                "the writer's keel_open failed after a "
			                "crash: %s", keel_strerror(rec->rc));
		}
		break;
	case PROTO_INTENT:
		c->r->issued++;
		break;
	case PROTO_ACK:
		c->r->acked++;
		c->r->acked_changes += rec->count;
		break;
	case PROTO_DONE:
		if (rec->rc == KEEL_OK && !unsafe) {
			c->r->acked++;
			c->r->acked_changes += rec->count;
		} else if (rec->rc != KEEL_OK) {
			cycle_violation(c, &c->r->writer, "writer",
			                "thread %u op seq %" PRIu64 ": commit "
			                "failed: %s", rec->thread, rec->seq,
			                keel_strerror(rec->rc));
		}
		break;
	}
}

/* Reads what the pipe holds; returns 1 at end of file. */
static int pump(cycle *c, proto_reader *rd, int fd)
{
	proto_rec rec;
	long n;

	for (;;) {
		n = proto_read(rd, fd);
		while (proto_next(rd, &rec))
			take_record(c, &rec);
		if (n == 0)
			return 1;
		if (n < 0)
			return 0; /* EAGAIN: nothing more for now */
	}
}

/* Lets the writer run until its kill time, kills it, reaps it and drains
 * its pipe.  0, or -1 when the writer could not be started. */
static int run_writer(cycle *c, const setup *s, uint64_t cycle_no)
{
	writer_plan plan = {
		.opt = c->opt, .model = c->model, .path = s->path,
		.seed = mix(c->opt->seed ^ mix(cycle_no)),
	};
	proto_reader rd = {.have = 0};
	struct pollfd pfd;
	uint64_t deadline;
	int status = 0, eof = 0, fd;
	pid_t pid;

	if (writer_spawn(&plan, &pid, &fd) < 0) {
		fprintf(stderr, "torture: cannot start a writer: %s\n",
		        strerror(errno));
		return -1;
	}
	deadline = now_ns() + kill_delay(c->opt, cycle_no);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!eof) {
		uint64_t now = now_ns();
		struct timespec ts;
		if (now >= deadline)
			break;
		ts.tv_sec = (time_t)((deadline - now) / 1000000000ull);
		ts.tv_nsec = (long)((deadline - now) % 1000000000ull);
		if (ppoll(&pfd, 1, &ts, NULL) > 0)
			eof = pump(c, &rd, fd);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* The writer is gone; everything it wrote is still in the pipe. */
	fcntl(fd, F_SETFL, 0);
	pump(c, &rd, fd);
	close(fd);
	if (proto_pending(&rd))
		cycle_violation(c, &c->r->writer, "harness", "a torn record "
		                "in the pipe (%zu bytes)", proto_pending(&rd));
	if (!eof && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		c->r->kills++;
	else if (!c->errors)
		cycle_violation(c, &c->r->writer, "writer", "the writer ended "
		                "before it was killed (%s %d)",
		                WIFSIGNALED(status) ? "signal" : "exit status",
		                WIFSIGNALED(status) ? WTERMSIG(status) :
		                                      WEXITSTATUS(status));
	return 0;
}

static void oracle_says(void *arg, int kind, const char *what)
{
	cycle *c = arg;

	c->errors++;
	report_violation(c->r, oracle_kind_name(kind), what);
}

static void check_says(void *arg, uint64_t offset, const char *what)
{
	cycle *c = arg;
	char line[300];

	snprintf(line, sizeof(line), "keel_check: offset %" PRIu64 ": %s",
	         offset, what);
	c->errors++;
	report_violation(c->r, "structure", line);
}

/*
 * The first open after the crash, read-only so the file stays the crash
 * image.  (Under the fault simulator's power-loss mode the post-crash file
 * is built first; this open then reads it like any other.)
 */
static int verify_open(const setup *s, keel_db **db)
{
	keel_options ko = {.flags = KEEL_RDONLY | KEEL_NOCREATE};
	return keel_open(s->path, &ko, db);
}

/* Feeds the recovered store to the oracle, then runs keel_check.  -1 when
 * no snapshot could be taken (the oracle was not fed). */
static int verify_contents(cycle *c, keel_db *db)
{
	keel_snapshot *snap = NULL;
	keel_iter *it = NULL;
	keel_check_result cr;
	const void *key;
	size_t klen;
	keel_view v;
	int rc, fed = 0;

	rc = keel_snapshot_open(db, &snap);
	if (rc == KEEL_OK) {
		oracle_verify_begin(c->model, keel_snapshot_txid(snap));
		fed = 1;
		rc = keel_iter_open(snap, NULL, 0, NULL, 0, &it);
	}
	while (rc == KEEL_OK &&
	       (rc = keel_iter_next(it, &key, &klen, &v)) == KEEL_OK)
		oracle_observe(c->model, key, klen, v.data, v.len, v.rev);
	if (rc != KEEL_ENOTFOUND)
		cycle_violation(c, &c->r->structure, "structure", "reading the "
		                "recovered store: %s", keel_strerror(rc));
	if (it)
		keel_iter_close(it);
	if (snap)
		keel_snapshot_close(snap);
	memset(&cr, 0, sizeof(cr));
	rc = keel_check(db, check_says, c, &cr);
	if (rc == KEEL_ECORRUPT)
		c->r->structure += cr.problems ? cr.problems : 1;
	else if (rc != KEEL_OK)
		cycle_violation(c, &c->r->structure, "structure", "keel_check: "
		                "%s", keel_strerror(rc));
	return fed ? 0 : -1;
}

static void verify(cycle *c, const setup *s)
{
	uint64_t counts[ORACLE_KINDS], t0 = now_ns();
	keel_db *db = NULL;
	int fed, rc;

	signal(SIGALRM, on_watchdog);
	alarm(VERIFY_WATCHDOG_S);
	rc = verify_open(s, &db);
	samples_add(&c->r->recovery_ns, now_ns() - t0);
	if (rc != KEEL_OK) {
		alarm(0);
		cycle_violation(c, &c->r->structure, "structure", "recovery "
		                "refused the store: %s", keel_strerror(rc));
		return;
	}
	fed = verify_contents(c, db);
	keel_close(db);
	alarm(0);
	if (fed < 0)
		return;
	oracle_verify_end(c->model, oracle_says, c, counts);
	for (int i = 0; i < ORACLE_KINDS; i++)
		c->r->violations[i] += counts[i];
	c->r->verified += oracle_keys(c->model);
}

static int budget_left(const torture_options *o, const report *r)
{
	if (stop_requested)
		return 0;
	if (o->cycles && r->cycles >= o->cycles)
		return 0;
	return !o->duration_ns || r->elapsed_ns < o->duration_ns;
}

static void measure_sync(const setup *s, samples *out, const char *when)
{
	if (synclat_measure(s->dir, SYNCLAT_SAMPLES, out) < 0)
		fprintf(stderr, "torture: fdatasync latency %s the run not "
		        "measured: %s\n", when, strerror(errno));
}

int run_torture(const torture_options *o, report *r)
{
	oracle *model = NULL;
	setup s;
	cycle c = {.opt = o, .r = r};
	uint64_t nonce = mix(o->seed ^ (uint64_t)time(NULL) ^
	                     ((uint64_t)getpid() << 32));
	int rc = RUN_PASS;

	r->tty = isatty(STDERR_FILENO);
	if (oracle_new(o->keys, o->threads, nonce, &model) < 0) {
		fprintf(stderr, "torture: out of memory for %u keys\n", o->keys);
		return RUN_SETUP;
	}
	c.model = model;
	if (setup_prepare(o, model, &s) < 0) {
		oracle_free(model);
		return RUN_SETUP;
	}
	snprintf(r->dir, sizeof(r->dir), "%s", s.dir);
	if (!o->quiet) /* where to look, should the run be cut short */
		fprintf(stderr, "torture: seed %" PRIu64 ", store %s, kill "
		        "every %.1f ms +-%u%%, %u threads, %u keys, values "
		        "%u-%u bytes%s\n", o->seed, s.path,
		        (double)o->kill_every_ns / 1e6, o->jitter_pct,
		        o->threads, o->keys, o->value_min, o->value_max,
		        o->unsafe ? ", UNSAFE ack-before-commit" : "");
	measure_sync(&s, &r->sync_before, "before");
	r->start_ns = now_ns();
	while (budget_left(o, r)) {
		c.errors = 0;
		if (run_writer(&c, &s, r->cycles) < 0) {
			rc = RUN_SETUP;
			break;
		}
		verify(&c, &s);
		r->cycles++;
		r->elapsed_ns = now_ns() - r->start_ns;
		report_progress(r, o, now_ns(), 0);
		if (c.errors || report_violations(r)) {
			rc = RUN_FAIL;
			break;
		}
	}
	r->interrupted = stop_requested != 0;
	if (rc != RUN_SETUP)
		measure_sync(&s, &r->sync_after, "after");
	r->dir_kept = rc != RUN_PASS || !s.temporary;
	if (!r->dir_kept)
		setup_remove(&s);
	oracle_free(model);
	return rc;
}
