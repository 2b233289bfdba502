/*
 * writer.c -- the writer process and its threads (see writer.h).
 */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"
#include "proto.h"
#include "value.h"

typedef struct wthread {
	const writer_plan *plan;
	keel_db *db;
	int fd;            /* record pipe                               */
	uint32_t t;        /* thread number                             */
	uint32_t nkeys;    /* keys owned: t, t + T, t + 2T, ...         */
	uint64_t seq;      /* next operation number                     */
	uint64_t rng;      /* workload generator state                  */
	uint8_t *present;  /* per owned key: it exists                  */
	uint64_t *rev;     /* per owned key: its revision               */
	uint8_t *buf;      /* one value                                  */
	keel_batch *batch;
} wthread;

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int writer_open_store(const torture_options *opt, const char *path,
                      keel_db **out)
{
	keel_options ko;

	memset(&ko, 0, sizeof(ko));
	ko.flags = opt->engine_flags | KEEL_NOCREATE;
	ko.io = opt->io;
	ko.lock_timeout_ms = 0; /* the last writer is dead: nobody holds it */
	ko.grow_step = opt->grow_step;
	/* A small slack: the automatic policy compacts this small store every
	 * few hundred commits, as it did before the default slack, so kills
	 * and power cuts keep landing inside compactions. */
	ko.compact_slack = (uint64_t)1 << 20;
	ko.checkpoint_bytes = opt->checkpoint_bytes ? opt->checkpoint_bytes
	                                            : TORTURE_CHECKPOINT_DEFAULT;
	return keel_open(path, &ko, out);
}

/* Chooses the operation: mostly single puts, some deletes of present keys,
 * about one in ten a batch of distinct keys.  Fills REC's changes. */
static void choose(wthread *w, proto_rec *rec)
{
	const torture_options *o = w->plan->opt;
	uint32_t count = 1, span = o->value_max - o->value_min + 1;
	uint64_t r = rnd(&w->rng);

	if (r % 10 == 0 && w->nkeys >= 2)
		count = 2 + (uint32_t)(rnd(&w->rng) %
		                       ((w->nkeys < PROTO_BATCH_MAX ?
		                         w->nkeys : PROTO_BATCH_MAX) - 1));
	rec->count = 0;
	while (rec->count < count) {
		uint32_t i = (uint32_t)(rnd(&w->rng) % w->nkeys), dup = 0;
		uint32_t k = w->t + i * o->threads;
		for (uint32_t j = 0; j < rec->count; j++)
			dup |= rec->change[j].key == k;
		if (dup)
			continue;
		rec->change[rec->count].key = k;
		rec->change[rec->count].len = w->present[i] &&
		                              rnd(&w->rng) % 5 == 0 ? 0 :
		        o->value_min + (uint32_t)(rnd(&w->rng) % span);
		rec->count++;
	}
}

static void make_value(wthread *w, uint32_t k, uint32_t index, uint32_t len)
{
	value_id id = {
		.key = k, .thread = w->t, .index = index, .seq = w->seq,
		.nonce = oracle_nonce(w->plan->model), .len = len,
	};
	value_encode(&id, w->buf);
}

/* Commits REC's changes; returns a keel_err and *txid (the commit's txid,
 * for puts, deletes and batches alike). */
static int commit(wthread *w, const proto_rec *rec, uint64_t *txid)
{
	const proto_change *c = rec->change;
	uint32_t T = w->plan->opt->threads;
	char key[VALUE_KEY_MAX];
	size_t klen;
	int rc = KEEL_OK;

	*txid = 0;
	if (rec->count == 1) {
		uint32_t i = c[0].key / T;
		klen = value_key(c[0].key, key);
		if (c[0].len == 0)
			return keel_del(w->db, key, klen, w->rev[i], txid);
		make_value(w, c[0].key, 0, c[0].len);
		return keel_put(w->db, key, klen, w->buf, c[0].len,
		                w->present[i] ? w->rev[i] : KEEL_REV_ABSENT,
		                txid);
	}
	keel_batch_clear(w->batch);
	for (uint32_t n = 0; n < rec->count && rc == KEEL_OK; n++) {
		uint32_t i = c[n].key / T;
		klen = value_key(c[n].key, key);
		if (c[n].len == 0) {
			rc = keel_batch_del(w->batch, key, klen, w->rev[i]);
			continue;
		}
		make_value(w, c[n].key, n, c[n].len);
		rc = keel_batch_put(w->batch, key, klen, w->buf, c[n].len,
		                    w->present[i] ? w->rev[i] :
		                                    KEEL_REV_ABSENT);
	}
	return rc == KEEL_OK ? keel_commit(w->db, w->batch, txid, NULL) : rc;
}

static void *thread_main(void *arg)
{
	wthread *w = arg;
	int ack_first = (w->plan->opt->unsafe &
	                 TORTURE_UNSAFE_ACK_BEFORE_COMMIT) != 0;

	for (;; w->seq++) {
		proto_rec rec;
		uint64_t txid;

		/* --enumerate: a fixed workload, so every run makes the
		 * same I/O steps (a fresh model starts at seq 0) */
		if (w->plan->opt->enumerate && w->seq >= TORTURE_ENUMERATE_OPS)
			break;

		memset(&rec, 0, sizeof(rec));
		rec.kind = PROTO_INTENT;
		rec.thread = w->t;
		rec.seq = w->seq;
		choose(w, &rec);
		if (proto_send(w->fd, &rec) < 0)
			break;
		if (ack_first) { /* the deliberate bug: say "stored" too soon */
			rec.kind = PROTO_ACK;
			if (proto_send(w->fd, &rec) < 0)
				break;
		}
		rec.rc = commit(w, &rec, &txid);
		rec.kind = PROTO_DONE;
		rec.rev = txid;
		if (proto_send(w->fd, &rec) < 0 || rec.rc != KEEL_OK)
			break;
		for (uint32_t n = 0; n < rec.count; n++) {
			uint32_t i = rec.change[n].key / w->plan->opt->threads;
			w->present[i] = rec.change[n].len != 0;
			w->rev[i] = txid;
		}
	}
	return NULL;
}

/* Sets thread T up from the inherited model; -1 when memory ran out. */
static int thread_init(wthread *w, const writer_plan *p, keel_db *db, int fd,
                       uint32_t t)
{
	uint32_t T = p->opt->threads;

	w->plan = p;
	w->db = db;
	w->fd = fd;
	w->t = t;
	w->nkeys = (p->opt->keys - t + T - 1) / T;
	w->seq = oracle_next_seq(p->model, t);
	w->rng = p->seed ^ ((uint64_t)t << 48);
	rnd(&w->rng);
	w->present = calloc(w->nkeys, 1);
	w->rev = calloc(w->nkeys, sizeof(*w->rev));
	w->buf = malloc(p->opt->value_max);
	if (!w->present || !w->rev || !w->buf ||
	    keel_batch_new(&w->batch) != KEEL_OK)
		return -1;
	for (uint32_t i = 0; i < w->nkeys; i++) {
		const oracle_key_state *s = oracle_key(p->model, t + i * T);
		w->present[i] = (uint8_t)s->present;
		w->rev[i] = s->rev;
	}
	return 0;
}

/*
 * --compact-every: the writer's main thread compacts while the others
 * commit, so kills (and power cuts) land inside compactions.  Returns when
 * a compaction failed for an injected fault (the handle is failed; the
 * threads stop too); any other failure is reported by exit status 6.
 */
static void compact_loop(const writer_plan *p, keel_db *db)
{
	uint64_t ns = p->opt->compact_every_ns;
	struct timespec ts = {(time_t)(ns / 1000000000u),
	                      (long)(ns % 1000000000u)};
	int rc;

	for (;;) {
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		ts.tv_sec = (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		rc = keel_compact(db);
		if (rc == KEEL_OK)
			continue;
		if (p->opt->nfail && faults_expected_error(rc))
			return;
		/* the harness reports status 6; this says why */
		fprintf(stderr, "torture: writer: keel_compact failed: %s\n",
		        keel_strerror(rc));
		_exit(6);
	}
}

/*
 * --snapshots: one more thread of the writer holds views while it refreshes
 * its snapshot across commits, growths and compactions (keel.h: a view
 * stays valid and unchanged until released).  Each round takes up to 8
 * views of random keys, copies their bytes, then refreshes the snapshot a
 * few times, a little apart, checking after each refresh that every held
 * view still shows exactly its bytes and a value that decodes.  A change
 * ends the writer with status 7 and a message; the checks are counted to
 * the harness (VIEWS).
 */
#define HELD_VIEWS 8

static void *view_thread(void *arg)
{
	const wthread *w = arg;
	const torture_options *o = w->plan->opt;
	struct timespec gap = {0, 2000000};
	keel_view v[HELD_VIEWS];
	uint8_t *copy[HELD_VIEWS];
	uint32_t key[HELD_VIEWS];
	uint64_t rng = w->plan->seed ^ 0x76696577ull, checked = 0;
	keel_snapshot *snap = NULL;
	char kb[VALUE_KEY_MAX];

	if (keel_snapshot_open(w->db, &snap) != KEEL_OK)
		return NULL;
	for (;;) {
		int n = 0;
		for (int i = 0; i < HELD_VIEWS; i++) {
			uint32_t k = (uint32_t)(rnd(&rng) % o->keys);
			if (keel_snapshot_get(snap, kb, value_key(k, kb), &v[n]) !=
			    KEEL_OK)
				continue;
			if (!(copy[n] = malloc(v[n].len ? v[n].len : 1)))
				_exit(4);
			memcpy(copy[n], v[n].data, v[n].len);
			key[n++] = k;
		}
		for (int round = 0; round < 4; round++) {
			nanosleep(&gap, NULL);
			if (keel_snapshot_refresh(&snap) != KEEL_OK)
				_exit(4);
			for (int i = 0; i < n; i++) {
				value_id id;
				if (memcmp(v[i].data, copy[i], v[i].len) == 0 &&
				    value_decode(v[i].data, v[i].len, &id,
				                 NULL) == 0)
					continue;
				fprintf(stderr, "torture: writer: a held view "
				        "of key %u changed across a snapshot "
				        "refresh\n", key[i]);
				_exit(7);
			}
			checked += (uint64_t)n;
		}
		for (int i = 0; i < n; i++) {
			keel_view_release(&v[i]);
			free(copy[i]);
		}
		if (checked > 0) {
			proto_rec rec;
			memset(&rec, 0, sizeof(rec));
			rec.kind = PROTO_VIEWS;
			rec.count = (uint32_t)checked;
			if (proto_send(w->fd, &rec) < 0)
				return NULL;
			checked = 0;
		}
	}
}

/* --readers: reports one value a reader was shown, unless it did already;
 * -1 when the harness is gone. */
static int reader_report(const writer_plan *p, int fd, uint64_t *last,
                         uint32_t k, const keel_view *v)
{
	const torture_options *o = p->opt;
	proto_rec rec;
	value_id id;

	memset(&rec, 0, sizeof(rec));
	rec.kind = PROTO_SEEN;
	rec.change[0].key = k;
	if (value_decode(v->data, v->len, &id, NULL) < 0 || id.key != k ||
	    id.thread != k % o->threads || id.nonce != oracle_nonce(p->model)) {
		rec.rc = KEEL_ECORRUPT;
	} else {
		if (last[k] == id.seq + 1)
			return 0; /* said already */
		last[k] = id.seq + 1;
		rec.thread = id.thread;
		rec.seq = id.seq;
		rec.rev = v->rev;
	}
	return proto_send(fd, &rec);
}

/* --readers: refreshes a reader makes before it closes and opens again. */
#define READER_PASSES 8

/*
 * --readers: one reader process.  It opens the store KEEL_RDONLY as another
 * program on the machine would (plain POSIX reads: the page cache), and
 * each time the snapshot it refreshes has moved, it reads every entry.
 * Every value it is shown goes to the harness once (SEEN: the operation
 * that wrote it); an entry that is not this run's value for its key, or a
 * read that fails, goes as SEEN with rc != 0.  Every READER_PASSES
 * refreshes it closes the store and opens it again.  It dies with the
 * writer (PDEATHSIG).
 */
static void __attribute__((noreturn)) reader_main(const writer_plan *p,
                                                  int fd)
{
	keel_options ko = {.flags = KEEL_RDONLY | KEEL_NOCREATE};
	uint64_t *last = calloc(p->opt->keys, sizeof(*last)); /* seq + 1 */
	struct timespec pause = {0, 1000000}; /* leave the CPUs to the writer */

	if (!last)
		_exit(0);
	/* Each round opens the store anew, so reader opens land while the
	 * writer runs too (an open reads the file, where a commit appended
	 * and not yet synced already is: it must stop at the durable
	 * marker), not only before it starts. */
	for (;;) {
		keel_snapshot *snap = NULL;
		uint64_t txid = 0;
		keel_db *db = NULL;

		/* a compaction may be renaming the file: try again a while */
		for (int i = 0; keel_open(p->path, &ko, &db) != KEEL_OK; i++) {
			if (i >= 100)
				_exit(0);
			nanosleep(&pause, NULL);
		}
		if (keel_snapshot_open(db, &snap) != KEEL_OK)
			_exit(0);
		for (int pass = 0; pass < READER_PASSES;
		     pass++, nanosleep(&pause, NULL)) {
			keel_iter *it = NULL;
			const void *key;
			size_t klen;
			keel_view v;
			uint32_t k;
			int rc;

			if (pass > 0 && keel_snapshot_refresh(&snap) != KEEL_OK)
				_exit(0);
			if (pass > 0 && keel_snapshot_txid(snap) == txid)
				continue;
			txid = keel_snapshot_txid(snap);
			rc = keel_iter_open(snap, NULL, 0, NULL, 0, &it);
			while (rc == KEEL_OK &&
			       (rc = keel_iter_next(it, &key, &klen, &v)) == KEEL_OK)
				if (value_key_parse(key, klen, &k) == 0 &&
				    k < p->opt->keys &&
				    reader_report(p, fd, last, k, &v) < 0)
					_exit(0);
			if (it)
				keel_iter_close(it);
			if (rc != KEEL_ENOTFOUND) {
				proto_rec rec;
				memset(&rec, 0, sizeof(rec));
				rec.kind = PROTO_SEEN;
				rec.rc = rc;
				(void)proto_send(fd, &rec);
				_exit(0);
			}
		}
		keel_snapshot_close(snap);
		keel_close(db);
	}
}

/* Starts --readers reader processes, before the writer opens the store:
 * a child forked later would inherit the writer's descriptor, and with it
 * the writer's lock, past the writer's death. */
static void readers_spawn(const writer_plan *p, int fd)
{
	pid_t writer = getpid();

	for (uint32_t n = 0; n < p->opt->readers; n++) {
		pid_t pid = fork();
		if (pid != 0)
			continue; /* a reader that cannot start is no finding */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != writer)
			_exit(0);
		reader_main(p, fd);
	}
}

/* The child's whole life: open, report, write until killed. */
static void __attribute__((noreturn)) writer_main(const writer_plan *p,
                                                   int fd)
{
	uint32_t T = p->opt->threads;
	wthread *w = calloc(T, sizeof(*w));
	pthread_t *tid = calloc(T, sizeof(*tid));
	proto_rec rec;
	keel_stats st;
	keel_recovery ri;
	keel_db *db = NULL;
	uint64_t t0 = now_ns();

	readers_spawn(p, fd);
	memset(&rec, 0, sizeof(rec));
	rec.kind = PROTO_OPENED;
	rec.rc = writer_open_store(p->opt, p->path, &db);
	rec.ns = now_ns() - t0;
	if (rec.rc == KEEL_OK && keel_stat(db, &st) == KEEL_OK)
		rec.rev = st.txid;
	if (rec.rc == KEEL_OK && keel_recovery_info(db, &ri) == KEEL_OK)
		rec.count = (uint32_t)ri.status;
	if (proto_send(fd, &rec) < 0 || rec.rc != KEEL_OK || !w || !tid)
		_exit(3);
	/* --early-kills: the open is all this writer does.  A power cut
	 * drawn for this kill then lands where only the open's own syncs
	 * protect what earlier writers left. */
	if (p->early_kill)
		raise(SIGKILL);
	for (uint32_t t = 0; t < T; t++)
		if (thread_init(&w[t], p, db, fd, t) < 0 ||
		    pthread_create(&tid[t], NULL, thread_main, &w[t]) != 0)
			_exit(4);
	if (p->opt->snapshots) {
		static wthread vw; /* only plan, db, fd are used */
		pthread_t vt;
		vw.plan = p;
		vw.db = db;
		vw.fd = fd;
		if (pthread_create(&vt, NULL, view_thread, &vw) != 0)
			_exit(4);
	}
	if (p->opt->compact_every_ns)
		compact_loop(p, db);
	for (uint32_t t = 0; t < T; t++)
		pthread_join(tid[t], NULL);
	/* Every thread stopped on an error (or the harness went away):
	 * nothing more to say.  No cleanup: the harness owns the store. */
	_exit(keel_close(db) == KEEL_OK ? 0 : 5);
}

int writer_spawn(const writer_plan *plan, pid_t *pid, int *fd)
{
	int p[2];
	pid_t child, parent = getpid();

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	child = fork();
	if (child < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (child == 0) {
		/* Die with the harness: an orphaned writer would keep the
		 * store's lock and keep writing. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* it died before prctl */
			_exit(1);
		close(p[0]);
		writer_main(plan, p[1]);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	*pid = child;
	*fd = p[0];
	return 0;
}
