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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"
#include "keel.h"
#include "oracle.h"
#include "proto.h"
#include "rot.h"
#include "setup.h"
#include "synclat.h"
#include "http_target.h"
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

/* --early-kills: does this cycle's writer die right after its open? */
static int early_kill(const torture_options *o, uint64_t cycle)
{
	return o->early_pct &&
	       mix(o->seed ^ mix(cycle ^ 0x6561726c79ull)) % 100 < o->early_pct;
}

/* Per-cycle state of the harness while a writer runs. */
typedef struct cycle {
	const torture_options *opt;
	oracle *model;
	report *r;
	int errors;       /* violations reported this cycle          */
	int no_cut;       /* --enumerate's reference run: no power cut */
	int opened;       /* the writer reported a successful open     */
	int early;        /* --early-kills: this writer dies after OPENED */
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

/* Under --fail an error the engine reports for an injected fault is the
 * engine doing its job: the operation is simply not acknowledged. */
static int injected(const cycle *c, int rc)
{
	return c->opt->nfail && rc != KEEL_OK && faults_expected_error(rc);
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
			c->opened = 1;
			samples_add(&c->r->writer_open_ns, rec->ns);
			c->r->tails_cut += rec->count == KEEL_RECOVERY_TRUNCATED;
		} else if (injected(c, rec->rc)) {
			c->r->failed_opens++;
		} else {
			cycle_violation(c, &c->r->structure, "structure",
			                "the writer's keel_open failed after a "
			                "crash: %s", keel_strerror(rec->rc));
		}
		break;
	case PROTO_INTENT:
		c->r->issued++;
		break;
	case PROTO_VIEWS:
		c->r->view_checks += rec->count;
		break;
	case PROTO_SEEN:
		c->r->reader_seen++;
		if (rec->rc != KEEL_OK)
			cycle_violation(c, &c->r->violations[ORACLE_PHANTOM],
			                "phantom", "key %u: a reader process %s%s",
			                rec->change[0].key,
			                rec->rc == KEEL_ECORRUPT ? "was shown bytes "
			                "that are not what was written, or a "
			                "checksum failed" : "could not read it: ",
			                rec->rc == KEEL_ECORRUPT ? "" :
			                keel_strerror(rec->rc));
		break;
	case PROTO_ACK:
		c->r->acked++;
		c->r->acked_changes += rec->count;
		break;
	case PROTO_DONE:
		if (rec->rc == KEEL_OK && !unsafe) {
			c->r->acked++;
			c->r->acked_changes += rec->count;
		} else if (injected(c, rec->rc)) {
			c->r->failed_commits++; /* not acknowledged: fine */
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

/* How long an --enumerate writer may take to finish or kill itself. */
#define ENUMERATE_WATCHDOG_NS 60000000000ull

/* Writer exit statuses that follow an injected fault (writer.c): 3 its
 * open failed, 0 or 5 every thread stopped on a failed commit. */
static int stopped_by_fault(const cycle *c, int status)
{
	return c->opt->nfail && WIFEXITED(status) &&
	       (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3 ||
	        WEXITSTATUS(status) == 5);
}

/* Was the way the writer ended the way it should have ended? */
static void judge_end(cycle *c, int status, int eof)
{
	int sigkill = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;

	if (sigkill && (!eof || c->opt->enumerate || c->early ||
	                c->opt->crash_on_failed_sync || c->opt->crash_specs)) {
		/* ours, or its own at the --enumerate step, after its open
		 * (--early-kills), at a failed sync or at a crash point
		 * (--fail OP:crash) */
		c->r->kills++;
		c->r->early_kills += c->early && c->opened;
		c->r->sync_crashes += eof && c->opt->crash_on_failed_sync &&
		                      !c->opt->enumerate && !c->early;
		return;
	}
	if (c->opt->enumerate && WIFEXITED(status) && !WEXITSTATUS(status))
		return; /* the workload ran to its end */
	if (c->opt->enumerate && sigkill)
		cycle_violation(c, &c->r->writer, "writer", "the writer "
		                "neither finished nor killed itself in 60 s");
	else if (!c->errors && !stopped_by_fault(c, status))
		cycle_violation(c, &c->r->writer, "writer", "the writer ended "
		                "before it was killed (%s %d)",
		                WIFSIGNALED(status) ? "signal" : "exit status",
		                WIFSIGNALED(status) ? WTERMSIG(status) :
		                                      WEXITSTATUS(status));
}

/* The writer is reaped: note a kill inside a compaction (its half-built
 * file is still there), then let the simulator cut the power or not.
 * -1 when the simulator failed (a set-up error). */
static int after_writer(cycle *c, const setup *s, uint64_t cycle_no)
{
	char compact[sizeof(s->path) + 16];
	struct stat st;

	snprintf(compact, sizeof(compact), "%s.compact", s->path);
	if (c->opt->compact_every_ns && stat(compact, &st) == 0)
		c->r->compact_kills++;
	if (!c->opt->faults || c->no_cut)
		return 0;
	return faults_after_writer(c->opt->faults, cycle_no, c->opened, c->r);
}

/* Lets the writer run until its kill time, kills it, reaps it and drains
 * its pipe.  0, or -1 when the writer could not be started or the fault
 * simulator failed. */
static int run_writer(cycle *c, const setup *s, uint64_t cycle_no)
{
	writer_plan plan = {
		.opt = c->opt, .model = c->model, .path = s->path,
		/* --enumerate repeats one workload, crash after crash */
		.seed = mix(c->opt->seed ^ mix(c->opt->enumerate ? 0 : cycle_no)),
		.early_kill = early_kill(c->opt, cycle_no),
	};
	proto_reader rd = {.have = 0};
	struct pollfd pfd;
	uint64_t deadline;
	int status = 0, eof = 0, fd;
	pid_t pid;

	c->opened = 0;
	c->early = plan.early_kill;

	if ((c->opt->target_http ? /* then pid is keel-serve's */
	     http_target_spawn(&plan, cycle_no == 0, &pid, &fd) :
	     writer_spawn(&plan, &pid, &fd)) < 0) {
		fprintf(stderr, "torture: cannot start a writer: %s\n",
		        strerror(errno));
		return -1;
	}
	deadline = now_ns() + (c->opt->enumerate ? ENUMERATE_WATCHDOG_NS :
	                       kill_delay(c->opt, cycle_no));
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
	/* --target http: the client outlives the server, to read the answers
	 * it wrote before dying; the pipe is complete once the client ends. */
	if (c->opt->target_http && http_target_reap() < 0 && !c->errors)
		cycle_violation(c, &c->r->writer, "writer", "the HTTP client "
		                "process failed (see above)");
	/* The writer is gone; everything it wrote is still in the pipe. */
	fcntl(fd, F_SETFL, 0);
	pump(c, &rd, fd);
	close(fd);
	if (proto_pending(&rd))
		cycle_violation(c, &c->r->writer, "harness", "a torn record "
		                "in the pipe (%zu bytes)", proto_pending(&rd));
	judge_end(c, status, eof);
	return after_writer(c, s, cycle_no);
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
static int verify_open(const torture_options *o, const char *path,
                       keel_db **db)
{
	/* trust-head is a recovery bug: the open that verifies must have it.
	 * The verify sees what the next writer's recovery will take: past a
	 * killed writer's durable marker too. */
	keel_options ko = {.flags = KEEL_RDONLY | KEEL_RDONLY_UNSYNCED |
	                   KEEL_NOCREATE |
	                   (o->engine_flags & KEEL_UNSAFE_TRUST_HEAD)};
	return keel_open(path, &ko, db);
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

/*
 * Verifies what the device holds, as the next writer's recovery reads it
 * (RECOVERY_READ_DEVICE), never what only the page cache holds: the state
 * adopted here is the next cycle's truth, so it must be durable.  Under
 * --cache-lives the pages a failed sync lost can still sit in the cache;
 * then a copy with the device's bytes is verified instead (the store file
 * stays the crash image).  -1 on a set-up error.
 */
static int verify(cycle *c, const setup *s)
{
	uint64_t counts[ORACLE_KINDS], t0;
	char view[sizeof(s->path) + 16];
	const char *path = s->path;
	keel_db *db = NULL;
	int fed, rc;

	snprintf(view, sizeof(view), "%s.device-view", s->path);
	rc = faults_device_view(c->opt->faults, s->path, view);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		path = view;
		c->r->device_views++;
	}
	t0 = now_ns();
	signal(SIGALRM, on_watchdog);
	alarm(VERIFY_WATCHDOG_S);
	rc = verify_open(c->opt, path, &db);
	samples_add(&c->r->recovery_ns, now_ns() - t0);
	if (rc != KEEL_OK) {
		alarm(0);
		cycle_violation(c, &c->r->structure, "structure", "recovery "
		                "refused the store%s: %s", path == view ?
		                " (the device's view of it)" : "",
		                keel_strerror(rc));
		return 0;
	}
	fed = verify_contents(c, db);
	keel_close(db);
	alarm(0);
	if (fed == 0) {
		oracle_verify_end(c->model, oracle_says, c, counts);
		for (int i = 0; i < ORACLE_KINDS; i++)
			c->r->violations[i] += counts[i];
		c->r->verified += oracle_keys(c->model);
	}
	if (c->opt->bit_rot && fed == 0 && !c->errors) {
		rc = rot_check(path, mix(c->opt->seed ^ mix(c->r->cycles ^
		                                            0x726f74ull)),
		               c->model, c->r);
		if (rc < 0)
			return -1;
		c->errors += rc;
	}
	if (path == view && !c->errors) /* kept beside a failure */
		(void)unlink(view);
	return 0;
}

static int budget_left(const torture_options *o, const report *r)
{
	if (stop_requested)
		return 0;
	if (o->cycles && r->cycles >= o->cycles)
		return 0;
	return !o->duration_ns || r->elapsed_ns < o->duration_ns;
}

/* The store's bytes before --enumerate's first writer, and putting them
 * back before each crash point (the cache is empty then: nothing it
 * records is changed behind its back). */
static int image_read(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	*buf = NULL;
	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) < 0 || !(*buf = malloc((size_t)n + 1)) ||
	    fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		if (f)
			fclose(f);
		free(*buf);
		return -1;
	}
	*len = (size_t)n;
	return fclose(f);
}

static int image_restore(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int rc = fd < 0 ? -1 : 0;

	if (rc == 0 && (write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0))
		rc = -1;
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	return rc;
}

/* One crash point: the initial store, a fresh model, a writer that kills
 * itself right after its Nth I/O step, the power cut, the verdict.
 * -1 on a set-up error (message printed). */
static int enumerate_point(cycle *c, const setup *s, uint64_t n,
                           const uint8_t *img, size_t len)
{
	const torture_options *o = c->opt;
	oracle *fresh;

	if (image_restore(s->path, img, len) < 0) {
		fprintf(stderr, "torture: --enumerate: cannot restore %s: %s\n",
		        s->path, strerror(errno));
		return -1;
	}
	if (oracle_new(o->keys, o->threads, oracle_nonce(c->model),
	               &fresh) < 0) {
		fprintf(stderr, "torture: out of memory\n");
		return -1;
	}
	oracle_free(c->model);
	c->model = fresh;
	c->errors = 0;
	faults_kill_after(o->faults, n);
	if (run_writer(c, s, n) < 0 || verify(c, s) < 0)
		return -1;
	return 0;
}

/*
 * --enumerate: run the fixed workload once to the end to learn its number
 * of I/O steps (and check the finished store), then for every step N run
 * it again from the same initial store, crash right after step N, and
 * check that crash state.  A cycle is one crash state.
 */
static int run_enumerate(cycle *c, const setup *s)
{
	const torture_options *o = c->opt;
	report *r = c->r;
	uint8_t *img = NULL;
	size_t len = 0;
	int rc = RUN_PASS;

	for (uint32_t k = 0; k < o->keys; k++)
		if (oracle_key(c->model, k)->present) {
			fprintf(stderr, "torture: --enumerate starts from an "
			        "empty store; %s holds one\n", s->path);
			return RUN_SETUP;
		}
	if (image_read(s->path, &img, &len) < 0) {
		fprintf(stderr, "torture: --enumerate: cannot read %s: %s\n",
		        s->path, strerror(errno));
		return RUN_SETUP;
	}
	c->no_cut = 1; /* the reference run ends cleanly, everything kept */
	faults_kill_after(o->faults, 0);
	rc = run_writer(c, s, 0) < 0 ? RUN_SETUP : RUN_PASS;
	c->no_cut = 0;
	r->enum_steps = faults_steps(o->faults);
	faults_forget(o->faults);
	if (rc == RUN_PASS && verify(c, s) < 0)
		rc = RUN_SETUP;
	if (rc == RUN_PASS && c->errors)
		rc = RUN_FAIL;
	for (uint64_t n = 1; rc == RUN_PASS && n <= r->enum_steps &&
	     budget_left(o, r); n++) {
		if (enumerate_point(c, s, n, img, len) < 0)
			rc = RUN_SETUP;
		r->cycles++;
		r->elapsed_ns = now_ns() - r->start_ns;
		report_progress(r, o, now_ns(), 0);
		if (rc == RUN_PASS && (c->errors || report_violations(r)))
			rc = RUN_FAIL;
	}
	free(img);
	return rc;
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
	char unsafe[80];

	r->tty = isatty(STDERR_FILENO);
	if (oracle_new(o->keys, o->threads, nonce, &model) < 0) {
		fprintf(stderr, "torture: out of memory for %u keys\n", o->keys);
		return RUN_SETUP;
	}
	c.model = model;
	if ((o->target_http && http_target_check(o) < 0) ||
	    setup_prepare(o, model, &s) < 0) {
		oracle_free(model);
		return RUN_SETUP;
	}
	snprintf(r->dir, sizeof(r->dir), "%s", s.dir);
	options_unsafe_names(o, unsafe, sizeof(unsafe));
	if (!o->quiet) /* where to look, should the run be cut short */
		fprintf(stderr, "torture: seed %" PRIu64 ", store %s, kill "
		        "every %.1f ms +-%u%%, %u threads, %u keys, values "
		        "%u-%u bytes%s%s\n", o->seed, s.path,
		        (double)o->kill_every_ns / 1e6, o->jitter_pct,
		        o->threads, o->keys, o->value_min, o->value_max,
		        o->unsafe ? ", UNSAFE " : "", unsafe);
	measure_sync(&s, &r->sync_before, "before");
	r->start_ns = now_ns();
	if (o->enumerate) /* its own loop: one crash state per cycle */
		rc = run_enumerate(&c, &s);
	while (!o->enumerate && budget_left(o, r)) {
		c.errors = 0;
		if (run_writer(&c, &s, r->cycles) < 0 || verify(&c, &s) < 0) {
			rc = RUN_SETUP;
			break;
		}
		r->cycles++;
		r->elapsed_ns = now_ns() - r->start_ns;
		report_progress(r, o, now_ns(), 0);
		if (c.errors || report_violations(r)) {
			rc = RUN_FAIL;
			break;
		}
	}
	r->interrupted = stop_requested != 0;
	/* a PASS must be earned: a run whose writer was never answered
	 * and never met an injected fault (every life killed before its
	 * first acknowledgement; a server that never answers a PUT) tested
	 * no claim at all.  One whose writers each met a fault (a failed
	 * open, a failed commit) tested how the faults were handled: its
	 * summary says that this is all it tested. */
	if (rc == RUN_PASS && r->acked == 0 && r->cycles > 0 &&
	    r->failed_opens + r->failed_commits == 0) {
		r->no_verdict = 1;
		rc = RUN_SETUP;
	}
	if (rc != RUN_SETUP || r->no_verdict)
		measure_sync(&s, &r->sync_after, "after");
	r->dir_kept = (rc != RUN_PASS && !r->no_verdict) || !s.temporary;
	if (!r->dir_kept)
		setup_remove(&s);
	oracle_free(c.model); /* --enumerate replaces the model */
	return rc;
}
