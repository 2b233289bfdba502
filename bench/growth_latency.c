/*
 * growth_latency.c -- how long single commits take while a large store's
 * file grows (engine/grow.c).
 *
 * Loads a store to --load-mib MiB of 64 KiB values (unsynced, then one
 * sync(2) so the load's write-back is not charged to the first commit),
 * reopens it synced with compaction off, and times --commits 16-byte puts
 * over 10,000 keys, one sync each.  Each growth of the file -- an eighth of
 * it, up to 64 MiB of zeros -- falls inside the run.  Prints the latency
 * percentiles, the longest commit, how many took over 10 ms, and the
 * growths the store reports (keel_stats: growths, growths_inline).
 *
 * --compact: the automatic compaction policy stays on in the timed part,
 * and the load writes every value twice, so the file starts at twice the
 * live bytes and the policy compacts at the first commit: the commits then
 * run beside a compaction of --load-mib / 2 MiB of live data, and the file
 * grows while it runs.
 *
 * Build and run (`make` builds it; it is not installed):
 *   make -j2 build/growth-latency
 *   build/growth-latency [--dir DIR] [--load-mib N] [--commits N] [--compact]
 * DIR must be on the disk under test (default $TMPDIR or /tmp).  One JSON
 * line on stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "growth-latency: %s: %s\n", what, keel_strerror(rc));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: growth-latency [--dir DIR] [--load-mib N] "
	                "[--commits N] [--compact]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	long load_mib = 300, commits = 20000;
	int compact = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--compact")) {
			compact = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--dir"))
			dir = argv[++i];
		else if (!strcmp(argv[i], "--load-mib"))
			load_mib = atol(argv[++i]);
		else if (!strcmp(argv[i], "--commits"))
			commits = atol(argv[++i]);
		else
			usage();
	}
	if (load_mib < 1 || commits < 1000)
		usage();

	char path[4096];
	snprintf(path, sizeof(path), "%s/growth-latency-%d.keel", dir, (int)getpid());
	keel_db *db;
	keel_options load = {.flags = KEEL_NOCOMPACT | KEEL_UNSAFE_NO_SYNC};
	int rc;
	if ((rc = keel_open(path, &load, &db)))
		die("open", rc);
	static char big[65536];
	memset(big, 'b', sizeof(big));
	long keys = compact ? load_mib * 8 : load_mib * 16;
	for (long i = 0; i < load_mib * 16; i++) {
		char k[32];
		snprintf(k, sizeof(k), "big%08ld", i % keys);
		if ((rc = keel_put(db, k, strlen(k), big, sizeof(big), KEEL_REV_ANY, NULL)))
			die("load", rc);
	}
	keel_close(db);
	sync();

	keel_options run = {.flags = compact ? 0 : KEEL_NOCOMPACT};
	if ((rc = keel_open(path, &run, &db)))
		die("reopen", rc);
	keel_stats before, after;
	keel_stat(db, &before);
	double *lat = malloc(sizeof(double) * (size_t)commits), worst = 0;
	long over10 = 0;
	char v[16];
	memset(v, 'v', sizeof(v));
	srand(1);
	double t0 = now_s();
	for (long i = 0; i < commits; i++) {
		char k[32];
		snprintf(k, sizeof(k), "k%05d", rand() % 10000);
		double a = now_s();
		if ((rc = keel_put(db, k, strlen(k), v, sizeof(v), KEEL_REV_ANY, NULL)))
			die("put", rc);
		lat[i] = (now_s() - a) * 1e3;
		worst = lat[i] > worst ? lat[i] : worst;
		over10 += lat[i] > 10.0;
	}
	double took = now_s() - t0;
	keel_stat(db, &after);
	keel_close(db);
	unlink(path);
	qsort(lat, (size_t)commits, sizeof(double), cmp_double);
	printf("{\"bench\":\"growth-latency\",\"compact\":%s,"
	       "\"load_mib\":%ld,\"commits\":%ld,"
	       "\"commits_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
	       "\"p999_ms\":%.3f,\"max_ms\":%.1f,\"over_10ms\":%ld,"
	       "\"file_mib_before\":%.0f,\"file_mib_after\":%.0f,"
	       "\"growths\":%llu,\"growths_inline\":%llu,\"compactions\":%llu}\n",
	       compact ? "true" : "false", load_mib, commits, (double)commits / took, lat[commits / 2],
	       lat[commits * 99 / 100], lat[commits * 999 / 1000], worst, over10,
	       before.file_size / 1048576.0, after.file_size / 1048576.0,
	       (unsigned long long)(after.growths - before.growths),
	       (unsigned long long)(after.growths_inline - before.growths_inline),
	       (unsigned long long)(after.compactions - before.compactions));
	free(lat);
	return 0;
}
