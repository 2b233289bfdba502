/*
 * probe_run.h -- the fsync-probe workload.
 *
 * One run writes cfg->write_size bytes at a time to cfg->path and makes each
 * write durable the way cfg->mode says, for cfg->duration_s seconds:
 *
 *   layout append     the file starts empty and grows; when it would pass
 *                     cfg->file_size it is truncated back to 0 (a "wrap")
 *   layout prealloc   fallocate(cfg->file_size) first (zero-fill where the
 *                     filesystem has no fallocate), so the writes land in
 *                     allocated but unwritten extents; cycled
 *   layout overwrite  the region is written and synced first, then
 *                     overwritten in place; cycled.  With file_size equal to
 *                     write_size the same block is rewritten every time.
 *
 * Schedule: closed loop (the next write starts when the last one returns), or
 * fixed rate (cfg->rate writes a second, each with an intended start time;
 * its latency is measured from that intended start, so a stall that delays
 * the following writes shows in their latency too instead of being hidden).
 *
 * Latency is the time of the whole operation: pwrite plus its sync.
 *
 * Every second it records a probe_second (ops, bytes, p50/p99/p99.9/max,
 * stalls, diskstats delta) and writes it as a JSONL line; every write over
 * 100 ms is also recorded as a probe_stall and written as a line at once.
 * The JSONL line formats are listed in docs/fsync-probe.md.
 *
 * Calling sequence:
 *   struct probe_run_result *r = probe_run_result_new();
 *   rc = probe_run(&cfg, &devinfo, jsonl_or_NULL, r);
 *   ... r->total, r->seconds, r->stalls ...
 *   probe_run_result_free(r);
 *
 * probe_run returns PROBE_OK, PROBE_EINPUT (the file exists without
 * cfg->force, is not a regular file, cannot be created, the size does not
 * suit O_DIRECT, or the filesystem is full while preparing the layout),
 * PROBE_EUNSUPP (the filesystem refuses O_DIRECT), or PROBE_EIO (preparing
 * the layout, or a write or sync failed: the run stops at once, fail-stop;
 * what was measured so far stays in *res and res->error says what failed).
 * A run stopped by probe_run_request_stop() returns PROBE_OK with
 * res->stopped set.
 *
 * The small helpers below are shared with the power-cut writer.
 */
#ifndef KEEL_PROBE_RUN_H
#define KEEL_PROBE_RUN_H

#include <stdio.h>
#include "probe.h"
#include "probe_device.h"
#include "probe_hist.h"

struct probe_run_result {
	struct probe_hist total;          /* every write's latency */
	uint64_t ops;                     /* writes completed */
	uint64_t bytes;                   /* bytes written */
	double elapsed_s;                 /* from the first write to the last return */
	uint64_t wraps;                   /* append: truncations back to 0 */
	uint64_t late_ops;                /* fixed rate: writes started > 1 ms late */
	const char *prealloc_method;      /* "fallocate", "zero-fill" or NULL */
	struct probe_dev_stats disk;      /* diskstats delta over the whole run */
	struct probe_second *seconds;     /* one per second, in order */
	size_t nseconds, seconds_cap;
	struct probe_stall *stalls;       /* the first PROBE_RUN_MAX_STALLS stalls */
	size_t nstalls;
	uint64_t stall_count;             /* all stalls over 100 ms */
	uint64_t long_stall_count;        /* all stalls over 1 s */
	char error[256];                  /* what failed, "" if nothing */
	int stopped;                      /* ended early by probe_run_request_stop */
};

#define PROBE_RUN_MAX_STALLS 4096

/* Allocate a zeroed result (NULL when out of memory); free it with
 * probe_run_result_free (NULL is fine). */
struct probe_run_result *probe_run_result_new(void);
void probe_run_result_free(struct probe_run_result *res);

/* Run the workload; see above.  devinfo gives the disk for diskstats and the
 * logical block size for O_DIRECT (both may be absent). */
int probe_run(const struct probe_config *cfg,
	      const struct probe_dev_info *devinfo, FILE *jsonl,
	      struct probe_run_result *res);

/* Names of modes and layouts, and their parsers (0 on success, -1 for an
 * unknown name). */
const char *probe_run_mode_name(enum probe_mode mode);
const char *probe_run_layout_name(enum probe_layout layout);
int probe_run_mode_parse(const char *s, enum probe_mode *out);
int probe_run_layout_parse(const char *s, enum probe_layout *out);

/* 1 when a returned write in this mode is meant to survive a power cut. */
int probe_run_mode_durable(enum probe_mode mode);

/* "4096", "4k", "4KiB", "1M", "1MiB", "2G" -> bytes; -1 when malformed. */
int probe_run_parse_size(const char *s, uint64_t *out);

/* A duration by the rule every keel tool follows (tools/duration.h: "10" is
 * 10 s, "500ms", "5m", "2h") -> seconds; -1 when malformed, zero or over a
 * month. */
int probe_run_parse_duration(const char *s, double *out);

/* Create path for writing: O_EXCL unless force; refuses what is not a
 * regular file.  *created says whether it did not exist before.  Returns a
 * descriptor, or PROBE_EINPUT with a message. */
int probe_run_create(const char *path, int force, int *created);

/* Open path for the measured writes with mode's flags.  Returns a descriptor,
 * PROBE_EUNSUPP (O_DIRECT refused) or PROBE_EINPUT, with a message. */
int probe_run_open(const char *path, enum probe_mode mode);

/* Write all of buf at off (looping over short writes); 0 or -errno. */
int probe_run_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* Make [off, off+len) durable the way mode says; 0 or -errno. */
int probe_run_sync(int fd, enum probe_mode mode, uint64_t off, size_t len);

/* Ask a run in progress to stop after the write in flight, as if its
 * duration were over (the summary and plot are still produced).  Safe to
 * call from a signal handler. */
void probe_run_request_stop(void);

/* Monotonic clock in ns. */
uint64_t probe_run_now_ns(void);

#endif
