/*
 * kv.c -- Kyoto Cabinet's file hash database (HashDB, "db.kch") as a
 * key-value store for torture --target exec: each put is a hard
 * transaction (kcdbbegintran(db, 1) ... kcdbendtran(db, 1)), acknowledged
 * once the commit returned; the documentation of begin_transaction says a
 * hard transaction is "physical synchronization with the device".
 *
 *   kv DIR [N]          N puts on 8 keys (default: until killed), the
 *                       protocol on $KEEL_TORTURE_FD (else "acked K V"
 *                       lines on stdout), then a clean close
 *   kv DIR --check      "KEY VALUE" per record (opening runs recovery)
 */
#include <kclangc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int visit(const char *k, size_t ks, const char *v, size_t vs,
                 void *arg)
{
	(void)arg;
	printf("%.*s %.*s\n", (int)ks, k, (int)vs, v);
	return 0;
}

static const char *full(const char *kbuf, size_t ksiz, const char *vbuf,
                        size_t vsiz, size_t *sp, void *opq)
{
	visit(kbuf, ksiz, vbuf, vsiz, opq);
	*sp = 0;
	return KCVISNOP;
}

int main(int argc, char **argv)
{
	char path[4200];
	KCDB *db = kcdbnew();

	if (argc < 2)
		return 2;
	snprintf(path, sizeof path, "%s/db.kch#msiz=0", argv[1]);
	if (argc > 2 && !strcmp(argv[2], "--check")) {
		char plain[4200];
		snprintf(plain, sizeof plain, "%s/db.kch", argv[1]);
		if (access(plain, F_OK) != 0)
			return 0;
		if (!kcdbopen(db, path, KCOWRITER)) {
			fprintf(stderr, "kv: open: %s\n", kcecodename(kcdbecode(db)));
			return 1;
		}
		kcdbiterate(db, full, NULL, 0);
		kcdbclose(db);
		return 0;
	}
	const char *e = getenv("KEEL_TORTURE_FD");
	int fd = e ? atoi(e) : -1;
	long puts = argc > 2 ? atol(argv[2]) : 100000;
	if (!kcdbopen(db, path, KCOWRITER | KCOCREATE)) {
		fprintf(stderr, "kv: open: %s\n", kcecodename(kcdbecode(db)));
		return 1;
	}
	srand((unsigned)getpid());
	for (int i = 1; i <= puts; i++) {
		char k[16], v[32], line[80];
		snprintf(k, sizeof k, "k%d", rand() % 8);
		snprintf(v, sizeof v, "v%d.%d", i, (int)getpid());
		int n = snprintf(line, sizeof line, "intent %d %s %s\n", i, k, v);
		if (fd >= 0 && write(fd, line, (size_t)n) != n)
			return 3;
		if (!kcdbbegintran(db, 1) ||
		    !kcdbset(db, k, strlen(k), v, strlen(v)) ||
		    !kcdbendtran(db, 1)) {
			fprintf(stderr, "kv: put: %s\n", kcecodename(kcdbecode(db)));
			return 3;
		}
		if (fd < 0)
			n = snprintf(line, sizeof line, "acked %s %s\n", k, v);
		else
			n = snprintf(line, sizeof line, "ack %d\n", i);
		if (write(fd < 0 ? 1 : fd, line, (size_t)n) != n)
			return 3;
	}
	kcdbclose(db);
	return 0;
}
