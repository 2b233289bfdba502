/*
 * test_faultsim_files.c -- the fault simulator's file table (invariant (9)
 * of faultsim/cache_internal.h): it holds FAULTSIM_MAX_FILES files at once,
 * not over a run.  A program that writes, syncs and closes file after file
 * is never refused; an entry is reused only when nothing in the window names
 * it, and its generation tells a holder of the old id to track again; a
 * table whose every file has undoable changes is a clean -ENOBUFS; and a
 * power cut after thousands of files undoes exactly what was not synced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultsim.h"

#define MANY (FAULTSIM_MAX_FILES + 300) /* files over one run */

typedef struct fx {
	char dir[64];
	faultsim_cache *cache;
} fx;

static int fx_setup(void **state)
{
	fx *x = calloc(1, sizeof *x);
	if (!x)
		return -1;
	snprintf(x->dir, sizeof x->dir, "/tmp/keel-fsfiles.XXXXXX");
	if (!mkdtemp(x->dir) || faultsim_cache_create(4u << 20, &x->cache) != 0)
		return -1;
	*state = x;
	return 0;
}

static int fx_teardown(void **state)
{
	fx *x = *state;
	char p[512];
	DIR *d = opendir(x->dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof p, "%s/%s", x->dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(x->dir);
	faultsim_cache_destroy(x->cache);
	free(x);
	return 0;
}

/* Opens DIR/fN, tracks it and writes one byte C at 0 through the cache;
 * returns the file id (or the negative track error) and leaves *FD open. */
static int put(fx *x, int n, char c, int *fd)
{
	char p[128];
	faultsim_ticket t = { 0 };

	snprintf(p, sizeof p, "%s/f%d", x->dir, n);
	*fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(*fd >= 0);
	int file = faultsim_cache_track(x->cache, *fd, p);
	if (file < 0)
		return file;
	assert_int_equal(faultsim_cache_write_begin(x->cache, file, *fd, &c, 1, 0,
	                                            &t), 0);
	assert_int_equal(pwrite(*fd, &c, 1, 0), 1);
	faultsim_cache_write_end(&t, 1);
	return file;
}

static void xsync(fx *x, int file)
{
	uint64_t mark = faultsim_cache_sync_begin(x->cache);
	faultsim_cache_sync_end(x->cache, file, mark, 0, FAULTSIM_PROFILE_EXT4);
}

static char byte_of(fx *x, int n)
{
	char p[128], c = 0;
	snprintf(p, sizeof p, "%s/f%d", x->dir, n);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t r = pread(fd, &c, 1, 0);
	close(fd);
	return r == 1 ? c : 0;
}

/* Thousands of files written, synced and closed, one after the other: no
 * refusal, and the first file's entry was reused (its gen moved on). */
static void test_synced_files_never_fill_the_table(void **state)
{
	fx *x = *state;
	int fd, first = -1;
	uint32_t first_gen = 0;

	for (int n = 0; n < MANY; n++) {
		int file = put(x, n, 'a', &fd);
		assert_true(file >= 0);
		assert_true(file < FAULTSIM_MAX_FILES);
		if (n == 0) {
			first = file;
			first_gen = faultsim_cache_file_gen(x->cache, file);
		}
		xsync(x, file);
		close(fd);
	}
	assert_false(faultsim_cache_overflowed(x->cache));
	assert_int_not_equal(faultsim_cache_file_gen(x->cache, first), first_gen);
}

/* Entries with records a crash could undo are never reused: with every
 * entry holding an unsynced write, the next file is a clean -ENOBUFS and
 * the overflow flag is set (a set-up error for the harness). */
static void test_unsynced_files_are_never_reused(void **state)
{
	fx *x = *state;
	int fd;

	for (int n = 0; n < FAULTSIM_MAX_FILES; n++) {
		assert_true(put(x, n, 'u', &fd) >= 0);
		close(fd);
	}
	assert_int_equal(put(x, FAULTSIM_MAX_FILES, 'u', &fd), -ENOBUFS);
	close(fd);
	assert_true(faultsim_cache_overflowed(x->cache));
}

/* A power cut after many files, most synced and some not: every synced
 * byte survives (reuse never redirected a record to the wrong file) and
 * every unsynced one of a still-tracked file is undone under ORDERED with
 * a seed whose prefix keeps none -- checked by counting: what persisted of
 * the unsynced writes is a prefix in issue order. */
static void test_power_cut_after_reuse_is_exact(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 7 };
	int fd, synced = MANY - 40;

	for (int n = 0; n < MANY; n++) {
		int file = put(x, n, n < synced ? 's' : 'u', &fd);
		assert_true(file >= 0);
		if (n < synced)
			xsync(x, file);
		close(fd);
	}
	assert_int_equal(faultsim_cache_crash(x->cache, &co, &rep), 0);
	for (int n = 0; n < synced; n++)
		assert_int_equal(byte_of(x, n), 's');
	int kept = 0, gap = 0;
	for (int n = synced; n < MANY; n++) {
		char c = byte_of(x, n);
		assert_true(c == 'u' || c == 0);
		if (c == 'u') {
			assert_false(gap); /* ORDERED: a prefix persists */
			kept++;
		} else {
			gap = 1;
		}
	}
	assert_int_equal(rep.kept + rep.lost, MANY - synced);
	assert_int_equal((int)rep.kept, kept);
}

/* A journal per transaction (SQLite's rollback journal): created, written,
 * synced, unlinked and its directory synced, over and over.  The entry of
 * a file durably unlinked is taken by the next new one as soon as nothing
 * in the window names it, so the table stays as small as the files alive
 * (every pass over it is that short) instead of growing to the limit. */
static void test_unlinked_files_give_their_entry_back(void **state)
{
	fx *x = *state;
	faultsim_ticket t = { 0 };
	char p[128];
	int fd, file = -1, first = -1;

	for (int n = 0; n < 300; n++) {
		snprintf(p, sizeof p, "%s/f%d", x->dir, n);
		assert_int_equal(faultsim_cache_create_begin(x->cache, p, &t), 0);
		fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
		assert_true(fd >= 0);
		faultsim_cache_namespace_end(&t, 0);
		file = put(x, n, 'j', &fd); /* opens it again: same inode */
		assert_true(file >= 0);
		if (first < 0)
			first = file;
		xsync(x, file);
		close(fd);
		assert_int_equal(faultsim_cache_unlink_begin(x->cache, p, &t), 0);
		assert_int_equal(unlink(p), 0);
		faultsim_cache_namespace_end(&t, 0);
		uint64_t mark = faultsim_cache_sync_begin(x->cache);
		faultsim_cache_dir_sync_end(x->cache, x->dir, mark, 0);
	}
	assert_int_equal(file, first);
	assert_true(faultsim_cache_nfiles(x->cache) <= 2);
	assert_false(faultsim_cache_overflowed(x->cache));
}

/* A file synced after every write while one namespace record stays
 * unsynced (created, its directory never synced): the window cannot move
 * past that record, so without the syncs' trim its tail would run through
 * megabytes of fresh pages until a half filled.  The window stays short,
 * and a power cut still undoes the create. */
static void test_syncs_keep_the_window_short(void **state)
{
	fx *x = *state;
	faultsim_ticket t = { 0 };
	faultsim_crash_report rep;
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 7 };
	char p[128], buf[4096];
	int fd, file;

	memset(buf, 'w', sizeof buf);
	snprintf(p, sizeof p, "%s/log", x->dir);
	assert_int_equal(faultsim_cache_create_begin(x->cache, p, &t), 0);
	fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	faultsim_cache_namespace_end(&t, 0);
	file = faultsim_cache_track(x->cache, fd, p);
	assert_true(file >= 0);
	for (int i = 0; i < 1000; i++) { /* 4 MB: past the 4 MB half */
		assert_int_equal(faultsim_cache_write_begin(x->cache, file, fd,
		                 buf, sizeof buf, (uint64_t)i * sizeof buf, &t), 0);
		assert_int_equal(pwrite(fd, buf, sizeof buf,
		                        (off_t)i * (off_t)sizeof buf),
		                 (ssize_t)sizeof buf);
		faultsim_cache_write_end(&t, sizeof buf);
		xsync(x, file);
		assert_true(faultsim_cache_used(x->cache) < (1u << 20));
	}
	assert_true(faultsim_cache_peak(x->cache) < (1u << 20));
	close(fd);
	assert_int_equal(faultsim_cache_crash(x->cache, &co, &rep), 0);
	assert_int_equal(access(p, F_OK), -1); /* its create was never durable */
}

/* One recorded write at OFF of N bytes of C on FD (file FILE); returns the
 * size the cache says the file had before it (the record's old size). */
static uint64_t wrote(fx *x, int file, int fd, uint64_t off, size_t n)
{
	char buf[256];
	faultsim_ticket t = { 0 };

	memset(buf, 'w', n);
	assert_int_equal(faultsim_cache_write_begin(x->cache, file, fd, buf, n,
	                                            off, &t), 0);
	uint64_t before = t.size;
	assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	faultsim_cache_write_end(&t, (ssize_t)n);
	return before;
}

/* (10): the size a write records comes from the file entry, moved by each
 * recorded write and truncate; a writer that died inside a call (its size
 * change never told) makes the cache read the file again. */
static void test_sizes_follow_the_calls(void **state)
{
	fx *x = *state;
	faultsim_ticket t = { 0 };
	char p[128], c = 'd';
	struct stat st;

	snprintf(p, sizeof p, "%s/sized", x->dir);
	int fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	int file = faultsim_cache_track(x->cache, fd, p);
	assert_true(file >= 0);
	assert_int_equal(wrote(x, file, fd, 0, 100), 0);
	assert_int_equal(wrote(x, file, fd, 10, 20), 100);   /* inside */
	assert_int_equal(wrote(x, file, fd, 200, 50), 100);  /* past the end */
	assert_int_equal(faultsim_cache_truncate_begin(x->cache, file, fd, 40,
	                                               &t), 0);
	assert_int_equal(ftruncate(fd, 40), 0);
	faultsim_cache_change_end(&t, 0);
	assert_int_equal(wrote(x, file, fd, 0, 1), 40);
	/* a writer killed between its call and the _end: the file is 90 bytes
	 * now, which no record says */
	assert_int_equal(faultsim_cache_write_begin(x->cache, file, fd, &c, 1, 89,
	                                            &t), 0);
	assert_int_equal(pwrite(fd, &c, 1, 89), 1);
	faultsim_cache_writer_died(x->cache);
	assert_int_equal(wrote(x, file, fd, 0, 1), 90);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 90);
	close(fd);
}

/* A directory's resolved path is remembered until a name changes: a link
 * in the path pointed elsewhere is seen once faultsim_cache_names_changed
 * (the shim calls it before an unlink of anything but a regular file, and
 * before every rename) or a clear says so. */
static void test_resolved_dirs_follow_name_changes(void **state)
{
	fx *x = *state;
	char a[128], xd[128], yd[128], out[512], want[512];
	faultsim_crash_report rep;
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 7 };

	snprintf(a, sizeof a, "%s/a", x->dir);
	snprintf(xd, sizeof xd, "%s/x", x->dir);
	snprintf(yd, sizeof yd, "%s/y", x->dir);
	assert_int_equal(mkdir(xd, 0755), 0);
	assert_int_equal(mkdir(yd, 0755), 0);
	assert_int_equal(symlink("x", a), 0);
	snprintf(want, sizeof want, "%s/a/f", x->dir);
	assert_int_equal(faultsim_cache_abspath_memo(x->cache, want, out,
	                                             sizeof out), 0);
	assert_non_null(realpath(xd, want));
	strcat(want, "/f");
	assert_string_equal(out, want);
	/* a points to y now; told, the memo is not used */
	assert_int_equal(unlink(a), 0);
	assert_int_equal(symlink("y", a), 0);
	faultsim_cache_names_changed(x->cache);
	snprintf(want, sizeof want, "%s/a/f", x->dir);
	assert_int_equal(faultsim_cache_abspath_memo(x->cache, want, out,
	                                             sizeof out), 0);
	assert_non_null(realpath(yd, want));
	strcat(want, "/f");
	assert_string_equal(out, want);
	/* and back to x, told by a power cut (its clear) */
	assert_int_equal(unlink(a), 0);
	assert_int_equal(symlink("x", a), 0);
	assert_int_equal(faultsim_cache_crash(x->cache, &co, &rep), 0);
	assert_int_equal(faultsim_cache_realdir_memo(x->cache, a, out), 0);
	assert_non_null(realpath(xd, want));
	assert_string_equal(out, want);
	unlink(a);
	rmdir(xd);
	rmdir(yd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
		T(test_synced_files_never_fill_the_table),
		T(test_unsynced_files_are_never_reused),
		T(test_power_cut_after_reuse_is_exact),
		T(test_unlinked_files_give_their_entry_back),
		T(test_syncs_keep_the_window_short),
		T(test_sizes_follow_the_calls),
		T(test_resolved_dirs_follow_name_changes),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
