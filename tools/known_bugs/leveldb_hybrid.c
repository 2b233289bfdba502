/*
 * leveldb_hybrid.c -- LevelDB's "every Nth write synchronous" scheme under
 * torture --target exec (LazyFS's LevelDB bugs 4 and 5).  LevelDB's
 * documentation (doc/index.md, "Synchronous Writes") offers it for bulk
 * loads: after a crash the load restarts just after the last synchronous
 * write, so that write is taken to make the ones before it durable too.
 *
 *   leveldb_hybrid DIR          each round: BATCH puts with sync = false,
 *                               then one with sync = true; once that
 *                               returned, the whole round is acknowledged.
 *                               The database is never closed (the kill
 *                               comes first), as in LazyFS's workload.
 *   leveldb_hybrid DIR --check  opens DIR/db and prints "KEY VALUE" for
 *                               every pair; exit 1 when it will not open.
 *
 * A small write buffer (64 KiB) makes the memtable switch to a new log
 * every few rounds, as LazyFS's 98,000 puts do with the default 4 MiB.
 * Built by tools/known_bugs.sh: cc -o X leveldb_hybrid.c -lleveldb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <leveldb/c.h>

#define BATCH 200
#define KEYS 64

int main(int argc, char **argv)
{
	char path[4096], key[32], val[128], *err = NULL;
	leveldb_options_t *o;
	leveldb_t *db;

	if (argc < 2) {
		fprintf(stderr, "usage: leveldb_hybrid DIR [--check]\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/db", argv[1]);
	o = leveldb_options_create();
	leveldb_options_set_create_if_missing(o, 1);
	leveldb_options_set_write_buffer_size(o, 64 << 10);
	db = leveldb_open(o, path, &err);
	if (err) {
		fprintf(stderr, "leveldb_hybrid: open: %s\n", err);
		return 1;
	}
	if (argc > 2 && strcmp(argv[2], "--check") == 0) {
		leveldb_readoptions_t *ro = leveldb_readoptions_create();
		leveldb_iterator_t *it;
		size_t kl, vl;

		leveldb_readoptions_set_verify_checksums(ro, 1);
		it = leveldb_create_iterator(db, ro);
		for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
		     leveldb_iter_next(it)) {
			const char *k = leveldb_iter_key(it, &kl);
			const char *v = leveldb_iter_value(it, &vl);
			printf("%.*s %.*s\n", (int)kl, k, (int)vl, v);
		}
		leveldb_iter_get_error(it, &err);
		if (err) {
			fprintf(stderr, "leveldb_hybrid: iterate: %s\n", err);
			return 1;
		}
		leveldb_iter_destroy(it);
		leveldb_close(db);
		return 0;
	}

	const char *fds = getenv("KEEL_TORTURE_FD");
	if (!fds) {
		fprintf(stderr, "leveldb_hybrid: run me under torture --target exec\n");
		return 2;
	}
	FILE *proto = fdopen(atoi(fds), "w");
	leveldb_writeoptions_t *async = leveldb_writeoptions_create();
	leveldb_writeoptions_t *sync = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(sync, 1);
	/* values unique across lives: the pid and a counter */
	long pid = (long)getpid(), op = 0;
	for (;;) {
		long first = op + 1;
		for (int j = 0; j <= BATCH; j++) {
			op++;
			snprintf(key, sizeof key, "k%ld", op % KEYS);
			snprintf(val, sizeof val, "v%ld.%ld.%064d", pid, op, 0);
			fprintf(proto, "intent %ld %s %s\n", op, key, val);
			fflush(proto);
			leveldb_put(db, j == BATCH ? sync : async, key,
			            strlen(key), val, strlen(val), &err);
			if (err) {
				fprintf(stderr, "leveldb_hybrid: put: %s\n", err);
				return 1;
			}
		}
		for (long a = first; a <= op; a++)
			fprintf(proto, "ack %ld\n", a);
		fflush(proto);
	}
}
