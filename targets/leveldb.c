/*
 * leveldb.c -- LevelDB as a torture --target leveldb:CONFIG adapter
 * (adapter.h), through its C API: each put one leveldb_put, acknowledged
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

#include <leveldb/c.h>

#include "adapter.h"

static const char *const configs[] = { "sync", "nosync", NULL };

typedef struct store {
	leveldb_options_t *opt;
	leveldb_writeoptions_t *wopt;
	leveldb_t *db;
} store;

static const char *version(void)
{
	static char v[32];

	snprintf(v, sizeof v, "%d.%d", leveldb_major_version(),
	         leveldb_minor_version());
	return v;
}

static int fail(const char *what, char *err)
{
	fprintf(stderr, "leveldb: %s: %s\n", what, err);
	leveldb_free(err);
	return -1;
}

static int ld_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	char *err = NULL;

	if (!s)
		return -1;
	*out = s;
	s->opt = leveldb_options_create();
	leveldb_options_set_create_if_missing(s->opt, 1);
	/* paranoid_checks stays at its default (off), as an application
	 * runs it: with it on, the torn tail of an unsynced (never
	 * acknowledged) log record makes the open fail ("checksum
	 * mismatch"), which is no loss; losses show in the oracle. */
	s->wopt = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(s->wopt, config == 0);
	s->db = leveldb_open(s->opt, dir, &err);
	return err ? fail("open", err) : 0;
}

static int ld_put(void *st, const char *key, const char *val)
{
	store *s = st;
	char *err = NULL;

	leveldb_put(s->db, s->wopt, key, strlen(key), val, strlen(val), &err);
	return err ? fail("put", err) : 0;
}

static int ld_check(void *st)
{
	store *s = st;
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_iterator_t *it;
	char *err = NULL;
	size_t kl, vl;

	leveldb_readoptions_set_verify_checksums(ro, 1);
	it = leveldb_create_iterator(s->db, ro);
	int bad = 0;
	for (leveldb_iter_seek_to_first(it); !bad && leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		const char *k = leveldb_iter_key(it, &kl);
		const char *v = leveldb_iter_value(it, &vl);
		bad = adapter_emit(k, kl, v, vl) < 0;
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	leveldb_readoptions_destroy(ro);
	if (bad && !err)
		return -1;
	return err ? fail("iterate", err) : 0;
}

static void ld_close(void *st)
{
	store *s = st;

	if (s->db)
		leveldb_close(s->db);
	leveldb_writeoptions_destroy(s->wopt);
	leveldb_options_destroy(s->opt);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "leveldb", configs, version, ld_open,
		ld_put, ld_check, ld_close };

	return adapter_main(&a, argc, argv);
}
