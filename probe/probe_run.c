/* probe_run.c -- the fsync-probe workload; see probe_run.h. */
#include "probe_run.h"
#include "duration.h"
#include "probe_json.h"

#include <errno.h>
#include <fcntl.h>
#include <fiu.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Set from a signal handler: end the run after the current write. */
static volatile sig_atomic_t stop_requested;

void probe_run_request_stop(void)
{
	stop_requested = 1;
}

static const char *const mode_names[PROBE_MODE_COUNT] = {
	"fsync", "fdatasync", "dsync", "direct", "sfr", "none",
};
static const char *const layout_names[PROBE_LAYOUT_COUNT] = {
	"append", "prealloc", "overwrite",
};

const char *probe_run_mode_name(enum probe_mode mode)
{
	return (unsigned)mode < PROBE_MODE_COUNT ? mode_names[mode] : "?";
}

const char *probe_run_layout_name(enum probe_layout layout)
{
	return (unsigned)layout < PROBE_LAYOUT_COUNT ? layout_names[layout] : "?";
}

int probe_run_mode_parse(const char *s, enum probe_mode *out)
{
	int i;

	if (strcmp(s, "sync_file_range") == 0)
		s = "sfr";
	for (i = 0; i < PROBE_MODE_COUNT; i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum probe_mode)i;
			return 0;
		}
	return -1;
}

int probe_run_layout_parse(const char *s, enum probe_layout *out)
{
	int i;

	for (i = 0; i < PROBE_LAYOUT_COUNT; i++)
		if (strcmp(s, layout_names[i]) == 0) {
			*out = (enum probe_layout)i;
			return 0;
		}
	return -1;
}

int probe_run_mode_durable(enum probe_mode mode)
{
	return mode != PROBE_MODE_SFR && mode != PROBE_MODE_NONE;
}

int probe_run_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mult = 1ull << 10; end++; break;
	case 'm': case 'M': mult = 1ull << 20; end++; break;
	case 'g': case 'G': mult = 1ull << 30; end++; break;
	case 't': case 'T': mult = 1ull << 40; end++; break;
	default: return -1;
	}
	if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0 ||
			 strcmp(end, "ib") == 0 || strcmp(end, "b") == 0))
		end += strlen(end);
	if (*end != '\0' || v * (double)mult > 9.0e18)
		return -1;
	*out = (uint64_t)(v * (double)mult);
	return 0;
}

int probe_run_parse_duration(const char *s, double *out)
{
	uint64_t ns;

	if (duration_parse(s, &ns) < 0)
		return -1;
	if (ns > 31ull * 86400 * 1000000000ull) /* a month is surely a typo */
		return -1;
	*out = (double)ns / 1e9;
	return 0;
}

uint64_t probe_run_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int probe_run_create(const char *path, int force, int *created)
{
	struct stat st;
	int fd;

	*created = 0;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "fsync-probe: %s is not a regular file\n", path);
			return PROBE_EINPUT;
		}
		if (!force) {
			fprintf(stderr, "fsync-probe: %s exists; pass --force to "
				"overwrite it\n", path);
			return PROBE_EINPUT;
		}
	} else {
		*created = 1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "fsync-probe: cannot write %s: %s\n", path,
			strerror(errno));
		*created = 0;
		return PROBE_EINPUT;
	}
	return fd;
}

int probe_run_open(const char *path, enum probe_mode mode)
{
	int flags = O_RDWR | O_CLOEXEC, fd;

	if (mode == PROBE_MODE_DSYNC)
		flags |= O_DSYNC;
	if (mode == PROBE_MODE_DIRECT)
		flags |= O_DIRECT;
	fd = open(path, flags);
	/* lets the tests act out a filesystem that refuses O_DIRECT, as tmpfs
	 * did before Linux 6.6: fiu-run -c 'enable name=fsync-probe/open/direct' */
	if (mode == PROBE_MODE_DIRECT)
		fiu_do_on("fsync-probe/open/direct", {
			if (fd >= 0)
				close(fd);
			fd = -1;
			errno = EINVAL;
		});
	if (fd >= 0)
		return fd;
	if (mode == PROBE_MODE_DIRECT && errno == EINVAL) {
		fprintf(stderr, "fsync-probe: O_DIRECT is not supported by the "
			"filesystem holding %s (open: %s); mode direct cannot "
			"run here\n", path, strerror(errno));
		return PROBE_EUNSUPP;
	}
	fprintf(stderr, "fsync-probe: cannot open %s: %s\n", path, strerror(errno));
	return PROBE_EINPUT;
}

int probe_run_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int probe_run_sync(int fd, enum probe_mode mode, uint64_t off, size_t len)
{
	int rc = 0;

	switch (mode) {
	case PROBE_MODE_FSYNC:
		rc = fsync(fd);
		break;
	case PROBE_MODE_FDATASYNC:
	case PROBE_MODE_DIRECT:
		rc = fdatasync(fd);
		break;
	case PROBE_MODE_SFR:
		/* writes the pages and waits for them, but sends no cache
		 * flush and commits no metadata: not durable */
		rc = sync_file_range(fd, (off_t)off, (off_t)len,
				     SYNC_FILE_RANGE_WAIT_BEFORE |
				     SYNC_FILE_RANGE_WRITE |
				     SYNC_FILE_RANGE_WAIT_AFTER);
		break;
	case PROBE_MODE_DSYNC: /* the write itself was synchronous */
	case PROBE_MODE_NONE:
	case PROBE_MODE_COUNT:
		break;
	}
	return rc < 0 ? -errno : 0;
}

struct probe_run_result *probe_run_result_new(void)
{
	struct probe_run_result *r = calloc(1, sizeof(*r));

	if (r)
		probe_hist_reset(&r->total);
	return r;
}

void probe_run_result_free(struct probe_run_result *res)
{
	if (!res)
		return;
	free(res->seconds);
	free(res->stalls);
	free(res);
}

/* ---- the run ------------------------------------------------------------ */

/* Everything the loop carries from one write to the next. */
struct run_state {
	const struct probe_config *cfg;
	const char *disk;            /* diskstats name, NULL if none */
	FILE *jsonl;                 /* where lines go, or NULL */
	struct probe_run_result *res;
	struct probe_hist sec;       /* the current second's latencies */
	uint64_t sec_ops, sec_bytes; /* the current second's work */
	uint32_t sec_stalls, sec_long;
	uint64_t t0;                 /* run start (ns, monotonic) */
	uint64_t next_boundary;      /* end of the current second (ns) */
	struct probe_dev_stats snap; /* diskstats at the current second's start */
	struct probe_dev_stats first;/* diskstats at the run's start */
	uint64_t next_progress;      /* when to print the next progress line */
};

/* Fill the file region the layout asks for, through a plain descriptor,
 * and sync it so the measured writes start from a settled file. */
static int setup_layout(int fd, const struct probe_config *cfg,
			struct probe_run_result *res)
{
	uint64_t off;
	char *zero;
	int rc = 0;

	if (ftruncate(fd, 0) < 0)
		goto out_errno;
	if (cfg->layout == PROBE_LAYOUT_APPEND)
		goto out_sync;
	if (cfg->layout == PROBE_LAYOUT_PREALLOC) {
		if (fallocate(fd, 0, 0, (off_t)cfg->file_size) == 0) {
			res->prealloc_method = "fallocate";
			goto out_sync;
		}
		if (errno != EOPNOTSUPP)
			goto out_errno;
		res->prealloc_method = "zero-fill";
	}
	/* overwrite, or prealloc without fallocate: write the region */
	zero = calloc(1, PROBE_SIZE_MAX);
	if (!zero) {
		errno = ENOMEM;
		goto out_errno;
	}
	memset(zero, cfg->layout == PROBE_LAYOUT_OVERWRITE ? 0x5a : 0, PROBE_SIZE_MAX);
	for (off = 0; off < cfg->file_size && rc == 0; off += PROBE_SIZE_MAX) {
		uint64_t n = cfg->file_size - off;

		rc = probe_run_pwrite_all(fd, zero, n < PROBE_SIZE_MAX ? n : PROBE_SIZE_MAX,
					  off);
	}
	free(zero);
	if (rc < 0) {
		errno = -rc;
		goto out_errno;
	}
out_sync:
	if (fsync(fd) < 0)
		goto out_errno;
	return PROBE_OK;
out_errno:
	snprintf(res->error, sizeof(res->error), "preparing the %s layout: %s",
		 probe_run_layout_name(cfg->layout), strerror(errno));
	fprintf(stderr, "fsync-probe: %s\n", res->error);
	return errno == ENOSPC ? PROBE_EINPUT : PROBE_EIO;
}

static void write_second_json(FILE *f, const struct probe_second *s)
{
	fputs("{\"type\":\"second\",\"t\":", f);
	probe_json_num(f, s->t_s);
	fputs(",\"len_s\":", f);
	probe_json_num(f, s->len_s);
	fprintf(f, ",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"p50_us\":", s->ops,
		s->bytes);
	probe_json_num(f, (double)s->p50_ns / 1e3);
	fputs(",\"p99_us\":", f);
	probe_json_num(f, (double)s->p99_ns / 1e3);
	fputs(",\"p999_us\":", f);
	probe_json_num(f, (double)s->p999_ns / 1e3);
	fputs(",\"max_us\":", f);
	probe_json_num(f, (double)s->max_ns / 1e3);
	fprintf(f, ",\"stalls_100ms\":%u,\"stalls_1s\":%u,\"disk\":", s->stalls,
		s->long_stalls);
	probe_dev_stats_json(f, &s->disk);
	fputs("}\n", f);
}

/* Close the current second at time end (ns) and start the next. */
static int close_second(struct run_state *st, uint64_t end)
{
	struct probe_run_result *res = st->res;
	struct probe_second *s;
	struct probe_dev_stats now;

	if (res->nseconds == res->seconds_cap) {
		size_t cap = res->seconds_cap ? res->seconds_cap * 2 : 64;
		void *p = realloc(res->seconds, cap * sizeof(*res->seconds));

		if (!p)
			return PROBE_EIO;
		res->seconds = p;
		res->seconds_cap = cap;
	}
	s = &res->seconds[res->nseconds++];
	memset(s, 0, sizeof(*s));
	s->t_s = (double)(st->next_boundary - 1000000000ull - st->t0) / 1e9;
	s->len_s = (double)(end - (st->next_boundary - 1000000000ull)) / 1e9;
	s->ops = st->sec_ops;
	s->bytes = st->sec_bytes;
	s->p50_ns = probe_hist_percentile(&st->sec, 50);
	s->p99_ns = probe_hist_percentile(&st->sec, 99);
	s->p999_ns = probe_hist_percentile(&st->sec, 99.9);
	s->max_ns = st->sec.max;
	s->stalls = st->sec_stalls;
	s->long_stalls = st->sec_long;
	if (st->disk && probe_dev_stats_read(st->disk, &now) == PROBE_OK) {
		probe_dev_stats_delta(&st->snap, &now, &s->disk);
		st->snap = now;
	}
	if (st->jsonl) {
		/* flushed every second: an interrupted run keeps its record */
		write_second_json(st->jsonl, s);
		fflush(st->jsonl);
	}
	probe_hist_merge(&res->total, &st->sec);
	probe_hist_reset(&st->sec);
	st->sec_ops = st->sec_bytes = 0;
	st->sec_stalls = st->sec_long = 0;
	st->next_boundary += 1000000000ull;
	return PROBE_OK;
}

static void record_stall(struct run_state *st, uint64_t start, uint64_t lat,
			 uint64_t off)
{
	struct probe_run_result *res = st->res;
	struct probe_stall sl;
	struct probe_dev_stats now;

	memset(&sl, 0, sizeof(sl));
	sl.t_s = (double)(start - st->t0) / 1e9;
	sl.latency_ns = lat;
	sl.offset = off;
	if (st->disk && probe_dev_stats_read(st->disk, &now) == PROBE_OK)
		probe_dev_stats_delta(&st->snap, &now, &sl.disk);
	res->stall_count++;
	st->sec_stalls++;
	if (lat >= PROBE_LONG_STALL_NS) {
		res->long_stall_count++;
		st->sec_long++;
	}
	if (res->nstalls < PROBE_RUN_MAX_STALLS) {
		if (!res->stalls)
			res->stalls = calloc(PROBE_RUN_MAX_STALLS, sizeof(sl));
		if (res->stalls)
			res->stalls[res->nstalls++] = sl;
	}
	if (st->jsonl) {
		fputs("{\"type\":\"stall\",\"t\":", st->jsonl);
		probe_json_num(st->jsonl, sl.t_s);
		fputs(",\"latency_ms\":", st->jsonl);
		probe_json_num(st->jsonl, (double)lat / 1e6);
		fprintf(st->jsonl, ",\"offset\":%" PRIu64 ",\"over_1s\":%s,\"disk\":",
			off, lat >= PROBE_LONG_STALL_NS ? "true" : "false");
		probe_dev_stats_json(st->jsonl, &sl.disk);
		fputs("}\n", st->jsonl);
		fflush(st->jsonl);
	}
}

/* Offset of the next write. */
static uint64_t next_offset(const struct probe_config *cfg, uint64_t *cursor,
			    uint64_t *rng)
{
	uint64_t slots = cfg->file_size / cfg->write_size, off;

	if (cfg->random && cfg->layout != PROBE_LAYOUT_APPEND) {
		/* xorshift64: cheap, and the same sequence on every run */
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		return (*rng % slots) * cfg->write_size;
	}
	if (*cursor + cfg->write_size > slots * cfg->write_size)
		*cursor = 0;
	off = *cursor;
	*cursor += cfg->write_size;
	return off;
}

/* Make every 512-byte sector of buf unique to this write, so a device that
 * deduplicates or compresses cannot skip the work. */
static void stamp(char *buf, size_t len, uint64_t seq, uint64_t off)
{
	size_t i;

	for (i = 0; i + 16 <= len; i += 512) {
		memcpy(buf + i, &seq, 8);
		memcpy(buf + i + 8, &off, 8);
	}
}

static void progress(struct run_state *st, uint64_t now)
{
	const struct probe_run_result *r = st->res;
	const struct probe_second *s;

	if (st->cfg->quiet || now < st->next_progress || r->nseconds == 0)
		return;
	s = &r->seconds[r->nseconds - 1];
	fprintf(stderr, "fsync-probe: %5.0fs  %6" PRIu64 " ops/s  p50 %.0f us  "
		"p99 %.0f us  max %.0f us  stalls %" PRIu64 "\n",
		(double)(now - st->t0) / 1e9, s->ops, (double)s->p50_ns / 1e3,
		(double)s->p99_ns / 1e3, (double)s->max_ns / 1e3, r->stall_count);
	st->next_progress = now + 10000000000ull;
}

/* One write and its sync; 0 or -errno, with the latency in *lat. */
static int one_write(struct run_state *st, int fd, char *buf, uint64_t seq,
		     uint64_t *cursor, uint64_t *rng, uint64_t *start_io)
{
	const struct probe_config *cfg = st->cfg;
	uint64_t off;
	int rc;

	if (cfg->layout == PROBE_LAYOUT_APPEND &&
	    *cursor + cfg->write_size > cfg->file_size) {
		if (ftruncate(fd, 0) < 0)
			return -errno;
		*cursor = 0;
		st->res->wraps++;
	}
	off = next_offset(cfg, cursor, rng);
	stamp(buf, cfg->write_size, seq, off);
	*start_io = off;
	rc = probe_run_pwrite_all(fd, buf, cfg->write_size, off);
	if (rc == 0)
		rc = probe_run_sync(fd, cfg->mode, off, cfg->write_size);
	return rc;
}

/* The measuring loop: runs until the duration is over or a write fails. */
static int run_loop(struct run_state *st, int fd, char *buf)
{
	const struct probe_config *cfg = st->cfg;
	uint64_t end = st->t0 + (uint64_t)(cfg->duration_s * 1e9);
	uint64_t seq = 0, cursor = 0, rng = 0x9e3779b97f4a7c15ull;
	uint64_t start, now, lat, off = 0;
	int rc = 0;

	for (;;) {
		now = probe_run_now_ns();
		start = now;
		if (cfg->rate > 0) {
			/* the intended start: late writes are charged from here */
			start = st->t0 + (uint64_t)((double)seq * 1e9 / cfg->rate);
			if (start > now) {
				struct timespec ts = {
					.tv_sec = (time_t)(start / 1000000000ull),
					.tv_nsec = (long)(start % 1000000000ull),
				};
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
						       &ts, NULL) == EINTR &&
				       !stop_requested)
					;
			} else if (now - start > 1000000) {
				st->res->late_ops++;
			}
		}
		if (stop_requested)
			st->res->stopped = 1;
		if (start >= end || stop_requested)
			break;
		rc = one_write(st, fd, buf, seq, &cursor, &rng, &off);
		now = probe_run_now_ns();
		if (rc < 0)
			break;
		lat = now - start;
		seq++;
		if (lat >= PROBE_STALL_NS)
			record_stall(st, start, lat, off);
		/* a write belongs to the second in which it returned; seconds
		 * it spent stalled are closed empty, so the plot shows the gap */
		while (now >= st->next_boundary)
			if (close_second(st, st->next_boundary) < 0)
				return PROBE_EIO;
		probe_hist_record(&st->sec, lat);
		st->sec_ops++;
		st->sec_bytes += cfg->write_size;
		st->res->ops++;
		st->res->bytes += cfg->write_size;
		progress(st, now);
	}
	st->res->elapsed_s = (double)(now - st->t0) / 1e9;
	if (st->sec_ops > 0 || st->res->nseconds == 0)
		if (close_second(st, now < st->next_boundary ? now : st->next_boundary) < 0)
			return PROBE_EIO;
	if (rc < 0) {
		snprintf(st->res->error, sizeof(st->res->error),
			 "%s at offset %" PRIu64 " failed after %" PRIu64
			 " writes: %s", cfg->mode == PROBE_MODE_DSYNC ||
			 cfg->mode == PROBE_MODE_NONE ? "write" : "write or sync",
			 off, seq, strerror(-rc));
		return rc == -EINVAL && cfg->mode == PROBE_MODE_DIRECT ?
			PROBE_EUNSUPP : PROBE_EIO;
	}
	return PROBE_OK;
}

/* Checks that need the device: O_DIRECT wants whole logical blocks. */
static int check_direct(const struct probe_config *cfg,
			const struct probe_dev_info *info)
{
	unsigned lbs = info && info->logical_block ? info->logical_block : 512;

	if (cfg->mode != PROBE_MODE_DIRECT || cfg->write_size % lbs == 0)
		return PROBE_OK;
	fprintf(stderr, "fsync-probe: --size %zu is not a multiple of the "
		"device's logical block size %u, which O_DIRECT needs\n",
		cfg->write_size, lbs);
	return PROBE_EINPUT;
}

int probe_run(const struct probe_config *cfg,
	      const struct probe_dev_info *devinfo, FILE *jsonl,
	      struct probe_run_result *res)
{
	struct run_state st;
	int fd, created, rc;
	char *buf = NULL;

	if ((rc = check_direct(cfg, devinfo)) < 0)
		return rc;
	fd = probe_run_create(cfg->path, cfg->force, &created);
	if (fd < 0)
		return fd;
	rc = setup_layout(fd, cfg, res);
	close(fd);
	if (rc < 0)
		goto out_unlink;
	fd = probe_run_open(cfg->path, cfg->mode);
	if (fd < 0) {
		rc = fd;
		goto out_unlink;
	}
	/* 4096 suits O_DIRECT on every logical block size Linux knows */
	if (posix_memalign((void **)&buf, 4096, cfg->write_size) != 0) {
		rc = PROBE_EIO;
		goto out_close;
	}
	memset(buf, 0xa5, cfg->write_size);
	memset(&st, 0, sizeof(st));
	st.cfg = cfg;
	st.res = res;
	st.jsonl = jsonl;
	st.disk = devinfo && devinfo->is_block ? devinfo->disk : NULL;
	probe_hist_reset(&st.sec);
	if (st.disk)
		probe_dev_stats_read(st.disk, &st.snap);
	st.first = st.snap;
	st.t0 = probe_run_now_ns();
	st.next_boundary = st.t0 + 1000000000ull;
	st.next_progress = st.t0 + 10000000000ull;
	rc = run_loop(&st, fd, buf);
	if (st.disk) {
		struct probe_dev_stats last;

		if (probe_dev_stats_read(st.disk, &last) == PROBE_OK)
			probe_dev_stats_delta(&st.first, &last, &res->disk);
	}
	if (rc < 0 && res->error[0])
		fprintf(stderr, "fsync-probe: %s\n", res->error);
	free(buf);
out_close:
	close(fd);
out_unlink:
	if (created && !cfg->keep)
		unlink(cfg->path);
	return rc;
}
