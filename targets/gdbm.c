/*
 * gdbm.c -- GNU dbm as a torture --target gdbm:CONFIG adapter (adapter.h):
 * one database file DIR/data.gdbm, written through gdbm's default
 * memory mapping (a writable MAP_SHARED mapping of the file).
 *
 *   sync     gdbm_store, then gdbm_sync (msync and fsync of the file)
 *   nosync   gdbm_store alone: nothing is synced before the ack
 *   nommap-sync  as sync, with GDBM_NOMMAP: pread/pwrite, no mapping
 *   crash-tolerant  gdbm's crash tolerance (info gdbm, "Crash Tolerance"):
 *                a GDBM_NUMSYNC database with gdbm_failure_atomic, so that
 *                each gdbm_sync also leaves a reflink snapshot in
 *                DIR/data.even or DIR/data.odd; every open first recovers
 *                as the manual says (gdbm_latest_snapshot, renamed over
 *                the database).  It needs a file system with reflink
 *                (FICLONE: XFS, btrfs, OCFS2): elsewhere the open fails
 *                with gdbm's "Reflink failed", a set-up error, not a
 *                verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdbm.h>

#include "adapter.h"

static const char *const configs[] = { "sync", "nosync", "nommap-sync",
	"crash-tolerant", NULL };
enum { SYNC, NOSYNC, NOMMAP_SYNC, CRASH_TOLERANT };

typedef struct store {
	GDBM_FILE db;
	int config;
} store;

static const char *version(void)
{
	static char v[32];
	snprintf(v, sizeof v, "%d.%d.%d", gdbm_version_number[0],
	         gdbm_version_number[1], gdbm_version_number[2]);
	return v;
}

static int fail(const char *what)
{
	fprintf(stderr, "gdbm: %s: %s\n", what, gdbm_strerror(gdbm_errno));
	return -1;
}

/* The manual's crash recovery: the snapshot of the last successful
 * gdbm_sync renamed over the database, the other one removed (both must
 * be absent when gdbm_failure_atomic makes them again).  Neither readable:
 * no gdbm_sync finished since they were made (the open syncs once), and
 * the database is the one the last recovery left. */
static int recover(const char *dir, const char *db, const char *even,
                   const char *odd)
{
	const char *latest = NULL;
	int rc, d;

	if (access(even, F_OK) != 0 && access(odd, F_OK) != 0)
		return 0;
	rc = gdbm_latest_snapshot(even, odd, &latest);
	if (rc == GDBM_SNAPSHOT_OK) {
		if (rename(latest, db) != 0) {
			perror("gdbm: renaming the latest snapshot");
			return -1;
		}
	} else if (rc != GDBM_SNAPSHOT_BAD) {
		fprintf(stderr, "gdbm: gdbm_latest_snapshot: %d (manual "
		        "recovery needed)\n", rc);
		return -1;
	}
	if ((unlink(even) != 0 && errno != ENOENT) ||
	    (unlink(odd) != 0 && errno != ENOENT) ||
	    (d = open(dir, O_RDONLY | O_DIRECTORY)) < 0) {
		perror("gdbm: removing the snapshots");
		return -1;
	}
	rc = fsync(d);
	close(d);
	return rc;
}

static int gd_open_tolerant(store *s, const char *dir, const char *path)
{
	char even[4096], odd[4096];

	snprintf(even, sizeof even, "%s/data.even", dir);
	snprintf(odd, sizeof odd, "%s/data.odd", dir);
	if (recover(dir, path, even, odd) != 0)
		return -1;
	s->db = gdbm_open(path, 0, GDBM_WRCREAT | GDBM_NUMSYNC, 0644, NULL);
	if (!s->db)
		return fail("gdbm_open");
	if (gdbm_failure_atomic(s->db, even, odd) != 0) {
		fprintf(stderr, "gdbm: gdbm_failure_atomic: %s (%s): crash "
		        "tolerance needs a file system with reflink (XFS, "
		        "btrfs, OCFS2)\n", gdbm_strerror(gdbm_errno),
		        strerror(errno));
		return -1;
	}
	return gdbm_sync(s->db) == 0 ? 0 : fail("gdbm_sync");
}

static int gd_open(const char *dir, int config, void **out)
{
	char path[4096];
	store *s = calloc(1, sizeof *s);

	if (!s)
		return -1;
	*out = s;
	s->config = config;
	snprintf(path, sizeof path, "%s/data.gdbm", dir);
	if (config == CRASH_TOLERANT)
		return gd_open_tolerant(s, dir, path);
	s->db = gdbm_open(path, 0, GDBM_WRCREAT |
	                  (config == NOMMAP_SYNC ? GDBM_NOMMAP : 0), 0644, NULL);
	return s->db ? 0 : fail("gdbm_open");
}

static int gd_put(void *st, const char *key, const char *val)
{
	store *s = st;
	datum k = { (char *)key, (int)strlen(key) };
	datum v = { (char *)val, (int)strlen(val) };

	if (gdbm_store(s->db, k, v, GDBM_REPLACE) != 0)
		return fail("gdbm_store");
	if (s->config != NOSYNC && gdbm_sync(s->db) != 0)
		return fail("gdbm_sync");
	return 0;
}

static int gd_check(void *st)
{
	store *s = st;
	datum k = gdbm_firstkey(s->db);

	while (k.dptr) {
		datum v = gdbm_fetch(s->db, k);
		int bad = !v.dptr ||
		          adapter_emit(k.dptr, (size_t)k.dsize, v.dptr,
		                       (size_t)v.dsize) < 0;
		free(v.dptr);
		datum next = gdbm_nextkey(s->db, k);
		free(k.dptr);
		if (bad)
			return -1;
		k = next;
	}
	return gdbm_errno == GDBM_ITEM_NOT_FOUND || gdbm_errno == 0
	               ? 0 : fail("gdbm_nextkey");
}

static void gd_close(void *st)
{
	store *s = st;

	if (s->db)
		gdbm_close(s->db);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "gdbm", configs, version, gd_open, gd_put,
		gd_check, gd_close };

	return adapter_main(&a, argc, argv);
}
