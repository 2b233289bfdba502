/* test_compact_identity.c -- compaction keeps the store's identity: the new
 * file has the old one's mode (whatever the umask) and owner, after
 * keel_compact and after the automatic policy's compaction; and a store
 * opened through a symbolic link is compacted where the link points, the
 * link kept, the marker and temporary files beside the real file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "keel.h"
#include "testutil.h"

typedef struct fixture {
	char *dir;
	mode_t umask_before;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = tu_mkdtemp();
	f->umask_before = umask(022);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	umask(f->umask_before);
	tu_rmdir(f->dir);
	free(f);
	return 0;
}

static void put_some(keel_db *db, const char *prefix, int n)
{
	char k[32], v[200];
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%s%04d", prefix, i);
		assert_int_equal(keel_put(db, k, strlen(k), v, sizeof(v), KEEL_REV_ANY,
		                          NULL), KEEL_OK);
	}
}

static void expect_key(const char *path, const char *key)
{
	keel_db *db;
	keel_view v;
	keel_options o = {.flags = KEEL_RDONLY};
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_get(db, key, strlen(key), &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_close(db), KEEL_OK);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/* MODE, set on the store before a keel_compact under UMASK, is what the
 * compacted file has. */
static void compact_with_mode(const char *dir, mode_t mode, mode_t mask)
{
	char *path = tu_path(dir, "db");
	keel_db *db;
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	put_some(db, "k", 50);
	assert_int_equal(chmod(path, mode), 0);
	umask(mask);
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(keel_compact(db), KEEL_OK);
	assert_int_equal(stat(path, &after), 0);
	assert_true(before.st_ino != after.st_ino); /* it is a new file */
	assert_int_equal(after.st_mode & 07777, mode);
	assert_int_equal(keel_close(db), KEEL_OK);
	umask(022);
	free(path);
}

static void keel_compact_keeps_mode_0600(void **state)
{
	fixture *f = *state;
	compact_with_mode(f->dir, 0600, 022);
}

/* The umask of the compacting process does not narrow the mode either. */
static void keel_compact_keeps_mode_0644_under_umask_077(void **state)
{
	fixture *f = *state;
	compact_with_mode(f->dir, 0644, 077);
}

/* The automatic policy compacts in its own thread: a store of 0600 stays
 * 0600.  One key overwritten with 4 KiB values until a compaction has run
 * (the policy compacts past 512 KiB used and twice the live bytes: about
 * 130 puts; 4,000 is the bound of the wait). */
static void automatic_compaction_keeps_mode_0600(void **state)
{
	fixture *f = *state;
	char *path = tu_path(f->dir, "db");
	keel_db *db;
	keel_stats st;
	static char v[4096];

	/* a small slack: the policy's default lets a small store grow by tens
	 * of MiB before it compacts */
	keel_options o = {.compact_slack = 64 << 10};
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(chmod(path, 0600), 0);
	int i;
	for (i = 0; i < 4000; i++) {
		memset(v, 'a' + i % 26, sizeof(v));
		assert_int_equal(keel_put(db, "key", 3, v, sizeof(v), KEEL_REV_ANY, NULL),
		                 KEEL_OK);
		assert_int_equal(keel_stat(db, &st), KEEL_OK);
		if (st.compactions > 0)
			break;
	}
	if (st.compactions == 0)
		fail_msg("no automatic compaction after %d puts of 4 KiB", i);
	assert_int_equal(keel_close(db), KEEL_OK); /* joins the compactor */
	assert_int_equal(mode_of(path), 0600);
	free(path);
}

/* Owner and group stay when the process may set them (root here); a test
 * run by another user skips it. */
static void keel_compact_keeps_owner_and_group(void **state)
{
	fixture *f = *state;
	if (geteuid() != 0)
		skip();
	char *path = tu_path(f->dir, "db");
	keel_db *db;
	struct stat st;
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	put_some(db, "k", 20);
	assert_int_equal(chown(path, 12345, 23456), 0);
	assert_int_equal(keel_compact(db), KEEL_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 12345);
	assert_int_equal(st.st_gid, 23456);
	assert_int_equal(keel_close(db), KEEL_OK);
	free(path);
}

/* A store opened through a link into another directory: compaction replaces
 * the file the link names; the link stays a link; the marker and the
 * compaction's temporary file live beside the real file; data written
 * after the compaction lands there too. */
static void compaction_through_a_symbolic_link_replaces_its_target(void **state)
{
	fixture *f = *state;
	char *sub = tu_path(f->dir, "data"), *real = tu_path(sub, "real.keel"),
	     *link = tu_path(f->dir, "store.keel"), *marker, *link_marker,
	     target[256];
	keel_db *db;
	struct stat st;

	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink("data/real.keel", link), 0); /* relative */
	assert_true(asprintf(&marker, "%s.durable", real) > 0);
	assert_true(asprintf(&link_marker, "%s.durable", link) > 0);

	/* the link dangles: open creates the store where it points */
	assert_int_equal(keel_open(link, NULL, &db), KEEL_OK);
	assert_int_equal(lstat(real, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(access(marker, F_OK), 0);
	assert_int_equal(access(link_marker, F_OK), -1);
	put_some(db, "before", 50);
	assert_int_equal(keel_compact(db), KEEL_OK);
	put_some(db, "after", 5);

	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "data/real.keel");
	assert_int_equal(lstat(real, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(access(marker, F_OK), 0);
	assert_int_equal(keel_close(db), KEEL_OK);

	/* everything is in the real file, read by its own name */
	expect_key(real, "before0049");
	expect_key(real, "after0004");
	expect_key(link, "after0004");
	/* nothing was left beside the link */
	char *cmd;
	assert_true(asprintf(&cmd, "test $(ls -A '%s' | wc -l) -eq 2", f->dir) > 0);
	assert_int_equal(system(cmd), 0); /* "data" and the link */
	free(cmd);
	free(sub);
	free(real);
	free(link);
	free(marker);
	free(link_marker);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(keel_compact_keeps_mode_0600, setup, teardown),
		cmocka_unit_test_setup_teardown(keel_compact_keeps_mode_0644_under_umask_077, setup, teardown),
		cmocka_unit_test_setup_teardown(automatic_compaction_keeps_mode_0600, setup, teardown),
		cmocka_unit_test_setup_teardown(keel_compact_keeps_owner_and_group, setup, teardown),
		cmocka_unit_test_setup_teardown(compaction_through_a_symbolic_link_replaces_its_target, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
