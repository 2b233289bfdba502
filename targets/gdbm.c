/*
 * gdbm.c -- GNU dbm as a torture --target gdbm:CONFIG adapter (adapter.h):
 * one database file DIR/data.gdbm, written through gdbm's default
 * memory mapping (a writable MAP_SHARED mapping of the file).
 *
 *   sync     gdbm_store, then gdbm_sync (msync and fsync of the file)
 *   nosync   gdbm_store alone: nothing is synced before the ack
 *   nommap-sync  as sync, with GDBM_NOMMAP: pread/pwrite, no mapping
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdbm.h>

#include "adapter.h"

static const char *const configs[] = { "sync", "nosync", "nommap-sync", NULL };

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

static int gd_open(const char *dir, int config, void **out)
{
	char path[4096];
	store *s = calloc(1, sizeof *s);

	if (!s)
		return -1;
	*out = s;
	s->config = config;
	snprintf(path, sizeof path, "%s/data.gdbm", dir);
	s->db = gdbm_open(path, 0, GDBM_WRCREAT | (config == 2 ? GDBM_NOMMAP : 0), 0644, NULL);
	return s->db ? 0 : fail("gdbm_open");
}

static int gd_put(void *st, const char *key, const char *val)
{
	store *s = st;
	datum k = { (char *)key, (int)strlen(key) };
	datum v = { (char *)val, (int)strlen(val) };

	if (gdbm_store(s->db, k, v, GDBM_REPLACE) != 0)
		return fail("gdbm_store");
	if (s->config != 1 && gdbm_sync(s->db) != 0)
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
