/*
 * engine_bench.c -- bench-engine: keel against LMDB, SQLite, RocksDB, LevelDB
 * and plain write+fdatasync loops (the device's limits, bench_plain.c), in
 * one run on one disk.
 *
 *   bench-engine [--quick] [--engine LIST] [--workload LIST] [--seconds S]
 *                [--rounds N] [--out FILE.jsonl] ...      (--help for all)
 *
 * Workloads (one JSONL line per measurement, see jl_begin() and callers):
 *   commit  durable commits/s: random overwrites of --keys keys (preloaded),
 *           one commit per put, for each --threads count and --value-sizes
 *           size.  Also gives the bytes each engine appends per put.
 *   read    random point reads over --read-keys keys (16-byte values), with
 *           --read-threads threads, from a snapshot per thread and fresh.
 *   scan    range scans of --scan-length entries from random keys, same
 *           store as 'read'.
 *   space   keel only: bytes appended per 16-byte put (compaction off), and
 *           --overwrites random overwrites of --keys keys, then file size
 *           against live bytes (automatic compaction as shipped).
 *   recover keel only: --keys keys of 16 bytes, overwrites in a child process
 *           up to the worst point of the checkpoint cycle, SIGKILL there,
 *           and the reopen's time (cold and cached) and bytes read.
 *
 * WHY IT IS BUILT THIS WAY
 *   The machines are shared and loaded, so an absolute figure means little;
 *   a ratio against a peer measured moments apart means more.  Each round
 *   therefore measures every engine for one configuration back to back, in an
 *   order rotated by the round number (no engine always goes first, right
 *   after the disk was idle), and the report takes the median over rounds.
 *   Every measurement gets a fresh directory under --dir, on the disk under
 *   test (tmpfs would measure memory: the run warns if it finds it).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define BENCH_MAX_LIST 16
#define BENCH_READ_VALUE_SIZE 16

/* Every engine the program knows, in the order the report lists them. */
static const bench_engine *const bench_all[] = {
	&bench_engine_keel,   &bench_engine_lmdb,    &bench_engine_sqlite,
	&bench_engine_rocksdb, &bench_engine_leveldb, &bench_engine_plain,
	&bench_engine_plain_ring, &bench_engine_plain_falloc,
};
#define BENCH_NENGINES (sizeof(bench_all) / sizeof(bench_all[0]))

/* ---- configuration -------------------------------------------------------- */

typedef struct bench_cfg {
	const bench_engine *engines[BENCH_NENGINES]; /* --engine, in order   */
	size_t nengines;
	int engines_given;          /* --engine was given (reads then obey it)  */
	int do_commit, do_read, do_scan, do_space, do_recover; /* --workload  */
	unsigned threads[BENCH_MAX_LIST];          /* --threads               */
	size_t nthreads;
	size_t vsizes[BENCH_MAX_LIST];             /* --value-sizes           */
	size_t nvsizes;
	unsigned rthreads[BENCH_MAX_LIST];         /* --read-threads          */
	size_t nrthreads;
	uint64_t keys;        /* --keys: keys the commit workload overwrites  */
	uint64_t read_keys;   /* --read-keys                                  */
	unsigned scan_len;    /* --scan-length                                */
	uint64_t overwrites;  /* --overwrites (space)                         */
	uint64_t space_cap;   /* --space-cap-mib, in bytes: stop 'space' early
	                         once the file is this big (no compaction yet
	                         would otherwise fill the shared disk)        */
	int space_synced;     /* --space-synced: keep the syncs (slow)        */
	double seconds;       /* --seconds per measurement (time mode)        */
	uint64_t ops;         /* --ops per measurement (count mode), 0 = time */
	unsigned rounds;      /* --rounds                                     */
	const char *dir;      /* --dir: where the stores are created          */
	const char *out;      /* --out: JSONL file (appended); NULL = stdout  */
	char run_id[64];      /* --run-id                                     */
	int keep;             /* --keep: leave the stores behind              */
} bench_cfg;

/* Facts about the machine, written on every line so a line stands alone. */
typedef struct bench_machine {
	char host[64];
	long cpus;
	char cpu[96];
	uint64_t mem_mib;
	char kernel[64];
	char fs[16];
	char device[96];
} bench_machine;

static bench_cfg cfg;
static bench_machine machine;
static FILE *out_fp;
static char run_root[4096]; /* the run's own directory under --dir */
static unsigned store_seq;  /* names each store's directory        */

/* ---- helpers shared with the engines ------------------------------------ */

void bench_key(char buf[BENCH_KEY_LEN + 1], uint64_t i)
{
	snprintf(buf, BENCH_KEY_LEN + 1, "%08llu",
	         (unsigned long long)(i % 100000000ull));
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: fast, good enough to spread keys and fill values */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void bench_value(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1, r = 0;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			r = rng_next(&s);
		p[i] = (unsigned char)(r >> (8 * (i % 8)));
	}
}

int bench_fail(const char *engine, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "bench-engine: %s: %s\n", engine, msg);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- directories and file sizes ----------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) ? -1 : 0;
}

static void remove_tree(const char *path)
{
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		fprintf(stderr, "bench-engine: remove %s: %s\n", path, strerror(errno));
}

static uint64_t tree_bytes_sum;

static int add_entry(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		tree_bytes_sum += (uint64_t)st->st_size;
	return 0;
}

/* Apparent size of every file under PATH: what the engine has appended
 * (LMDB reuses pages, so its files barely grow; that is the point). */
static uint64_t tree_bytes(const char *path)
{
	tree_bytes_sum = 0;
	nftw(path, add_entry, 16, FTW_PHYS);
	return tree_bytes_sum;
}

/* A fresh, empty directory for one store. */
static int store_dir(const char *engine, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s-%u", run_root, engine, ++store_seq);
	if (mkdir(buf, 0755))
		return bench_fail(engine, "mkdir %s: %s", buf, strerror(errno));
	return 0;
}

static void store_remove(const char *dir)
{
	if (!cfg.keep)
		remove_tree(dir);
}

/* Bytes this process has dirtied in the page cache so far (all threads),
 * from /proc/self/io; -1 where the kernel lacks it.  Kept in the JSONL only:
 * kernels with large folios count a whole folio (up to 2 MiB) each time one
 * small write dirties it, so it is no measure of bytes written per put. */
static int64_t io_write_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "write_bytes: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Bytes written to the block device that holds DIR so far, from the
 * device's own counters (/sys/dev/block/MAJ:MIN/stat, sectors written, in
 * 512-byte units whatever the device's sector size), after DIR's file
 * system has written back everything dirty (syncfs): preallocation zeros,
 * journal and compaction rewrites included -- what wears a device out.
 * Counts every writer of that device, so it means something only on a
 * device of the run's own (a loop device, docs/bench.md); -1 where it
 * cannot be read. */
static int64_t dev_write_bytes(const char *dir)
{
	struct stat st;
	char path[64];
	unsigned long long v[7];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return -1;
	(void)syncfs(fd);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat",
	         major(st.st_dev), minor(st.st_dev));
	if (!(f = fopen(path, "r")))
		return -1;
	int n = fscanf(f, "%llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
	               &v[2], &v[3], &v[4], &v[5], &v[6]);
	fclose(f);
	return n == 7 ? (int64_t)(v[6] * 512u) : -1;
}

/* ---- machine facts ------------------------------------------------------- */

/* Strings go into JSON unescaped, so keep them to plain characters. */
static void clean_copy(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] && src[i] != '\n'; i++)
		dst[i] = (src[i] == '"' || src[i] == '\\' || src[i] == ',' ||
		          (unsigned char)src[i] < 0x20) ? ' ' : src[i];
	dst[i] = '\0';
}

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x794C7630: return "overlay";
	case 0x2FC12FC1: return "zfs";
	case 0xF2F52010: return "f2fs";
	default: return "other";
	}
}

/* The mount source of the file system holding DIR (/proc/self/mountinfo:
 * "id parent major:minor root mountpoint ... - fstype source options"). */
static void device_of(const char *dir, char *buf, size_t len)
{
	struct stat st;
	char line[1024], want[32], *dash;
	FILE *f;

	snprintf(buf, len, "unknown");
	if (stat(dir, &st) || !(f = fopen("/proc/self/mountinfo", "r")))
		return;
	snprintf(want, sizeof(want), " %u:%u ", major(st.st_dev), minor(st.st_dev));
	while (fgets(line, sizeof(line), f)) {
		char fstype[64], source[256];

		if (!strstr(line, want) || !(dash = strstr(line, " - ")))
			continue;
		if (sscanf(dash + 3, "%63s %255s", fstype, source) == 2) {
			clean_copy(buf, len, source);
			break;
		}
	}
	fclose(f);
}

static void machine_probe(const char *dir)
{
	struct utsname u;
	struct statfs sf;
	char line[256];
	FILE *f;

	gethostname(machine.host, sizeof(machine.host) - 1);
	clean_copy(machine.host, sizeof(machine.host), machine.host);
	machine.cpus = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(machine.cpu, sizeof(machine.cpu), "unknown");
	if ((f = fopen("/proc/cpuinfo", "r"))) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (!strncmp(line, "model name", 10) && colon) {
				clean_copy(machine.cpu, sizeof(machine.cpu), colon + 2);
				break;
			}
		}
		fclose(f);
	}
	machine.mem_mib = (uint64_t)sysconf(_SC_PHYS_PAGES) *
	                  (uint64_t)sysconf(_SC_PAGESIZE) >> 20;
	if (!uname(&u))
		clean_copy(machine.kernel, sizeof(machine.kernel), u.release);
	snprintf(machine.fs, sizeof(machine.fs), "%s",
	         statfs(dir, &sf) ? "unknown" : fs_name((long)sf.f_type));
	device_of(dir, machine.device, sizeof(machine.device));
	if (!strcmp(machine.fs, "tmpfs"))
		fprintf(stderr, "bench-engine: WARNING: %s is on tmpfs: syncs cost "
		        "nothing there; use --dir on the disk under test\n", dir);
}

/* ---- one measurement: threads doing one kind of operation ---------------- */

typedef enum bench_op { OP_PUT, OP_GET, OP_SCAN } bench_op;

typedef struct bench_result {
	uint64_t ops;     /* operations completed             */
	uint64_t entries; /* scan: entries read                */
	double seconds;   /* from the start signal to the last */
	int failed;       /* an operation failed               */
} bench_result;

typedef struct bench_worker {
	pthread_t tid;
	const bench_engine *e;
	void *db;
	bench_op op;
	bench_role role;
	uint64_t keys;          /* keys to pick from                     */
	size_t vsize;           /* value size (puts) or expected (gets)  */
	uint64_t quota;         /* ops to do in count mode; 0 = timed    */
	uint64_t seed;
	pthread_barrier_t *start;
	atomic_int *stop;
	/* results */
	uint64_t ops, entries, touch;
	double end;             /* when this thread's last op returned   */
	int failed;
} bench_worker;

static void worker_loop(bench_worker *w, void *ctx)
{
	char key[BENCH_KEY_LEN + 1];
	unsigned char *val = NULL;
	uint64_t s = w->seed;
	int rc = 0;

	if (w->op == OP_PUT) {
		val = malloc(w->vsize + 8);
		if (!val) {
			w->failed = bench_fail(w->e->name, "out of memory");
			atomic_store(w->stop, 1);
			return;
		}
		bench_value(val, w->vsize, w->seed);
	}
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		uint64_t k = rng_next(&s) % w->keys;
		size_t vlen = 0;
		unsigned got = 0;

		bench_key(key, k);
		switch (w->op) {
		case OP_PUT:
			/* every write carries new bytes, as real overwrites do */
			memcpy(val, &w->ops, w->vsize < 8 ? w->vsize : 8);
			rc = w->e->put(ctx, key, BENCH_KEY_LEN, val, w->vsize);
			break;
		case OP_GET:
			rc = w->e->get(ctx, key, BENCH_KEY_LEN, &vlen, &w->touch);
			if (!rc && vlen != w->vsize)
				rc = bench_fail(w->e->name, "get %s: %zu bytes, want %zu",
				                key, vlen, w->vsize);
			break;
		case OP_SCAN:
			rc = w->e->scan(ctx, key, BENCH_KEY_LEN, cfg.scan_len, &got,
			                &w->touch);
			w->entries += got;
			break;
		}
		if (rc) {
			w->failed = 1;
			atomic_store(w->stop, 1);
			break;
		}
		if (++w->ops == w->quota)
			break;
	}
	w->end = now_s();
	free(val);
}

static void *worker_main(void *arg)
{
	bench_worker *w = arg;
	void *ctx = NULL;

	/* Opened here, not by the main thread: LMDB's reader slots belong to
	 * the thread that begins the read transaction. */
	if (w->e->thread_open(w->db, w->role, &ctx)) {
		w->failed = 1;
		atomic_store(w->stop, 1);
	}
	pthread_barrier_wait(w->start);
	if (!w->failed)
		worker_loop(w, ctx);
	else
		w->end = now_s();
	if (ctx)
		w->e->thread_close(ctx);
	return NULL;
}

static int run_threads(const bench_engine *e, void *db, bench_op op,
                       bench_role role, unsigned nthreads, uint64_t keys,
                       size_t vsize, bench_result *res)
{
	bench_worker *w = calloc(nthreads, sizeof(*w));
	pthread_barrier_t start;
	atomic_int stop = 0;
	unsigned started = 0;
	double t0, deadline, end = 0;

	memset(res, 0, sizeof(*res));
	if (!w)
		return bench_fail(e->name, "out of memory");
	pthread_barrier_init(&start, NULL, nthreads + 1);
	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (bench_worker){
			.e = e, .db = db, .op = op, .role = role, .keys = keys,
			.vsize = vsize, .start = &start, .stop = &stop,
			.seed = ((uint64_t)store_seq << 32) + i * 7919u + 1,
		};
		if (cfg.ops)
			w[i].quota = cfg.ops / nthreads + (i < cfg.ops % nthreads);
		if (cfg.ops && !w[i].quota)
			w[i].quota = 1;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
			/* cannot happen at these counts; give up cleanly */
			fprintf(stderr, "bench-engine: pthread_create failed\n");
			abort();
		}
		started++;
	}
	pthread_barrier_wait(&start);
	t0 = now_s();
	deadline = t0 + cfg.seconds;
	if (!cfg.ops) {
		while (!atomic_load(&stop) && now_s() < deadline) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		atomic_store(&stop, 1);
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(w[i].tid, NULL);
		res->ops += w[i].ops;
		res->entries += w[i].entries;
		res->failed |= w[i].failed;
		if (w[i].end > end)
			end = w[i].end;
	}
	res->seconds = end - t0;
	pthread_barrier_destroy(&start);
	free(w);
	return res->failed ? -1 : 0;
}

/* ---- JSONL ------------------------------------------------------------ */

/* One line under construction; fields are appended in a fixed order so the
 * report's small parser can rely on it. */
typedef struct jline {
	char buf[2048];
	size_t len;
} jline;

static void jl_add(jline *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void jl_add(jline *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
}

static void jl_str(jline *l, const char *k, const char *v)
{
	char clean[256];

	clean_copy(clean, sizeof(clean), v);
	jl_add(l, "%s\"%s\":\"%s\"", l->len > 1 ? "," : "", k, clean);
}

static void jl_num(jline *l, const char *k, double v)
{
	jl_add(l, "%s\"%s\":%.6g", l->len > 1 ? "," : "", k, v);
}

static void jl_int(jline *l, const char *k, int64_t v)
{
	jl_add(l, "%s\"%s\":%lld", l->len > 1 ? "," : "", k, (long long)v);
}

/* What every line carries before its own figures. */
static void jl_begin(jline *l, unsigned round, const char *workload,
                     const bench_engine *e, const char *mode, unsigned threads,
                     size_t vsize, uint64_t keys)
{
	double load[1] = { -1 };

	l->len = 0;
	jl_add(l, "{");
	getloadavg(load, 1);
	jl_str(l, "run", cfg.run_id);
	jl_int(l, "round", round);
	jl_str(l, "workload", workload);
	jl_str(l, "engine", e->name);
	jl_str(l, "engine_version", e->version());
	jl_str(l, "mode", mode);
	jl_int(l, "threads", threads);
	jl_int(l, "value_size", (int64_t)vsize);
	jl_int(l, "keys", (int64_t)keys);
	jl_num(l, "load1", load[0]);
}

static void jl_result(jline *l, const bench_result *r)
{
	jl_int(l, "ops", (int64_t)r->ops);
	jl_num(l, "seconds", r->seconds);
	jl_num(l, "ops_per_s", r->seconds > 0 ? (double)r->ops / r->seconds : 0);
}

static void jl_end(jline *l)
{
	jl_str(l, "host", machine.host);
	jl_int(l, "cpus", machine.cpus);
	jl_str(l, "cpu", machine.cpu);
	jl_int(l, "mem_mib", (int64_t)machine.mem_mib);
	jl_str(l, "kernel", machine.kernel);
	jl_str(l, "fs", machine.fs);
	jl_str(l, "device", machine.device);
	jl_add(l, "}\n");
	fputs(l->buf, out_fp);
	fflush(out_fp);
}

/* ---- workloads -------------------------------------------------------- */

/* Engine order for a round: the list rotated by the round number. */
static const bench_engine *rotated(const bench_engine *const *list, size_t n,
                                   unsigned round, size_t i)
{
	return list[(i + round) % n];
}

/* One durable-commit measurement in a fresh store: preload the keys, then
 * time random overwrites.  Also records what the files grew by. */
static int commit_one(const bench_engine *e, unsigned round, unsigned threads,
                      size_t vsize)
{
	bench_open_opts o = { .keys = cfg.keys, .value_size = vsize };
	bench_space s0 = { 0 }, s1 = { 0 };
	bench_result r;
	char dir[4200];
	void *db;
	uint64_t size0, size1;
	int64_t io0, io1, dev0, dev1, grew;
	jline l;
	int rc;

	if (store_dir(e->name, dir, sizeof(dir)) || e->open(dir, &o, &db))
		return -1;
	if (e->load && e->load(db, cfg.keys, vsize))
		goto out_fail;
	if (e->space && e->space(db, &s0))
		goto out_fail;
	size0 = tree_bytes(dir);
	dev0 = dev_write_bytes(dir);
	io0 = io_write_bytes();
	rc = run_threads(e, db, OP_PUT, BENCH_WRITER, threads, cfg.keys, vsize, &r);
	io1 = io_write_bytes();
	dev1 = dev_write_bytes(dir);
	size1 = tree_bytes(dir);
	if (rc || (e->space && e->space(db, &s1)))
		goto out_fail;
	e->close(db);
	store_remove(dir);

	/* keel reports the end of its data, which preallocation hides from the
	 * file size; a compaction moves it back, so the delta is then unknown */
	if (e->space)
		grew = s1.compactions != s0.compactions ? -1 :
		       (int64_t)(s1.end_offset - s0.end_offset);
	else
		grew = (int64_t)size1 - (int64_t)size0;
	jl_begin(&l, round, "commit", e, "synced", threads, vsize, cfg.keys);
	jl_result(&l, &r);
	jl_int(&l, "bytes", grew);
	jl_num(&l, "bytes_per_op", grew >= 0 && r.ops ? (double)grew / (double)r.ops : -1);
	jl_int(&l, "payload_bytes", (int64_t)(r.ops * (BENCH_KEY_LEN + vsize)));
	jl_int(&l, "io_write_bytes", io0 < 0 || io1 < 0 ? -1 : io1 - io0);
	jl_int(&l, "dev_write_bytes", dev0 < 0 || dev1 < 0 ? -1 : dev1 - dev0);
	jl_num(&l, "dev_bytes_per_op", dev0 < 0 || dev1 < 0 || !r.ops ? -1 :
	       (double)(dev1 - dev0) / (double)r.ops);
	jl_int(&l, "syncs", e->space ? (int64_t)(s1.syncs - s0.syncs) : -1);
	jl_int(&l, "compactions", e->space ? (int64_t)(s1.compactions - s0.compactions) : -1);
	jl_end(&l);
	fprintf(stderr, "  [%u] commit %-10s t=%-2u v=%-4zu %8.0f commits/s (%llu in %.2f s)\n",
	        round, e->name, threads, vsize, (double)r.ops / r.seconds,
	        (unsigned long long)r.ops, r.seconds);
	return 0;

out_fail:
	e->close(db);
	store_remove(dir);
	return -1;
}

static int read_measure(const bench_engine *e, void *db, unsigned round,
                        bench_op op, bench_role role, unsigned threads)
{
	const char *wl = op == OP_SCAN ? "scan" : "read";
	const char *mode = role == BENCH_READ_FRESH ? "fresh" : "snapshot";
	bench_result r;
	jline l;

	if (run_threads(e, db, op, role, threads, cfg.read_keys,
	                BENCH_READ_VALUE_SIZE, &r))
		return -1;
	jl_begin(&l, round, wl, e, mode, threads, BENCH_READ_VALUE_SIZE,
	         cfg.read_keys);
	jl_result(&l, &r);
	if (op == OP_SCAN) {
		jl_int(&l, "scan_length", cfg.scan_len);
		jl_int(&l, "entries", (int64_t)r.entries);
		jl_num(&l, "entries_per_s", r.seconds > 0 ? (double)r.entries / r.seconds : 0);
	}
	jl_end(&l);
	fprintf(stderr, "  [%u] %s %-10s %-8s t=%u %10.0f ops/s%s\n", round, wl,
	        e->name, mode, threads, (double)r.ops / r.seconds,
	        op == OP_SCAN ? " (scans)" : "");
	return 0;
}

/* A loaded store for the read workloads. */
typedef struct read_store {
	const bench_engine *e;
	void *db;        /* open handle, NULL until loaded and reopened */
	char dir[4200];
} read_store;

/* Loads one store of --read-keys keys and reopens it: reads then go through
 * the ordinary open path, with the data in the page cache for every engine
 * alike. */
static int read_store_open(read_store *rs, unsigned round)
{
	bench_open_opts o = { .keys = cfg.read_keys,
	                      .value_size = BENCH_READ_VALUE_SIZE };
	const bench_engine *e = rs->e;
	double t0 = now_s();
	void *db;

	if (store_dir(e->name, rs->dir, sizeof(rs->dir)))
		return -1;
	if (e->open(rs->dir, &o, &db))
		return -1;
	if (e->load(db, cfg.read_keys, BENCH_READ_VALUE_SIZE)) {
		e->close(db);
		return -1;
	}
	e->close(db);
	fprintf(stderr, "  [%u] %s: loaded %llu keys in %.1f s\n", round, e->name,
	        (unsigned long long)cfg.read_keys, now_s() - t0);
	return e->open(rs->dir, &o, &rs->db);
}

/* Every engine's store is loaded first; then each read and scan
 * configuration is measured on every engine back to back (order rotated by
 * the round), so the figures a ratio compares were taken seconds apart, as
 * for commits. */
static int read_round(const bench_engine *const *list, size_t n, unsigned round)
{
	read_store rs[BENCH_NENGINES];
	int rc = -1;

	memset(rs, 0, sizeof(rs));
	for (size_t i = 0; i < n; i++) {
		rs[i].e = rotated(list, n, round, i);
		if (read_store_open(&rs[i], round))
			goto out;
	}
	for (size_t t = 0; t < cfg.nrthreads; t++) {
		for (int m = 0; cfg.do_read && m < 2; m++) {
			bench_role role = m ? BENCH_READ_FRESH : BENCH_READ_SNAPSHOT;

			for (size_t i = 0; i < n; i++)
				if (rs[i].e->get && read_measure(rs[i].e, rs[i].db, round, OP_GET,
				                                 role, cfg.rthreads[t]))
					goto out;
		}
		for (size_t i = 0; cfg.do_scan && i < n; i++)
			if (rs[i].e->scan && read_measure(rs[i].e, rs[i].db, round, OP_SCAN,
			                                  BENCH_READ_SNAPSHOT, cfg.rthreads[t]))
				goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		if (rs[i].db)
			rs[i].e->close(rs[i].db);
		if (rs[i].dir[0])
			store_remove(rs[i].dir);
	}
	return rc;
}

/* The space workload's running figures. */
typedef struct space_track {
	bench_space start;  /* after the load                          */
	bench_space last;   /* at the last sample                      */
	double peak_file;   /* highest file size / live bytes sampled  */
	double peak_end;    /* highest end offset / live bytes sampled */
	double peak_bound;  /* highest file size / the engine's space
	                       bound sampled (0: no bound reported)    */
	uint64_t done;      /* overwrites done                         */
	double seconds;     /* time they took                          */
	int capped;         /* stopped early at --space-cap-mib        */
} space_track;

/* A fresh store with --keys keys of 16 bytes, then N random overwrites from
 * one writer, sampling the engine's space figures 200 times on the way. */
static int overwrite_run(const bench_engine *e, int nocompact, uint64_t n,
                         space_track *t)
{
	bench_open_opts o = { .keys = cfg.keys, .value_size = 16,
	                      .unsynced = !cfg.space_synced,
	                      .nocompact = nocompact };
	uint64_t step = n / 200 ? n / 200 : 1, seed = 12345;
	char dir[4200], key[BENCH_KEY_LEN + 1];
	unsigned char val[16];
	void *db, *ctx = NULL;
	double t0;
	int rc = -1;

	memset(t, 0, sizeof(*t));
	if (store_dir(e->name, dir, sizeof(dir)) || e->open(dir, &o, &db))
		return -1;
	if (e->load(db, cfg.keys, sizeof(val)) || e->space(db, &t->start) ||
	    e->thread_open(db, BENCH_WRITER, &ctx))
		goto out;
	t->last = t->start;
	t0 = now_s();
	while (t->done < n) {
		uint64_t k = n - t->done < step ? n - t->done : step;
		const bench_space *s = &t->last;

		for (uint64_t i = 0; i < k; i++) {
			bench_key(key, rng_next(&seed) % cfg.keys);
			bench_value(val, sizeof(val), t->done + i);
			if (e->put(ctx, key, BENCH_KEY_LEN, val, sizeof(val)))
				goto out;
		}
		t->done += k;
		if (e->space(db, &t->last))
			goto out;
		if (s->live_bytes) {
			double f = (double)s->file_size / (double)s->live_bytes;
			double u = (double)s->end_offset / (double)s->live_bytes;

			t->peak_file = f > t->peak_file ? f : t->peak_file;
			t->peak_end = u > t->peak_end ? u : t->peak_end;
		}
		if (s->space_bound) {
			double b = (double)s->file_size / (double)s->space_bound;
			t->peak_bound = b > t->peak_bound ? b : t->peak_bound;
		}
		if (s->file_size > cfg.space_cap) {
			t->capped = 1;
			fprintf(stderr, "  space %s: file passed --space-cap-mib after "
			        "%llu overwrites; stopping there\n", e->name,
			        (unsigned long long)t->done);
			break;
		}
	}
	t->seconds = now_s() - t0;
	rc = 0;
out:
	if (ctx)
		e->thread_close(ctx);
	e->close(db);
	store_remove(dir);
	return rc;
}

/* keel: bytes appended per 16-byte put (compaction off, so the end offset
 * only grows), then --overwrites overwrites of --keys keys with automatic
 * compaction as shipped, and file size against live bytes at the end. */
static int space_one(const bench_engine *e)
{
	uint64_t nb = cfg.overwrites < 20000 ? cfg.overwrites : 20000;
	space_track b, t;
	bench_result r = { 0 };
	const bench_space *s = &t.last;
	double per_put;
	jline l;

	if (overwrite_run(e, 1, nb, &b) || overwrite_run(e, 0, cfg.overwrites, &t))
		return -1;
	per_put = b.done && b.last.compactions == b.start.compactions ?
	          (double)(b.last.end_offset - b.start.end_offset) / (double)b.done : -1;
	r.ops = t.done;
	r.seconds = t.seconds;
	jl_begin(&l, 1, "space", e, cfg.space_synced ? "synced" : "unsynced", 1,
	         16, cfg.keys);
	jl_result(&l, &r);
	jl_int(&l, "file_size", (int64_t)s->file_size);
	jl_int(&l, "end_offset", (int64_t)s->end_offset);
	jl_int(&l, "live_bytes", (int64_t)s->live_bytes);
	jl_int(&l, "live_keys", (int64_t)s->keys);
	jl_int(&l, "compactions", (int64_t)(s->compactions - t.start.compactions));
	jl_num(&l, "file_over_live", s->live_bytes ? (double)s->file_size / (double)s->live_bytes : -1);
	jl_num(&l, "end_over_live", s->live_bytes ? (double)s->end_offset / (double)s->live_bytes : -1);
	jl_num(&l, "peak_file_over_live", t.peak_file);
	jl_num(&l, "peak_end_over_live", t.peak_end);
	jl_int(&l, "space_bound", (int64_t)s->space_bound);
	jl_num(&l, "peak_file_over_bound", t.peak_bound);
	jl_num(&l, "bytes_per_op", per_put);
	jl_int(&l, "bytes_per_op_puts", (int64_t)b.done);
	jl_int(&l, "overwrites_asked", (int64_t)cfg.overwrites);
	jl_int(&l, "stopped_at_cap", t.capped);
	jl_end(&l);
	fprintf(stderr, "  space %s: %.0f B appended per put (compaction off); "
	        "%llu overwrites: file %llu B, in use %llu B, live %llu B "
	        "(file x%.2f, peak x%.2f), %llu compactions\n", e->name, per_put,
	        (unsigned long long)t.done, (unsigned long long)s->file_size,
	        (unsigned long long)s->end_offset, (unsigned long long)s->live_bytes,
	        s->live_bytes ? (double)s->file_size / (double)s->live_bytes : -1.0,
	        t.peak_file, (unsigned long long)(s->compactions - t.start.compactions));
	return 0;
}

/* keel: the reopen after a kill at the worst point of the checkpoint
 * cycle (bench_engine.recover), once a round. */
static int recover_one(const bench_engine *e, unsigned round)
{
	bench_recover rv;
	char dir[4200];
	jline l;
	int rc;

	if (store_dir(e->name, dir, sizeof(dir)))
		return -1;
	rc = e->recover(dir, cfg.keys, 16, &rv);
	store_remove(dir);
	if (rc)
		return -1;
	jl_begin(&l, round, "recover", e, "kill", 1, 16, cfg.keys);
	jl_int(&l, "puts", (int64_t)rv.puts);
	jl_int(&l, "pending", (int64_t)rv.pending);
	jl_int(&l, "pending_bytes", (int64_t)rv.pending_bytes);
	jl_int(&l, "bytes_read", (int64_t)rv.bytes_read);
	jl_num(&l, "cold_ms", rv.cold_ms);
	jl_num(&l, "warm_ms", rv.warm_ms);
	jl_end(&l);
	fprintf(stderr, "  [%u] recover %s: %llu commits pending (%llu B), "
	        "reopen read %llu B in %.1f ms cold, %.1f ms cached\n", round,
	        e->name, (unsigned long long)rv.pending,
	        (unsigned long long)rv.pending_bytes,
	        (unsigned long long)rv.bytes_read, rv.cold_ms, rv.warm_ms);
	return 0;
}

static int run_round(unsigned round)
{
	const bench_engine *list[BENCH_NENGINES];
	size_t n = 0;

	fprintf(stderr, "round %u/%u\n", round, cfg.rounds);
	for (size_t i = 0; cfg.do_commit && i < cfg.nengines; i++)
		if (cfg.engines[i]->put)
			list[n++] = cfg.engines[i];
	for (size_t v = 0; n && v < cfg.nvsizes; v++)
		for (size_t t = 0; t < cfg.nthreads; t++)
			for (size_t i = 0; i < n; i++)
				if (commit_one(rotated(list, n, round, i), round,
				               cfg.threads[t], cfg.vsizes[v]))
					return -1;

	n = 0;
	for (size_t i = 0; (cfg.do_read || cfg.do_scan) && i < cfg.nengines; i++) {
		const bench_engine *e = cfg.engines[i];

		/* the peers for reads are LMDB (and keel); others only on request */
		if (!e->load || !(e->get || e->scan))
			continue;
		if (!cfg.engines_given && strcmp(e->name, "keel") && strcmp(e->name, "lmdb"))
			continue;
		list[n++] = e;
	}
	if (n && read_round(list, n, round))
		return -1;
	for (size_t i = 0; cfg.do_recover && i < cfg.nengines; i++)
		if (cfg.engines[i]->recover && recover_one(cfg.engines[i], round))
			return -1;
	return 0;
}

/* ---- command line ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench-engine [options]\n"
"  --engine LIST       engines, comma-separated (default: all):\n"
"                      keel,lmdb,sqlite,rocksdb,leveldb,plain,plain-ring,\n"
"                      plain-falloc\n"
"  --workload LIST     commit,read,scan,space,recover (default: all)\n"
"  --threads LIST      writer threads for 'commit' (default 1,4,16,64)\n"
"  --value-sizes LIST  value bytes for 'commit' (default 16,4096)\n"
"  --keys N            keys overwritten by 'commit' and 'space' (10000)\n"
"  --read-threads LIST reader threads for 'read' and 'scan' (default 1,2)\n"
"  --read-keys N       keys in the store for 'read'/'scan' (1000000)\n"
"  --scan-length N     entries per scan (100)\n"
"  --overwrites N      puts in 'space' (1000000)\n"
"  --space-synced      keep keel's syncs in 'space' (slow; default skips\n"
"                      them: the bytes appended are the same)\n"
"  --space-cap-mib N   stop 'space' once the file passes N MiB (2048)\n"
"  --seconds S         time per measurement (3)\n"
"  --ops N             a fixed op count per measurement instead of a time\n"
"  --rounds N          rounds, engine order rotated each round (3)\n"
"  --quick             --seconds 1 --read-keys 200000 --overwrites 100000\n"
"  --dir DIR           where stores are created ($TMPDIR or /tmp); must be\n"
"                      on the disk under test, not tmpfs\n"
"  --out FILE          append JSONL here (default: stdout)\n"
"  --run-id ID         run id written on every line (default: time+pid)\n"
"  --keep              keep the stores (debugging)\n"
"  --list              print the engines, versions and settings, then exit\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return -1;
	*out = v;
	return 0;
}

/* "1,4,16" into OUT (at most BENCH_MAX_LIST numbers, each >= 1). */
static int parse_list(const char *s, uint64_t *out, size_t *n)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == BENCH_MAX_LIST || parse_u64(tok, &out[*n]) || !out[*n])
			return -1;
		(*n)++;
	}
	return *n ? 0 : -1;
}

static int parse_engines(const char *s)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	cfg.nengines = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < BENCH_NENGINES && strcmp(bench_all[i]->name, tok); i++)
			;
		if (i == BENCH_NENGINES || cfg.nengines == BENCH_NENGINES) {
			fprintf(stderr, "bench-engine: unknown engine '%s'\n", tok);
			return -1;
		}
		cfg.engines[cfg.nengines++] = bench_all[i];
	}
	cfg.engines_given = 1;
	return cfg.nengines ? 0 : -1;
}

static int parse_workloads(const char *s)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	cfg.do_commit = cfg.do_read = cfg.do_scan = cfg.do_space = 0;
	cfg.do_recover = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "commit"))
			cfg.do_commit = 1;
		else if (!strcmp(tok, "read"))
			cfg.do_read = 1;
		else if (!strcmp(tok, "scan"))
			cfg.do_scan = 1;
		else if (!strcmp(tok, "space"))
			cfg.do_space = 1;
		else if (!strcmp(tok, "recover"))
			cfg.do_recover = 1;
		else {
			fprintf(stderr, "bench-engine: unknown workload '%s'\n", tok);
			return -1;
		}
	}
	return 0;
}

enum {
	OPT_ENGINE = 256, OPT_WORKLOAD, OPT_THREADS, OPT_VSIZES, OPT_KEYS,
	OPT_RTHREADS, OPT_RKEYS, OPT_SCANLEN, OPT_OVERWRITES, OPT_SPACE_SYNCED,
	OPT_SECONDS, OPT_OPS, OPT_ROUNDS, OPT_QUICK, OPT_DIR, OPT_OUT, OPT_RUNID,
	OPT_KEEP, OPT_LIST, OPT_SPACE_CAP,
};

static const struct option bench_options[] = {
	{ "engine", required_argument, NULL, OPT_ENGINE },
	{ "workload", required_argument, NULL, OPT_WORKLOAD },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "value-sizes", required_argument, NULL, OPT_VSIZES },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "read-threads", required_argument, NULL, OPT_RTHREADS },
	{ "read-keys", required_argument, NULL, OPT_RKEYS },
	{ "scan-length", required_argument, NULL, OPT_SCANLEN },
	{ "overwrites", required_argument, NULL, OPT_OVERWRITES },
	{ "space-synced", no_argument, NULL, OPT_SPACE_SYNCED },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "ops", required_argument, NULL, OPT_OPS },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "run-id", required_argument, NULL, OPT_RUNID },
	{ "keep", no_argument, NULL, OPT_KEEP },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "space-cap-mib", required_argument, NULL, OPT_SPACE_CAP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void cfg_defaults(void)
{
	static const unsigned threads[] = { 1, 4, 16, 64 };
	time_t t = time(NULL);
	struct tm tm;

	for (size_t i = 0; i < BENCH_NENGINES; i++)
		cfg.engines[i] = bench_all[i];
	cfg.nengines = BENCH_NENGINES;
	cfg.do_commit = cfg.do_read = cfg.do_scan = cfg.do_space = 1;
	cfg.do_recover = 1;
	memcpy(cfg.threads, threads, sizeof(threads));
	cfg.nthreads = 4;
	cfg.vsizes[0] = 16;
	cfg.vsizes[1] = 4096;
	cfg.nvsizes = 2;
	cfg.rthreads[0] = 1;
	cfg.rthreads[1] = 2;
	cfg.nrthreads = 2;
	cfg.keys = 10000;
	cfg.read_keys = 1000000;
	cfg.scan_len = 100;
	cfg.overwrites = 1000000;
	cfg.space_cap = (uint64_t)2048 << 20;
	cfg.seconds = 3;
	cfg.rounds = 3;
	cfg.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	gmtime_r(&t, &tm);
	strftime(cfg.run_id, sizeof(cfg.run_id), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(cfg.run_id + strlen(cfg.run_id), sizeof(cfg.run_id) - strlen(cfg.run_id),
	         "-%ld", (long)getpid());
}

/* Copies a parsed list of numbers into an unsigned or size_t array. */
#define LIST_INTO(arr, cnt, src, n)                                   \
	do {                                                          \
		for (size_t i_ = 0; i_ < (n); i_++)                   \
			(arr)[i_] = (__typeof__((arr)[0]))(src)[i_];  \
		(cnt) = (n);                                          \
	} while (0)

static int parse_args(int argc, char **argv)
{
	uint64_t list[BENCH_MAX_LIST], v;
	size_t n;
	int c;

	while ((c = getopt_long(argc, argv, "h", bench_options, NULL)) != -1) {
		const char *a = optarg;

		switch (c) {
		case OPT_ENGINE:
			if (parse_engines(a))
				return -1;
			break;
		case OPT_WORKLOAD:
			if (parse_workloads(a))
				return -1;
			break;
		case OPT_THREADS:
		case OPT_VSIZES:
		case OPT_RTHREADS:
			if (parse_list(a, list, &n))
				goto bad;
			if (c == OPT_THREADS)
				LIST_INTO(cfg.threads, cfg.nthreads, list, n);
			else if (c == OPT_VSIZES)
				LIST_INTO(cfg.vsizes, cfg.nvsizes, list, n);
			else
				LIST_INTO(cfg.rthreads, cfg.nrthreads, list, n);
			break;
		case OPT_KEYS:
		case OPT_RKEYS:
		case OPT_SCANLEN:
		case OPT_OVERWRITES:
		case OPT_OPS:
		case OPT_ROUNDS:
		case OPT_SPACE_CAP:
			if (parse_u64(a, &v) || !v || v > 100000000ull)
				goto bad;
			if (c == OPT_KEYS)
				cfg.keys = v;
			else if (c == OPT_RKEYS)
				cfg.read_keys = v;
			else if (c == OPT_SCANLEN)
				cfg.scan_len = (unsigned)v;
			else if (c == OPT_OVERWRITES)
				cfg.overwrites = v;
			else if (c == OPT_OPS)
				cfg.ops = v;
			else if (c == OPT_SPACE_CAP)
				cfg.space_cap = v << 20;
			else
				cfg.rounds = (unsigned)v;
			break;
		case OPT_SECONDS:
			cfg.seconds = strtod(a, NULL);
			if (!(cfg.seconds > 0 && cfg.seconds < 3600))
				goto bad;
			break;
		case OPT_QUICK:
			cfg.seconds = 1;
			cfg.read_keys = 200000;
			cfg.overwrites = 100000;
			break;
		case OPT_SPACE_SYNCED: cfg.space_synced = 1; break;
		case OPT_DIR: cfg.dir = a; break;
		case OPT_OUT: cfg.out = a; break;
		case OPT_RUNID: snprintf(cfg.run_id, sizeof(cfg.run_id), "%s", a); break;
		case OPT_KEEP: cfg.keep = 1; break;
		case OPT_LIST:
			for (size_t i = 0; i < BENCH_NENGINES; i++)
				printf("%s\t%s\t%s\n", bench_all[i]->name,
				       bench_all[i]->version(), bench_all[i]->settings);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		continue;
bad:
		fprintf(stderr, "bench-engine: bad value '%s' for --%s\n", a,
		        bench_options[c - OPT_ENGINE].name);
		return -1;
	}
	if (optind < argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;

	cfg_defaults();
	if (parse_args(argc, argv))
		return 2;
	out_fp = stdout;
	if (cfg.out && !(out_fp = fopen(cfg.out, "a"))) {
		fprintf(stderr, "bench-engine: %s: %s\n", cfg.out, strerror(errno));
		return 1;
	}
	snprintf(run_root, sizeof(run_root), "%s/keel-bench-XXXXXX", cfg.dir);
	if (!mkdtemp(run_root)) {
		fprintf(stderr, "bench-engine: mkdtemp in %s: %s\n", cfg.dir,
		        strerror(errno));
		return 1;
	}
	machine_probe(run_root);
	fprintf(stderr, "bench-engine: run %s in %s (%s on %s), %.3g s x %u rounds\n",
	        cfg.run_id, run_root, machine.fs, machine.device, cfg.seconds,
	        cfg.rounds);
	for (unsigned r = 1; r <= cfg.rounds && !rc; r++)
		rc = run_round(r);
	for (size_t i = 0; !rc && cfg.do_space && i < cfg.nengines; i++)
		if (cfg.engines[i]->space && cfg.engines[i]->load)
			rc = space_one(cfg.engines[i]);
	if (!cfg.keep)
		remove_tree(run_root);
	if (out_fp != stdout)
		fclose(out_fp);
	return rc ? 1 : 0;
}
