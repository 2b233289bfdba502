/*
 * repro.c -- tdb_transaction_commit returns success though the sync that
 * clears its recovery marker failed; after a power cut the next open rolls
 * the acknowledged commit back.
 *
 *   repro DB commit   open DB (TDB_NOMMAP), store "key" = "new" in one
 *                     transaction over an existing "key" = "old", print what
 *                     tdb_transaction_commit returned
 *   repro DB init     create DB with "key" = "old" (no faults)
 *   repro DB read     open DB (recovery runs if its marker is set), print
 *                     "key" (exit 0)
 *
 * Build: cc -o repro repro.c -ltdb.  run.sh drives it under failsync.so.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tdb.h>

static TDB_DATA datum(const char *s)
{
	TDB_DATA d = { (unsigned char *)s, strlen(s) };
	return d;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: repro DB init|commit|read\n");
		return 2;
	}
	int create = !strcmp(argv[2], "init");
	struct tdb_context *t = tdb_open(argv[1], 0, TDB_NOMMAP,
	                                 O_RDWR | (create ? O_CREAT | O_TRUNC : 0),
	                                 0600);
	if (!t) {
		perror("tdb_open");
		return 1;
	}
	if (create) {
		if (tdb_store(t, datum("key"), datum("old"), TDB_REPLACE) != 0)
			return 1;
	} else if (!strcmp(argv[2], "commit")) {
		if (tdb_transaction_start(t) != 0 ||
		    tdb_store(t, datum("key"), datum("new"), TDB_REPLACE) != 0)
			return 1;
		int rc = tdb_transaction_commit(t);
		printf("tdb_transaction_commit returned %d%s\n", rc,
		       rc == 0 ? " (the commit is acknowledged)" : "");
	} else {
		TDB_DATA v = tdb_fetch(t, datum("key"));
		printf("key = %.*s\n", (int)v.dsize, v.dptr ? (char *)v.dptr : "");
		free(v.dptr);
	}
	tdb_close(t);
	return 0;
}
