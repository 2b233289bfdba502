/*
 * test_faultsim.c -- the fault simulator: device models, namespace undo,
 * fsync profiles, fault specs, libfiu points, and a record that survives a
 * SIGKILLed writer.  Every case drives the keel_io table the engine would
 * get, then checks the files on disk byte for byte.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <fiu-control.h>
#include <fiu.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultsim.h"
#include "cache_internal.h" /* the cache's lock (test_cache_lock_...) */

#define FSZ 16384 /* the model workload's largest file */

typedef struct fx {
	char dir[64];
	char path[128]; /* dir/f, the workload's file */
	faultsim_cache *cache;
	faultsim_faults *faults;
	faultsim_io *fio;
	const keel_io *io;
} fx;

/* ---- fixture and helpers ------------------------------------------------- */

static void fx_profile(fx *x, faultsim_profile p)
{
	faultsim_io_options o = { x->cache, x->faults, p };
	faultsim_io_free(x->fio);
	assert_int_equal(faultsim_io_new(&o, &x->fio), 0);
	x->io = faultsim_io_table(x->fio);
}

static int fx_setup(void **state)
{
	fx *x = calloc(1, sizeof *x);
	snprintf(x->dir, sizeof x->dir, "/tmp/keel-faultsim.XXXXXX");
	if (!x || !mkdtemp(x->dir))
		return -1;
	snprintf(x->path, sizeof x->path, "%s/f", x->dir);
	if (faultsim_cache_create(1u << 20, &x->cache) != 0 ||
	    faultsim_faults_create(42, &x->faults) != 0)
		return -1;
	fx_profile(x, FAULTSIM_PROFILE_EXT4);
	*state = x;
	return 0;
}

static void rm_dir_contents(const char *dir)
{
	char p[512];
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			unlink(p);
		}
	}
	if (d)
		closedir(d);
}

static int fx_teardown(void **state)
{
	fx *x = *state;
	rm_dir_contents(x->dir);
	rmdir(x->dir);
	faultsim_io_free(x->fio);
	faultsim_faults_destroy(x->faults);
	faultsim_cache_destroy(x->cache);
	free(x);
	return 0;
}

static int xopen(fx *x, const char *name, int flags)
{
	char p[160];
	snprintf(p, sizeof p, "%s/%s", x->dir, name);
	int fd = x->io->open(x->io->ctx, p, flags, 0644);
	assert_true(fd >= 0);
	return fd;
}

static void fill(fx *x, int fd, char c, size_t len, uint64_t off)
{
	static unsigned char buf[FSZ];
	memset(buf, c, len);
	assert_int_equal(x->io->pwrite(x->io->ctx, fd, buf, len, off),
	                 (ssize_t)len);
}

static void xsync(fx *x, int fd)
{
	assert_int_equal(x->io->fdatasync(x->io->ctx, fd), 0);
}

static void xsync_dir(fx *x)
{
	assert_int_equal(x->io->fsync_dir(x->io->ctx, x->dir), 0);
}

/* Reads DIR/NAME into BUF; returns its size, or -1 when it does not exist. */
static long slurp(fx *x, const char *name, unsigned char *buf, size_t cap)
{
	char p[160];
	snprintf(p, sizeof p, "%s/%s", x->dir, name);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, buf, cap, 0);
	close(fd);
	return (long)n;
}

/* Names in the directory, sorted, space separated ("" when empty). */
static void listing(fx *x, char *out, size_t cap)
{
	struct dirent **v;
	int n = scandir(x->dir, &v, NULL, alphasort);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.' || strncmp(v[i]->d_name, ".f", 2) == 0)
			snprintf(out + strlen(out), cap - strlen(out), "%s%s",
			         *out ? " " : "", v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

static void crash(fx *x, faultsim_device d, unsigned sector, uint64_t seed,
                  faultsim_crash_report *rep)
{
	faultsim_crash_options o = { d, sector, seed };
	assert_int_equal(faultsim_cache_crash(x->cache, &o, rep), 0);
	assert_int_equal(rep->errors, 0);
}

/* ---- the device models -----------------------------------------------------
 * The workload: A = 4096 'a' at 0, synced with its directory (durable); then
 * unsynced: B = 8192 'b' at 4096, C = 4096 'c' at 12288, D = 1024 'd' at 1024
 * (over durable data, so its pre-image matters).  Issue order B, C, D.
 */
static void model_workload(fx *x)
{
	unlink(x->path);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'a', 4096, 0);
	xsync(x, fd);
	xsync_dir(x);
	fill(x, fd, 'b', 8192, 4096);
	fill(x, fd, 'c', 4096, 12288);
	fill(x, fd, 'd', 1024, 1024);
	assert_int_equal(x->io->close(x->io->ctx, fd), 0);
}

/* The file when the writes in MASK (1 = B, 2 = C, 4 = D) persisted whole. */
static long expect(unsigned mask, unsigned char *buf)
{
	long size = 4096;
	memset(buf, 0, FSZ);
	memset(buf, 'a', 4096);
	if (mask & 1) {
		memset(buf + 4096, 'b', 8192);
		size = 12288;
	}
	if (mask & 2) {
		memset(buf + 12288, 'c', 4096);
		size = FSZ;
	}
	if (mask & 4)
		memset(buf + 1024, 'd', 1024);
	return size;
}

/* Which whole-write state the file is in, or -1. */
static int match_mask(const unsigned char *got, long size)
{
	unsigned char want[FSZ];
	for (unsigned m = 0; m < 8; m++)
		if (expect(m, want) == size && memcmp(want, got, (size_t)size) == 0)
			return (int)m;
	return -1;
}

static void test_ordered_keeps_a_prefix(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ + 1];
	int seen[8] = { 0 };
	faultsim_crash_report rep;

	for (uint64_t seed = 0; seed < 48; seed++) {
		model_workload(x);
		crash(x, FAULTSIM_DEVICE_ORDERED, 512, seed, &rep);
		int m = match_mask(got, slurp(x, "f", got, sizeof got));
		/* only the prefixes {}, {B}, {B,C}, {B,C,D} are allowed */
		assert_true(m == 0 || m == 1 || m == 3 || m == 7);
		assert_int_equal(rep.kept + rep.lost, 3);
		assert_int_equal(rep.torn + rep.garbage, 0);
		seen[m] = 1;
	}
	assert_true(seen[0] && seen[1] && seen[3] && seen[7]);
}

static void test_reorder_keeps_any_subset(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ + 1];
	int seen[8] = { 0 };
	faultsim_crash_report rep;

	for (uint64_t seed = 0; seed < 64; seed++) {
		model_workload(x);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		int m = match_mask(got, slurp(x, "f", got, sizeof got));
		assert_true(m >= 0);
		seen[m] = 1;
	}
	for (int m = 0; m < 8; m++)
		assert_true(seen[m]); /* including C without B: a hole of zeros */
}

/* For TORN and GARBAGE: every SECTOR-sized piece of each write holds either
 * its new bytes or what was there before; counts pieces that hold neither
 * (at most one per write) and writes that persisted in part. */
static void check_pieces(const unsigned char *got, long size, unsigned sector,
                         int *garbage, int *mixed)
{
	static const struct {
		uint64_t off, len;
		unsigned char now, before;
	} w[3] = { { 4096, 8192, 'b', 0 }, { 12288, 4096, 'c', 0 },
		   { 1024, 1024, 'd', 'a' } };

	assert_true(size >= 4096 && size <= FSZ && size % sector == 0);
	for (uint64_t i = 0; i < 1024; i++) /* durable bytes outside D */
		assert_true(got[i] == 'a' && got[2048 + i] == 'a' &&
		            got[3072 + i] == 'a');
	for (int k = 0; k < 3; k++) {
		int news = 0, olds = 0, bad = 0;
		for (uint64_t at = w[k].off; at < w[k].off + w[k].len &&
		                             at < (uint64_t)size; at += sector) {
			uint64_t n = sector < w[k].len ? sector : w[k].len, j;
			for (j = 0; j < n && got[at + j] == w[k].now; j++)
				;
			if (j == n) {
				news++;
				continue;
			}
			for (j = 0; j < n && got[at + j] == w[k].before; j++)
				;
			if (j == n)
				olds++;
			else
				bad++;
		}
		assert_true(bad <= 1);
		*garbage += bad;
		*mixed += news && olds;
	}
}

static void run_pieces(fx *x, faultsim_device d, unsigned sector,
                       int *garbage, int *mixed)
{
	unsigned char got[FSZ + 1];
	faultsim_crash_report rep;

	for (uint64_t seed = 0; seed < 64; seed++) {
		model_workload(x);
		crash(x, d, sector, seed, &rep);
		int g = 0;
		check_pieces(got, slurp(x, "f", got, sizeof got), sector, &g,
		             mixed);
		assert_int_equal((uint64_t)g <= rep.garbage, 1);
		*garbage += g;
	}
}

static void test_torn_persists_whole_sectors(void **state)
{
	fx *x = *state;
	int garbage = 0, mixed = 0;

	run_pieces(x, FAULTSIM_DEVICE_TORN, 512, &garbage, &mixed);
	assert_int_equal(garbage, 0);
	assert_true(mixed > 0); /* some write really was torn */
	mixed = 0;
	run_pieces(x, FAULTSIM_DEVICE_TORN, 4096, &garbage, &mixed);
	assert_int_equal(garbage, 0);
	assert_true(mixed > 0); /* B spans two 4 KiB sectors */
}

static void test_garbage_fills_one_sector(void **state)
{
	fx *x = *state;
	int garbage = 0, mixed = 0;

	run_pieces(x, FAULTSIM_DEVICE_GARBAGE, 512, &garbage, &mixed);
	assert_true(garbage > 0);
}

/* PAYLOAD: a multi-sector write keeps its first and last sectors and all
 * but one interior sector; that one keeps its old bytes or gets garbage. */
static void test_payload_loses_one_interior_sector(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ];
	int garbage = 0, lost = 0;

	for (uint64_t seed = 1; seed <= 40; seed++) {
		faultsim_crash_report rep;
		unlink(x->path);
		int fd = xopen(x, "f", KEEL_IO_CREATE);
		fill(x, fd, 'a', 4096, 0);
		xsync(x, fd);
		xsync_dir(x);
		fill(x, fd, 'n', 4096, 0); /* 8 sectors over durable 'a' */
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_PAYLOAD, 512, seed, &rep);
		assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
		int bad = -1;
		for (int sct = 0; sct < 8; sct++) {
			int all_n = 1;
			for (int i = 0; i < 512; i++)
				all_n &= got[sct * 512 + i] == 'n';
			if (all_n)
				continue;
			assert_int_equal(bad, -1); /* only one */
			bad = sct;
			int all_a = 1;
			for (int i = 0; i < 512; i++)
				all_a &= got[sct * 512 + i] == 'a';
			lost += all_a;
			garbage += !all_a;
		}
		assert_true(bad >= 1 && bad <= 6); /* interior */
	}
	assert_true(lost > 5 && garbage > 5);
}

/* The smallest write with an interior sector, three sectors: the payload
 * device loses that one (its old bytes or garbage), never its edges, and
 * never keeps it whole. */
static void test_payload_holes_a_three_sector_write(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ];

	for (uint64_t seed = 1; seed <= 20; seed++) {
		faultsim_crash_report rep;
		unlink(x->path);
		int fd = xopen(x, "f", KEEL_IO_CREATE);
		fill(x, fd, 'a', 1536, 0);
		xsync(x, fd);
		xsync_dir(x);
		fill(x, fd, 'n', 1536, 0); /* sectors 0, 1, 2 over durable 'a' */
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_PAYLOAD, 512, seed, &rep);
		assert_int_equal(slurp(x, "f", got, sizeof got), 1536);
		int interior_n = 1;
		for (int i = 0; i < 512; i++) {
			assert_int_equal(got[i], 'n');
			assert_int_equal(got[1024 + i], 'n');
			interior_n &= got[512 + i] == 'n';
		}
		assert_false(interior_n);
	}
}

static void test_same_seed_same_files(void **state)
{
	fx *x = *state;
	unsigned char a[FSZ + 1], b[FSZ + 1];
	faultsim_crash_report rep;
	long na, nb;
	int differ = 0;

	for (uint64_t seed = 0; seed < 8; seed++) {
		model_workload(x);
		crash(x, FAULTSIM_DEVICE_GARBAGE, 512, seed, &rep);
		na = slurp(x, "f", a, sizeof a);
		model_workload(x);
		crash(x, FAULTSIM_DEVICE_GARBAGE, 512, seed, &rep);
		nb = slurp(x, "f", b, sizeof b);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, (size_t)na);
		model_workload(x);
		crash(x, FAULTSIM_DEVICE_GARBAGE, 512, seed + 1000, &rep);
		nb = slurp(x, "f", b, sizeof b);
		differ += na != nb || memcmp(a, b, (size_t)na) != 0;
	}
	assert_true(differ > 0);
}

/* ---- namespace operations ------------------------------------------------ */

/* A durable file NAME holding LEN bytes of C. */
static void durable_file(fx *x, const char *name, char c, size_t len)
{
	int fd = xopen(x, name, KEEL_IO_CREATE);
	fill(x, fd, c, len, 0);
	xsync(x, fd);
	xsync_dir(x);
	x->io->close(x->io->ctx, fd);
}

static void assert_file(fx *x, const char *name, char c, long len)
{
	unsigned char buf[FSZ + 1];
	long n = slurp(x, name, buf, sizeof buf);
	assert_int_equal(n, len);
	for (long i = 0; i < n; i++)
		assert_int_equal(buf[i], (unsigned char)c);
}

static void assert_listing(fx *x, const char *want)
{
	char got[512];
	listing(x, got, sizeof got);
	assert_string_equal(got, want);
}

static void test_create_needs_dir_sync(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	int fd = xopen(x, "new", KEEL_IO_CREATE);
	fill(x, fd, 'n', 100, 0);
	xsync(x, fd); /* the data is synced, the name is not */
	x->io->close(x->io->ctx, fd);
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 1, &rep);
	assert_int_equal(rep.ns_undone, 1);
	assert_listing(x, "");

	durable_file(x, "new", 'n', 100);
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 1, &rep);
	assert_int_equal(rep.ns_undone, 0);
	assert_file(x, "new", 'n', 100);
}

/* The atomic-replace pattern: write t, sync it, rename it over "cur". */
static void replace_cur(fx *x, int sync_dir_after)
{
	durable_file(x, "cur", 'o', 300);
	durable_file(x, "t", 'z', 200);
	assert_int_equal(x->io->rename(x->io->ctx, "/nonexistent/a", "b"),
	                 -ENOENT);
	char from[160], to[160];
	snprintf(from, sizeof from, "%s/t", x->dir);
	snprintf(to, sizeof to, "%s/cur", x->dir);
	assert_int_equal(x->io->rename(x->io->ctx, from, to), 0);
	assert_file(x, "cur", 'z', 200); /* the program sees the new name */
	if (sync_dir_after)
		xsync_dir(x);
}

static void test_rename_undone_without_dir_sync(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	replace_cur(x, 0);
	crash(x, FAULTSIM_DEVICE_REORDER, 512, 3, &rep);
	assert_int_equal(rep.ns_undone, 1);
	assert_listing(x, "cur t"); /* no stash left behind */
	assert_file(x, "cur", 'o', 300);
	assert_file(x, "t", 'z', 200);
}

static void test_rename_kept_with_dir_sync(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	replace_cur(x, 1);
	assert_listing(x, "cur"); /* the stash went with the dir sync */
	crash(x, FAULTSIM_DEVICE_REORDER, 512, 3, &rep);
	assert_int_equal(rep.ns_undone, 0);
	assert_listing(x, "cur");
	assert_file(x, "cur", 'z', 200);
}

/* A rename into another directory, undone (that directory is never
 * synced), whose old name a durable create took since: the create keeps
 * its name, and the renamed file, durable under neither name, is gone.
 * Before, the undo renamed it back over the durable create
 * (tests/refmodel.sh, names.py: 'Rac Ca Y' under posix and btrfs). */
static void test_undone_rename_leaves_a_durable_create_its_name(void **state)
{
	fx *x = *state;
	char from[160], to[160], sub[160];
	struct stat st;
	faultsim_crash_report rep;

	durable_file(x, "ra", 'o', 300);
	snprintf(sub, sizeof sub, "%s/rs", x->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	xsync_dir(x);
	snprintf(from, sizeof from, "%s/ra", x->dir);
	snprintf(to, sizeof to, "%s/rs/c", x->dir);
	assert_int_equal(x->io->rename(x->io->ctx, from, to), 0);
	durable_file(x, "ra", 'n', 100); /* created, synced, its dir synced */
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 1, &rep);
	assert_int_equal(rep.ns_undone, 1);
	assert_listing(x, "ra rs");
	assert_file(x, "ra", 'n', 100);
	assert_int_not_equal(lstat(to, &st), 0);
	assert_int_equal(rmdir(sub), 0);
}

static void test_unlink_undone_without_dir_sync(void **state)
{
	fx *x = *state;
	char p[160];
	faultsim_crash_report rep;

	durable_file(x, "u", 'u', 500);
	snprintf(p, sizeof p, "%s/u", x->dir);
	assert_int_equal(x->io->unlink(x->io->ctx, p), 0);
	assert_int_equal(slurp(x, "u", NULL, 0), -1);
	crash(x, FAULTSIM_DEVICE_TORN, 512, 5, &rep);
	assert_listing(x, "u");
	assert_file(x, "u", 'u', 500);

	assert_int_equal(x->io->unlink(x->io->ctx, p), 0);
	xsync_dir(x);
	crash(x, FAULTSIM_DEVICE_TORN, 512, 5, &rep);
	assert_listing(x, "");
}

/* An unsynced write to a file whose unlink is then undone comes back in the
 * state the device model gives it, at its old name. */
static void test_unlinked_file_content_follows_model(void **state)
{
	fx *x = *state;
	char p[160];
	faultsim_crash_report rep;

	durable_file(x, "u", 'u', 512);
	int fd = xopen(x, "u", 0);
	fill(x, fd, 'w', 512, 0);
	snprintf(p, sizeof p, "%s/u", x->dir);
	assert_int_equal(x->io->unlink(x->io->ctx, p), 0);
	fill(x, fd, 'v', 512, 512); /* to the unlinked inode */
	x->io->close(x->io->ctx, fd);
	/* ORDERED with one cut over two writes: {}, {w}, {w,v} */
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 0, &rep);
	unsigned char buf[2048];
	long n = slurp(x, "u", buf, sizeof buf);
	assert_int_equal(rep.kept + rep.lost, 2);
	if (rep.kept == 0)
		assert_true(n == 512 && buf[0] == 'u');
	else if (rep.kept == 1)
		assert_true(n == 512 && buf[0] == 'w');
	else
		assert_true(n == 1024 && buf[0] == 'w' && buf[512] == 'v');
}

/* ---- fsync profiles ---------------------------------------------------------
 * A durable 4096 'a'; then 100 'x' at 0 and 100 'y' at 4096 (growing the
 * file); the next fdatasync fails (injected).
 */
static void failed_sync(fx *x, faultsim_profile p, unsigned char *seen)
{
	char err[128];
	fx_profile(x, p);
	unlink(x->path);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'a', 4096, 0);
	xsync(x, fd);
	xsync_dir(x);
	fill(x, fd, 'x', 100, 0);
	fill(x, fd, 'y', 100, 4096);
	faultsim_faults_reset_counts(x->faults);
	assert_int_equal(faultsim_faults_add(x->faults, "fdatasync:EIO:nth=1",
	                                     err, sizeof err), 0);
	assert_int_equal(x->io->fdatasync(x->io->ctx, fd), -EIO);
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 1);
	/* what the program reads right after the failure */
	assert_int_equal(x->io->pread(x->io->ctx, fd, seen, 4196, 0), 4196);
	xsync(x, fd); /* the retry "succeeds" (the spec fired once) */
	x->io->close(x->io->ctx, fd);
}

static void test_profiles_after_failed_sync(void **state)
{
	static const faultsim_profile profiles[] = {
		FAULTSIM_PROFILE_EXT4, FAULTSIM_PROFILE_XFS,
		FAULTSIM_PROFILE_BTRFS, FAULTSIM_PROFILE_KEEP };
	fx *x = *state;
	unsigned char seen[4196], got[8192];
	faultsim_crash_report rep;

	for (int p = 0; p < 4; p++) {
		for (int d = FAULTSIM_DEVICE_ORDERED; d <= FAULTSIM_DEVICE_GARBAGE;
		     d++) {
			/* a fresh fault state: one spec per round */
			faultsim_faults_destroy(x->faults);
			assert_int_equal(faultsim_faults_create(9, &x->faults), 0);
			failed_sync(x, profiles[p], seen);
			int btrfs = profiles[p] == FAULTSIM_PROFILE_BTRFS;
			/* ext4/xfs/keep: reads still see the data; btrfs
			 * reverted it (the size stays, the grown part is 0) */
			assert_int_equal(seen[0], btrfs ? 'a' : 'x');
			assert_int_equal(seen[4096], btrfs ? 0 : 'y');
			crash(x, (faultsim_device)d, 512, 11, &rep);
			long n = slurp(x, "f", got, sizeof got);
			if (profiles[p] == FAULTSIM_PROFILE_KEEP) {
				/* the retry made them durable */
				assert_int_equal(n, 4196);
				assert_true(got[0] == 'x' && got[4096] == 'y');
				continue;
			}
			/* lost whatever the device model says */
			assert_int_equal(got[0], 'a');
			assert_int_equal(got[99], 'a');
			assert_true(n == 4096 || (btrfs && n == 4196 &&
			                          got[4096] == 0));
			if (!btrfs)
				assert_int_equal(rep.lost_failed, 2);
		}
	}
}

/* btrfs: a failed sync puts back the unsynced bytes, but not a later
 * record's over them -- an O_SYNC write, durable at once, over an earlier
 * buffered write keeps its bytes, now and after a power cut; and a
 * truncate put back grows the file again, so a write after it is
 * recorded against the size the file has (tests/refmodel.sh, the
 * extended alphabet: 'Wa0 Oa0 Ea', 'Ta Ea Wa1' under the btrfs profile).
 * Before, the revert wrote the buffered write's pre-image over the durable
 * bytes, and a crash cut the file to the truncated size. */
static void failing_sync(fx *x, int fd)
{
	char err[128];
	faultsim_faults_destroy(x->faults);
	assert_int_equal(faultsim_faults_create(9, &x->faults), 0);
	assert_int_equal(faultsim_faults_add(x->faults, "fdatasync:EIO:nth=1",
	                                     err, sizeof err), 0);
	assert_int_equal(x->io->fdatasync(x->io->ctx, fd), -EIO);
}

static void test_btrfs_revert_keeps_later_records(void **state)
{
	fx *x = *state;
	unsigned char got[8192], o[100];
	faultsim_crash_report rep;
	faultsim_ticket t = { 0 };

	for (int d = FAULTSIM_DEVICE_ORDERED; d <= FAULTSIM_DEVICE_TORN; d++) {
		fx_profile(x, FAULTSIM_PROFILE_BTRFS);
		unlink(x->path);
		int fd = xopen(x, "f", KEEL_IO_CREATE);
		fill(x, fd, 'a', 4096, 0);
		xsync(x, fd);
		xsync_dir(x);
		fill(x, fd, 'x', 4096, 0);              /* buffered */
		memset(o, 'o', sizeof o);               /* O_SYNC */
		int file = faultsim_cache_file_of(x->cache, fd);
		assert_true(file >= 0);
		assert_int_equal(faultsim_cache_write_begin(x->cache, file, fd,
		                                            o, sizeof o, 0, &t), 0);
		faultsim_cache_write_end_durable(&t, pwrite(fd, o, sizeof o, 0));
		failing_sync(x, fd);
		assert_int_equal(x->io->pread(x->io->ctx, fd, got, 4096, 0), 4096);
		assert_true(got[0] == 'o' && got[99] == 'o' && got[100] == 'a');
		x->io->close(x->io->ctx, fd);
		crash(x, (faultsim_device)d, 512, 5, &rep);
		assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
		assert_true(got[0] == 'o' && got[99] == 'o' && got[100] == 'a' &&
		            got[4095] == 'a');

		/* a truncate put back, then a write */
		unlink(x->path);
		fd = xopen(x, "f", KEEL_IO_CREATE);
		fill(x, fd, 'a', 8192, 0);
		xsync(x, fd);
		xsync_dir(x);
		assert_int_equal(x->io->ftruncate(x->io->ctx, fd, 4096), 0);
		failing_sync(x, fd);
		fill(x, fd, 'c', 4096, 2048);
		x->io->close(x->io->ctx, fd);
		crash(x, (faultsim_device)d, 512, 5, &rep);
		assert_int_equal(slurp(x, "f", got, sizeof got), 8192);
		assert_true(got[0] == 'a' && got[8191] == 'a');
	}
}

/* Without a power cut, ext4's clean-marked pages vanish when evicted: the
 * file reads as the disk has it, later writes are untouched. */
static void test_evict_lost_reverts_only_lost(void **state)
{
	fx *x = *state;
	unsigned char seen[4196], got[8192];
	faultsim_crash_report rep;

	failed_sync(x, FAULTSIM_PROFILE_EXT4, seen);
	int fd = xopen(x, "f", 0);
	fill(x, fd, 'z', 10, 200); /* after the failure, unsynced */
	x->io->close(x->io->ctx, fd);
	assert_int_equal(slurp(x, "f", got, sizeof got), 4196);
	assert_int_equal(got[0], 'x');
	faultsim_cache_evict_lost(x->cache);
	assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
	assert_true(got[0] == 'a' && got[99] == 'a' && got[200] == 'z');
	/* the unsynced 'z' is still undoable by a power cut */
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 0, &rep);
	assert_int_equal(rep.kept + rep.lost, 1);
	assert_int_equal(rep.lost_failed, 0);
	assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
	assert_int_equal(got[200], rep.kept ? 'z' : 'a');
}

/* The machine lives on and writes the dead writer's dirty pages back: they
 * become durable (a crash keeps them), what a failed sync lost stays
 * readable in the cache and never reaches the device; the device copy is
 * what a reader through the device (O_DIRECT) would see. */
static void test_write_back_and_device_copy(void **state)
{
	fx *x = *state;
	unsigned char seen[4196], got[8192];
	char copy[160];
	faultsim_crash_report rep;

	failed_sync(x, FAULTSIM_PROFILE_EXT4, seen);
	int fd = xopen(x, "f", 0);
	fill(x, fd, 'z', 10, 200); /* after the failure, unsynced */
	x->io->close(x->io->ctx, fd);
	faultsim_cache_write_back(x->cache);
	int src = open(x->path, O_RDONLY);
	assert_true(src >= 0);
	int file = faultsim_cache_file_of(x->cache, src);
	assert_true(file >= 0);
	assert_int_equal(faultsim_cache_lost_records(x->cache, file), 2);
	assert_int_equal(faultsim_cache_lost_records(x->cache, -1), 2);
	/* the cache still shows the failed bytes */
	assert_int_equal(slurp(x, "f", got, sizeof got), 4196);
	assert_true(got[0] == 'x' && got[200] == 'z' && got[4096] == 'y');
	snprintf(copy, sizeof copy, "%s/view", x->dir);
	int dst = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(dst >= 0);
	assert_int_equal(faultsim_cache_device_copy(x->cache, file, src, dst), 0);
	close(dst);
	close(src);
	/* the device: 'a' under the lost 'x', the written-back 'z', and
	 * zeros where the lost 'y' grew the file */
	assert_int_equal(slurp(x, "view", got, sizeof got), 4196);
	assert_true(got[0] == 'a' && got[99] == 'a' && got[200] == 'z' &&
	            got[4096] == 0 && got[4195] == 0);
	/* a power cut now keeps 'z' (written back) and drops the lost */
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 0, &rep);
	assert_int_equal(rep.kept + rep.lost, 0);
	assert_int_equal(rep.lost_failed, 2);
	assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
	assert_true(got[0] == 'a' && got[200] == 'z');
	/* a file the cache never saw */
	int other = open(copy, O_RDONLY);
	assert_int_equal(faultsim_cache_file_of(x->cache, other), -ENOENT);
	close(other);
}

/* ---- fault specs ------------------------------------------------------------- */

static void test_spec_parser(void **state)
{
	fx *x = *state;
	char err[160];
	static const char *good[] = { "fdatasync:EIO", "pwrite:ENOSPC:p=0.5",
		"pwrite:short:nth=3", "pread:EIO:from=2", "sync:eio:p=1",
		"fsync_dir:EIO:nth=1", "pread:short", "rename:crash:p=0.5" };
	static const struct {
		const char *spec, *says;
	} badv[] = {
		{ "fdatsync:EIO", "unknown operation 'fdatsync'" },
		{ "fdatasync", "lacks ':ERROR'" },
		{ "fdatasync:EBOGUS", "unknown error 'EBOGUS'" },
		{ "fsync:short", "'short' applies to pread and pwrite" },
		{ "pread:crash", "'crash' applies to calls that change state" },
		{ "lock:crash:nth=1", "'crash' applies to calls that change" },
		{ "pwrite:EIO:p=1.5", "bad probability 'p=1.5'" },
		{ "pwrite:EIO:p=0", "bad probability" },
		{ "pwrite:EIO:p=x", "bad probability" },
		{ "pwrite:EIO:nth=0", "bad call number 'nth=0'" },
		{ "pwrite:EIO:nth=-1", "bad call number" },
		{ "pwrite:EIO:nth=3x", "bad call number" },
		{ "pwrite:EIO:every=3", "unknown trigger 'every=3'" },
	};

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		assert_int_equal(faultsim_faults_add(x->faults, good[i], err,
		                                     sizeof err), 0);
	for (size_t i = 0; i < sizeof badv / sizeof *badv; i++) {
		err[0] = '\0';
		assert_int_equal(faultsim_faults_add(x->faults, badv[i].spec,
		                                     err, sizeof err), -EINVAL);
		if (!strstr(err, badv[i].says))
			fail_msg("'%s': got '%s'", badv[i].spec, err);
	}
	for (int i = 8; i < FAULTSIM_MAX_SPECS; i++)
		assert_int_equal(faultsim_faults_add(x->faults, "lock:EIO",
		                                     NULL, 0), 0);
	assert_int_equal(faultsim_faults_add(x->faults, "lock:EIO", err,
	                                     sizeof err), -ENOSPC);
	faultsim_device d;
	faultsim_profile p;
	assert_int_equal(faultsim_device_parse("torn", &d), 0);
	assert_int_equal(d, FAULTSIM_DEVICE_TORN);
	assert_int_equal(faultsim_device_parse("tron", &d), -EINVAL);
	assert_int_equal(faultsim_profile_parse("btrfs", &p), 0);
	assert_int_equal(p, FAULTSIM_PROFILE_BTRFS);
	assert_int_equal(faultsim_profile_parse("zfs", &p), -EINVAL);
}

static void test_nth_fires_at_exactly_that_call(void **state)
{
	fx *x = *state;
	assert_int_equal(faultsim_faults_add(x->faults, "fdatasync:ENOSPC:nth=3",
	                                     NULL, 0), 0);
	assert_int_equal(faultsim_faults_add(x->faults, "fsync:EIO:from=2",
	                                     NULL, 0), 0);
	for (int i = 1; i <= 10; i++) {
		assert_int_equal(faultsim_faults_check(x->faults,
		                 FAULTSIM_OP_FDATASYNC), i == 3 ? -ENOSPC : 0);
		assert_int_equal(faultsim_faults_check(x->faults,
		                 FAULTSIM_OP_FSYNC), i >= 2 ? -EIO : 0);
		assert_int_equal(faultsim_faults_check(x->faults,
		                 FAULTSIM_OP_PWRITE), 0);
	}
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 1);
	assert_int_equal(faultsim_faults_fired(x->faults, 1), 9);
	assert_int_equal(faultsim_faults_calls(x->faults, FAULTSIM_OP_PWRITE),
	                 10);
	faultsim_faults_reset_counts(x->faults);
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 0);
	for (int i = 1; i <= 3; i++) /* counting restarts: fires again at 3 */
		assert_int_equal(faultsim_faults_check(x->faults,
		                 FAULTSIM_OP_FDATASYNC), i == 3 ? -ENOSPC : 0);
}

/* Which of 4000 calls fail for SEED with p=0.25, as a bitmap. */
static int prob_run(uint64_t seed, unsigned char *hit)
{
	faultsim_faults *f;
	int n = 0;
	assert_int_equal(faultsim_faults_create(seed, &f), 0);
	assert_int_equal(faultsim_faults_add(f, "pread:EIO:p=0.25", NULL, 0), 0);
	for (int i = 0; i < 4000; i++) {
		hit[i] = faultsim_faults_check(f, FAULTSIM_OP_PREAD) == -EIO;
		n += hit[i];
	}
	assert_int_equal(faultsim_faults_fired(f, 0), (uint64_t)n);
	faultsim_faults_destroy(f);
	return n;
}

static void test_probability_is_seeded(void **state)
{
	unsigned char a[4000], b[4000], c[4000];
	(void)state;
	int na = prob_run(7, a), nb = prob_run(7, b), nc = prob_run(8, c);
	assert_true(na > 880 && na < 1120); /* 1000 +- 4 sigma */
	assert_true(nc > 880 && nc < 1120);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, sizeof a);
	assert_true(memcmp(a, c, sizeof a) != 0);
}

/* Injected faults through the table fail without touching the file. */
static void test_io_faults_touch_nothing(void **state)
{
	fx *x = *state;
	unsigned char buf[256];
	faultsim_crash_report rep;

	assert_int_equal(faultsim_faults_add(x->faults, "pwrite:ENOSPC:nth=2",
	                                     NULL, 0), 0);
	assert_int_equal(faultsim_faults_add(x->faults, "pwrite:short:nth=3",
	                                     NULL, 0), 0);
	assert_int_equal(faultsim_faults_add(x->faults, "pread:EIO:nth=1",
	                                     NULL, 0), 0);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'a', 100, 0);                              /* call 1 */
	memset(buf, 'e', sizeof buf);
	assert_int_equal(x->io->pwrite(x->io->ctx, fd, buf, 100, 100), -ENOSPC);
	assert_int_equal(slurp(x, "f", buf, sizeof buf), 100); /* untouched */
	memset(buf, 's', sizeof buf);
	assert_int_equal(x->io->pwrite(x->io->ctx, fd, buf, 100, 100), 50);
	assert_int_equal(x->io->pread(x->io->ctx, fd, buf, 10, 0), -EIO);
	assert_int_equal(x->io->pread(x->io->ctx, fd, buf, 150, 0), 150);
	assert_true(buf[0] == 'a' && buf[149] == 's');
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 1);
	assert_int_equal(faultsim_faults_fired(x->faults, 1), 1);
	assert_int_equal(faultsim_faults_fired(x->faults, 2), 1);
	xsync(x, fd);
	xsync_dir(x);
	x->io->close(x->io->ctx, fd);
	/* the short write's half is all the record holds: it is durable */
	crash(x, FAULTSIM_DEVICE_REORDER, 512, 1, &rep);
	assert_int_equal(slurp(x, "f", buf, sizeof buf), 150);
}

/* The libfiu points: failinfo is the errno, -1 a short write. */
static void test_libfiu_points(void **state)
{
	fx *x = *state;
	unsigned char buf[64] = { 0 };

	fiu_init(0);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	assert_int_equal(fiu_enable("keel/faultsim/fdatasync", 1,
	                            (void *)(intptr_t)ENOSPC, FIU_ONETIME), 0);
	assert_int_equal(x->io->fdatasync(x->io->ctx, fd), -ENOSPC);
	assert_int_equal(x->io->fdatasync(x->io->ctx, fd), 0);
	assert_int_equal(fiu_enable("keel/faultsim/pwrite", 1,
	                            (void *)(intptr_t)-1, FIU_ONETIME), 0);
	assert_int_equal(x->io->pwrite(x->io->ctx, fd, buf, 64, 0), 32);
	assert_int_equal(fiu_enable("keel/faultsim/open", 1, NULL,
	                            FIU_ONETIME), 0);
	assert_int_equal(x->io->open(x->io->ctx, x->path, 0, 0), -EIO);
	x->io->close(x->io->ctx, fd);
}

/* Linux reports a writeback error once to every descriptor open on the
 * file when it happened (errseq), not only to the one whose sync met it:
 * a program syncing from two descriptors must not hear "ok" on the second. */
static void test_failed_sync_reported_on_every_open_fd(void **state)
{
	fx *x = *state;
	char err[128];

	int a = xopen(x, "f", KEEL_IO_CREATE), b = xopen(x, "f", 0);
	fill(x, a, 'a', 100, 0);
	assert_int_equal(faultsim_faults_add(x->faults, "fdatasync:EIO:nth=1",
	                                     err, sizeof err), 0);
	faultsim_faults_reset_counts(x->faults);
	assert_int_equal(x->io->fdatasync(x->io->ctx, a), -EIO);
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 1);
	int c = xopen(x, "f", 0); /* opened after the error: never told */
	assert_int_equal(x->io->fsync(x->io->ctx, b), -EIO);
	assert_int_equal(x->io->fdatasync(x->io->ctx, b), 0); /* once */
	assert_int_equal(x->io->fdatasync(x->io->ctx, a), 0);
	assert_int_equal(x->io->fdatasync(x->io->ctx, c), 0);
	x->io->close(x->io->ctx, c);
	x->io->close(x->io->ctx, b);
	x->io->close(x->io->ctx, a);
	/* a descriptor number reused by a new open starts clean */
	faultsim_faults_destroy(x->faults);
	assert_int_equal(faultsim_faults_create(9, &x->faults), 0);
	fx_profile(x, FAULTSIM_PROFILE_EXT4);
	assert_int_equal(faultsim_faults_add(x->faults, "fdatasync:EIO:nth=1",
	                                     err, sizeof err), 0);
	a = xopen(x, "f", 0);
	b = xopen(x, "f", 0);
	assert_int_equal(x->io->fdatasync(x->io->ctx, a), -EIO);
	x->io->close(x->io->ctx, b); /* it had the error pending */
	c = xopen(x, "f", 0);
	assert_int_equal(c, b);
	assert_int_equal(x->io->fdatasync(x->io->ctx, c), 0);
	x->io->close(x->io->ctx, c);
	x->io->close(x->io->ctx, a);
}

/* ---- the record outlives its writer ---------------------------------------- */

static void test_record_survives_sigkill(void **state)
{
	fx *x = *state;
	unsigned char got[8192];
	faultsim_crash_report rep;
	int status;

	for (uint64_t seed = 0; seed < 6; seed++) {
		unlink(x->path);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = x->io->open(x->io->ctx, x->path,
			                     KEEL_IO_CREATE, 0644);
			unsigned char b[4096];
			memset(b, 'a', sizeof b);
			x->io->pwrite(x->io->ctx, fd, b, 4096, 0);
			x->io->fdatasync(x->io->ctx, fd);
			x->io->fsync_dir(x->io->ctx, x->dir);
			memset(b, 'b', sizeof b);
			x->io->pwrite(x->io->ctx, fd, b, 4096, 4096); /* no sync */
			kill(getpid(), SIGKILL);
			_exit(3);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		/* the page cache kept the write; the record knows it is dirty */
		assert_int_equal(slurp(x, "f", got, sizeof got), 8192);
		assert_true(faultsim_cache_used(x->cache) > 4096);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		long n = slurp(x, "f", got, sizeof got);
		assert_int_equal(rep.kept + rep.lost, 1);
		assert_int_equal(n, rep.kept ? 8192 : 4096);
		assert_true(got[0] == 'a' && got[4095] == 'a');
		if (rep.kept)
			assert_true(got[4096] == 'b' && got[8191] == 'b');
	}
}

/* Enumeration: the writer dies right after its Nth state-changing call. */
static void test_kill_after_nth_step(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char got[64];
	int status;

	for (uint64_t n = 1; n <= 4; n++) {
		unlink(x->path);
		faultsim_faults_reset_counts(x->faults);
		faultsim_faults_kill_after(x->faults, n);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = x->io->open(x->io->ctx, x->path, /* step 1 */
			                     KEEL_IO_CREATE, 0644);
			x->io->pwrite(x->io->ctx, fd, "abcd", 4, 0);   /* 2 */
			x->io->fdatasync(x->io->ctx, fd);              /* 3 */
			x->io->fsync_dir(x->io->ctx, x->dir);          /* 4 */
			x->io->pwrite(x->io->ctx, fd, "efgh", 4, 4);   /* 5 */
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		assert_int_equal(faultsim_faults_steps(x->faults), n + 1);
		crash(x, FAULTSIM_DEVICE_ORDERED, 512, 0, &rep);
		/* before the directory sync the file does not survive */
		long len = slurp(x, "f", got, sizeof got);
		assert_int_equal(len, n < 4 ? -1 : 4);
	}
	faultsim_faults_kill_after(x->faults, 0);
}

/* "OP:crash": the call is made, then the process dies before the next one.
 * A crash right after a rename, before the directory sync: the rename took
 * place (the new name is there once the writer is dead), the next call was
 * never made, and a power cut then undoes the rename. */
static void test_crash_spec_kills_right_after_the_call(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char got[64];
	char err[160], to[160];
	int status;

	snprintf(to, sizeof to, "%s/g", x->dir);
	unlink(x->path);
	unlink(to);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'a', 16, 0);
	xsync(x, fd);
	xsync_dir(x);
	x->io->close(x->io->ctx, fd);
	faultsim_faults_reset_counts(x->faults);
	assert_int_equal(faultsim_faults_add(x->faults, "rename:crash:nth=1",
	                                     err, sizeof err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = x->io->rename(x->io->ctx, x->path, to);
		x->io->fsync_dir(x->io->ctx, x->dir); /* never reached */
		_exit(rc == 0 ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(faultsim_faults_fired(x->faults, 0), 1);
	assert_int_equal(faultsim_faults_calls(x->faults, FAULTSIM_OP_FSYNC_DIR), 0);
	assert_int_equal(slurp(x, "g", got, sizeof got), 16); /* it moved */
	assert_int_equal(slurp(x, "f", got, sizeof got), -1);
	crash(x, FAULTSIM_DEVICE_ORDERED, 512, 0, &rep);
	assert_int_equal(slurp(x, "f", got, sizeof got), 16); /* undone */
	assert_int_equal(slurp(x, "g", got, sizeof got), -1);
	faultsim_faults_destroy(x->faults);
	assert_int_equal(faultsim_faults_create(42, &x->faults), 0);
	fx_profile(x, FAULTSIM_PROFILE_EXT4);
}

/* A full cache fails the call before it is made, and says so for good. */
static void test_full_cache_fails_stop(void **state)
{
	fx *x = *state;
	faultsim_cache *small;
	faultsim_io *fio;
	unsigned char buf[8192] = { 0 };
	faultsim_crash_report rep;

	assert_int_equal(faultsim_cache_create(4096, &small), 0);
	faultsim_io_options o = { small, NULL, FAULTSIM_PROFILE_EXT4 };
	assert_int_equal(faultsim_io_new(&o, &fio), 0);
	const keel_io *io = faultsim_io_table(fio);
	int fd = io->open(io->ctx, x->path, KEEL_IO_CREATE, 0644);
	assert_true(fd >= 0);
	assert_int_equal(io->pwrite(io->ctx, fd, buf, 1000, 0), 1000);
	assert_false(faultsim_cache_overflowed(small));
	assert_int_equal(io->pwrite(io->ctx, fd, buf, 8192, 0), -ENOBUFS);
	assert_true(faultsim_cache_overflowed(small));
	assert_int_equal(slurp(x, "f", buf, sizeof buf), 1000);
	io->close(io->ctx, fd);
	assert_int_equal(faultsim_cache_crash(small, NULL, &rep), 0);
	assert_true(rep.overflowed);
	assert_false(faultsim_cache_overflowed(small));
	faultsim_io_free(fio);
	faultsim_cache_destroy(small);
}

/* A file never synced pins its records; another file's synced records are
 * dropped when the cache's half fills, so a long run does not overflow, and
 * the crash still undoes the pinned file exactly. */
static void test_compaction_keeps_what_a_crash_needs(void **state)
{
	fx *x = *state;
	faultsim_cache *small;
	faultsim_io *fio;
	unsigned char buf[4096];
	static unsigned char big[FSZ * 2 + 1];
	faultsim_crash_report rep;

	assert_int_equal(faultsim_cache_create(64 << 10, &small), 0);
	faultsim_io_options o = { small, NULL, FAULTSIM_PROFILE_EXT4 };
	assert_int_equal(faultsim_io_new(&o, &fio), 0);
	const keel_io *io = faultsim_io_table(fio);
	x->io = io;
	int log = xopen(x, "log", KEEL_IO_CREATE);
	int data = xopen(x, "data", KEEL_IO_CREATE);
	xsync_dir(x);
	fill(x, log, 'l', 1000, 0); /* never synced */
	for (int i = 0; i < 200; i++) { /* 200 x 8 KiB of records */
		fill(x, data, (char)('A' + i % 26), 4096, (uint64_t)(i % 8) * 4096);
		xsync(x, data);
	}
	fill(x, log, 'm', 1000, 1000);
	assert_false(faultsim_cache_overflowed(small));
	assert_true(faultsim_cache_used(small) < (64 << 10));
	io->close(io->ctx, log);
	io->close(io->ctx, data);
	faultsim_crash_options co = { FAULTSIM_DEVICE_ORDERED, 512, 4 };
	assert_int_equal(faultsim_cache_crash(small, &co, &rep), 0);
	assert_int_equal(rep.kept + rep.lost, 2);
	long n = slurp(x, "log", buf, sizeof buf);
	assert_int_equal(n, rep.kept == 0 ? 0 : rep.kept == 1 ? 1000 : 2000);
	for (long i = 0; i < n; i++)
		assert_int_equal(buf[i], i < 1000 ? 'l' : 'm');
	assert_int_equal(slurp(x, "data", big, sizeof big), 8 * 4096);
	for (int k = 0; k < 8; k++) /* the last write of each slot, durable */
		assert_int_equal(big[k * 4096 + 4095], 'A' + (192 + k) % 26);
	faultsim_io_free(fio);
	faultsim_cache_destroy(small);
	fx_profile(x, FAULTSIM_PROFILE_EXT4); /* x->io back to the fixture's */
}

/*
 * A killed writer's unsynced append, then the next writer's tail cut over
 * it: the next writer truncates the file below the dead one's bytes,
 * appends its own over the same range and syncs.  The sync covers the
 * truncate too (fdatasync flushes a size change), so whatever the device
 * model, a power cut keeps the new bytes: the truncate's pre-image (the
 * dead writer's bytes) comes back only to be cut and overwritten again.
 * (A sync that left the truncate out would bring the dead writer's bytes
 * back past the new ones.)
 */
static void test_cut_and_rewrite_survive_a_power_cut(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ];
	faultsim_crash_report rep;
	int status;

	for (int d = FAULTSIM_DEVICE_ORDERED; d <= FAULTSIM_DEVICE_PAYLOAD; d++) {
		for (uint64_t seed = 0; seed < 16; seed++) {
			unlink(x->path);
			int fd = xopen(x, "f", KEEL_IO_CREATE);
			fill(x, fd, 'a', 4096, 0);
			fill(x, fd, 0, 4096, 4096); /* preallocated zeros */
			xsync(x, fd);
			xsync_dir(x);
			x->io->close(x->io->ctx, fd);
			pid_t pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) { /* the writer that dies: no sync */
				fd = xopen(x, "f", 0);
				fill(x, fd, 'w', 2048, 4096);
				kill(getpid(), SIGKILL);
				_exit(3);
			}
			assert_int_equal(waitpid(pid, &status, 0), pid);
			assert_true(WIFSIGNALED(status));
			faultsim_cache_writer_died(x->cache); /* no power cut */
			fd = xopen(x, "f", 0);
			assert_int_equal(x->io->ftruncate(x->io->ctx, fd, 4096), 0);
			fill(x, fd, 'n', 1536, 4096);
			xsync(x, fd);
			fill(x, fd, 'u', 1024, 5632); /* unsynced: may go */
			x->io->close(x->io->ctx, fd);
			crash(x, (faultsim_device)d, 512, seed, &rep);
			long n = slurp(x, "f", got, sizeof got);
			assert_true(n >= 5632);
			for (long i = 0; i < 5632; i++)
				if (got[i] != (i < 4096 ? 'a' : 'n'))
					fail_msg("device %d seed %d: byte %ld is "
					         "%d", d, (int)seed, i, got[i]);
			/* the cut stays cut (a run: garbage may hold a 'w') */
			for (long i = 5632; i + 8 <= n; i++)
				if (memcmp(got + i, "wwwwwwww", 8) == 0)
					fail_msg("device %d seed %d: byte %ld is "
					         "the dead writer's", d, (int)seed,
					         i);
		}
	}
}

/* ---- a writer killed inside a call ------------------------------------------
 * The workload: 2048 'a' and 6144 preallocated zeros, durable.  A writer
 * records a HEAD-sized write of 'h' at HEAD_AT, across the page boundary at
 * 4096, and is SIGKILLed after the first DONE bytes reached the file:
 * before the call (0), between its two pages (56), or after it, before its
 * _end call (112).  The kernel stops a pwrite between pages at a SIGKILL,
 * so all three happen to a killed writer.
 */
#define HEAD_LEN 112
#define HEAD_AT (4096 - 56)

static void killed_inside_a_write(fx *x, unsigned done)
{
	unsigned char h[HEAD_LEN];
	int status;

	unlink(x->path);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'a', 2048, 0);
	fill(x, fd, 0, 6144, 2048);
	xsync(x, fd);
	xsync_dir(x);
	x->io->close(x->io->ctx, fd);
	memset(h, 'h', sizeof h);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		faultsim_ticket t;
		fd = xopen(x, "f", 0);
		int file = faultsim_cache_file_of(x->cache, fd);
		if (file < 0 || faultsim_cache_write_begin(x->cache, file, fd, h,
		                                           HEAD_LEN, HEAD_AT,
		                                           &t) < 0)
			_exit(3);
		if (done && pwrite(fd, h, done, HEAD_AT) != (ssize_t)done)
			_exit(4);
		kill(getpid(), SIGKILL); /* before faultsim_cache_write_end */
		_exit(5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* What the file holds at [HEAD_AT, HEAD_AT + HEAD_LEN) after such a kill. */
static void expect_head(unsigned done, unsigned char *want)
{
	memset(want, 0, HEAD_LEN);
	memset(want, 'h', done);
}

/* A power cut right after the kill: a device never holds bytes the writer
 * did not write, whatever the model keeps of those it did. */
static void test_killed_call_keeps_only_what_it_made(void **state)
{
	fx *x = *state;
	static const unsigned dones[] = { 0, 56, HEAD_LEN };
	unsigned char got[FSZ];
	faultsim_crash_report rep;

	for (int k = 0; k < 3; k++) {
		for (int d = FAULTSIM_DEVICE_ORDERED;
		     d <= FAULTSIM_DEVICE_PAYLOAD; d++) {
			for (uint64_t seed = 0; seed < 8; seed++) {
				killed_inside_a_write(x, dones[k]);
				crash(x, (faultsim_device)d, 512, seed, &rep);
				assert_int_equal(slurp(x, "f", got, sizeof got),
				                 8192);
				for (unsigned i = dones[k]; i < HEAD_LEN; i++)
					if (got[HEAD_AT + i] != 0)
						fail_msg("done %u, device %d, seed "
						         "%d: byte %u of the head "
						         "is %d, never written",
						         dones[k], d, (int)seed, i,
						         got[HEAD_AT + i]);
			}
		}
	}
}

/*
 * The torture run's sequence: no power cut at the kill, so the next writer
 * opens on the dead one's page cache.  Its recovery reads the device view
 * (RECOVERY_READ_DEVICE) and builds on what it shows; its open's sync and
 * its own commits then make that durable, the dead writer's record leaves
 * the window, and a power cut comes.  The head the device view showed must
 * be what the crash leaves -- a head that was never written showed there
 * and then read as zeros behind later synced heads.
 */
static void test_next_writer_sees_what_a_killed_call_made(void **state)
{
	fx *x = *state;
	static const unsigned dones[] = { 0, 56, HEAD_LEN };
	unsigned char want[HEAD_LEN], view[HEAD_LEN], got[FSZ];
	faultsim_crash_report rep;

	for (int k = 0; k < 3; k++) {
		for (int d = FAULTSIM_DEVICE_ORDERED;
		     d <= FAULTSIM_DEVICE_PAYLOAD; d++) {
			killed_inside_a_write(x, dones[k]);
			faultsim_cache_writer_died(x->cache); /* no power cut */
			expect_head(dones[k], want);
			int fd = xopen(x, "f", 0);
			assert_int_equal(x->io->pread_device(x->io->ctx, fd, view,
			                                     HEAD_LEN, HEAD_AT),
			                 HEAD_LEN);
			xsync(x, fd); /* the open's sync */
			fill(x, fd, 'n', 512, 5120); /* a later commit */
			xsync(x, fd);
			x->io->close(x->io->ctx, fd);
			crash(x, (faultsim_device)d, 512, 1, &rep);
			assert_int_equal(slurp(x, "f", got, sizeof got), 8192);
			assert_int_equal(got[5120], 'n');
			if (memcmp(got + HEAD_AT, view, HEAD_LEN) != 0)
				fail_msg("done %u, device %d: the head the next "
				         "writer read and synced reads back as "
				         "%d..%d after the power cut, not %d..%d",
				         dones[k], d, got[HEAD_AT],
				         got[HEAD_AT + HEAD_LEN - 1], view[0],
				         view[HEAD_LEN - 1]);
			if (memcmp(view, want, HEAD_LEN) != 0)
				fail_msg("done %u: the device view showed bytes "
				         "the killed call never wrote", dones[k]);
		}
	}
}

/* A truncate recorded and never made (the writer died first) cuts nothing
 * at a power cut; one made and not synced may go either way. */
static void test_killed_truncate_cuts_only_if_made(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ];
	faultsim_crash_report rep;
	int status, cut_seen = 0;

	for (int made = 0; made < 2; made++) {
		for (uint64_t seed = 0; seed < 16; seed++) {
			unlink(x->path);
			int fd = xopen(x, "f", KEEL_IO_CREATE);
			fill(x, fd, 'a', 8192, 0);
			xsync(x, fd);
			xsync_dir(x);
			x->io->close(x->io->ctx, fd);
			pid_t pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				faultsim_ticket t;
				fd = xopen(x, "f", 0);
				int file = faultsim_cache_file_of(x->cache, fd);
				if (file < 0 || faultsim_cache_truncate_begin(
				                    x->cache, file, fd, 4096, &t) < 0)
					_exit(3);
				if (made && ftruncate(fd, 4096) != 0)
					_exit(4);
				kill(getpid(), SIGKILL);
				_exit(5);
			}
			assert_int_equal(waitpid(pid, &status, 0), pid);
			assert_true(WIFSIGNALED(status));
			crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
			long n = slurp(x, "f", got, sizeof got);
			if (!made)
				assert_int_equal(n, 8192);
			else
				assert_true(n == 8192 || n == 4096);
			cut_seen += made && n == 4096;
			for (long i = 0; i < n; i++)
				assert_int_equal(got[i], 'a');
		}
	}
	assert_true(cut_seen > 0);
}

/* ---- file system models ------------------------------------------------------
 * Each rule of faultsim.h's "file system model" is pinned by a workload
 * whose crash differs between a model that has the rule and one that has
 * not.  Files are removed between models; the cache is empty after a crash.
 */
static const faultsim_fs all_fs[] = { FAULTSIM_FS_POSIX, FAULTSIM_FS_EXT4,
	                              FAULTSIM_FS_EXT4_WRITEBACK,
	                              FAULTSIM_FS_XFS, FAULTSIM_FS_BTRFS };
#define NFS (sizeof all_fs / sizeof all_fs[0])

static void fx_fs(fx *x, faultsim_fs fs)
{
	rm_dir_contents(x->dir);
	assert_int_equal(faultsim_cache_set_fs(x->cache, fs), 0);
	fx_profile(x, faultsim_fs_profile(fs));
}

static void xrename(fx *x, const char *from, const char *to)
{
	char a[160], b[160];
	snprintf(a, sizeof a, "%s/%s", x->dir, from);
	snprintf(b, sizeof b, "%s/%s", x->dir, to);
	assert_int_equal(x->io->rename(x->io->ctx, a, b), 0);
}

static void test_fs_names(void **state)
{
	faultsim_fs fs;
	fx *x = *state;

	for (size_t i = 0; i < NFS; i++) {
		assert_int_equal(faultsim_fs_parse(faultsim_fs_name(all_fs[i]),
		                                   &fs), 0);
		assert_int_equal(fs, all_fs[i]);
	}
	assert_int_equal(faultsim_fs_parse("zfs", &fs), -EINVAL);
	assert_int_equal(faultsim_fs_profile(FAULTSIM_FS_EXT4),
	                 FAULTSIM_PROFILE_EXT4);
	assert_int_equal(faultsim_fs_profile(FAULTSIM_FS_XFS),
	                 FAULTSIM_PROFILE_XFS);
	assert_int_equal(faultsim_fs_profile(FAULTSIM_FS_BTRFS),
	                 FAULTSIM_PROFILE_BTRFS);
	assert_int_equal(faultsim_cache_fs(x->cache), FAULTSIM_FS_POSIX);
	assert_int_equal(faultsim_cache_set_fs(x->cache, (faultsim_fs)9),
	                 -EINVAL);
}

/* r1: create, write, fsync the file, never the directory. */
static void test_fs_fsync_makes_the_name_durable(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	for (size_t i = 0; i < NFS; i++) {
		fx_fs(x, all_fs[i]);
		int fd = xopen(x, "new", KEEL_IO_CREATE);
		fill(x, fd, 'n', 100, 0);
		xsync(x, fd);
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_TORN, 512, 7, &rep);
		if (all_fs[i] == FAULTSIM_FS_POSIX) {
			assert_listing(x, "");
		} else {
			assert_listing(x, "new");
			assert_file(x, "new", 'n', 100);
		}
	}
}

/* r1's dependencies: g moves from a to b, then a new file f is created at
 * a and fsynced.  f's name needs a freed, so on btrfs the move persists
 * with it (undoing it alone would put g back over f); ext4 commits both
 * anyway; posix undoes both. */
static void test_fs_fsync_keeps_what_its_name_depends_on(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	for (size_t i = 0; i < NFS; i++) {
		fx_fs(x, all_fs[i]);
		durable_file(x, "a", 'g', 100);
		xrename(x, "a", "b");
		int fd = xopen(x, "a", KEEL_IO_CREATE);
		fill(x, fd, 'f', 200, 0);
		xsync(x, fd);
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_TORN, 512, 3, &rep);
		if (all_fs[i] == FAULTSIM_FS_POSIX) {
			assert_listing(x, "a");
			assert_file(x, "a", 'g', 100);
		} else {
			assert_listing(x, "a b");
			assert_file(x, "a", 'f', 200);
			assert_file(x, "b", 'g', 100);
		}
	}
}

/* r2: rename a, then sync b (which grew): the journal commits the rename
 * with b's size on ext4 and xfs; btrfs logs b alone; posix wants a
 * directory sync.  An overwrite in place commits nothing: some seed's
 * crash then undoes the rename even on ext4. */
static void test_fs_sync_commits_earlier_renames(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	for (size_t i = 0; i < NFS; i++) {
		int ordered = all_fs[i] != FAULTSIM_FS_POSIX &&
		              all_fs[i] != FAULTSIM_FS_BTRFS;
		for (uint64_t seed = 0; seed < 8; seed++) {
			fx_fs(x, all_fs[i]);
			durable_file(x, "a", 'a', 100);
			durable_file(x, "b", 'b', 100);
			xrename(x, "a", "a2");
			int fd = xopen(x, "b", 0);
			fill(x, fd, 'b', 100, 100);
			xsync(x, fd);
			x->io->close(x->io->ctx, fd);
			crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
			assert_listing(x, ordered ? "a2 b" : "a b");
			assert_file(x, "b", 'b', 200);
		}
	}
	int undone = 0;
	for (uint64_t seed = 0; seed < 64 && !undone; seed++) {
		fx_fs(x, FAULTSIM_FS_EXT4);
		durable_file(x, "a", 'a', 100);
		durable_file(x, "b", 'b', 100);
		xrename(x, "a", "a2");
		int fd = xopen(x, "b", 0);
		fill(x, fd, 'c', 100, 0);
		xsync(x, fd);
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
		char got[64];
		listing(x, got, sizeof got);
		undone = strcmp(got, "a b") == 0;
	}
	assert_true(undone);
}

/* r2 at the crash: two unsynced renames persist as a prefix on ext4 and
 * xfs (never the second without the first), never on posix and btrfs. */
static void test_fs_crash_keeps_a_prefix_of_names(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	for (size_t i = 0; i < NFS; i++) {
		int ordered = all_fs[i] != FAULTSIM_FS_POSIX &&
		              all_fs[i] != FAULTSIM_FS_BTRFS;
		unsigned seen = 0;
		for (uint64_t seed = 0; seed < 64; seed++) {
			fx_fs(x, all_fs[i]);
			durable_file(x, "a", 'a', 100);
			durable_file(x, "b", 'b', 100);
			xrename(x, "a", "a2");
			xrename(x, "b", "b2");
			crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
			char got[64];
			listing(x, got, sizeof got);
			if (strcmp(got, "a b") == 0)
				seen |= 1;
			else if (strcmp(got, "a2 b") == 0)
				seen |= 2;
			else if (strcmp(got, "a2 b2") == 0)
				seen |= 4;
			else
				fail_msg("%s seed %" PRIu64 ": %s",
				         faultsim_fs_name(all_fs[i]), seed, got);
			assert_int_equal(rep.ns_kept + rep.ns_undone, 2);
		}
		assert_int_equal(seen, ordered ? 7u : 1u);
	}
}

/* r3: t written (not synced) and renamed over a durable cur, the rename
 * made durable by a directory sync.  On ext4 cur then holds t's data in
 * every crash; without r3 (posix, xfs, ext4-writeback) some crash leaves
 * cur empty. */
static void test_fs_rename_over_brings_its_data(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	const faultsim_fs fss[] = { FAULTSIM_FS_EXT4, FAULTSIM_FS_POSIX,
	                            FAULTSIM_FS_XFS,
	                            FAULTSIM_FS_EXT4_WRITEBACK };

	for (size_t i = 0; i < sizeof fss / sizeof fss[0]; i++) {
		int empty = 0;
		for (uint64_t seed = 0; seed < 64; seed++) {
			fx_fs(x, fss[i]);
			durable_file(x, "cur", 'o', 300);
			int fd = xopen(x, "t", KEEL_IO_CREATE);
			fill(x, fd, 'z', 2048, 0);
			x->io->close(x->io->ctx, fd);
			xrename(x, "t", "cur");
			xsync_dir(x);
			crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
			assert_listing(x, "cur");
			unsigned char buf[4096];
			long n = slurp(x, "cur", buf, sizeof buf);
			if (fss[i] == FAULTSIM_FS_EXT4)
				assert_file(x, "cur", 'z', 2048);
			empty |= n == 0;
		}
		assert_int_equal(empty, fss[i] != FAULTSIM_FS_EXT4);
	}
}

/* Is any byte of DIR/NAME from FROM on zero? */
static int zero_past(fx *x, const char *name, long from)
{
	unsigned char buf[FSZ];
	long n = slurp(x, name, buf, sizeof buf);
	for (long i = from; i < n; i++)
		if (buf[i] == 0)
			return 1;
	return 0;
}

/* r4: appends that are lost or torn.  One 4096-byte append torn by the
 * device, and two appends of which the first may be lost while the
 * second persists.  On ext4, xfs and btrfs no zero byte ever shows past
 * the durable 512; on ext4-writeback (and posix) some crash shows one. */
static void test_fs_appends_never_expose_zeros(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;

	for (size_t i = 0; i < NFS; i++) {
		int zeros = 0;
		for (uint64_t seed = 0; seed < 64; seed++) {
			fx_fs(x, all_fs[i]);
			durable_file(x, "f", 'a', 512);
			int fd = xopen(x, "f", 0);
			fill(x, fd, 'b', 4096, 512);
			x->io->close(x->io->ctx, fd);
			crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
			zeros |= zero_past(x, "f", 512);

			fx_fs(x, all_fs[i]);
			durable_file(x, "g", 'a', 512);
			fd = xopen(x, "g", 0);
			fill(x, fd, 'b', 512, 512);
			fill(x, fd, 'c', 512, 1024);
			x->io->close(x->io->ctx, fd);
			crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
			zeros |= zero_past(x, "g", 512);
		}
		assert_int_equal(zeros, all_fs[i] == FAULTSIM_FS_POSIX ||
		                        all_fs[i] == FAULTSIM_FS_EXT4_WRITEBACK);
	}
}

/* ext4-writeback: a LOST append may still leave the size grown (zeros),
 * which neither posix nor ext4 do. */
static void test_fs_writeback_may_grow_over_lost_data(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	const faultsim_fs fss[] = { FAULTSIM_FS_EXT4_WRITEBACK,
	                            FAULTSIM_FS_POSIX, FAULTSIM_FS_EXT4 };

	for (size_t i = 0; i < sizeof fss / sizeof fss[0]; i++) {
		int grown = 0;
		for (uint64_t seed = 0; seed < 64; seed++) {
			fx_fs(x, fss[i]);
			durable_file(x, "f", 'a', 512);
			int fd = xopen(x, "f", 0);
			fill(x, fd, 'b', 512, 512);
			x->io->close(x->io->ctx, fd);
			crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
			unsigned char buf[2048];
			long n = slurp(x, "f", buf, sizeof buf);
			grown |= rep.lost == 1 && n == 1024;
		}
		assert_int_equal(grown, fss[i] == FAULTSIM_FS_EXT4_WRITEBACK);
	}
}

/* ---- writes through a shared mapping --------------------------------------
 * The recorder's side played by hand: a page recorded as at its first write
 * fault, then "stores" made with a plain pwrite the cache does not see (as
 * stores through a mapping are not), then sealed or not.
 */

typedef struct stops {
	int n;
	uint64_t off, len;
	uint32_t tag;
} stops;

static void count_stop(void *arg, uint64_t off, uint64_t len, uint32_t tag)
{
	stops *s = arg;
	s->n++;
	s->off = off;
	s->len = len;
	s->tag = tag;
}

/* A durable file NAME of 8192 'a', open read-write; *FILE its id. */
static int mapped_file(fx *x, const char *name, int *file)
{
	char p[160];
	durable_file(x, name, 'a', 8192);
	snprintf(p, sizeof p, "%s/%s", x->dir, name);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	*file = faultsim_cache_file_of(x->cache, fd);
	assert_true(*file >= 0);
	return fd;
}

static void map_fault_page(fx *x, int file, int fd, uint64_t off)
{
	faultsim_ticket t = { 0 };
	assert_int_equal(faultsim_cache_map_lock(x->cache, &t), 0);
	assert_int_equal(faultsim_cache_map_record(&t, file, fd, off, 4096, 7,
	                                           3), 1);
	faultsim_cache_map_unlock(&t);
}

static void store(int fd, const char *bytes, uint64_t off)
{
	size_t n = strlen(bytes);
	assert_int_equal(pwrite(fd, bytes, n, (off_t)off), (ssize_t)n);
}

static int map_seal(fx *x, int file, int fd, stops *st)
{
	faultsim_ticket t = { 0 };
	faultsim_cache_map_lock(x->cache, &t);
	int n = faultsim_cache_map_seal(&t, file, fd, 7, count_stop, st);
	faultsim_cache_map_unlock(&t);
	return n;
}

static void test_sealed_mapped_write_is_durable_after_sync(void **state)
{
	fx *x = *state;
	stops st = { 0 };
	int file, fd = mapped_file(x, "m", &file);
	faultsim_crash_report rep;
	unsigned char buf[8192];

	map_fault_page(x, file, fd, 4096);
	/* a page past the end records nothing */
	faultsim_ticket t = { 0 };
	faultsim_cache_map_lock(x->cache, &t);
	assert_int_equal(faultsim_cache_map_record(&t, file, fd, 8192, 4096, 7,
	                                           3), 0);
	faultsim_cache_map_unlock(&t);
	store(fd, "XY", 4096 + 100);
	assert_int_equal(map_seal(x, file, fd, &st), 1);
	/* the recorder was told to stop stores to the page, tag and all */
	assert_int_equal(st.n, 1);
	assert_int_equal(st.off, 4096);
	assert_int_equal(st.len, 4096);
	assert_int_equal(st.tag, 3);
	/* sealed already: a second seal finds nothing */
	assert_int_equal(map_seal(x, file, fd, &st), 0);
	uint64_t mark = faultsim_cache_sync_begin(x->cache);
	faultsim_cache_sync_end(x->cache, file, mark, 0, FAULTSIM_PROFILE_EXT4);
	close(fd);
	crash(x, FAULTSIM_DEVICE_TORN, 512, 1, &rep);
	assert_int_equal(slurp(x, "m", buf, sizeof buf), 8192);
	assert_memory_equal(buf + 4196, "XY", 2);
}

/* A writer killed with a page unsealed: the crash seals it from the file,
 * so its stores persist or not as one write, and do persist under some
 * seeds (the record's new bytes are the stores, not its pre-image). */
static void test_unsealed_stores_follow_the_device_model(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[8192];
	int kept = 0, lost = 0;

	for (uint64_t seed = 0; seed < 16; seed++) {
		int file, fd = mapped_file(x, "m", &file);
		map_fault_page(x, file, fd, 0);
		store(fd, "XY", 100);
		store(fd, "Z", 3000);
		close(fd);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		assert_int_equal(slurp(x, "m", buf, sizeof buf), 8192);
		int has_xy = !memcmp(buf + 100, "XY", 2), has_z = buf[3000] == 'Z';
		assert_int_equal(has_xy, has_z);
		kept += has_xy;
		lost += !has_xy;
	}
	assert_true(kept > 0);
	assert_true(lost > 0);
}

/*
 * A writer killed inside a write while a mapped page of another file is
 * unsealed: the crash settles the write it died in first, then seals the
 * page.  The seal reserves a record; in a half this full the reserve
 * compacts, and compaction moves every record, so the write's position
 * is read while it still names it.  The write never reached its file: it
 * is void, and no device leaves its bytes.
 */
static void test_crash_settles_the_killed_call_before_the_pages(void **state)
{
	fx *x = *state;
	faultsim_cache *keep = x->cache, *small;
	faultsim_crash_report rep;
	faultsim_ticket t = { 0 };
	unsigned char w[100];

	memset(w, 'w', sizeof w);
	assert_int_equal(faultsim_cache_create(64 << 10, &small), 0);
	x->cache = small;
	fx_profile(x, FAULTSIM_PROFILE_EXT4);
	for (int d = FAULTSIM_DEVICE_ORDERED; d <= FAULTSIM_DEVICE_PAYLOAD;
	     d++) {
		for (uint64_t seed = 0; seed < 4; seed++) {
			int file, mfd = mapped_file(x, "m", &file);
			durable_file(x, "g", 'g', 4096);
			int s = xopen(x, "s", KEEL_IO_CREATE);
			int g = xopen(x, "g", 0);
			int gfile = faultsim_cache_file_of(small, g);
			assert_true(gfile >= 0);
			xsync_dir(x);
			/* first in the window; durable below, so dropped by the
			 * compaction that moves the records after it */
			for (uint64_t at = 0; at < (52 << 10); at += FSZ)
				fill(x, s, 's', at + FSZ > (52 << 10) ?
				     (52 << 10) - at : FSZ, at);
			map_fault_page(x, file, mfd, 0);
			store(mfd, "X", 1); /* the seal keeps [1, 4095) */
			store(mfd, "Y", 4094);
			xsync(x, s);
			assert_int_equal(faultsim_cache_write_begin(small, gfile,
			                 g, w, sizeof w, 0, &t), 0);
			/* killed here, before the pwrite.  The window holds
			 * s's records (52 KiB), the page's and the write's: the
			 * seal's record (two images of 4,094 bytes) does not
			 * fit the 64 KiB half */
			close(mfd);
			x->io->close(x->io->ctx, s);
			x->io->close(x->io->ctx, g);
			faultsim_crash_options co = { (faultsim_device)d, 512,
			                              seed };
			assert_int_equal(faultsim_cache_crash(small, &co, &rep),
			                 0);
			assert_file(x, "g", 'g', 4096);
			for (const char *n = "s\0g\0m\0"; *n; n += 2) {
				char p[160];
				snprintf(p, sizeof p, "%s/%s", x->dir, n);
				unlink(p);
			}
		}
	}
	x->cache = keep;
	fx_profile(x, FAULTSIM_PROFILE_EXT4);
	faultsim_cache_destroy(small);
}

/* A sync that finds a page still unsealed (a store racing with it) leaves
 * it unsynced: a crash may still lose it. */
static void test_sync_leaves_unsealed_pages_unsynced(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[8192];
	int lost = 0;

	for (uint64_t seed = 0; seed < 16; seed++) {
		int file, fd = mapped_file(x, "m", &file);
		map_fault_page(x, file, fd, 0);
		store(fd, "XY", 100);
		uint64_t mark = faultsim_cache_sync_begin(x->cache);
		faultsim_cache_sync_end(x->cache, file, mark, 0,
		                        FAULTSIM_PROFILE_EXT4);
		close(fd);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		assert_int_equal(slurp(x, "m", buf, sizeof buf), 8192);
		lost += buf[100] == 'a';
	}
	assert_true(lost > 0);
}

/* Sealing narrows a page to the bytes the stores changed: a garbled or
 * torn sector never touches the rest of the page, which stays as synced
 * (as for a pwrite of those bytes); a page left as it was is no write. */
static void test_seal_narrows_to_the_changed_bytes(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[8192];
	stops st = { 0 };
	uint64_t garbage = 0;

	for (uint64_t seed = 0; seed < 16; seed++) {
		int file, fd = mapped_file(x, "m", &file);
		map_fault_page(x, file, fd, 0);
		map_fault_page(x, file, fd, 4096); /* never stored into */
		store(fd, "0123456789", 1000);
		assert_int_equal(map_seal(x, file, fd, &st), 2);
		close(fd);
		crash(x, FAULTSIM_DEVICE_GARBAGE, 512, seed, &rep);
		garbage += rep.garbage;
		/* one write at most: the untouched page is void */
		assert_true(rep.kept + rep.lost + rep.torn <= 1);
		assert_int_equal(slurp(x, "m", buf, sizeof buf), 8192);
		for (int i = 0; i < 8192; i++)
			if (i < 1000 || i >= 1010)
				assert_int_equal(buf[i], 'a');
	}
	assert_true(garbage > 0);
}

/* The same for a change at either edge of the page (its first bytes, or
 * its last): the page narrows to them from the one side it can. */
static void test_seal_narrows_a_change_at_a_page_edge(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[8192];
	stops st = { 0 };
	static const uint64_t at[] = { 0, 4086 };

	for (size_t k = 0; k < 2; k++) {
		uint64_t garbage = 0;
		for (uint64_t seed = 0; seed < 16; seed++) {
			int file, fd = mapped_file(x, "m", &file);
			map_fault_page(x, file, fd, 0);
			store(fd, "0123456789", at[k]);
			assert_int_equal(map_seal(x, file, fd, &st), 1);
			close(fd);
			crash(x, FAULTSIM_DEVICE_GARBAGE, 512, seed, &rep);
			garbage += rep.garbage;
			assert_int_equal(slurp(x, "m", buf, sizeof buf), 8192);
			for (uint64_t i = 0; i < 8192; i++)
				if (i < at[k] || i >= at[k] + 10)
					assert_int_equal(buf[i], 'a');
		}
		assert_true(garbage > 0);
	}
}

/* ---- explaining a crash: snapshots, records kept by seq, what was dropped -- */

/* What an explanation names and what the report counts agree: every
 * unsynced write is counted once (kept, lost, torn or garbled), and the
 * dropped list names each one not kept whole by what the redo made of it
 * -- a tear whose pieces all fell is "lost", never "torn" while the
 * report says torn 0.  Over every device model and 64 seeds. */
static void test_explain_names_what_the_redo_did(void **state)
{
	fx *x = *state;
	faultsim_dropped d[8];
	static const faultsim_device devs[] = {
		FAULTSIM_DEVICE_ORDERED, FAULTSIM_DEVICE_REORDER,
		FAULTSIM_DEVICE_TORN, FAULTSIM_DEVICE_GARBAGE,
		FAULTSIM_DEVICE_PAYLOAD };
	uint64_t seen[5] = { 0 };

	for (size_t k = 0; k < sizeof devs / sizeof devs[0]; k++) {
		for (uint64_t seed = 0; seed < 64; seed++) {
			faultsim_crash_options o = { devs[k], 512, seed };
			faultsim_explain ex = { NULL, 0, d, 8, 0 };
			faultsim_crash_report rep;
			uint64_t named[5] = { 0 };

			model_workload(x);
			assert_int_equal(faultsim_cache_crash_explain(
			                     x->cache, &o, &ex, &rep), 0);
			assert_int_equal(rep.kept + rep.lost + rep.torn +
			                 rep.garbled, 3);
			assert_true(ex.ndropped <= 3);
			for (uint64_t i = 0; i < ex.ndropped; i++) {
				assert_int_equal(d[i].kind, FAULTSIM_KIND_WRITE);
				assert_true(d[i].fate >= FAULTSIM_FATE_LOST &&
				            d[i].fate <= FAULTSIM_FATE_GARBAGE);
				named[d[i].fate]++;
				seen[d[i].fate]++;
			}
			assert_int_equal(named[FAULTSIM_FATE_LOST], rep.lost);
			assert_int_equal(named[FAULTSIM_FATE_TORN], rep.torn);
			assert_int_equal(named[FAULTSIM_FATE_GARBAGE],
			                 rep.garbled);
			assert_int_equal(ex.ndropped, 3 - rep.kept);
		}
	}
	/* each kind of damage happened somewhere */
	assert_true(seen[FAULTSIM_FATE_LOST] > 0);
	assert_true(seen[FAULTSIM_FATE_TORN] > 0);
	assert_true(seen[FAULTSIM_FATE_GARBAGE] > 0);
}

/* Puts file f back to SIZE bytes of BUF, in place (the same inode). */
static void put_back(fx *x, const unsigned char *buf, long size)
{
	int fd = open(x->path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, buf, (size_t)size, 0), size);
	close(fd);
}

static void test_explain_keeps_named_records(void **state)
{
	fx *x = *state;
	faultsim_crash_options o = { FAULTSIM_DEVICE_REORDER, 512, 0 };
	faultsim_dropped d[8];
	faultsim_explain ex = { NULL, 0, d, 8, 0 };
	faultsim_snapshot *snap;
	faultsim_crash_report rep;
	unsigned char before[FSZ + 1], got[FSZ + 1];
	long size;
	uint64_t seq_b = 0;

	/* a seed whose cut loses all three unsynced writes */
	for (o.seed = 0;; o.seed++) {
		model_workload(x);
		size = slurp(x, "f", before, sizeof before);
		assert_int_equal(faultsim_cache_snapshot(x->cache, &snap), 0);
		assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex,
		                                              &rep), 0);
		if (match_mask(got, slurp(x, "f", got, sizeof got)) == 0)
			break;
		faultsim_snapshot_free(snap);
		assert_true(o.seed < 64);
	}
	/* the list names them: kind, range, fate */
	assert_int_equal(ex.ndropped, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(d[i].kind, FAULTSIM_KIND_WRITE);
		assert_int_equal(d[i].fate, FAULTSIM_FATE_LOST);
		assert_string_equal(d[i].path, x->path);
		if (d[i].off == 4096 && d[i].len == 8192)
			seq_b = d[i].seq;
	}
	assert_true(seq_b != 0);
	/* the same cut replayed with B kept: only B persists; without: none */
	put_back(x, before, size);
	assert_int_equal(faultsim_cache_restore(x->cache, snap), 0);
	ex.persist = &seq_b;
	ex.npersist = 1;
	assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex, &rep),
	                 0);
	assert_int_equal(match_mask(got, slurp(x, "f", got, sizeof got)), 1);
	assert_int_equal(ex.ndropped, 2);
	put_back(x, before, size);
	assert_int_equal(faultsim_cache_restore(x->cache, snap), 0);
	ex.npersist = 0;
	assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex, &rep),
	                 0);
	assert_int_equal(match_mask(got, slurp(x, "f", got, sizeof got)), 0);
	faultsim_snapshot_free(snap);
}

static void test_explain_keeps_a_rename(void **state)
{
	fx *x = *state;
	faultsim_crash_options o = { FAULTSIM_DEVICE_REORDER, 512, 3 };
	faultsim_dropped d[4];
	faultsim_explain ex = { NULL, 0, d, 4, 0 };
	faultsim_snapshot *snap;
	faultsim_crash_report rep;
	char cur[160], t[160], stash[200];

	replace_cur(x, 0);
	assert_int_equal(faultsim_cache_snapshot(x->cache, &snap), 0);
	assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex, &rep),
	                 0);
	assert_file(x, "cur", 'o', 300); /* undone */
	assert_int_equal(ex.ndropped, 1);
	assert_int_equal(d[0].kind, FAULTSIM_KIND_RENAME);
	assert_int_equal(d[0].fate, FAULTSIM_FATE_UNDONE);
	snprintf(cur, sizeof cur, "%s/cur", x->dir);
	snprintf(t, sizeof t, "%s/t", x->dir);
	assert_string_equal(d[0].path, t);
	assert_string_equal(d[0].path_b, cur);
	/* the directory as it was before the cut (the same inodes), then the
	 * cut again with the rename kept: the new name stays, no stash */
	snprintf(stash, sizeof stash, "%s/.faultsim.%" PRIu64 ".stash", x->dir,
	         d[0].seq);
	assert_int_equal(link(cur, stash), 0);
	assert_int_equal(rename(t, cur), 0);
	assert_int_equal(faultsim_cache_restore(x->cache, snap), 0);
	ex.persist = &d[0].seq;
	ex.npersist = 1;
	assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex, &rep),
	                 0);
	assert_int_equal(rep.ns_undone, 0);
	assert_int_equal(ex.ndropped, 0);
	assert_file(x, "cur", 'z', 200);
	assert_listing(x, "cur");
	faultsim_snapshot_free(snap);
}

/* An explained crash that keeps a rename over a file (on its persist
 * list) keeps, under ext4 (r3), the renamed file's data written before it
 * whole, whatever the seed draws for that data: the rename waited for that
 * flush.  No directory sync: only the list keeps the rename. */
static void test_explain_kept_rename_over_brings_its_data(void **state)
{
	fx *x = *state;
	char from[160], to[160];
	faultsim_crash_report rep;

	for (uint64_t seed = 0; seed < 16; seed++) {
		faultsim_crash_options o = { FAULTSIM_DEVICE_TORN, 512, seed };
		faultsim_explain ex = { NULL, 0, NULL, 0, 0 };
		faultsim_ticket t = { 0 };
		fx_fs(x, FAULTSIM_FS_EXT4);
		durable_file(x, "cur", 'o', 300);
		int fd = xopen(x, "t", KEEL_IO_CREATE);
		fill(x, fd, 'z', 2048, 0);
		x->io->close(x->io->ctx, fd);
		snprintf(from, sizeof from, "%s/t", x->dir);
		snprintf(to, sizeof to, "%s/cur", x->dir);
		assert_int_equal(faultsim_cache_rename_begin(x->cache, from, to,
		                                             &t), 0);
		int rc = rename(from, to) == 0 ? 0 : -errno;
		faultsim_cache_namespace_end(&t, rc);
		assert_int_equal(rc, 0);
		ex.persist = &t.seq;
		ex.npersist = 1;
		assert_int_equal(faultsim_cache_crash_explain(x->cache, &o, &ex,
		                                             &rep), 0);
		assert_listing(x, "cur");
		assert_file(x, "cur", 'z', 2048);
	}
}

/* A sync covers what was written before it began (its mark), not a write
 * another thread makes while it runs: under ext4 a size change below the
 * mark commits every earlier name with the data (r2), a size change at
 * the mark or after it does not, so an unsynced create elsewhere is still
 * undone on some seeds. */
static void test_sync_mark_leaves_out_a_write_made_during_it(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	char other[160];
	int undone = 0;

	snprintf(other, sizeof other, "%s/other", x->dir);
	for (uint64_t seed = 0; seed < 16; seed++) {
		fx_fs(x, FAULTSIM_FS_EXT4);
		durable_file(x, "f", 'a', 100);
		x->io->close(x->io->ctx, xopen(x, "other", KEEL_IO_CREATE));
		int fd = xopen(x, "f", 0);
		int file = faultsim_cache_file_of(x->cache, fd);
		assert_true(file >= 0);
		uint64_t mark = faultsim_cache_sync_begin(x->cache);
		fill(x, fd, 'b', 100, 100); /* grows f: the first seq not covered */
		assert_int_equal(fdatasync(fd), 0);
		faultsim_cache_sync_end(x->cache, file, mark, 0,
		                        FAULTSIM_PROFILE_EXT4);
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_TORN, 512, seed, &rep);
		undone += access(other, F_OK) != 0;
	}
	assert_true(undone > 0);
}

/* A backend made without a fault set (faultsim_io_options.faults NULL:
 * no spec faults, no kill) makes every call as asked, and the check of no
 * fault set, or of an operation past the last, is no fault. */
static void test_no_fault_set_is_no_fault(void **state)
{
	fx *x = *state;
	faultsim_io_options o = { x->cache, NULL, FAULTSIM_PROFILE_EXT4 };

	assert_int_equal(faultsim_faults_check(NULL, FAULTSIM_OP_PWRITE), 0);
	assert_int_equal(faultsim_faults_check(x->faults, FAULTSIM_OP_COUNT),
	                 0);
	faultsim_io_free(x->fio);
	assert_int_equal(faultsim_io_new(&o, &x->fio), 0);
	x->io = faultsim_io_table(x->fio);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	fill(x, fd, 'q', 100, 0);
	xsync(x, fd);
	assert_int_equal(x->io->close(x->io->ctx, fd), 0);
	assert_file(x, "f", 'q', 100);
}

/* A file opened as descriptor 0 (a program that closed its standard
 * input) is followed like any other: its unsynced write is a record a
 * power cut decides. */
static void test_descriptor_zero_is_followed(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	int in = dup(0); /* -1 (EBADF) when it is closed already */

	if (in >= 0)
		assert_int_equal(close(0), 0);
	int fd = xopen(x, "f", KEEL_IO_CREATE);
	int was = fd;
	fill(x, fd, 'z', 100, 0);
	x->io->close(x->io->ctx, fd);
	if (in >= 0) {
		assert_int_equal(dup2(in, 0), 0);
		close(in);
	}
	assert_int_equal(was, 0);
	crash(x, FAULTSIM_DEVICE_REORDER, 512, 1, &rep);
	assert_int_equal(rep.kept + rep.lost, 1);
}

/* fallocate through the backend is a size change like a truncate: an
 * unsynced one is a record the power cut keeps or undoes (the file is its
 * durable 100 bytes or the allocated 4096), and the call leaves the cache
 * usable (its ticket ended). */
static void test_fallocate_is_a_recorded_extension(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[FSZ];
	int sizes = 0;

	for (uint64_t seed = 0; seed < 8; seed++) {
		unlink(x->path);
		durable_file(x, "f", 'a', 100);
		int fd = xopen(x, "f", 0);
		assert_int_equal(x->io->fallocate(x->io->ctx, fd, 0, 4096), 0);
		fill(x, fd, 'a', 100, 0); /* the next call: the lock is free */
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		long n = slurp(x, "f", buf, sizeof buf);
		assert_true(n == 100 || n == 4096);
		sizes |= n == 100 ? 1 : 2;
		for (long i = 0; i < n; i++)
			assert_int_equal(buf[i], i < 100 ? 'a' : 0);
	}
	assert_int_equal(sizes, 3);
}

/* An extension persists or not, and where it persists the file holds at
 * least its size: fallocate never shrinks a file.  An append (8 KiB to
 * 12 KiB), a truncate to 4 KiB, a fallocate to 10 KiB, none synced: where
 * the append and the fallocate persist and the truncate does not, the
 * file is 12 KiB with the append whole.  The redo set the extension's
 * size as it stood when it was made, 10 KiB, cutting the append short
 * (tests/refmodel.sh, model.py gen-size: 'Pa Ta Ga' under reorder). */
static void test_a_kept_extension_never_shrinks_the_file(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char buf[FSZ];
	int appended = 0;

	for (uint64_t seed = 0; seed < 64; seed++) {
		unlink(x->path);
		durable_file(x, "f", 'a', 8192);
		int fd = xopen(x, "f", 0);
		fill(x, fd, 'n', 4096, 8192);
		assert_int_equal(x->io->ftruncate(x->io->ctx, fd, 4096), 0);
		assert_int_equal(x->io->fallocate(x->io->ctx, fd, 0, 10240), 0);
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		long n = slurp(x, "f", buf, sizeof buf);
		assert_true(n == 4096 || n == 8192 || n == 10240 || n == 12288);
		for (long i = 8192; i < n; i++)
			assert_int_equal(buf[i], n == 12288 ? 'n' : 0);
		appended += n == 12288;
	}
	assert_true(appended > 0);
}

/* btrfs: a failed fsync puts an unsynced truncate back at once (the file
 * grows again) and keeps an extension made after it, unsynced.  A crash
 * then starts from the file as it was before the truncate: it keeps the
 * 8 KiB, with or without the extension's zeros up to 10 KiB.  The kept
 * extension still said it grew the file from the truncated 4 KiB, so the
 * crash's undo cut the file to 4 KiB (tests/refmodel.sh, model.py
 * gen-size: 'Ta Ga Ea' under btrfs). */
static void test_btrfs_revert_keeps_a_growth_above_the_old_size(void **state)
{
	fx *x = *state;
	faultsim_crash_report rep;
	unsigned char got[FSZ];
	int seen = 0;

	for (uint64_t seed = 0; seed < 16; seed++) {
		fx_profile(x, FAULTSIM_PROFILE_BTRFS);
		unlink(x->path);
		durable_file(x, "f", 'a', 8192);
		int fd = xopen(x, "f", 0);
		assert_int_equal(x->io->ftruncate(x->io->ctx, fd, 4096), 0);
		assert_int_equal(x->io->fallocate(x->io->ctx, fd, 0, 10240), 0);
		failing_sync(x, fd);
		x->io->close(x->io->ctx, fd);
		assert_int_equal(slurp(x, "f", got, sizeof got), 10240);
		crash(x, FAULTSIM_DEVICE_REORDER, 512, seed, &rep);
		long n = slurp(x, "f", got, sizeof got);
		assert_true(n == 8192 || n == 10240);
		for (long i = 0; i < n; i++)
			assert_int_equal(got[i], i < 8192 ? 'a' : 0);
		seen |= n == 8192 ? 1 : 2;
	}
	assert_int_equal(seen, 3);
}

/* PAYLOAD: a write shorter than three sectors has no interior sector to
 * lose: it persists whole or not at all, never torn (faultsim.h, and
 * docs/faults.md's device table).  The device tore it as TORN does
 * (tests/refmodel.sh: a punched hole of two sectors, 'Ta Za'). */
static void test_payload_keeps_a_short_write_whole_or_not(void **state)
{
	fx *x = *state;
	unsigned char got[FSZ];
	int seen = 0;

	for (uint64_t seed = 1; seed <= 40; seed++) {
		faultsim_crash_report rep;
		unlink(x->path);
		durable_file(x, "f", 'a', 4096);
		int fd = xopen(x, "f", 0);
		fill(x, fd, 'n', 1024, 1024); /* sectors 2 and 3 */
		x->io->close(x->io->ctx, fd);
		crash(x, FAULTSIM_DEVICE_PAYLOAD, 512, seed, &rep);
		assert_int_equal(slurp(x, "f", got, sizeof got), 4096);
		for (int i = 1024; i < 2048; i++)
			assert_int_equal(got[i], got[1024]);
		seen |= got[1024] == 'n' ? 1 : 2;
	}
	assert_int_equal(seen, 3);
}

/* A rename the real call refuses (EXDEV: the target is on another file
 * system, /dev/shm's tmpfs) is no record: a file made later at the refused
 * target does not pull the refused rename's source in with its name.
 * Under btrfs a file's fsync makes durable the names its own depends on
 * (r1); the refused rename would tie the target to fa, and with it fa's
 * unsynced create, which a power cut must undo. */
static void test_refused_rename_ties_no_names(void **state)
{
	fx *x = *state;
	char from[160], to[160];
	struct stat a, b;
	faultsim_crash_report rep;

	snprintf(to, sizeof to, "/dev/shm/keel-faultsim-%d", (int)getpid());
	if (stat("/dev/shm", &a) != 0 || stat(x->dir, &b) != 0 ||
	    a.st_dev == b.st_dev)
		skip(); /* no second file system at hand */
	fx_fs(x, FAULTSIM_FS_BTRFS);
	int fd = xopen(x, "fa", KEEL_IO_CREATE); /* its name never synced */
	x->io->close(x->io->ctx, fd);
	snprintf(from, sizeof from, "%s/fa", x->dir);
	assert_int_equal(x->io->rename(x->io->ctx, from, to), -EXDEV);
	fd = x->io->open(x->io->ctx, to, KEEL_IO_CREATE, 0644);
	assert_true(fd >= 0);
	fill(x, fd, 'g', 100, 0);
	xsync(x, fd);
	x->io->close(x->io->ctx, fd);
	crash(x, FAULTSIM_DEVICE_REORDER, 512, 3, &rep);
	int kept = access(to, F_OK) == 0;
	unlink(to);
	assert_true(kept);
	assert_int_not_equal(access(from, F_OK), 0); /* fa's create undone */
}

/* calloc, failing once when fail_next_calloc is set (glibc's own behind
 * it): the simulator's out-of-memory paths.  Not under the sanitizers,
 * whose own calloc must see every allocation their free sees. */
static volatile int fail_next_calloc;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CALLOC_HOOK 0
#else
#define CALLOC_HOOK 1
extern void *__libc_calloc(size_t n, size_t size);
void *calloc(size_t n, size_t size)
{
	if (fail_next_calloc) {
		fail_next_calloc = 0;
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}
#endif

/* The device view without memory for its work lists is -ENOMEM, the
 * buffer untouched and the cache's lock released (the next call works). */
static void test_device_view_without_memory(void **state)
{
	fx *x = *state;
	unsigned char buf[100];
	if (!CALLOC_HOOK)
		skip();
	int fd = xopen(x, "f", KEEL_IO_CREATE);

	fill(x, fd, 'v', 100, 0);
	int file = faultsim_cache_file_of(x->cache, fd);
	assert_true(file >= 0);
	memset(buf, 0, sizeof buf);
	fail_next_calloc = 1;
	assert_int_equal(faultsim_cache_device_view(x->cache, file, buf,
	                                            sizeof buf, 0), -ENOMEM);
	assert_int_equal(fail_next_calloc, 0);
	assert_int_equal(buf[0], 0);
	memset(buf, 'v', sizeof buf);
	assert_int_equal(faultsim_cache_device_view(x->cache, file, buf,
	                                            sizeof buf, 0), 0);
	assert_int_equal(buf[99], 'v');
	x->io->close(x->io->ctx, fd);
}

/* A path the file table cannot hold whole (FAULTSIM_PATH_MAX bytes with its
 * terminating zero) is refused, not cut short: a file known by a cut name
 * would be undone at the wrong name after a crash.  One byte shorter fits. */
static void test_track_refuses_a_path_too_long_to_hold(void **state)
{
	fx *x = *state;
	char path[FAULTSIM_PATH_MAX + 1];
	int fd = open(x->path, O_RDWR | O_CREAT, 0644);

	assert_true(fd >= 0);
	memset(path, 'a', sizeof path);
	path[0] = '/';
	path[FAULTSIM_PATH_MAX] = '\0'; /* strlen FAULTSIM_PATH_MAX */
	assert_int_equal(faultsim_cache_track(x->cache, fd, path),
	                 -ENAMETOOLONG);
	path[FAULTSIM_PATH_MAX - 1] = '\0'; /* the longest that fits */
	assert_true(faultsim_cache_track(x->cache, fd, path) >= 0);
	close(fd);
}

/* 1: PID is asleep in a futex call (/proc/PID/syscall names the call a
 * blocked task is in), 0: not yet, -1: the kernel does not say. */
static int asleep_in_futex(pid_t pid)
{
	char p[64], buf[64];
	int r = -1;
	snprintf(p, sizeof p, "/proc/%d/syscall", (int)pid);
	FILE *f = fopen(p, "r");
	if (f && fgets(buf, sizeof buf, f))
		r = strncmp(buf, "running", 7) != 0 && atoi(buf) == SYS_futex;
	if (f)
		fclose(f);
	return r;
}

/* The cache's lock serialises writers in several processes (the shim's
 * followed children, torture's lives): one blocked on it is woken by
 * another process's unlock.  A lock made without PTHREAD_PROCESS_SHARED
 * sleeps on a futex private to its own process, and the other's unlock
 * never wakes it: the writer hangs.  No timing: the unlock comes once the
 * child is asleep in the kernel; the child's alarm is only the bound on a
 * hang. */
static void test_cache_lock_wakes_across_processes(void **state)
{
	fx *x = *state;
	faultsim_cache *c = x->cache;
	int st, asleep;

	assert_int_equal(pthread_mutex_lock(&c->lock), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(30);
		pthread_mutex_lock(&c->lock);
		pthread_mutex_unlock(&c->lock);
		_exit(0);
	}
	while ((asleep = asleep_in_futex(pid)) == 0)
		usleep(1000);
	assert_int_equal(pthread_mutex_unlock(&c->lock), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (asleep < 0)
		skip(); /* /proc/PID/syscall unreadable: the race is not forced */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
		T(test_ordered_keeps_a_prefix),
		T(test_reorder_keeps_any_subset),
		T(test_torn_persists_whole_sectors),
		T(test_garbage_fills_one_sector),
		T(test_payload_loses_one_interior_sector),
		T(test_payload_holes_a_three_sector_write),
		T(test_payload_keeps_a_short_write_whole_or_not),
		T(test_same_seed_same_files),
		T(test_create_needs_dir_sync),
		T(test_rename_undone_without_dir_sync),
		T(test_rename_kept_with_dir_sync),
		T(test_undone_rename_leaves_a_durable_create_its_name),
		T(test_unlink_undone_without_dir_sync),
		T(test_unlinked_file_content_follows_model),
		T(test_profiles_after_failed_sync),
		T(test_btrfs_revert_keeps_later_records),
		T(test_evict_lost_reverts_only_lost),
		T(test_write_back_and_device_copy),
		T(test_spec_parser),
		T(test_nth_fires_at_exactly_that_call),
		T(test_probability_is_seeded),
		T(test_io_faults_touch_nothing),
		T(test_libfiu_points),
		T(test_failed_sync_reported_on_every_open_fd),
		T(test_record_survives_sigkill),
		T(test_kill_after_nth_step),
		T(test_crash_spec_kills_right_after_the_call),
		T(test_full_cache_fails_stop),
		T(test_compaction_keeps_what_a_crash_needs),
		T(test_cut_and_rewrite_survive_a_power_cut),
		T(test_killed_call_keeps_only_what_it_made),
		T(test_next_writer_sees_what_a_killed_call_made),
		T(test_killed_truncate_cuts_only_if_made),
		T(test_fs_names),
		T(test_fs_fsync_makes_the_name_durable),
		T(test_fs_fsync_keeps_what_its_name_depends_on),
		T(test_fs_sync_commits_earlier_renames),
		T(test_fs_crash_keeps_a_prefix_of_names),
		T(test_fs_rename_over_brings_its_data),
		T(test_fs_appends_never_expose_zeros),
		T(test_fs_writeback_may_grow_over_lost_data),
		T(test_sealed_mapped_write_is_durable_after_sync),
		T(test_unsealed_stores_follow_the_device_model),
		T(test_crash_settles_the_killed_call_before_the_pages),
		T(test_sync_leaves_unsealed_pages_unsynced),
		T(test_seal_narrows_to_the_changed_bytes),
		T(test_seal_narrows_a_change_at_a_page_edge),
		T(test_explain_keeps_named_records),
		T(test_explain_names_what_the_redo_did),
		T(test_explain_keeps_a_rename),
		T(test_cache_lock_wakes_across_processes),
		T(test_track_refuses_a_path_too_long_to_hold),
		T(test_refused_rename_ties_no_names),
		T(test_fallocate_is_a_recorded_extension),
		T(test_a_kept_extension_never_shrinks_the_file),
		T(test_btrfs_revert_keeps_a_growth_above_the_old_size),
		T(test_descriptor_zero_is_followed),
		T(test_no_fault_set_is_no_fault),
		T(test_sync_mark_leaves_out_a_write_made_during_it),
		T(test_explain_kept_rename_over_brings_its_data),
		T(test_device_view_without_memory),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
