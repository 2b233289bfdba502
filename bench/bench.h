/*
 * bench.h -- the engine benchmark's seam: one table of functions per engine
 * (keel and its peers), driven by bench/engine_bench.c.
 *
 * WHAT IT IS FOR
 *   bench-engine measures durable commits, point reads, range scans and file
 *   growth for keel and for the engines people use today, in one run on one
 *   disk, so that every figure can be given as a ratio against a peer measured
 *   minutes apart under the same load (the machines are shared and noisy).
 *
 * CALLING SEQUENCE (what the driver does for one measurement)
 *     e->open(dir, &opts, &db);            // fresh, empty directory
 *     e->load(db, nkeys, vsize);           // fill keys [0, nkeys), durable
 *     per thread: e->thread_open(db, role, &ctx);
 *                 loop: e->put(ctx, ...) or e->get(ctx, ...) or e->scan(ctx, ...)
 *                 e->thread_close(ctx);
 *     e->close(db);
 *   Every function returns 0 on success and -1 on failure, after printing one
 *   line naming the engine and the cause on stderr.  A failure ends the run:
 *   a figure measured around an error would be meaningless.
 *
 * WHAT "DURABLE" MEANS HERE
 *   put() returns only once the change would survive a power cut, as far as
 *   each engine promises it in the configuration named in 'settings'.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>

/* Keys are the index written as fixed-width decimal, so that the byte order
 * every engine uses is also the numeric order (scans cover known ranges). */
#define BENCH_KEY_LEN 8

/* What a thread context is opened for. */
typedef enum bench_role {
	BENCH_WRITER = 0,        /* put(): one durable commit per call           */
	BENCH_READ_SNAPSHOT = 1, /* get()/scan() from one long-lived read state  */
	BENCH_READ_FRESH = 2,    /* get() sees the newest state on every call    */
} bench_role;

/* What the workload tells the engine when it opens the store. */
typedef struct bench_open_opts {
	uint64_t keys;     /* keys the workload will hold (sizing hint)        */
	size_t value_size; /* bytes per value (sizing hint)                    */
	int unsynced;      /* space workload only: skip syncs; the bytes laid
	                      down are the same, only their durability is not  */
	int nocompact;     /* space workload only: no automatic compaction, so
	                      the bytes appended per put can be read off the
	                      end offset                                        */
} bench_open_opts;

/* File-space figures an engine can give about itself (keel only so far). */
typedef struct bench_space {
	uint64_t file_size;   /* bytes in the data file, preallocation included */
	uint64_t end_offset;  /* bytes in use                                   */
	uint64_t live_bytes;  /* bytes reachable from the newest state          */
	uint64_t keys;        /* keys held                                      */
	uint64_t syncs;       /* syncs issued so far by this handle             */
	uint64_t commits;     /* commits so far by this handle                  */
	uint64_t compactions; /* compactions so far by this handle              */
	uint64_t space_bound; /* the size the engine promises to stay within
	                         (keel: keel_stats.space_bound); 0: none        */
} bench_space;

/* What one reopen after a kill at the engine's worst point cost (recover). */
typedef struct bench_recover {
	uint64_t puts;         /* commits since the load, before the kill       */
	uint64_t pending;      /* keel: commits the reopen had to replay        */
	uint64_t pending_bytes;/* keel: bytes of them                           */
	uint64_t bytes_read;   /* bytes recovery read at the cold open          */
	double cold_ms;        /* the open, the file's pages evicted first      */
	double warm_ms;        /* a second open from the same state, cached     */
} bench_recover;

typedef struct bench_engine {
	const char *name;     /* as given to --engine and written to JSONL    */
	const char *settings; /* the configuration measured, in a few words   */
	const char *(*version)(void);
	int (*open)(const char *dir, const bench_open_opts *o, void **db);
	void (*close)(void *db);
	/* Fill keys [0, n) with vsize-byte values as fast as the engine allows
	 * (batched), durable once at the end.  NULL: the engine holds no keys. */
	int (*load)(void *db, uint64_t n, size_t vsize);
	int (*thread_open)(void *db, bench_role role, void **ctx);
	void (*thread_close)(void *ctx);
	/* One durable commit of one key (BENCH_WRITER contexts). */
	int (*put)(void *ctx, const void *key, size_t klen, const void *val,
	           size_t vlen);
	/* Point read; *vlen gets the value's length, and the value's bytes are
	 * touched (summed into *touch) so no engine gets away without reading
	 * them.  A missing key is a failure.  NULL: reads not measured. */
	int (*get)(void *ctx, const void *key, size_t klen, size_t *vlen,
	           uint64_t *touch);
	/* Ordered scan of up to N entries from the first key >= START (a
	 * snapshot reader); *got entries were read, their value bytes summed
	 * into *touch as for get().  NULL: scans not measured. */
	int (*scan)(void *ctx, const void *start, size_t slen, unsigned n,
	            unsigned *got, uint64_t *touch);
	/* Space figures; NULL when the engine cannot give them. */
	int (*space)(void *db, bench_space *out);
	/* In DIR (fresh, empty): fill KEYS keys of VSIZE bytes, then commit
	 * overwrites in a child process up to the point where a reopen has the
	 * most to replay (keel: the pending span just under the checkpoint
	 * bound), SIGKILL it there, and time the reopens.  NULL: not measured. */
	int (*recover)(const char *dir, uint64_t keys, size_t vsize,
	               bench_recover *out);
} bench_engine;

/* The engines (bench_<name>.c). */
extern const bench_engine bench_engine_keel;
extern const bench_engine bench_engine_lmdb;
extern const bench_engine bench_engine_sqlite;
extern const bench_engine bench_engine_rocksdb;
extern const bench_engine bench_engine_leveldb;
extern const bench_engine bench_engine_plain;
extern const bench_engine bench_engine_plain_ring;
extern const bench_engine bench_engine_plain_falloc;

/* ---- helpers shared by the engines (engine_bench.c) --------------------- */

/* Writes key I into BUF (BENCH_KEY_LEN bytes, no NUL needed). */
void bench_key(char buf[BENCH_KEY_LEN + 1], uint64_t i);

/* Fills BUF with LEN bytes derived from SEED: incompressible, so engines that
 * compress (RocksDB, LevelDB) do not write less than the others. */
void bench_value(void *buf, size_t len, uint64_t seed);

/* Sums LEN bytes at P: how every engine "reads" a value it returns, so a
 * zero-copy engine cannot win by never looking at the bytes. */
static inline uint64_t bench_touch(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return sum;
}

/* Prints "bench-engine: NAME: WHAT" on stderr and returns -1. */
int bench_fail(const char *engine, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* BENCH_H */
