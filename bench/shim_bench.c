/*
 * shim_bench.c -- what the LD_PRELOAD shim costs a program, and a SQLite
 * workload for torture --target exec (bench/shim-overhead.sh runs it;
 * figures in docs/results/shim.md).
 *
 *   shim_bench syscalls DIR N OUT  N x getppid(): what an untracked system
 *                                  call costs (the syscall backstop turns
 *                                  each into a signal)
 *   shim_bench fsync DIR N OUT     N x (pwrite 4 KiB, fdatasync) on DIR/f
 *   shim_bench unwatched DIR N OUT N x (write 1 byte to a pipe, read it
 *                                  back): a write the front ends look at
 *                                  and let through (the supervisor's
 *                                  filter sends every write to it)
 *   shim_bench sqlite DIR N OUT    N inserts into DIR/b.db, one transaction
 *                                  each, synchronous=EXTRA, rollback journal
 *       Both write the elapsed seconds to OUT.  Under torture --target exec
 *       they say "intent 1 bench done" first and "ack 1" at the end (the
 *       checker "echo bench done" answers).
 *   shim_bench sqlite-kv DIR [MODE]  a torture workload: INSERT OR REPLACE
 *                                  of 64 keys, one transaction each, each
 *                                  acknowledged after COMMIT returned;
 *                                  MODE is PRAGMA synchronous (FULL default,
 *                                  EXTRA), journal_mode=DELETE
 *   shim_bench sqlite-kv-check DIR [MODE]  its checker
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(const char *line)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	if (env && write(atoi(env), line, strlen(line)) < 0)
		exit(3);
}

static void die(sqlite3 *db, const char *what)
{
	fprintf(stderr, "%s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
	exit(1);
}

static const char *sync_mode = "FULL";

static sqlite3 *open_db(const char *dir, const char *name)
{
	char path[4096], sql[256];
	sqlite3 *db;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die(db, "open");
	snprintf(sql, sizeof sql, "PRAGMA synchronous=%s; PRAGMA "
	         "journal_mode=DELETE; CREATE TABLE IF NOT EXISTS "
	         "kv(k TEXT PRIMARY KEY, v TEXT)", sync_mode);
	if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK)
		die(db, "setup");
	return db;
}

static void bench_pipe(int n)
{
	int p[2];
	char c = 'x';

	if (pipe(p) != 0)
		exit(1);
	for (int i = 0; i < n; i++)
		if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			exit(1);
	close(p[0]);
	close(p[1]);
}

static void bench_fsync(const char *dir, int n)
{
	char path[4096], buf[4096];
	int fd;

	memset(buf, 'x', sizeof buf);
	snprintf(path, sizeof path, "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		exit(1);
	for (int i = 0; i < n; i++)
		if (pwrite(fd, buf, sizeof buf, (off_t)i * 4096) != 4096 ||
		    fdatasync(fd) != 0)
			exit(1);
	close(fd);
}

static void bench_sqlite(const char *dir, int n)
{
	sqlite3 *db;

	sync_mode = "EXTRA"; /* the durable setting (docs/bench.md) */
	db = open_db(dir, "b.db");
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv VALUES(?, ?)",
	                       -1, &st, 0) != SQLITE_OK)
		die(db, "prepare");
	for (int i = 0; i < n; i++) {
		char k[32], v[64];
		snprintf(k, sizeof k, "k%d", i);
		snprintf(v, sizeof v, "value-%d-%d", i, rand());
		sqlite3_bind_text(st, 1, k, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, v, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) != SQLITE_DONE)
			die(db, "insert");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void sqlite_kv(const char *dir)
{
	sqlite3 *db = open_db(dir, "kv.db");
	sqlite3_stmt *st;
	char line[160], k[32], v[64];

	srand((unsigned)strtoul(getenv("KEEL_TORTURE_SEED") ?
	                        getenv("KEEL_TORTURE_SEED") : "1", NULL, 10));
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv VALUES(?, ?)",
	                       -1, &st, 0) != SQLITE_OK)
		die(db, "prepare");
	for (unsigned i = 1;; i++) {
		snprintf(k, sizeof k, "k%d", rand() % 64);
		snprintf(v, sizeof v, "v%u.%d", i, rand());
		snprintf(line, sizeof line, "intent %u %s %s\n", i, k, v);
		say(line);
		sqlite3_bind_text(st, 1, k, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, v, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) != SQLITE_DONE) /* autocommit: durable */
			die(db, "insert");
		sqlite3_reset(st);
		snprintf(line, sizeof line, "ack %u\n", i);
		say(line);
	}
}

static int sqlite_kv_check(const char *dir)
{
	sqlite3 *db = open_db(dir, "kv.db");
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, "SELECT k, v FROM kv", -1, &st, 0) !=
	    SQLITE_OK)
		die(db, "select");
	while (sqlite3_step(st) == SQLITE_ROW)
		printf("%s %s\n", sqlite3_column_text(st, 0),
		       sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	double t0;
	FILE *f;

	if (argc >= 4 && !strncmp(argv[1], "sqlite-kv", 9))
		sync_mode = !strcmp(argv[3], "EXTRA") ? "EXTRA" : "FULL";
	if (argc >= 3 && !strcmp(argv[1], "sqlite-kv"))
		sqlite_kv(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "sqlite-kv-check"))
		return sqlite_kv_check(argv[2]);
	if (argc < 5)
		return 2;
	say("intent 1 bench done\n");
	t0 = now();
	if (!strcmp(argv[1], "syscalls"))
		for (int i = atoi(argv[3]); i > 0; i--)
			getppid();
	else if (!strcmp(argv[1], "fsync"))
		bench_fsync(argv[2], atoi(argv[3]));
	else if (!strcmp(argv[1], "unwatched"))
		bench_pipe(atoi(argv[3]));
	else if (!strcmp(argv[1], "sqlite"))
		bench_sqlite(argv[2], atoi(argv[3]));
	else
		return 2;
	double took = now() - t0;
	/* the acknowledged operation leaves a file in the directory: a run
	 * that acknowledges what it never wrote there is refused */
	char done[4096];
	snprintf(done, sizeof done, "%s/done", argv[2]);
	int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "done", 4) != 4 || fsync(fd) != 0 || close(fd))
		return 1;
	f = fopen(argv[4], "w");
	if (!f)
		return 1;
	fprintf(f, "%.4f\n", took);
	fclose(f);
	say("ack 1\n");
	return 0;
}
