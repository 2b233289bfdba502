/*
 * faultsim_cost.c -- what the fault simulator and the libfiu points cost
 * when no fault is enabled.
 *
 *   (1) durable commits per second: keel_put through the POSIX backend
 *       against the same through faultsim's backend (cache recording on, no
 *       fault spec), alternating rounds, median of each (target: faultsim
 *       at most 10% fewer);
 *   (2) the libfiu points of the POSIX backend: the cost of one fiu_fail
 *       call with no point enabled, times the calls a commit makes, against
 *       a commit's time; and directly, pwrite+fdatasync of 4 KiB through
 *       keel_io_posix() (with its points) against the bare system calls,
 *       alternating rounds (target: at most 2%);
 *   (3) the CPU price per call, where no sync hides it: 4 KiB pwrites and
 *       an fdatasync every 64 of them, through each backend.
 *
 * Build and run (no Makefile target; the libraries come from the usual build):
 *   make B=build-faultsim -j2 build-faultsim/libkeel.a \
 *        build-faultsim/libkeel-faultsim.a
 *   cc -std=gnu11 -O2 -D_GNU_SOURCE -DFIU_ENABLE=1 -Ibase -Iengine -Irecovery \
 *      -Ifaultsim \
 *      bench/faultsim_cost.c build-faultsim/libkeel-faultsim.a \
 *      build-faultsim/libkeel.a -lfiu -lpthread -o build-faultsim/faultsim-cost
 *   build-faultsim/faultsim-cost [--dir DIR] [--rounds N] [--seconds S]
 *                                [--threads N]
 * One JSON line per measurement on stdout, a summary on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <fiu.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faultsim.h"
#include "keel.h"

typedef struct cfg {
	const char *dir;
	int rounds;
	double seconds;
	int threads;
} cfg;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "faultsim-cost: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- (1) durable commits per second --------------------------------------- */

typedef struct putter {
	keel_db *db;
	double until;
	int id;
	long commits;
	int rc;
} putter;

static void *put_loop(void *arg)
{
	putter *p = arg;
	char key[32], val[100];
	memset(val, 'v', sizeof val);
	for (long i = 0; now_s() < p->until; i++) {
		int n = snprintf(key, sizeof key, "t%d-%ld", p->id, i % 1000);
		p->rc = keel_put(p->db, key, (size_t)n, val, sizeof val,
		                 KEEL_REV_ANY, NULL);
		if (p->rc != KEEL_OK)
			break;
		p->commits++;
	}
	return NULL;
}

/* Commits per second for one round on a fresh store; IO NULL = POSIX. */
static double commit_round(const cfg *c, const keel_io *io)
{
	char path[512];
	keel_db *db;
	keel_options o = { .io = io };
	putter p[64];
	pthread_t t[64];
	long total = 0;

	snprintf(path, sizeof path, "%s/faultsim-cost.keel", c->dir);
	unlink(path);
	int rc = keel_open(path, &o, &db);
	if (rc != KEEL_OK) {
		fprintf(stderr, "faultsim-cost: open %s: %s\n", path,
		        keel_strerror(rc));
		exit(1);
	}
	double t0 = now_s();
	for (int i = 0; i < c->threads; i++) {
		p[i] = (putter){ db, t0 + c->seconds, i, 0, 0 };
		pthread_create(&t[i], NULL, put_loop, &p[i]);
	}
	for (int i = 0; i < c->threads; i++) {
		pthread_join(t[i], NULL);
		total += p[i].commits;
		if (p[i].rc != KEEL_OK) {
			fprintf(stderr, "faultsim-cost: put: %s\n",
			        keel_strerror(p[i].rc));
			exit(1);
		}
	}
	double rate = (double)total / (now_s() - t0);
	keel_close(db);
	unlink(path);
	return rate;
}

static void bench_commits(const cfg *c)
{
	faultsim_cache *cache;
	faultsim_io *fio;
	double posix[32], sim[32];

	if (faultsim_cache_create(0, &cache) != 0)
		exit(1);
	faultsim_io_options o = { cache, NULL, FAULTSIM_PROFILE_EXT4 };
	if (faultsim_io_new(&o, &fio) != 0)
		exit(1);
	for (int r = 0; r < c->rounds; r++) {
		/* alternate which goes first: the disk drifts */
		if (r % 2 == 0) {
			posix[r] = commit_round(c, NULL);
			sim[r] = commit_round(c, faultsim_io_table(fio));
		} else {
			sim[r] = commit_round(c, faultsim_io_table(fio));
			posix[r] = commit_round(c, NULL);
		}
		faultsim_cache_forget(cache);
		printf("{\"bench\":\"commits\",\"threads\":%d,\"round\":%d,"
		       "\"posix_per_s\":%.1f,\"faultsim_per_s\":%.1f}\n",
		       c->threads, r, posix[r], sim[r]);
	}
	double ratio[32];
	for (int r = 0; r < c->rounds; r++) /* paired: the rounds drift */
		ratio[r] = sim[r] / posix[r];
	double mr = median(ratio, c->rounds);
	double mp = median(posix, c->rounds), ms = median(sim, c->rounds);
	printf("{\"bench\":\"commits_summary\",\"threads\":%d,"
	       "\"posix_median\":%.1f,\"faultsim_median\":%.1f,"
	       "\"median_ratio\":%.4f}\n", c->threads, mp, ms, mr);
	fprintf(stderr, "commits/s, %d thread(s): posix %.0f, faultsim %.0f "
	        "(medians); median paired ratio %.3f: faultsim %.1f%% %s "
	        "(peak record %zu bytes)\n", c->threads, mp, ms, mr,
	        100 * (1 - mr), mr <= 1 ? "fewer" : "more (noise)",
	        faultsim_cache_peak(cache));
	faultsim_io_free(fio);
	faultsim_cache_destroy(cache);
}

/* ---- (2) libfiu points ---------------------------------------------------- */

static double fiu_ns_per_call(void)
{
	const long n = 20000000;
	long hits = 0;
	double t0 = now_s();
	for (long i = 0; i < n; i++)
		hits += fiu_fail("keel/io/pwrite");
	double ns = (now_s() - t0) * 1e9 / (double)n;
	if (hits)
		fprintf(stderr, "faultsim-cost: a point is enabled?\n");
	return ns;
}

/* 4 KiB pwrite + fdatasync per iteration, through IO or (NULL) bare calls;
 * returns nanoseconds per iteration. */
static double sync_round(const cfg *c, const keel_io *io, int fd)
{
	static char buf[4096];
	long n = 0;
	double t0 = now_s(), until = t0 + c->seconds;
	while (now_s() < until) {
		uint64_t off = (uint64_t)(n % 256) * sizeof buf;
		if (io) {
			if (io->pwrite(io->ctx, fd, buf, sizeof buf, off) !=
			            (ssize_t)sizeof buf ||
			    io->fdatasync(io->ctx, fd) != 0)
				exit(1);
		} else if (pwrite(fd, buf, sizeof buf, (off_t)off) !=
		                   (ssize_t)sizeof buf ||
		           fdatasync(fd) != 0) {
			exit(1);
		}
		n++;
	}
	return (now_s() - t0) * 1e9 / (double)n;
}

static void bench_fiu(const cfg *c)
{
	char path[512];
	double with[32], bare[32];

	double before = fiu_ns_per_call();
	fiu_init(0);
	double after = fiu_ns_per_call();
	snprintf(path, sizeof path, "%s/faultsim-cost.sync", c->dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20) != 0 || fsync(fd) != 0)
		exit(1);
	for (int r = 0; r < c->rounds; r++) {
		if (r % 2 == 0) {
			with[r] = sync_round(c, keel_io_posix(), fd);
			bare[r] = sync_round(c, NULL, fd);
		} else {
			bare[r] = sync_round(c, NULL, fd);
			with[r] = sync_round(c, keel_io_posix(), fd);
		}
		printf("{\"bench\":\"posix_points\",\"round\":%d,"
		       "\"keel_io_posix_ns\":%.0f,\"bare_ns\":%.0f}\n", r,
		       with[r], bare[r]);
	}
	close(fd);
	unlink(path);
	double mw = median(with, c->rounds), mb = median(bare, c->rounds);
	printf("{\"bench\":\"fiu_fail\",\"ns_before_init\":%.2f,"
	       "\"ns_after_init\":%.2f,\"sync_ns\":%.0f}\n", before, after, mb);
	fflush(stdout);
	fprintf(stderr, "fiu_fail with no point enabled: %.1f ns (%.1f ns "
	        "before fiu_init); 4 KiB pwrite+fdatasync %.0f ns: two points "
	        "are %.4f%% of it\n", after, before, mb,
	        100 * 2 * after / mb);
	fprintf(stderr, "pwrite+fdatasync via keel_io_posix %.0f ns, bare %.0f "
	        "ns: %+.1f%% (noise bound; the points alone are above)\n", mw,
	        mb, 100 * (mw - mb) / mb);
}

/* ---- (3) CPU per call ------------------------------------------------------ */

/* ns per 4 KiB pwrite through IO, with one fdatasync per 64 writes (so the
 * faultsim record is emptied as the engine's commits empty it). */
static double write_ns(const keel_io *io, const char *path, long n)
{
	static char buf[4096];
	int fd = io->open(io->ctx, path, KEEL_IO_CREATE, 0644);
	if (fd < 0)
		die("open", fd);
	double t0 = now_s(), sync_s = 0;
	for (long i = 0; i < n; i++) {
		uint64_t off = (uint64_t)(i % 64) * sizeof buf;
		ssize_t w = io->pwrite(io->ctx, fd, buf, sizeof buf, off);
		if (w != (ssize_t)sizeof buf)
			die("pwrite", (int)w);
		if (i % 64 == 63) {
			double s0 = now_s();
			int e = io->fdatasync(io->ctx, fd);
			if (e != 0)
				die("fdatasync", e);
			sync_s += now_s() - s0; /* not counted */
		}
	}
	double ns = (now_s() - t0 - sync_s) * 1e9 / (double)n;
	io->close(io->ctx, fd);
	unlink(path);
	return ns;
}

static void bench_cpu(const cfg *c)
{
	char path[512];
	faultsim_cache *cache;
	faultsim_io *fio;
	double px[32], fs[32];

	if (faultsim_cache_create(0, &cache) != 0)
		exit(1);
	faultsim_io_options o = { cache, NULL, FAULTSIM_PROFILE_EXT4 };
	if (faultsim_io_new(&o, &fio) != 0)
		exit(1);
	snprintf(path, sizeof path, "%s/faultsim-cost.cpu", c->dir);
	for (int r = 0; r < c->rounds; r++) {
		px[r] = write_ns(keel_io_posix(), path, 20000);
		fs[r] = write_ns(faultsim_io_table(fio), path, 20000);
		faultsim_cache_forget(cache);
		printf("{\"bench\":\"pwrite_cpu\",\"round\":%d,"
		       "\"posix_ns\":%.0f,\"faultsim_ns\":%.0f}\n", r, px[r],
		       fs[r]);
	}
	double mp = median(px, c->rounds), mf = median(fs, c->rounds);
	fprintf(stderr, "4 KiB pwrite, sync time excluded: posix %.0f ns, "
	        "faultsim %.0f ns (+%.0f ns: pre-image read and copy)\n", mp,
	        mf, mf - mp);
	faultsim_io_free(fio);
	faultsim_cache_destroy(cache);
}

int main(int argc, char **argv)
{
	cfg c = { ".", 5, 2.0, 1 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			c.dir = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			c.rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			c.seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			c.threads = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: faultsim-cost [--dir DIR] "
			        "[--rounds N] [--seconds S] [--threads N]\n");
			return 2;
		}
	}
	if (c.rounds < 1 || c.rounds > 32 || c.seconds <= 0 ||
	    c.threads < 1 || c.threads > 64) {
		fprintf(stderr, "faultsim-cost: rounds 1..32, seconds > 0, "
		        "threads 1..64\n");
		return 2;
	}
	bench_commits(&c);
	bench_fiu(&c);
	bench_cpu(&c);
	return 0;
}
