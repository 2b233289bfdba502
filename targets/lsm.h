/*
 * lsm.h -- the body of the LevelDB and RocksDB adapters (leveldb.c,
 * rocksdb.c): RocksDB's C API is LevelDB's with another prefix, so one
 * text serves both.  The including file defines LSM_NAME ("leveldb"),
 * LSM(x) (its prefix pasted onto x: leveldb_##x) and version(), includes
 * its engine's c.h, then this.  Each put is one PREFIX_put, acknowledged
 * when it returned without an error.
 *
 *   sync     WriteOptions.sync = true (the log is synced before the put
 *            returns)
 *   nosync   WriteOptions.sync = false (the default)
 *
 * The checker opens the database (the log is replayed) and iterates it.
 */
#ifndef TARGETS_LSM_H
#define TARGETS_LSM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"

static const char *version(void);

static const char *const configs[] = { "sync", "nosync", NULL };

typedef struct store {
	LSM(options_t) *opt;
	LSM(writeoptions_t) *wopt;
	LSM(t) *db;
} store;

static int fail(const char *what, char *err)
{
	fprintf(stderr, LSM_NAME ": %s: %s\n", what, err);
	LSM(free)(err);
	return -1;
}

static int lsm_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	char *err = NULL;

	if (!s)
		return -1;
	*out = s;
	s->opt = LSM(options_create)();
	LSM(options_set_create_if_missing)(s->opt, 1);
	/* paranoid_checks stays at its default (off), as an application
	 * runs it: with it on, the torn tail of an unsynced (never
	 * acknowledged) log record makes the open fail ("checksum
	 * mismatch"), which is no loss; losses show in the oracle. */
	s->wopt = LSM(writeoptions_create)();
	LSM(writeoptions_set_sync)(s->wopt, config == 0);
	s->db = LSM(open)(s->opt, dir, &err);
	return err ? fail("open", err) : 0;
}

static int lsm_put(void *st, const char *key, const char *val)
{
	store *s = st;
	char *err = NULL;

	LSM(put)(s->db, s->wopt, key, strlen(key), val, strlen(val), &err);
	return err ? fail("put", err) : 0;
}

static int lsm_check(void *st)
{
	store *s = st;
	LSM(readoptions_t) *ro = LSM(readoptions_create)();
	LSM(iterator_t) *it;
	char *err = NULL;
	size_t kl, vl;

	LSM(readoptions_set_verify_checksums)(ro, 1);
	it = LSM(create_iterator)(s->db, ro);
	int bad = 0;
	for (LSM(iter_seek_to_first)(it); !bad && LSM(iter_valid)(it);
	     LSM(iter_next)(it)) {
		const char *k = LSM(iter_key)(it, &kl);
		const char *v = LSM(iter_value)(it, &vl);
		bad = adapter_emit(k, kl, v, vl) < 0;
	}
	LSM(iter_get_error)(it, &err);
	LSM(iter_destroy)(it);
	LSM(readoptions_destroy)(ro);
	if (bad && !err)
		return -1;
	return err ? fail("iterate", err) : 0;
}

static void lsm_close(void *st)
{
	store *s = st;

	if (s->db)
		LSM(close)(s->db);
	LSM(writeoptions_destroy)(s->wopt);
	LSM(options_destroy)(s->opt);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { LSM_NAME, configs, version, lsm_open,
		lsm_put, lsm_check, lsm_close };

	return adapter_main(&a, argc, argv);
}

#endif /* TARGETS_LSM_H */
