/*
 * fsync-probe -- how does this storage device behave under synced writes?
 *
 *   fsync-probe [--mode M] [--layout L] [--size N] [--file-size N]
 *               [--duration D] [--rate R] [--random] [--json OUT.jsonl]
 *               [--svg OUT.svg] [--force] [--keep] [--quiet] FILE
 *   fsync-probe --listen PORT [--bind ADDR] [--duration D]
 *   fsync-probe --power-cut-writer HOST:PORT [--mode M] [--size N]
 *               [--file-size N] [--duration D] [--force] FILE
 *   fsync-probe --verify HOST:PORT FILE
 *
 * Exit: 0 done; 1 --verify found acknowledged blocks lost or damaged; 2 bad
 * input; 3 a write, sync or the network failed, or the filesystem cannot do
 * the mode (O_DIRECT on tmpfs).  See docs/fsync-probe.md.
 */
#include <errno.h>
#include <fiu.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "probe.h"
#include "probe_device.h"
#include "probe_hist.h"
#include "probe_json.h"
#include "probe_powercut.h"
#include "probe_run.h"
#include "duration.h"
#include "probe_svg.h"

#define MAX_VERDICTS 8

/* The command line, once parsed. */
struct args {
	struct probe_config cfg;
	const char *json_path;   /* --json, "-" for stdout */
	const char *svg_path;    /* --svg */
	const char *listen_port; /* --listen */
	const char *bind_addr;   /* --bind */
	const char *writer_to;   /* --power-cut-writer HOST:PORT */
	const char *verify_at;   /* --verify HOST:PORT */
	int duration_given;
};

/* The findings in plain words. */
struct verdict {
	int n;
	char line[MAX_VERDICTS][640];
	int too_fast;            /* the median durable write beat the flush floor */
	double flushes_per_write;/* device flushes / writes, NAN if unknown */
	double slowdown;         /* writes/s, last third / first third; NAN if short */
};

static void usage(FILE *f)
{
	fputs("usage: fsync-probe [options] FILE\n"
	      "  --mode M        fsync | fdatasync | dsync | direct | sfr | none "
	      "(default fdatasync)\n"
	      "  --layout L      append | prealloc | overwrite (default append)\n"
	      "  --size N        bytes per write, 512 to 1M (default 4k)\n"
	      "  --file-size N   bytes the writes cycle through (default 64M)\n"
	      "  --duration D    seconds, or with a unit: 500ms, 10s, 5m, 2h (default 10s)\n"
	      "  --rate R        fixed rate, R writes/s, latency from the intended "
	      "start\n"
	      "                  (default: closed loop)\n"
	      "  --random        random aligned offsets (prealloc, overwrite)\n"
	      "  --json PATH     JSONL: a line a second, stalls, a summary ('-' = "
	      "stdout)\n"
	      "  --svg PATH      plot of latency percentiles and throughput\n"
	      "  --force         overwrite FILE if it exists\n"
	      "  --keep          keep FILE afterwards\n"
	      "  --quiet         no progress lines\n"
	      "power-cut check:\n"
	      "  fsync-probe --listen PORT [--bind ADDR]          (second machine)\n"
	      "  fsync-probe --power-cut-writer HOST:PORT FILE    (then cut power)\n"
	      "  fsync-probe --verify HOST:PORT FILE              (after reboot)\n",
	      f);
}

static int bad(const char *what, const char *value)
{
	fprintf(stderr, "fsync-probe: %s: %s\n", what, value);
	return PROBE_EINPUT;
}

static int check_args(int argc, char **argv, struct args *a);

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "mode", 1, 0, 'm' }, { "layout", 1, 0, 'l' },
		{ "size", 1, 0, 's' }, { "file-size", 1, 0, 'F' },
		{ "duration", 1, 0, 'd' }, { "rate", 1, 0, 'r' },
		{ "random", 0, 0, 'R' }, { "json", 1, 0, 'j' },
		{ "svg", 1, 0, 'g' }, { "force", 0, 0, 'f' },
		{ "keep", 0, 0, 'k' }, { "quiet", 0, 0, 'q' },
		{ "listen", 1, 0, 'L' }, { "bind", 1, 0, 'b' },
		{ "power-cut-writer", 1, 0, 'W' }, { "verify", 1, 0, 'V' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	uint64_t v;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (probe_run_mode_parse(optarg, &a->cfg.mode) < 0)
				return bad("unknown --mode (fsync, fdatasync, dsync, "
					   "direct, sfr, none)", optarg);
			break;
		case 'l':
			if (probe_run_layout_parse(optarg, &a->cfg.layout) < 0)
				return bad("unknown --layout (append, prealloc, "
					   "overwrite)", optarg);
			break;
		case 's':
			if (probe_run_parse_size(optarg, &v) < 0 ||
			    v < PROBE_SIZE_MIN || v > PROBE_SIZE_MAX)
				return bad("--size must be 512 to 1M bytes", optarg);
			a->cfg.write_size = (size_t)v;
			break;
		case 'F':
			if (probe_run_parse_size(optarg, &v) < 0 || v == 0 ||
			    v > (1ull << 40))
				return bad("--file-size must be 1 byte to 1T", optarg);
			a->cfg.file_size = v;
			break;
		case 'd':
			if (probe_run_parse_duration(optarg, &a->cfg.duration_s) < 0)
				return bad("--duration wants " DURATION_RULE ", at most a month",
					   optarg);
			a->duration_given = 1;
			break;
		case 'r':
			errno = 0;
			a->cfg.rate = strtod(optarg, &end);
			if (errno || *end || !(a->cfg.rate > 0) || a->cfg.rate > 1e7)
				return bad("--rate must be writes per second, > 0", optarg);
			break;
		case 'R': a->cfg.random = 1; break;
		case 'j': a->json_path = optarg; break;
		case 'g': a->svg_path = optarg; break;
		case 'f': a->cfg.force = 1; break;
		case 'k': a->cfg.keep = 1; break;
		case 'q': a->cfg.quiet = 1; break;
		case 'L': a->listen_port = optarg; break;
		case 'b': a->bind_addr = optarg; break;
		case 'W': a->writer_to = optarg; break;
		case 'V': a->verify_at = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return PROBE_EINPUT;
		}
	}
	return check_args(argc, argv, a);
}

/* What single options cannot check: which command, FILE, combinations. */
static int check_args(int argc, char **argv, struct args *a)
{
	if (!!a->listen_port + !!a->writer_to + !!a->verify_at > 1)
		return bad("choose one of", "--listen, --power-cut-writer, --verify");
	if (a->listen_port) {
		size_t n = strlen(a->listen_port);

		if (optind != argc || n == 0 || n > 5 ||
		    strspn(a->listen_port, "0123456789") != n ||
		    atoi(a->listen_port) > 65535)
			return bad("--listen takes a port number and no FILE",
				   a->listen_port);
		return PROBE_OK;
	}
	if (optind != argc - 1) {
		usage(stderr);
		return PROBE_EINPUT;
	}
	a->cfg.path = argv[optind];
	if (a->cfg.file_size < a->cfg.write_size)
		return bad("--file-size is smaller than --size", a->cfg.path);
	if (a->cfg.random && a->cfg.layout == PROBE_LAYOUT_APPEND)
		return bad("--random needs --layout prealloc or overwrite",
			   "append");
	return PROBE_OK;
}

/* ns -> "512 us", "3.4 ms", "7.1 s". */
static const char *human_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

static void add_verdict(struct verdict *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_verdict(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->n >= MAX_VERDICTS)
		return;
	va_start(ap, fmt);
	vsnprintf(v->line[v->n++], sizeof(v->line[0]), fmt, ap);
	va_end(ap);
}

/* writes/s over the last third of the run against the first third: an SD
 * card that runs out of fast blocks shows it here. */
static double slowdown(const struct probe_run_result *r)
{
	size_t third = r->nseconds / 3, i;
	double first = 0, last = 0;

	if (r->nseconds < 9)
		return NAN;
	for (i = 0; i < third; i++) {
		first += (double)r->seconds[i].ops;
		last += (double)r->seconds[r->nseconds - 1 - i].ops;
	}
	return first > 0 ? last / first : NAN;
}

static void judge(const struct args *a, const struct probe_dev_info *dev,
		  const struct probe_run_result *r, struct verdict *v)
{
	const char *why = "";
	uint64_t floor_ns = probe_dev_flush_floor_ns(dev, &why);
	uint64_t p50 = probe_hist_percentile(&r->total, 50);
	char b1[32], b2[32];

	v->flushes_per_write = NAN;
	if (r->disk.valid && r->ops > 0)
		v->flushes_per_write = (double)r->disk.flushes / (double)r->ops;
	v->slowdown = slowdown(r);
	if (r->ops == 0)
		add_verdict(v, "no write completed: nothing to judge");
	else if (!probe_run_mode_durable(a->cfg.mode))
		add_verdict(v, "NOT DURABLE: mode %s does not flush the device's "
			    "cache%s; these figures are a ceiling, not a durable "
			    "rate", probe_run_mode_name(a->cfg.mode),
			    a->cfg.mode == PROBE_MODE_SFR ? " nor commit metadata" : "");
	else if (r->ops > 0 && floor_ns > 0 && p50 < floor_ns) {
		v->too_fast = 1;
		add_verdict(v, "TOO FAST: half the durable writes returned within %s, "
			    "under the %s floor for this device class (%s). The "
			    "device (or a layer below, such as a hypervisor or a "
			    "RAID cache) is not flushing to stable media, or is not "
			    "what it claims; run the power-cut check before trusting it",
			    human_ns(p50, b1, sizeof(b1)),
			    human_ns(floor_ns, b2, sizeof(b2)), why);
	} else if (r->ops > 0 && floor_ns > 0)
		add_verdict(v, "plausible: the median durable write (%s) is above "
			    "the %s floor for this device class",
			    human_ns(p50, b1, sizeof(b1)),
			    human_ns(floor_ns, b2, sizeof(b2)));
	else
		add_verdict(v, "no speed floor applies: %s", why);
	if (probe_run_mode_durable(a->cfg.mode) && !isnan(v->flushes_per_write) &&
	    strcmp(dev->write_cache, "write back") == 0 && v->flushes_per_write < 0.5)
		add_verdict(v, "FEW FLUSHES: the device saw %.2f cache flushes per "
			    "write although it claims a volatile cache; check for "
			    "nobarrier or a layer that drops flushes",
			    v->flushes_per_write);
	if (!isnan(v->slowdown) && v->slowdown < 0.5)
		add_verdict(v, "SLOWED DOWN: the last third of the run did %.2fx the "
			    "writes of the first third (typical of flash running out "
			    "of pre-erased blocks); run longer to find the steady state",
			    v->slowdown);
	if (r->long_stall_count > 0)
		add_verdict(v, "STALLS: %" PRIu64 " writes took over 1 s",
			    r->long_stall_count);
}

static void print_summary(FILE *f, const struct args *a,
			  const struct probe_dev_info *dev,
			  const struct probe_run_result *r, const struct verdict *v)
{
	const struct probe_hist *h = &r->total;
	double secs = r->elapsed_s > 0 ? r->elapsed_s : 1;
	char desc[600], b[5][32];
	int i;

	probe_dev_describe(dev, desc, sizeof(desc));
	fprintf(f, "fsync-probe: %s, %s layout, %zu-byte writes, %s, %.1f s%s on %s\n",
		probe_run_mode_name(a->cfg.mode), probe_run_layout_name(a->cfg.layout),
		a->cfg.write_size, a->cfg.rate > 0 ? "fixed rate" : "closed loop",
		r->elapsed_s, r->stopped ? " (stopped early)" : "", a->cfg.path);
	fprintf(f, "device: %s (%s); kernel %s\n", desc, dev->mount_options,
		dev->kernel);
	fprintf(f, "result: %" PRIu64 " writes, %.1f writes/s, %.2f MB/s\n", r->ops,
		(double)r->ops / secs, (double)r->bytes / secs / 1e6);
	fprintf(f, "latency (write + sync): p50 %s, p99 %s, p99.9 %s, max %s, "
		"mean %s\n", human_ns(probe_hist_percentile(h, 50), b[0], 32),
		human_ns(probe_hist_percentile(h, 99), b[1], 32),
		human_ns(probe_hist_percentile(h, 99.9), b[2], 32),
		human_ns(h->max, b[3], 32),
		human_ns((uint64_t)probe_hist_mean(h), b[4], 32));
	fprintf(f, "stalls: %" PRIu64 " over 100 ms, %" PRIu64 " over 1 s",
		r->stall_count, r->long_stall_count);
	if (a->cfg.rate > 0)
		fprintf(f, "; %" PRIu64 " writes started over 1 ms late", r->late_ops);
	fputc('\n', f);
	if (!isnan(v->flushes_per_write))
		fprintf(f, "device: %" PRIu64 " writes, %" PRIu64 " cache flushes "
			"(%.2f per write; other processes count too)\n",
			r->disk.writes, r->disk.flushes, v->flushes_per_write);
	for (i = 0; i < v->n; i++)
		fprintf(f, "verdict: %s\n", v->line[i]);
	if (r->error[0])
		fprintf(f, "error: %s\n", r->error);
}

static void write_start_json(FILE *f, const struct args *a,
			     const struct probe_dev_info *dev)
{
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	fprintf(f, "{\"type\":\"start\",\"tool\":\"fsync-probe\",\"format\":1,"
		"\"time\":\"%s\",\"path\":", when);
	probe_json_str(f, a->cfg.path);
	fprintf(f, ",\"mode\":\"%s\",\"durable\":%s,\"layout\":\"%s\","
		"\"write_size\":%zu,\"file_size\":%" PRIu64 ",\"duration_s\":",
		probe_run_mode_name(a->cfg.mode),
		probe_run_mode_durable(a->cfg.mode) ? "true" : "false",
		probe_run_layout_name(a->cfg.layout), a->cfg.write_size,
		a->cfg.file_size);
	probe_json_num(f, a->cfg.duration_s);
	fputs(",\"rate\":", f);
	if (a->cfg.rate > 0)
		probe_json_num(f, a->cfg.rate);
	else
		fputs("null", f);
	fprintf(f, ",\"random\":%s,\"device\":", a->cfg.random ? "true" : "false");
	probe_dev_write_json(f, dev);
	fputs("}\n", f);
}

static void write_summary_json(FILE *f, const struct args *a,
			       const struct probe_dev_info *dev,
			       const struct probe_run_result *r,
			       const struct verdict *v)
{
	const struct probe_hist *h = &r->total;
	double secs = r->elapsed_s > 0 ? r->elapsed_s : 1;
	const char *why;
	int i;

	fprintf(f, "{\"type\":\"summary\",\"mode\":\"%s\",\"durable\":%s,"
		"\"layout\":\"%s\",\"write_size\":%zu,\"elapsed_s\":",
		probe_run_mode_name(a->cfg.mode),
		probe_run_mode_durable(a->cfg.mode) ? "true" : "false",
		probe_run_layout_name(a->cfg.layout), a->cfg.write_size);
	probe_json_num(f, r->elapsed_s);
	fprintf(f, ",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ops_per_s\":", r->ops,
		r->bytes);
	probe_json_num(f, (double)r->ops / secs);
	fputs(",\"mb_per_s\":", f);
	probe_json_num(f, (double)r->bytes / secs / 1e6);
	fputs(",\"p50_us\":", f);
	probe_json_num(f, (double)probe_hist_percentile(h, 50) / 1e3);
	fputs(",\"p99_us\":", f);
	probe_json_num(f, (double)probe_hist_percentile(h, 99) / 1e3);
	fputs(",\"p999_us\":", f);
	probe_json_num(f, (double)probe_hist_percentile(h, 99.9) / 1e3);
	fputs(",\"max_us\":", f);
	probe_json_num(f, (double)h->max / 1e3);
	fputs(",\"mean_us\":", f);
	probe_json_num(f, probe_hist_mean(h) / 1e3);
	fprintf(f, ",\"stalls_100ms\":%" PRIu64 ",\"stalls_1s\":%" PRIu64
		",\"late_ops\":%" PRIu64 ",\"wraps\":%" PRIu64 ",\"prealloc_method\":",
		r->stall_count, r->long_stall_count, r->late_ops, r->wraps);
	probe_json_str(f, r->prealloc_method);
	fputs(",\"disk\":", f);
	probe_dev_stats_json(f, &r->disk);
	fputs(",\"flushes_per_write\":", f);
	probe_json_num(f, v->flushes_per_write);
	fputs(",\"flush_floor_us\":", f);
	probe_json_num(f, (double)probe_dev_flush_floor_ns(dev, &why) / 1e3);
	fprintf(f, ",\"too_fast\":%s,\"stopped_early\":%s,\"slowdown\":",
		v->too_fast ? "true" : "false", r->stopped ? "true" : "false");
	probe_json_num(f, v->slowdown);
	fputs(",\"error\":", f);
	probe_json_str(f, r->error[0] ? r->error : NULL);
	fputs(",\"verdict\":[", f);
	for (i = 0; i < v->n; i++) {
		fputs(i ? "," : "", f);
		probe_json_str(f, v->line[i]);
	}
	fputs("]}\n", f);
}

static int write_svg(const struct args *a, const struct probe_dev_info *dev,
		     const struct probe_run_result *r)
{
	struct probe_svg_input in;
	char title[300], desc[600];
	FILE *f;
	int rc;

	f = fopen(a->svg_path, "w");
	if (!f) {
		fprintf(stderr, "fsync-probe: cannot write %s: %s\n", a->svg_path,
			strerror(errno));
		return PROBE_EINPUT;
	}
	snprintf(title, sizeof(title), "fsync-probe: %s, %s layout, %zu-byte writes%s",
		 probe_run_mode_name(a->cfg.mode), probe_run_layout_name(a->cfg.layout),
		 a->cfg.write_size, probe_run_mode_durable(a->cfg.mode) ? "" :
		 " (NOT DURABLE)");
	probe_dev_describe(dev, desc, sizeof(desc));
	memset(&in, 0, sizeof(in));
	in.title = title;
	in.subtitle = desc;
	in.write_size = a->cfg.write_size;
	in.seconds = r->seconds;
	in.nseconds = r->nseconds;
	in.stalls = r->stalls;
	in.nstalls = r->nstalls;
	rc = probe_svg_write(f, &in);
	if (fclose(f) != 0)
		rc = PROBE_EIO;
	if (rc < 0)
		fprintf(stderr, "fsync-probe: writing %s failed\n", a->svg_path);
	return rc;
}

/* Ctrl-C or SIGTERM ends a long run early, with its summary and plot. */
static void on_stop_signal(int sig)
{
	(void)sig;
	probe_run_request_stop();
}

static int exit_code(int rc)
{
	switch (rc) {
	case PROBE_OK: return 0;
	case PROBE_ELOST: return 1;
	case PROBE_EINPUT: return 2;
	default: return 3;
	}
}

/* Refuse a run that would fill the filesystem. */
static int check_space(const struct args *a, const struct probe_dev_info *dev)
{
	uint64_t have = dev->fs_free_bytes;
	struct stat st;

	if (dev->fs_total_bytes == 0)
		return PROBE_OK; /* statvfs failed: let the writes tell */
	if (stat(a->cfg.path, &st) == 0)
		have += (uint64_t)st.st_size;
	if (have >= a->cfg.file_size + (16u << 20))
		return PROBE_OK;
	fprintf(stderr, "fsync-probe: not enough free space for --file-size %"
		PRIu64 " on %s (%" PRIu64 " bytes free)\n", a->cfg.file_size,
		dev->mount_point[0] ? dev->mount_point : a->cfg.path, have);
	return PROBE_EINPUT;
}

static int run_probe(struct args *a)
{
	struct probe_run_result *r = NULL;
	struct probe_dev_info dev;
	struct verdict v;
	FILE *json = NULL;
	int rc, rc2;

	if ((rc = probe_dev_identify(a->cfg.path, &dev)) < 0)
		return PROBE_EINPUT;
	if ((rc = check_space(a, &dev)) < 0)
		return rc;
	if (a->json_path) {
		json = strcmp(a->json_path, "-") == 0 ? stdout : fopen(a->json_path, "w");
		if (!json) {
			fprintf(stderr, "fsync-probe: cannot write %s: %s\n",
				a->json_path, strerror(errno));
			return PROBE_EINPUT;
		}
		write_start_json(json, a, &dev);
	}
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	r = probe_run_result_new();
	if (!r) {
		rc = PROBE_EIO;
		goto out_json;
	}
	rc = probe_run(&a->cfg, &dev, json, r);
	/* a refused start measured nothing: no summary to give */
	if (rc == PROBE_EINPUT || (rc == PROBE_EUNSUPP && r->ops == 0 && !r->error[0]))
		goto out_free;
	memset(&v, 0, sizeof(v));
	judge(a, &dev, r, &v);
	print_summary(json == stdout ? stderr : stdout, a, &dev, r, &v);
	if (json)
		write_summary_json(json, a, &dev, r, &v);
	if (a->svg_path && (rc2 = write_svg(a, &dev, r)) < 0 && rc == PROBE_OK)
		rc = rc2;
out_free:
	probe_run_result_free(r);
out_json:
	if (json && json != stdout && fclose(json) != 0 && rc == PROBE_OK) {
		fprintf(stderr, "fsync-probe: writing %s failed\n", a->json_path);
		rc = PROBE_EIO;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	int rc;

	fiu_init(0); /* the fault points the tests use; a no-op otherwise */
	memset(&a, 0, sizeof(a));
	a.cfg.mode = PROBE_MODE_FDATASYNC;
	a.cfg.layout = PROBE_LAYOUT_APPEND;
	a.cfg.write_size = 4096;
	a.cfg.file_size = 64ull << 20;
	a.cfg.duration_s = 10;
	if ((rc = parse_args(argc, argv, &a)) < 0)
		return exit_code(rc);
	if (a.listen_port)
		rc = probe_cut_listen(a.bind_addr, a.listen_port,
				      a.duration_given ? a.cfg.duration_s : 0);
	else if (a.writer_to) {
		if (!a.duration_given)
			a.cfg.duration_s = 0; /* until the power goes */
		rc = probe_cut_write(a.writer_to, &a.cfg);
	} else if (a.verify_at)
		rc = probe_cut_verify(a.verify_at, a.cfg.path);
	else
		rc = run_probe(&a);
	return exit_code(rc);
}
