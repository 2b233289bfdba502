/*
 * test_grow.c -- growing the data file (engine/grow.c), seen through the
 * I/O seam: which descriptor each sync goes to, and what happens when the
 * grower's descriptor fails.
 *
 * The counting backend below tells the store's own descriptor (the first
 * writable open of the data file after a reset) from any other: the grower
 * works on a descriptor of its own, so a sync there is a growth's, and a
 * sync on the store's descriptor is a commit's.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io.h"
#include "keel.h"
#include "testutil.h"

#define COMMITS 3000
#define VALUE 2000 /* a commit appends about 2.2 KiB (format 3: the value,
                      a DELTA record, a head; 5 KiB in format 2) */

enum fail_mode { FAIL_NONE, FAIL_OPEN, FAIL_PWRITE, FAIL_SYNC };

static atomic_int main_fd = -1;
static atomic_ulong main_fdatasync, main_fsync, other_syncs, other_opens;
/* the largest write on another descriptor: the grower's zeros */
static atomic_ulong other_write_max;
static atomic_int fail_mode;
/* A compaction's new file (PATH.compact): its syncs can be held */
static atomic_int compact_fd = -1;
static atomic_bool hold_compaction, compaction_held;

static void counts_reset(enum fail_mode m)
{
	atomic_store(&main_fd, -1);
	atomic_store(&main_fdatasync, 0);
	atomic_store(&main_fsync, 0);
	atomic_store(&other_syncs, 0);
	atomic_store(&other_opens, 0);
	atomic_store(&other_write_max, 0);
	atomic_store(&fail_mode, m);
	atomic_store(&compact_fd, -1);
}

static bool is_compact_path(const char *path)
{
	size_t n = strlen(path);
	return n > 8 && strcmp(path + n - 8, ".compact") == 0;
}

static bool is_other(int fd)
{
	return fd != atomic_load(&main_fd);
}

static int c_open(void *ctx, const char *path, int flags, unsigned mode)
{
	int fd = keel_io_posix()->open(ctx, path, flags, mode);
	if (fd >= 0 && is_compact_path(path)) {
		atomic_store(&compact_fd, fd);
		return fd;
	}
	if (fd < 0 || (flags & KEEL_IO_RDONLY))
		return fd;
	int none = -1;
	if (atomic_compare_exchange_strong(&main_fd, &none, fd))
		return fd;
	atomic_fetch_add(&other_opens, 1);
	if (atomic_load(&fail_mode) == FAIL_OPEN) {
		keel_io_posix()->close(ctx, fd);
		return -EMFILE;
	}
	return fd;
}

static ssize_t c_pwrite(void *ctx, int fd, const void *buf, size_t len,
                        uint64_t off)
{
	if (is_other(fd) && atomic_load(&fail_mode) == FAIL_PWRITE)
		return -ENOSPC;
	unsigned long max = atomic_load(&other_write_max);
	while (is_other(fd) && fd != atomic_load(&compact_fd) && len > max &&
	       !atomic_compare_exchange_weak(&other_write_max, &max, len))
		;
	return keel_io_posix()->pwrite(ctx, fd, buf, len, off);
}

static int c_sync(void *ctx, int fd, bool full)
{
	if (fd == atomic_load(&compact_fd) && atomic_load(&hold_compaction)) {
		atomic_store(&compaction_held, true);
		for (int i = 0; i < 1000 && atomic_load(&hold_compaction); i++)
			usleep(10000); /* bounded: 10 s */
	}
	if (is_other(fd)) {
		atomic_fetch_add(&other_syncs, 1);
		if (atomic_load(&fail_mode) == FAIL_SYNC)
			return -EIO; /* as if the grower's own sync failed */
	} else {
		atomic_fetch_add(full ? &main_fsync : &main_fdatasync, 1);
	}
	return full ? keel_io_posix()->fsync(ctx, fd)
	            : keel_io_posix()->fdatasync(ctx, fd);
}

static int c_fdatasync(void *ctx, int fd)
{
	return c_sync(ctx, fd, false);
}

static int c_fsync(void *ctx, int fd)
{
	return c_sync(ctx, fd, true);
}

static keel_io counting_io(void)
{
	keel_io io = *keel_io_posix();
	io.open = c_open;
	io.pwrite = c_pwrite;
	io.fdatasync = c_fdatasync;
	io.fsync = c_fsync;
	return io;
}

typedef struct fixture {
	char *dir, *path;
	keel_io io;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = tu_mkdtemp();
	f->path = tu_path(f->dir, "db");
	f->io = counting_io();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	tu_rmdir(f->dir);
	free(f->path);
	free(f);
	return 0;
}

/* Opens the fixture's store with the counting backend, counters reset and
 * failure mode M.  The store is created first with the plain backend:
 * creating opens a temporary file, which is not the store's descriptor. */
static unsigned open_flags; /* extra keel_options.flags for open_counted */

static keel_db *open_counted(fixture *f, enum fail_mode m)
{
	/* 2 MiB steps: the grower takes steps of 1 MiB and more (smaller ones
	 * the commits take themselves); a growth every ~400 commits here */
	keel_options o = {.io = &f->io, .flags = KEEL_NOCOMPACT | open_flags,
	                  .grow_step = (uint64_t)2 << 20};
	keel_db *db;
	if (access(f->path, F_OK) != 0) {
		assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
		assert_int_equal(keel_close(db), KEEL_OK);
	}
	counts_reset(m);
	assert_int_equal(keel_open(f->path, &o, &db), KEEL_OK);
	/* a writer's open syncs what recovery found (db.c), once */
	assert_int_equal(atomic_load(&main_fdatasync), 1);
	atomic_store(&main_fdatasync, 0);
	return db;
}

static void put_numbered(keel_db *db, int i)
{
	char key[32], val[VALUE];
	snprintf(key, sizeof(key), "key%05d", i);
	memset(val, 'a' + i % 26, sizeof(val));
	assert_int_equal(keel_put(db, key, strlen(key), val, sizeof(val),
	                          KEEL_REV_ANY, NULL), KEEL_OK);
}

static void check_numbered(keel_db *db, int n)
{
	for (int i = 0; i < n; i++) {
		char key[32];
		keel_view v;
		snprintf(key, sizeof(key), "key%05d", i);
		assert_int_equal(keel_get(db, key, strlen(key), &v), KEEL_OK);
		assert_int_equal(v.len, VALUE);
		assert_int_equal(((const char *)v.data)[0], 'a' + i % 26);
		assert_int_equal(((const char *)v.data)[VALUE - 1], 'a' + i % 26);
		keel_view_release(&v);
	}
}

/* Every commit costs exactly one sync of the store's descriptor, and no
 * commit grows the file: the grower does, ahead of need, on a descriptor
 * of its own.  A leader that needs room while a growth is in flight waits
 * for it instead of growing the file itself, so with a fresh store and
 * commits far smaller than half a step no commit ever does. */
static void commits_sync_once_and_the_file_grows_ahead(void **state)
{
	/* zeros (the default), then fallocate: the grower's two ways */
	static const unsigned flags[] = {0, KEEL_PREALLOC_FALLOCATE};
	fixture *f = *state;
	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		open_flags = flags[k];
		keel_db *db = open_counted(f, FAIL_NONE);
		for (int i = 0; i < COMMITS; i++)
			put_numbered(db, i % 300);
		keel_stats st;
		assert_int_equal(keel_stat(db, &st), KEEL_OK);
		assert_int_equal(atomic_load(&main_fdatasync), COMMITS);
		assert_int_equal(atomic_load(&main_fsync), 0);
		assert_int_equal(st.syncs, COMMITS);
		assert_true(st.growths >= 3);
		assert_int_equal(st.growths_inline, 0);
		/* each growth ahead ends with an fsync of its own */
		assert_true(atomic_load(&other_syncs) >= st.growths);
		assert_true(st.file_size > st.end_offset);
		/* the zeros go in 64 KiB writes, so the page cache holds the
		 * region the commits write into in folios no larger (grow.c) */
		if (!flags[k]) {
			assert_true(atomic_load(&other_write_max) > 0);
			assert_true(atomic_load(&other_write_max) <= (64u << 10));
		}
		print_message("%s: %d commits, %lu growths ahead, %lu syncs by "
		              "the grower\n", k ? "fallocate" : "zeros", COMMITS,
		              (unsigned long)st.growths,
		              (unsigned long)atomic_load(&other_syncs));
		assert_int_equal(keel_close(db), KEEL_OK);
		db = open_counted(f, FAIL_NONE);
		check_numbered(db, 300);
		assert_int_equal(keel_close(db), KEEL_OK);
		assert_int_equal(unlink(f->path), 0);
	}
	open_flags = 0;
}

/* When the grower cannot grow the file -- its descriptor will not open,
 * its writes fail, or its sync does -- nothing is lost and nothing fails:
 * the commits that run out of room grow the file themselves (and fsync),
 * as they did before there was a grower. */
static void a_failing_grower_leaves_growth_to_the_commits(void **state)
{
	static const enum fail_mode modes[] = {FAIL_OPEN, FAIL_PWRITE, FAIL_SYNC};
	fixture *f = *state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		keel_db *db = open_counted(f, modes[m]);
		for (int i = 0; i < COMMITS; i++)
			put_numbered(db, i);
		keel_stats st;
		assert_int_equal(keel_stat(db, &st), KEEL_OK);
		assert_true(atomic_load(&other_opens) >= 1); /* it did try */
		assert_true(st.growths_inline >= 2);
		assert_int_equal(st.growths, st.growths_inline);
		/* one sync per commit; those that grew the file fsync */
		assert_int_equal(atomic_load(&main_fdatasync) +
		                 atomic_load(&main_fsync), COMMITS);
		assert_int_equal(atomic_load(&main_fsync), st.growths_inline);
		/* the grower tries each size once, not at every commit */
		assert_true(atomic_load(&other_opens) <= st.growths_inline + 1);
		assert_int_equal(keel_close(db), KEEL_OK);
		db = open_counted(f, FAIL_NONE);
		check_numbered(db, COMMITS);
		assert_int_equal(keel_close(db), KEEL_OK);
		assert_int_equal(unlink(f->path), 0);
	}
}

static void *compact_main(void *db)
{
	return (void *)(intptr_t)keel_compact(db);
}

/* Puts keys FROM..TO-1 in batches of 100: a store whose file is little
 * more than its live bytes. */
static void load_numbered(keel_db *db, int from, int to)
{
	char key[32], val[VALUE];
	for (int i = from; i < to;) {
		keel_batch *b;
		assert_int_equal(keel_batch_new(&b), KEEL_OK);
		for (int n = 0; n < 100 && i < to; n++, i++) {
			snprintf(key, sizeof(key), "key%05d", i);
			memset(val, 'a' + i % 26, sizeof(val));
			assert_int_equal(keel_batch_put(b, key, strlen(key), val,
			                                sizeof(val), KEEL_REV_ANY),
			                 KEEL_OK);
		}
		assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
		keel_batch_free(b);
	}
}

/* A compaction of a large store takes seconds, and commits go on meanwhile:
 * the grower keeps growing the file for them, so none grows it itself.
 * The compaction is held in its first sync of the new file while 4,000
 * commits (about 10 MiB with their checkpoints, five 2 MiB steps) run; then it finishes, and
 * everything is there.  (The store is 20 MiB live, so the used part stays
 * under the 2.25x at which commits would wait for the compaction.) */
static void a_growth_runs_beside_a_compaction(void **state)
{
	fixture *f = *state;
	keel_db *db = open_counted(f, FAIL_NONE);
	load_numbered(db, 0, 10000);
	keel_stats before, after;
	assert_int_equal(keel_stat(db, &before), KEEL_OK);
	atomic_store(&compaction_held, false);
	atomic_store(&hold_compaction, true);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, compact_main, db), 0);
	for (int i = 0; i < 1000 && !atomic_load(&compaction_held); i++)
		usleep(10000);
	assert_true(atomic_load(&compaction_held));
	/* 4,000 synced commits: enough for four growths of 2 MiB (the used
	 * part ends near 30 MB, the live bytes 29 MB: far from where commits
	 * would wait for the held compaction).  6,000 ran past make asan's
	 * 600 s on a loaded disk. */
	for (int i = 10000; i < 14000; i++)
		put_numbered(db, i);
	assert_int_equal(keel_stat(db, &after), KEEL_OK);
	print_message("held compaction: used %llu, live %llu (pending %llu), "
	              "%llu growths\n", (unsigned long long)after.end_offset,
	              (unsigned long long)after.live_bytes,
	              (unsigned long long)after.pending_bytes,
	              (unsigned long long)(after.growths - before.growths));
	assert_int_equal(after.compactions, 0); /* it is still held */
	atomic_store(&hold_compaction, false);
	void *rc;
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((intptr_t)rc, KEEL_OK);
	assert_true(after.growths >= before.growths + 3);
	assert_int_equal(after.growths_inline, 0);
	assert_int_equal(atomic_load(&main_fsync), 0);
	assert_int_equal(keel_stat(db, &after), KEEL_OK);
	assert_int_equal(after.compactions, 1);
	assert_int_equal(keel_close(db), KEEL_OK);
	db = open_counted(f, FAIL_NONE);
	check_numbered(db, 14000);
	assert_int_equal(keel_close(db), KEEL_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(commits_sync_once_and_the_file_grows_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failing_grower_leaves_growth_to_the_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(a_growth_runs_beside_a_compaction, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
