/*
 * probe.h -- the types every fsync-probe module shares.
 *
 * fsync-probe studies how one storage device behaves under sustained synced
 * writes.  Its modules:
 *
 *   probe_hist     log-linear latency histogram (p50/p99/p99.9/max)
 *   probe_json     JSON string escaping for the JSONL output
 *   probe_device   device identity (/sys/block), mount, kernel, diskstats
 *   probe_run      the workload: modes, layouts, schedules, per-second records
 *   probe_svg      the SVG plot of latency percentiles and throughput
 *   probe_powercut the diskchecker-style power-cut check over TCP
 *   fsync_probe.c  the command line and the plain-words summary
 *
 * Error convention, shared by every module: functions return PROBE_OK (0) or
 * a negative probe_status, and print one line naming the problem to stderr
 * before they return it.  fsync_probe.c maps them to exit codes:
 *
 *   PROBE_OK        exit 0
 *   PROBE_ELOST     exit 1  (verify found acknowledged blocks missing/damaged)
 *   PROBE_EINPUT    exit 2  (bad input: option, size, path, unwritable file)
 *   PROBE_EIO       exit 3  (a write, sync, read or socket call failed)
 *   PROBE_EUNSUPP   exit 3  (the filesystem cannot do what was asked,
 *                            e.g. O_DIRECT on tmpfs)
 */
#ifndef KEEL_PROBE_H
#define KEEL_PROBE_H

#include <stddef.h>
#include <stdint.h>

enum probe_status {
	PROBE_OK = 0,
	PROBE_ELOST = -1,
	PROBE_EINPUT = -2,
	PROBE_EIO = -3,
	PROBE_EUNSUPP = -4,
};

/* How each write is made durable (or not). */
enum probe_mode {
	PROBE_MODE_FSYNC,     /* pwrite, then fsync */
	PROBE_MODE_FDATASYNC, /* pwrite, then fdatasync */
	PROBE_MODE_DSYNC,     /* pwrite on an O_DSYNC descriptor */
	PROBE_MODE_DIRECT,    /* pwrite on O_DIRECT, then fdatasync */
	PROBE_MODE_SFR,       /* sync_file_range: NOT durable (no flush, no metadata) */
	PROBE_MODE_NONE,      /* no sync at all: NOT durable, a positive control */
	PROBE_MODE_COUNT
};

/* Where the writes land. */
enum probe_layout {
	PROBE_LAYOUT_APPEND,    /* file grows; truncated back to 0 when full */
	PROBE_LAYOUT_PREALLOC,  /* fallocate'd (unwritten) region, cycled */
	PROBE_LAYOUT_OVERWRITE, /* region written and synced first, then overwritten */
	PROBE_LAYOUT_COUNT
};

/* Limits of the command line, checked before any file is touched. */
#define PROBE_SIZE_MIN 512u
#define PROBE_SIZE_MAX (1024u * 1024u)
#define PROBE_STALL_NS 100000000ull      /* 100 ms: a stall */
#define PROBE_LONG_STALL_NS 1000000000ull /* 1 s: a long stall */

/* One run of the workload. */
struct probe_config {
	const char *path;          /* the test file */
	enum probe_mode mode;      /* durability mode */
	enum probe_layout layout;  /* file layout */
	size_t write_size;         /* bytes per write, PROBE_SIZE_MIN..MAX */
	uint64_t file_size;        /* bytes the writes cycle through */
	double duration_s;         /* how long to write */
	double rate;               /* ops/s for the fixed-rate schedule; 0 = closed loop */
	int random;                /* 1: random aligned offsets (not for append) */
	int force;                 /* 1: an existing file may be overwritten */
	int keep;                  /* 1: leave the test file behind */
	int quiet;                 /* 1: no progress lines on stderr */
};

/* Block-device counters from /proc/diskstats (the whole disk). */
struct probe_dev_stats {
	int valid;                 /* 0 when the device has no diskstats line */
	uint64_t writes;           /* writes completed */
	uint64_t sectors_written;  /* 512-byte sectors written */
	uint64_t write_ms;         /* ms spent writing */
	uint64_t in_flight;        /* I/Os in progress (a level, not a counter) */
	uint64_t io_ms;            /* ms the device was busy */
	uint64_t flushes;          /* flush requests completed (kernel >= 5.5) */
	uint64_t flush_ms;         /* ms spent flushing */
};

/* What one second of the run looked like. */
struct probe_second {
	double t_s;                /* start of the second, from the run's start */
	double len_s;              /* its length (the last one may be short) */
	uint64_t ops;              /* writes completed in it */
	uint64_t bytes;            /* bytes written by them */
	uint64_t p50_ns, p99_ns, p999_ns, max_ns; /* latency of those writes */
	uint32_t stalls;           /* writes over PROBE_STALL_NS */
	uint32_t long_stalls;      /* writes over PROBE_LONG_STALL_NS */
	struct probe_dev_stats disk; /* diskstats delta over the second */
};

/* One write that took longer than PROBE_STALL_NS. */
struct probe_stall {
	double t_s;                /* when it started, from the run's start */
	uint64_t latency_ns;       /* how long it took */
	uint64_t offset;           /* where it wrote */
	struct probe_dev_stats disk; /* diskstats from the second's start to its end */
};

#endif
