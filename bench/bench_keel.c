/*
 * bench_keel.c -- keel, the engine under test, through its public API only
 * (engine/keel.h).
 *
 * Default options (automatic compaction as the engine ships it).  One
 * keel_put per put: each is one durable commit; concurrent puts from many
 * threads share the engine's group commit.  Reads: a snapshot reader uses
 * keel_snapshot_get from one snapshot per thread (as an LMDB reader keeps one
 * read transaction); a fresh reader renews its snapshot with
 * keel_snapshot_refresh before every read (as LMDB's fresh reader renews its
 * read transaction with mdb_txn_renew), so it sees the newest commit every
 * time.  Every view is released after its bytes are touched.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"
#include "bench.h"

#define KEEL_NAME "keel"
/* The load commits batches of about this many bytes (or keys). */
#define KEEL_LOAD_BATCH_BYTES (4u << 20)
#define KEEL_LOAD_BATCH_KEYS 10000u

typedef struct keel_bench_thread {
	keel_db *db;          /* the store                                */
	bench_role role;      /* what the context is for                  */
	keel_snapshot *snap;  /* snapshot readers: their one snapshot     */
} keel_bench_thread;

static int keel_bench_err(const char *what, int rc)
{
	return bench_fail(KEEL_NAME, "%s: %s", what, keel_strerror(rc));
}

static const char *keel_bench_version(void)
{
	return KEEL_VERSION_STRING;
}

static int keel_bench_open(const char *dir, const bench_open_opts *o,
                           void **out)
{
	keel_options opt;
	keel_db *db;
	char path[4096];
	int rc;

	memset(&opt, 0, sizeof(opt));
	/* The space workload needs a million commits in seconds, not in an
	 * hour; skipping the sync does not change a single byte appended. */
	if (o->unsynced)
		opt.flags |= KEEL_UNSAFE_NO_SYNC;
	if (o->nocompact)
		opt.flags |= KEEL_NOCOMPACT;
	snprintf(path, sizeof(path), "%s/bench.keel", dir);
	rc = keel_open(path, &opt, &db);
	if (rc)
		return keel_bench_err("open", rc);
	*out = db;
	return 0;
}

static void keel_bench_close(void *db)
{
	int rc = keel_close(db);

	if (rc)
		keel_bench_err("close", rc);
}

static int keel_bench_load(void *db, uint64_t n, size_t vsize)
{
	keel_batch *b;
	char key[BENCH_KEY_LEN + 1];
	char *val = malloc(vsize ? vsize : 1);
	size_t pending = 0;
	int rc;

	if (!val)
		return bench_fail(KEEL_NAME, "out of memory");
	rc = keel_batch_new(&b);
	if (rc) {
		free(val);
		return keel_bench_err("batch", rc);
	}
	for (uint64_t i = 0; i < n && !rc; i++) {
		bench_key(key, i);
		bench_value(val, vsize, i);
		rc = keel_batch_put(b, key, BENCH_KEY_LEN, val, vsize, KEEL_REV_ANY);
		pending += BENCH_KEY_LEN + vsize;
		if (!rc && (pending >= KEEL_LOAD_BATCH_BYTES ||
		            keel_batch_count(b) >= KEEL_LOAD_BATCH_KEYS || i + 1 == n)) {
			rc = keel_commit(db, b, NULL, NULL);
			keel_batch_clear(b);
			pending = 0;
		}
	}
	keel_batch_free(b);
	free(val);
	return rc ? keel_bench_err("load", rc) : 0;
}

static int keel_bench_thread_open(void *db, bench_role role, void **out)
{
	keel_bench_thread *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return bench_fail(KEEL_NAME, "out of memory");
	t->db = db;
	t->role = role;
	if (role == BENCH_READ_SNAPSHOT || role == BENCH_READ_FRESH) {
		rc = keel_snapshot_open(t->db, &t->snap);
		if (rc) {
			free(t);
			return keel_bench_err("snapshot", rc);
		}
	}
	*out = t;
	return 0;
}

static void keel_bench_thread_close(void *ctx)
{
	keel_bench_thread *t = ctx;

	if (t->snap)
		keel_snapshot_close(t->snap);
	free(t);
}

static int keel_bench_put(void *ctx, const void *key, size_t klen,
                          const void *val, size_t vlen)
{
	keel_bench_thread *t = ctx;
	int rc = keel_put(t->db, key, klen, val, vlen, KEEL_REV_ANY, NULL);

	return rc ? keel_bench_err("put", rc) : 0;
}

static int keel_bench_get(void *ctx, const void *key, size_t klen,
                          size_t *vlen, uint64_t *touch)
{
	keel_bench_thread *t = ctx;
	keel_view v;
	int rc;

	memset(&v, 0, sizeof(v));
	if (t->role == BENCH_READ_FRESH && (rc = keel_snapshot_refresh(&t->snap)))
		return keel_bench_err("refresh", rc);
	if (t->snap)
		rc = keel_snapshot_get(t->snap, key, klen, &v);
	else
		rc = keel_get(t->db, key, klen, &v);
	if (rc)
		return keel_bench_err("get", rc);
	*vlen = v.len;
	*touch += bench_touch(v.data, v.len);
	keel_view_release(&v);
	return 0;
}

static int keel_bench_scan(void *ctx, const void *start, size_t slen,
                           unsigned n, unsigned *got, uint64_t *touch)
{
	keel_bench_thread *t = ctx;
	keel_iter *it;
	const void *k;
	size_t klen;
	keel_view v;
	unsigned i;
	int rc;

	if (!t->snap)
		return bench_fail(KEEL_NAME, "scan needs a snapshot reader");
	rc = keel_iter_open(t->snap, NULL, 0, start, slen, &it);
	if (rc)
		return keel_bench_err("iter open", rc);
	for (i = 0; i < n; i++) {
		rc = keel_iter_next(it, &k, &klen, &v);
		if (rc)
			break;
		*touch += bench_touch(v.data, v.len);
	}
	keel_iter_close(it);
	*got = i;
	return rc && rc != KEEL_ENOTFOUND ? keel_bench_err("iter next", rc) : 0;
}

static int keel_bench_space(void *db, bench_space *out)
{
	keel_stats st;
	int rc = keel_stat(db, &st);

	if (rc)
		return keel_bench_err("stat", rc);
	out->file_size = st.file_size;
	out->end_offset = st.end_offset;
	out->live_bytes = st.live_bytes;
	out->keys = st.keys;
	out->syncs = st.syncs;
	out->commits = st.commits;
	out->compactions = st.compactions;
	out->space_bound = st.space_bound;
	return 0;
}

static double keel_bench_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The child of keel_bench_recover: load, then overwrite random keys until
 * the pending span is within one commit of the checkpoint bound (the worst
 * point of the checkpoint cycle: the most a reopen replays), report the
 * count on FD and wait for the kill.  Its commits skip the sync: a process
 * kill leaves the page cache, so the file the reopen meets is the same. */
static void keel_bench_recover_child(const char *path, uint64_t keys,
                                     size_t vsize, int fd)
{
	keel_options o;
	keel_stats st;
	keel_db *db;
	char key[BENCH_KEY_LEN + 1];
	unsigned char *val = malloc(vsize ? vsize : 1);
	uint64_t seed = 0x9e3779b97f4a7c15ull, ckpt0, puts = 0;

	memset(&o, 0, sizeof(o));
	o.flags = KEEL_UNSAFE_NO_SYNC | KEEL_NOCOMPACT;
	if (!val || keel_open(path, &o, &db) || keel_bench_load(db, keys, vsize) ||
	    keel_stat(db, &st))
		_exit(3);
	ckpt0 = st.checkpoints;
	for (;;) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		bench_key(key, seed % keys);
		bench_value(val, vsize, puts);
		if (keel_put(db, key, BENCH_KEY_LEN, val, vsize, KEEL_REV_ANY, NULL) ||
		    keel_stat(db, &st))
			_exit(4);
		puts++;
		if (st.checkpoints != ckpt0) { /* a group checkpointed: start over */
			ckpt0 = st.checkpoints;
			continue;
		}
		if (st.pending_bytes + 2 * (BENCH_KEY_LEN + vsize) + 4096 >
		    KEEL_CHECKPOINT_BYTES_DEFAULT)
			break;
	}
	if (write(fd, &puts, sizeof(puts)) != (ssize_t)sizeof(puts))
		_exit(5);
	pause();
	_exit(0);
}

/* One timed open of PATH; COLD evicts the file's pages first. */
static int keel_bench_reopen(const char *path, int cold, double *ms,
                             keel_recovery *rep, keel_stats *st)
{
	keel_options o;
	keel_db *db;
	double t0;
	int rc;

	if (cold) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return bench_fail(KEEL_NAME, "open %s to evict it", path);
		(void)fdatasync(fd);
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	memset(&o, 0, sizeof(o));
	o.flags = KEEL_NOCOMPACT; /* the reopen itself, nothing after it */
	o.report = rep;
	t0 = keel_bench_ms();
	rc = keel_open(path, &o, &db);
	*ms = keel_bench_ms() - t0;
	if (rc)
		return keel_bench_err("reopen after the kill", rc);
	rc = keel_stat(db, st);
	keel_bench_close(db);
	return rc ? keel_bench_err("stat", rc) : 0;
}

static int keel_bench_recover(const char *dir, uint64_t keys, size_t vsize,
                              bench_recover *out)
{
	char path[4096];
	keel_recovery rep;
	keel_stats st;
	int p[2], status;
	uint64_t puts = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/bench.keel", dir);
	if (pipe(p))
		return bench_fail(KEEL_NAME, "pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return bench_fail(KEEL_NAME, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		keel_bench_recover_child(path, keys, vsize, p[1]);
	}
	close(p[1]);
	ssize_t n = read(p[0], &puts, sizeof(puts));
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (n != (ssize_t)sizeof(puts))
		return bench_fail(KEEL_NAME, "the writer before the kill failed "
		                  "(exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	memset(out, 0, sizeof(*out));
	out->puts = puts;
	if (keel_bench_reopen(path, 1, &out->cold_ms, &rep, &st))
		return -1;
	out->bytes_read = rep.bytes_read;
	out->pending = st.pending_heads;
	out->pending_bytes = st.pending_bytes;
	return keel_bench_reopen(path, 0, &out->warm_ms, &rep, &st);
}

const bench_engine bench_engine_keel = {
	.name = KEEL_NAME,
	.settings = "default options; keel_put per put (one sync per commit; "
	            "group commit across threads)",
	.version = keel_bench_version,
	.open = keel_bench_open,
	.close = keel_bench_close,
	.load = keel_bench_load,
	.thread_open = keel_bench_thread_open,
	.thread_close = keel_bench_thread_close,
	.put = keel_bench_put,
	.get = keel_bench_get,
	.scan = keel_bench_scan,
	.space = keel_bench_space,
	.recover = keel_bench_recover,
};
