/*
 * rocksdb.c -- RocksDB as a torture --target rocksdb:CONFIG adapter
 * (adapter.h), through its C API: each put one rocksdb_put, acknowledged
 * when it returned without an error.
 *
 *   sync     WriteOptions.sync = true (the log is synced before the put
 *            returns)
 *   nosync   WriteOptions.sync = false (the default)
 *
 * The checker opens the database (the log is replayed) and iterates it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "adapter.h"

static const char *const configs[] = { "sync", "nosync", NULL };

typedef struct store {
	rocksdb_options_t *opt;
	rocksdb_writeoptions_t *wopt;
	rocksdb_t *db;
} store;

/* The C API has no version call: the Makefile reads rocksdb/version.h. */
#ifndef ROCKSDB_VERSION_TEXT
#define ROCKSDB_VERSION_TEXT "unknown"
#endif

static const char *version(void)
{
	return ROCKSDB_VERSION_TEXT;
}

static int fail(const char *what, char *err)
{
	fprintf(stderr, "rocksdb: %s: %s\n", what, err);
	rocksdb_free(err);
	return -1;
}

static int ld_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	char *err = NULL;

	if (!s)
		return -1;
	*out = s;
	s->opt = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(s->opt, 1);
	/* paranoid_checks stays at its default (off), as an application
	 * runs it: with it on, the torn tail of an unsynced (never
	 * acknowledged) log record makes the open fail ("checksum
	 * mismatch"), which is no loss; losses show in the oracle. */
	s->wopt = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(s->wopt, config == 0);
	s->db = rocksdb_open(s->opt, dir, &err);
	return err ? fail("open", err) : 0;
}

static int ld_put(void *st, const char *key, const char *val)
{
	store *s = st;
	char *err = NULL;

	rocksdb_put(s->db, s->wopt, key, strlen(key), val, strlen(val), &err);
	return err ? fail("put", err) : 0;
}

static int ld_check(void *st)
{
	store *s = st;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	char *err = NULL;
	size_t kl, vl;

	rocksdb_readoptions_set_verify_checksums(ro, 1);
	it = rocksdb_create_iterator(s->db, ro);
	int bad = 0;
	for (rocksdb_iter_seek_to_first(it); !bad && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		const char *k = rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);
		bad = adapter_emit(k, kl, v, vl) < 0;
	}
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	if (bad && !err)
		return -1;
	return err ? fail("iterate", err) : 0;
}

static void ld_close(void *st)
{
	store *s = st;

	if (s->db)
		rocksdb_close(s->db);
	rocksdb_writeoptions_destroy(s->wopt);
	rocksdb_options_destroy(s->opt);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "rocksdb", configs, version, ld_open,
		ld_put, ld_check, ld_close };

	return adapter_main(&a, argc, argv);
}
