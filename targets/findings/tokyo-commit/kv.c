/*
 * kv.c -- Tokyo Cabinet's hash database with HDBOTSYNC ("every transaction
 * synchronizes"), for run.sh: no keel code.
 *
 *   kv DB put VALUE   open (writer, create, HDBOTSYNC), put k=VALUE in a
 *                     transaction, commit, say "committed VALUE" once
 *                     tchdbtrancommit returned true, then exit without
 *                     closing: the power fails right after the commit
 *                     returned, with the process still holding the file
 *   kv DB get         open as a reader and print k's value ("(none)")
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tcutil.h>
#include <tchdb.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	TCHDB *hdb = tchdbnew();
	if (!strcmp(argv[2], "get")) {
		if (!tchdbopen(hdb, argv[1], HDBOREADER)) {
			fprintf(stderr, "open: %s\n", tchdberrmsg(tchdbecode(hdb)));
			return 1;
		}
		char *v = tchdbget2(hdb, "k");
		printf("%s\n", v ? v : "(none)");
		free(v);
		tchdbclose(hdb);
		return 0;
	}
	if (argc < 4 || strcmp(argv[2], "put"))
		return 2;
	if (!tchdbopen(hdb, argv[1], HDBOWRITER | HDBOCREAT | HDBOTSYNC) ||
	    !tchdbtranbegin(hdb) || !tchdbput2(hdb, "k", argv[3]) ||
	    !tchdbtrancommit(hdb)) {
		fprintf(stderr, "put: %s\n", tchdberrmsg(tchdbecode(hdb)));
		return 1;
	}
	printf("committed %s\n", argv[3]);
	fflush(stdout);
	exit(0); /* the power fails here: no tchdbclose */
}
