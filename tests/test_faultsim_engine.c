/*
 * test_faultsim_engine.c -- the fault simulator driving the real engine.
 * A forked writer commits keys through faultsim's keel_io and reports each
 * acknowledgement on a pipe; it dies (SIGKILL) after its Nth state-changing
 * call; the parent cuts the power under a device model, reopens the store
 * with the POSIX backend and checks both sides: every acknowledged key is
 * there byte-exact, nothing beyond a prefix of the commit order is, and
 * keel_check passes.  Then the positive controls: each unsafe engine mode
 * must be caught, and the same runs without it must find nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultsim.h"
#include "format.h"
#include "keel.h"

#define KEYS 24

typedef struct rig {
	char dir[64];
	char path[128];
	faultsim_cache *cache;
	faultsim_faults *faults;
	faultsim_io *fio;
} rig;

static int rig_setup(void **state)
{
	rig *r = calloc(1, sizeof *r);
	if (!r)
		return -1;
	snprintf(r->dir, sizeof r->dir, "/tmp/keel-faultsim-engine.XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(r->path, sizeof r->path, "%s/store.keel", r->dir);
	if (faultsim_cache_create(0, &r->cache) ||
	    faultsim_faults_create(1, &r->faults))
		return -1;
	faultsim_io_options o = { r->cache, r->faults, FAULTSIM_PROFILE_EXT4 };
	if (faultsim_io_new(&o, &r->fio))
		return -1;
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	rig *r = *state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
	if (system(cmd) != 0)
		return -1;
	faultsim_io_free(r->fio);
	faultsim_faults_destroy(r->faults);
	faultsim_cache_destroy(r->cache);
	free(r);
	return 0;
}

/* Key i's value: self-describing, 40..440 bytes. */
static size_t value_of(int i, char *buf)
{
	size_t len = 40 + (size_t)(i % 5) * 100;
	char head[16];
	int h = snprintf(head, sizeof head, "value-%03d:", i);
	for (size_t k = 0; k < len; k++)
		buf[k] = (char)('a' + (i * 7 + (int)k) % 26);
	memcpy(buf, head, (size_t)h);
	return len;
}

static void key_of(int i, char *key)
{
	snprintf(key, 16, "key-%03d", i);
}

/* The writer: puts KEYS keys one commit each, acknowledging on ACK. */
static void writer(rig *r, unsigned flags, int ack)
{
	keel_options o = { .flags = flags, .io = faultsim_io_table(r->fio) };
	keel_db *db;
	char key[16], val[512];

	if (keel_open(r->path, &o, &db) != KEEL_OK)
		_exit(2);
	for (int i = 0; i < KEYS; i++) {
		key_of(i, key);
		size_t len = value_of(i, val);
		if (keel_put(db, key, strlen(key), val, len, KEEL_REV_ANY,
		             NULL) != KEEL_OK)
			_exit(0); /* fail-stop: acknowledge nothing more */
		unsigned char b = (unsigned char)i;
		if (write(ack, &b, 1) != 1)
			_exit(2);
	}
	_exit(0); /* no close: as if killed right after the last ack */
}

/* Runs a writer on the store as it is; returns how many keys it had
 * acknowledged when it died or exited, and its wait status in *STATUS. */
static int writer_acks(rig *r, unsigned flags, int *status)
{
	int p[2], acked = 0;
	unsigned char b;

	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		writer(r, flags, p[1]);
	}
	close(p[1]);
	while (read(p[0], &b, 1) == 1)
		acked = b + 1;
	close(p[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return acked;
}

/* Runs a writer from an empty directory; returns how many keys it had
 * acknowledged when it died or exited. */
static int run_writer(rig *r, unsigned flags, uint64_t kill_after)
{
	int status;

	unlink(r->path);
	faultsim_faults_reset_counts(r->faults);
	faultsim_faults_kill_after(r->faults, kill_after);
	int acked = writer_acks(r, flags, &status);
	assert_true(WIFSIGNALED(status) ||
	            (WIFEXITED(status) && WEXITSTATUS(status) == 0));
	faultsim_faults_kill_after(r->faults, 0);
	return acked;
}

/* The oracle.  Returns 0 when the store keeps every acknowledged key and
 * holds a prefix of the commit order, 1 on a violation, 2 when the store
 * did not open or check (also a violation, of another kind). */
/* Recovery flags for the open that verifies: the trust-head control is a
 * recovery bug, so it must be in force when the crashed store is opened. */
static unsigned verify_flags;

static int verify(rig *r, int acked)
{
	keel_db *db;
	keel_view v;
	keel_check_result cr;
	char key[16], val[512];
	int prefix = 0, rc = 0;

	keel_options vo = {.flags = verify_flags};
	int e = keel_open(r->path, &vo, &db);
	if (e == KEEL_ENOENT || e == KEEL_ENOTKEEL)
		return acked > 0; /* no store at all: fine only if nothing acked */
	if (e != KEEL_OK) {
		print_message("open: %s\n", keel_strerror(e));
		return 2;
	}
	for (int i = 0; i < KEYS; i++) {
		key_of(i, key);
		e = keel_get(db, key, strlen(key), &v);
		if (e == KEEL_ENOTFOUND)
			continue;
		size_t len = value_of(i, val);
		if (e != KEEL_OK || v.len != len || memcmp(v.data, val, len) ||
		    i != prefix)
			rc = 1; /* damaged, or a hole in the commit order */
		prefix += i == prefix;
		keel_view_release(&v);
	}
	if (prefix < acked)
		rc = 1; /* an acknowledged write was lost */
	if (keel_check(db, NULL, NULL, &cr) != KEEL_OK) {
		print_message("check: at %llu: %s\n",
		              (unsigned long long)cr.first_offset, cr.first_reason);
		rc = 2;
	}
	keel_close(db);
	return rc;
}

static int crash_and_verify(rig *r, faultsim_device d, uint64_t seed, int acked)
{
	faultsim_crash_options o = { d, 512, seed };
	faultsim_crash_report rep;
	assert_int_equal(faultsim_cache_crash(r->cache, &o, &rep), 0);
	assert_false(rep.overflowed);
	return verify(r, acked);
}

/*
 * Crash after every state-changing call of the workload (every call for
 * ORDERED and REORDER, every other one for TORN and GARBAGE), three seeds
 * each.  No acknowledged write may be lost and nothing may appear that was
 * not written, in any model.
 *
 * Under TORN and GARBAGE an in-flight commit may get a torn or garbage
 * sector while its own head reaches the disk: recovery must take that for a
 * torn tail (cut it), not for damage behind a durable head -- every such
 * state must open.
 */


static void test_enumerate_every_crash_point(void **state)
{
	rig *r = *state;
	struct timespec t0, t1;
	uint64_t states = 0;

	run_writer(r, 0, 0);
	uint64_t steps = faultsim_faults_steps(r->faults);
	faultsim_cache_forget(r->cache);
	assert_true(steps > KEYS * 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int d = FAULTSIM_DEVICE_ORDERED; d <= FAULTSIM_DEVICE_GARBAGE; d++)
		for (uint64_t seed = 0; seed < 3; seed++)
			for (uint64_t n = 1 + seed % 2; n <= steps;
			     n += d >= FAULTSIM_DEVICE_TORN ? 2 : 1) {
				int acked = run_writer(r, 0, n);
				int bad = crash_and_verify(r, (faultsim_device)d,
				                           n * 7 + seed, acked);
				if (bad)
					fail_msg("device %s, seed %llu, crash after "
					         "call %llu of %llu: violation %d "
					         "(acked %d)",
					         faultsim_device_name(
					                 (faultsim_device)d),
					         (unsigned long long)(n * 7 + seed),
					         (unsigned long long)n,
					         (unsigned long long)steps, bad,
					         acked);
				states++;
			}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
	           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("%llu crash states (%llu calls each run) in %.2f s: "
	              "%.0f states/s\n",
	              (unsigned long long)states, (unsigned long long)steps,
	              s, (double)states / s);
}

/* Control runs: count violations over SEEDS crash points picked at random
 * (deterministically) within the workload. */
static int control(rig *r, unsigned flags, faultsim_device d, int seeds,
                   const char *spec)
{
	int caught = 0;
	uint64_t rng = 12345;

	for (int s = 0; s < seeds; s++) {
		if (spec) {
			faultsim_faults_destroy(r->faults);
			assert_int_equal(faultsim_faults_create((uint64_t)s,
			                                        &r->faults), 0);
			assert_int_equal(faultsim_faults_add(r->faults, spec,
			                                     NULL, 0), 0);
			faultsim_io_free(r->fio);
			faultsim_io_options o = { r->cache, r->faults,
				                  FAULTSIM_PROFILE_EXT4 };
			assert_int_equal(faultsim_io_new(&o, &r->fio), 0);
		}
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t n = spec ? 0 : 8 + (rng >> 33) % (KEYS * 3);
		int acked = run_writer(r, flags, n);
		if (spec) /* the fault really happened, once */
			assert_int_equal(faultsim_faults_fired(r->faults, 0), 1);
		verify_flags = flags & KEEL_UNSAFE_TRUST_HEAD;
		caught += crash_and_verify(r, d, (uint64_t)s, acked) != 0;
		verify_flags = 0;
	}
	return caught;
}

static void test_control_no_sync(void **state)
{
	rig *r = *state;
	assert_true(control(r, KEEL_UNSAFE_NO_SYNC, FAULTSIM_DEVICE_ORDERED,
	                    10, NULL) >= 5);
	assert_int_equal(control(r, 0, FAULTSIM_DEVICE_ORDERED, 10, NULL), 0);
}

/*
 * The trust-head positive control: recovery that believes a head without
 * checking its region must be caught under REORDER (a dropped region reads
 * as zeros), while the safe engine finds nothing.
 */
static void test_control_trust_head(void **state)
{
	rig *r = *state;
	assert_int_equal(control(r, 0, FAULTSIM_DEVICE_REORDER, 40, NULL), 0);
	assert_true(control(r, KEEL_UNSAFE_TRUST_HEAD, FAULTSIM_DEVICE_REORDER,
	                    40, NULL) > 0);
}

static void test_control_retry_fsync(void **state)
{
	rig *r = *state;
	const char *spec = "sync:EIO:nth=6";
	assert_true(control(r, KEEL_UNSAFE_RETRY_FSYNC, FAULTSIM_DEVICE_ORDERED,
	                    5, spec) >= 4);
	assert_int_equal(control(r, 0, FAULTSIM_DEVICE_ORDERED, 5, spec), 0);
}

/* The power cut after "a" (acknowledged), "b" (failed, its pages LOST) and
 * "c" (acknowledged after the failure): the disk must hold a and c, not b. */
static void after_the_power_cut_a_and_c_not_b(rig *r)
{
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 1 };
	faultsim_crash_report rep;
	keel_db *db;
	keel_view v;

	assert_int_equal(faultsim_cache_crash(r->cache, &co, &rep), 0);
	assert_true(rep.lost_failed > 0); /* the failed pages were lost */
	assert_int_equal(keel_open(r->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "a", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_get(db, "c", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_get(db, "b", 1, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/*
 * A commit whose sync fails, then a new writer with no crash in between: on
 * ext4 the failed pages are marked clean and still read back, so the next
 * open must not take the failed commit from them.  Before the erasure of a
 * failed group (commit_erase_unacked, engine/commit.c) it did: "b" came
 * back, "c" was appended behind it and acknowledged, and the power cut that
 * followed -- the disk never had "b" -- left a hole that took "c" with it.
 * DIE: the failed writer is a child that exits without closing (the erasure
 * must not wait for keel_close); otherwise it closes.
 */
/* When set, the writers below use this table instead of the rig's. */
static const keel_io *io_override;

static void failed_commit_then_new_writer(rig *r, int die)
{
	keel_options o = { .flags = KEEL_NOCOMPACT,
	                   .io = io_override ? io_override
	                                     : faultsim_io_table(r->fio) };
	keel_db *db;
	keel_view v;
	char err[128];

	unlink(r->path);
	/* the open's sync, a's, then b's: the third fails */
	assert_int_equal(faultsim_faults_add(r->faults, "fdatasync:EIO:nth=3",
	                                     err, sizeof err), 0);
	pid_t pid = die ? fork() : 0;
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = keel_open(r->path, &o, &db);
		if (rc == KEEL_OK)
			rc = keel_put(db, "a", 1, "1", 1, KEEL_REV_ANY, NULL);
		if (rc == KEEL_OK)
			rc = keel_put(db, "b", 1, "2", 1, KEEL_REV_ANY, NULL) ==
			             KEEL_EIO ? KEEL_OK : KEEL_EINVAL;
		if (rc == KEEL_OK && faultsim_faults_fired(r->faults, 0) != 1)
			rc = KEEL_EINVAL;
		if (die)
			_exit(rc == KEEL_OK ? 0 : 3); /* no close */
		assert_int_equal(rc, KEEL_OK);
		assert_int_equal(keel_close(db), KEEL_EIO);
	} else {
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		faultsim_cache_writer_died(r->cache); /* the page cache lives */
	}

	/* The machine lives on: no crash, the page cache as Linux leaves it. */
	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "b", 1, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_put(db, "c", 1, "3", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);

	after_the_power_cut_a_and_c_not_b(r);
}

static void test_a_failed_commit_is_not_read_back_from_the_page_cache(void **state)
{
	failed_commit_then_new_writer(*state, 0);
}

static void test_nor_after_its_writer_died_without_closing(void **state)
{
	failed_commit_then_new_writer(*state, 1);
}

/*
 * Where the file system refuses O_DIRECT (tmpfs before Linux 6.6, some FUSE
 * file systems), pread_device answers -EOPNOTSUPP and a writer's recovery
 * reads the page cache instead.  What keel still guarantees there: the open
 * works, and a failed commit is not read back by the next writer, because
 * the failing leader erased it -- whether the failed writer closed or died.
 * (What it does not: the two windows the erasure cannot cover, which only
 * the device read closes; docs/engine.md, claim 6.)
 */
static ssize_t refuse_direct(void *ctx, int fd, void *buf, size_t len,
                             uint64_t off)
{
	(void)ctx; (void)fd; (void)buf; (void)len; (void)off;
	return -EOPNOTSUPP;
}

static void test_where_o_direct_is_refused_the_erasure_still_holds(void **state)
{
	rig *r = *state;
	keel_io io = *faultsim_io_table(r->fio);

	io.pread_device = refuse_direct;
	io_override = &io;
	failed_commit_then_new_writer(r, 0);
	faultsim_faults_destroy(r->faults); /* a fresh spec for the second */
	assert_int_equal(faultsim_faults_create(7, &r->faults), 0);
	faultsim_io_options fo = { r->cache, r->faults, FAULTSIM_PROFILE_EXT4 };
	faultsim_io_free(r->fio);
	assert_int_equal(faultsim_io_new(&fo, &r->fio), 0);
	io = *faultsim_io_table(r->fio);
	io.pread_device = refuse_direct;
	failed_commit_then_new_writer(r, 1);
	io_override = NULL;
}

/*
 * The case no erasure can cover: a writer's open syncs what recovery found,
 * and that sync fails.  What it found included a commit that was written
 * and never synced ("b", from a KEEL_UNSAFE_NO_SYNC writer here; a killed
 * writer leaves the same); the failed sync leaves its pages clean in the
 * cache, readable as if written.  The next writer must take its state from
 * the device (RECOVERY_READ_DEVICE), not from those pages: without that,
 * it read "b" back, appended "c" behind it, and the power cut took "c".
 */
static void test_a_writer_open_believes_the_device_not_the_cache(void **state)
{
	rig *r = *state;
	keel_options o = { .flags = KEEL_NOCOMPACT,
	                   .io = faultsim_io_table(r->fio) };
	keel_options unsynced = { .flags = KEEL_NOCOMPACT | KEEL_UNSAFE_NO_SYNC,
	                          .io = faultsim_io_table(r->fio) };
	keel_recovery rec;
	keel_db *db;
	keel_view v;
	char err[128];

	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "a", 1, "1", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(keel_open(r->path, &unsynced, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "b", 1, "2", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);

	assert_int_equal(faultsim_faults_add(r->faults, "fdatasync:EIO:nth=1",
	                                     err, sizeof err), 0);
	faultsim_faults_reset_counts(r->faults);
	assert_int_equal(keel_open(r->path, &o, &db), KEEL_EIO); /* its sync */
	assert_int_equal(faultsim_faults_fired(r->faults, 0), 1);

	o.report = &rec;
	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK);
	assert_int_equal(rec.status, KEEL_RECOVERY_TRUNCATED); /* "b" cut */
	assert_int_equal(keel_get(db, "b", 1, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_put(db, "c", 1, "3", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);

	after_the_power_cut_a_and_c_not_b(r);
}

/*
 * A compaction renames its new file over the store and then syncs the
 * directory; a writer that dies in between (here: the directory sync fails,
 * and the handle fails) leaves a rename that a power cut can still undo.
 * The next writer opens the renamed file and is acknowledged: its open must
 * make the file's name durable as well as its bytes, or the power cut puts
 * the old file back and takes every commit acknowledged since.  (Found by
 * torture --mixed: acknowledged writes lost, and values of lost operations
 * back from the old file.)
 */
static void test_a_writer_open_makes_the_files_name_durable(void **state)
{
	rig *r = *state;
	keel_options o = { .flags = KEEL_NOCOMPACT,
	                   .io = faultsim_io_table(r->fio) };
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 1 };
	faultsim_crash_report rep;
	keel_db *db;
	keel_view v;
	char err[128];

	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "a", 1, "1", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(db, "b", 1, "2", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_del(db, "b", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(faultsim_faults_add(r->faults, "fsync_dir:EIO:nth=1",
	                                     err, sizeof err), 0);
	faultsim_faults_reset_counts(r->faults);
	assert_int_equal(keel_compact(db), KEEL_EIO); /* renamed, not durable */
	assert_int_equal(faultsim_faults_fired(r->faults, 0), 1);
	(void)keel_close(db);
	faultsim_cache_writer_died(r->cache); /* no power cut: it lives on */

	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "c", 1, "3", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);

	assert_int_equal(faultsim_cache_crash(r->cache, &co, &rep), 0);
	assert_int_equal(keel_open(r->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "a", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_get(db, "c", 1, &v), KEEL_OK); /* acknowledged */
	keel_view_release(&v);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- a writer killed inside its head's write --------------------------------
 * A keel_io over faultsim's whose Nth pwrite of a head, once armed, records
 * the write and then SIGKILLs the process before the real call: a kill that
 * lands between the record and the pwrite's first page, as one can in a
 * torture run (a SIGKILL stops a pwrite between pages).
 */
static const keel_io *head_kill_under;
static faultsim_cache *head_kill_cache;
static int head_kill_in; /* heads to let through before the kill; -1 off */

static ssize_t pwrite_killed_in_a_head(void *ctx, int fd, const void *buf,
                                       size_t len, uint64_t off)
{
	if (len == KEEL_HEAD_SIZE && head_kill_in >= 0 && head_kill_in-- == 0) {
		faultsim_ticket t;
		int file = faultsim_cache_file_of(head_kill_cache, fd);
		if (file >= 0 && faultsim_cache_write_begin(head_kill_cache,
		                                            file, fd, buf, len,
		                                            off, &t) == 0)
			kill(getpid(), SIGKILL);
		_exit(2);
	}
	return head_kill_under->pwrite(ctx, fd, buf, len, off);
}

/*
 * The --mixed refusal ("the writer's keel_open failed after a crash: store
 * is corrupt"; a synced head read as zeros behind later synced heads).  A
 * writer dies inside the write of its third commit's head, with nothing of
 * the head in the file; the machine lives on.  The next writer's open reads
 * the device view, and its sync and commits make durable what it builds on.
 * A power cut then must leave a store that opens with every acknowledged
 * key.  A device view that shows the head the dead writer never wrote
 * (its record untrimmed) gives that open a head the page cache lacks:
 * here it refuses the store ("bad record in the pending span"); where the
 * open gets past it, its commits chain to that head, and once the record
 * has left the window a power cut leaves zeros there behind them.
 */
static void test_a_head_the_killed_writer_never_wrote(void **state)
{
	rig *r = *state;
	keel_options o = { .flags = KEEL_NOCOMPACT,
	                   .io = faultsim_io_table(r->fio) };
	keel_io killing = *faultsim_io_table(r->fio);
	keel_db *db;
	int status;

	killing.pwrite = pwrite_killed_in_a_head;
	head_kill_under = faultsim_io_table(r->fio);
	head_kill_cache = r->cache;
	head_kill_in = -1;
	assert_int_equal(keel_open(r->path, &o, &db), KEEL_OK); /* create */
	assert_int_equal(keel_close(db), KEEL_OK);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char key[16], val[512];
		o.io = &killing;
		if (keel_open(r->path, &o, &db) != KEEL_OK)
			_exit(2);
		head_kill_in = 2; /* the third commit's head */
		for (int i = 0; i < KEYS; i++) {
			key_of(i, key);
			size_t len = value_of(i, val);
			if (keel_put(db, key, strlen(key), val, len,
			             KEEL_REV_ANY, NULL) != KEEL_OK)
				_exit(2);
		}
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	faultsim_cache_writer_died(r->cache); /* no power cut */

	/* the next writer: every key anew, each commit synced */
	int acked = writer_acks(r, KEEL_NOCOMPACT, &status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the next writer failed (%s %d, %d keys acknowledged; "
		         "2 with none: its open refused the store)",
		         WIFEXITED(status) ? "exit status" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status)
		                           : WTERMSIG(status), acked);
	assert_int_equal(acked, KEYS);

	/* every record is durable now: any model gives the same state */
	assert_int_equal(crash_and_verify(r, FAULTSIM_DEVICE_TORN, 7, acked), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, rig_setup, rig_teardown)
		T(test_enumerate_every_crash_point),
		T(test_control_no_sync),
		T(test_control_trust_head),
		T(test_control_retry_fsync),
		T(test_a_failed_commit_is_not_read_back_from_the_page_cache),
		T(test_nor_after_its_writer_died_without_closing),
		T(test_a_writer_open_believes_the_device_not_the_cache),
		T(test_where_o_direct_is_refused_the_erasure_still_holds),
		T(test_a_writer_open_makes_the_files_name_durable),
		T(test_a_head_the_killed_writer_never_wrote),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
