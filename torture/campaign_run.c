/*
 * campaign_run.c -- torture --campaign FILE [--shard I/N] [--out FILE]
 * [--list] [--quiet] (campaign.h): run one shard of a campaign.
 *
 * Each run is a child torture (this very program, /proc/self/exe, with
 * argv[0] kept so its reproducer names the program as the user called it):
 * a run's global state -- the simulator's shared memory, signal handlers,
 * the shim's control block -- starts fresh, exactly as when a person types
 * the reproducer.  Its --json summary is read back and becomes the run's
 * line.  A run that a SIGINT or SIGTERM cut short is not recorded (its
 * cycles were not all run): the shard stops there, and running it again
 * does the rest; the lines it then writes replace the earlier ones in a
 * --report.
 */
#include "campaign.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keel.h"

#define SUMMARY_MAX (64 * 1024)  /* bytes read of a run's --json         */
#define LOG_MAX (256 * 1024)     /* bytes read of a run's output          */
#define VERSION_MAX 80
#define TEXT_MAX 300             /* bytes kept of a violation or message  */
#define REPRO_MAX 700            /* bytes kept of a reproducer            */

static volatile sig_atomic_t stop_requested;
static volatile pid_t child_pid;

/* The shard stops after the current run, and the run is told to stop. */
static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
	if (child_pid > 0)
		kill(child_pid, SIGTERM);
}

typedef struct shard {
	const campaign *c;
	uint64_t index, count;      /* shard INDEX of COUNT                  */
	const char *prog;           /* argv[0]                               */
	char exe[PATH_MAX];         /* this program                          */
	char bindir[PATH_MAX];      /* its directory: targets/ is there      */
	char host[128];             /* gethostname                           */
	const char *out;            /* --out FILE, or NULL for stdout        */
	int out_fd;
	int quiet;                  /* --quiet: no line per run on stderr    */
	const torture_adapter *versioned[16]; /* adapters asked --version    */
	char version[16][VERSION_MAX];
	size_t nversioned;
} shard;

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "torture: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(campaign flags: --campaign FILE [--shard I/N] "
	        "[--out FILE] [--list] [--quiet]; the runs' own flags come "
	        "from the campaign file: docs/campaigns.md)\n");
	return 2;
}

int campaign_wanted(int argc, char **argv, int *report)
{
	*report = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--report") == 0) {
			*report = 1;
			return 1;
		}
		if (strcmp(argv[i], "--campaign") == 0 ||
		    strncmp(argv[i], "--campaign=", 11) == 0)
			return 1;
	}
	return 0;
}

/* Printable ASCII only, '|' (the table's separator) made '/'. */
static void clean_text(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = ' ';
		else if (*s == '|')
			*s = '/';
}

/* `BINDIR/targets/NAME --version`, asked once per adapter. */
static const char *version_of(shard *x, const torture_adapter *a)
{
	char cmd[2 * PATH_MAX + 64], *q = cmd;
	FILE *p;
	size_t i;

	for (i = 0; i < x->nversioned; i++)
		if (x->versioned[i] == a)
			return x->version[i];
	if (i >= sizeof x->versioned / sizeof x->versioned[0])
		return "?";
	x->versioned[i] = a;
	snprintf(x->version[i], VERSION_MAX, "?");
	x->nversioned++;
	*q++ = '\'';
	for (const char *s = x->bindir; *s && q < cmd + PATH_MAX * 2 - 8; s++) {
		if (*s == '\'') {
			memcpy(q, "'\\''", 4);
			q += 4;
		} else {
			*q++ = *s;
		}
	}
	snprintf(q, (size_t)(cmd + sizeof cmd - q), "/targets/%s' --version "
	         "2>/dev/null", a->name);
	p = popen(cmd, "r");
	if (!p)
		return x->version[i];
	if (!fgets(x->version[i], VERSION_MAX, p))
		snprintf(x->version[i], VERSION_MAX, "?");
	while (getc(p) != EOF) /* the rest, so the program is not cut off */
		;
	pclose(p);
	x->version[i][strcspn(x->version[i], "\n")] = '\0';
	clean_text(x->version[i]);
	return x->version[i];
}

/* Reads at most CAP - 1 bytes of FD from its start into BUF. */
static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t k;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return 0;
	while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	return n;
}

/* The first "torture: ..." line of the run's output: why it could not run
 * (later ones say what was left behind). */
static void setup_message(int logfd, char *msg, size_t cap)
{
	static char log[LOG_MAX];
	size_t n = read_all(logfd, log, sizeof log);
	const char *first = NULL;

	for (size_t i = 0; i < n && !first; i++)
		if ((i == 0 || log[i - 1] == '\n') &&
		    strncmp(log + i, "torture: ", 9) == 0)
			first = log + i + 9;
	if (!first)
		return;
	snprintf(msg, cap, "%.*s", (int)strcspn(first, "\n"), first);
	clean_text(msg);
}

/* The shortest exact spelling of a duration (torture's own parser reads
 * it back). */
static void show_duration(uint64_t ns, char *buf, size_t cap)
{
	static const struct { uint64_t ns; const char *unit; } units[] = {
		{1000000000ull, "s"}, {1000000ull, "ms"}, {1000ull, "us"},
		{1ull, "ns"},
	};
	size_t i = 0;

	while (ns % units[i].ns != 0)
		i++;
	snprintf(buf, cap, "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
}

/* The child's argv: the run as a plain torture command. */
static void run_argv(const shard *x, const campaign_run *r, const char *json,
                     char bufs[5][64], const char **argv)
{
	int n = 0;

	snprintf(bufs[0], 64, "%s:%s", r->adapter->name, r->config);
	snprintf(bufs[1], 64, "%" PRIu64, r->seed);
	snprintf(bufs[2], 64, "%" PRIu64, x->c->cycles);
	show_duration(x->c->duration_ns, bufs[3], 64);
	argv[n++] = x->prog;
	argv[n++] = "--target";
	argv[n++] = bufs[0];
	argv[n++] = "--quiet";
	argv[n++] = "--seed";
	argv[n++] = bufs[1];
	argv[n++] = "--cycles";
	argv[n++] = bufs[2];
	argv[n++] = "--duration";
	argv[n++] = bufs[3];
	argv[n++] = "--json";
	argv[n++] = json;
	if (x->c->kill_every_ns) {
		show_duration(x->c->kill_every_ns, bufs[4], 64);
		argv[n++] = "--kill-every";
		argv[n++] = bufs[4];
	}
	if (r->fault != CAMPAIGN_KILL) {
		argv[n++] = "--power-loss";
		argv[n++] = "--device";
		argv[n++] = campaign_device_name(r->device);
	}
	if (r->fault == CAMPAIGN_EIO) {
		argv[n++] = "--fail";
		argv[n++] = "fdatasync:EIO:p=0.02";
		argv[n++] = "--fail";
		argv[n++] = "fsync:EIO:p=0.02";
		argv[n++] = "--fsync-profile";
		argv[n++] = "ext4";
	}
	argv[n] = NULL;
}

/* Runs the child; returns its exit status (128 + N for signal N, -1 when
 * it could not be started). */
static int run_child(const shard *x, const char *const *argv, int logfd)
{
	int status, devnull;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execv(x->exe, (char *const *)argv);
		_exit(127);
	}
	child_pid = pid;
	if (stop_requested) /* a signal came just before child_pid was set */
		kill(pid, SIGTERM);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			child_pid = 0;
			return -1;
		}
	child_pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       128 + WTERMSIG(status);
}

/* A number field of the run's summary, as its text, or "0". */
static const char *num(const campaign_field *f, int n, const char *key)
{
	const campaign_field *v = campaign_json_get(f, n, key);

	return v && v->kind == CAMPAIGN_JSON_NUMBER ? v->value : "0";
}

static const char *text(const campaign_field *f, int n, const char *key)
{
	const campaign_field *v = campaign_json_get(f, n, key);

	return v && v->kind == CAMPAIGN_JSON_STRING ? v->value : NULL;
}

static void put_text(char *buf, size_t *n, size_t cap, const char *key,
                     const char *s, size_t max)
{
	*n += (size_t)snprintf(buf + *n, cap - *n, ", \"%s\": ", key);
	if (s)
		campaign_json_string(buf, n, cap, s, max);
	else
		*n += (size_t)snprintf(buf + *n, cap - *n, "null");
}

/* The result line of run K (without its newline). */
static size_t result_line(shard *x, size_t k, const char *verdict,
                          const campaign_field *f, int nf, const char *msg,
                          char *buf, size_t cap)
{
	const campaign_run *r = &x->c->runs[k];
	size_t n;

	n = (size_t)snprintf(buf, cap, "{\"campaign\": \"%s\", \"run\": %zu, "
	                     "\"runs\": %zu, \"shard\": \"%" PRIu64 "/%" PRIu64
	                     "\", \"target\": \"%s\", \"config\": \"%s\"",
	                     x->c->id, k, x->c->nruns, x->index, x->count,
	                     r->adapter->name, r->config);
	put_text(buf, &n, cap, "version", version_of(x, r->adapter), VERSION_MAX);
	n += (size_t)snprintf(buf + n, cap - n, ", \"kit\": \"keel "
	                      KEEL_VERSION_STRING "\", \"fault\": \"%s\", "
	                      "\"device\": \"%s\", \"seed\": %" PRIu64 ", "
	                      "\"cycles_bound\": %" PRIu64 ", "
	                      "\"duration_bound_s\": %.3f, ",
	                      campaign_fault_name(r->fault),
	                      campaign_device_name(r->device), r->seed,
	                      x->c->cycles, (double)x->c->duration_ns / 1e9);
	if (x->c->kill_every_ns)
		n += (size_t)snprintf(buf + n, cap - n, "\"kill_every_s\": %.6f, ",
		                      (double)x->c->kill_every_ns / 1e9);
	else
		n += (size_t)snprintf(buf + n, cap - n, "\"kill_every_s\": null, ");
	n += (size_t)snprintf(buf + n, cap - n, "\"verdict\": \"%s\"", verdict);
	n += (size_t)snprintf(buf + n, cap - n, ", \"cycles\": %s, "
	                      "\"elapsed_s\": %s, \"cycles_per_second\": %s, "
	                      "\"acked\": %s, \"lost\": %s, \"phantom\": %s, "
	                      "\"structure_errors\": %s, \"writer_errors\": %s, "
	                      "\"power_cuts\": %s, \"faults_fired\": %s, "
	                      "\"fault_stops\": %s",
	                      num(f, nf, "cycles"), num(f, nf, "elapsed_s"),
	                      num(f, nf, "cycles_per_second"),
	                      num(f, nf, "acked_writes"), num(f, nf, "lost"),
	                      num(f, nf, "phantom"),
	                      num(f, nf, "structure_errors"),
	                      num(f, nf, "writer_errors"),
	                      num(f, nf, "power_cuts"),
	                      num(f, nf, "faults_fired"),
	                      num(f, nf, "fault_stops"));
	put_text(buf, &n, cap, "first_violation",
	         text(f, nf, "first_violation"), TEXT_MAX);
	put_text(buf, &n, cap, "reproducer",
	         *verdict == 'b' ? text(f, nf, "reproducer") : NULL, REPRO_MAX);
	put_text(buf, &n, cap, "message", msg, TEXT_MAX);
	put_text(buf, &n, cap, "host", x->host, sizeof x->host);
	n += (size_t)snprintf(buf + n, cap - n, "}");
	return n < cap ? n : cap - 1;
}

/* Appends LINE and a newline with one write(2): concurrent shards that
 * share an output file (O_APPEND) never interleave their lines. */
static int write_line(shard *x, char *line, size_t len)
{
	size_t done = 0;
	ssize_t k;

	line[len++] = '\n';
	while (done < len) {
		k = write(x->out_fd, line + done, len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	/* a result is worth a sync: a crash of this machine must not lose
	 * lines that the shard's log says were written */
	if (x->out && fdatasync(x->out_fd) < 0 && errno != EINVAL)
		return -1;
	return 0;
}

static int temp_file(char *path, size_t cap)
{
	const char *dir = getenv("TMPDIR");

	snprintf(path, cap, "%s/keel-campaign.XXXXXX", dir && *dir ? dir : "/tmp");
	return mkostemp(path, O_CLOEXEC);
}

/* Runs run K and writes its line.  0 recorded; 1 recorded with verdict
 * setup; 2 the line could not be written; 3 stopped by a signal (not
 * recorded). */
static int run_one(shard *x, size_t k)
{
	static campaign_field fields[CAMPAIGN_FIELDS_MAX];
	static char summary[SUMMARY_MAX], line[CAMPAIGN_JSON_MAX + 1];
	char json[PATH_MAX], logname[PATH_MAX], bufs[5][64], why[160];
	char msg[TEXT_MAX + 1] = "";
	const char *argv[32], *verdict;
	int jfd, logfd, rc, nf = 0;
	size_t len;

	jfd = temp_file(json, sizeof json);
	logfd = temp_file(logname, sizeof logname);
	if (jfd < 0 || logfd < 0) {
		fprintf(stderr, "torture: cannot make a temporary file in %s: "
		        "%s\n", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		        strerror(errno));
		if (jfd >= 0)
			unlink(json), close(jfd);
		if (logfd >= 0)
			unlink(logname), close(logfd);
		return 2;
	}
	unlink(logname);
	run_argv(x, &x->c->runs[k], json, bufs, argv);
	rc = run_child(x, argv, logfd);
	len = read_all(jfd, summary, sizeof summary);
	close(jfd);
	unlink(json);
	if (stop_requested) {
		close(logfd);
		return 3;
	}
	if (len > 0 && rc >= 0 && rc <= 3)
		nf = campaign_json_parse(summary, len, fields,
		                         CAMPAIGN_FIELDS_MAX, why, sizeof why);
	if ((rc == 0 || rc == 1 || rc == 3) && nf > 0) {
		/* 3: the program refused to start (availability); its
		 * message says so */
		verdict = rc == 0 ? "holds" : "broken";
	} else if (rc == 2 && nf > 0 && text(fields, nf, "refusal")) {
		/* a set-up error after cycles that passed: they are kept */
		verdict = "setup";
		snprintf(msg, sizeof msg, "cycle %.20s, by the %.8s: %.240s",
		         num(fields, nf, "refusal_cycle"),
		         text(fields, nf, "refusal_by") ?
		         text(fields, nf, "refusal_by") : "workload",
		         text(fields, nf, "refusal"));
		clean_text(msg);
	} else {
		verdict = "setup";
		nf = 0;
		if (rc < 0)
			snprintf(msg, sizeof msg, "could not start %.200s: %s",
			         x->exe, strerror(errno));
		else if (rc > 128)
			snprintf(msg, sizeof msg, "the run died of signal %d",
			         rc - 128);
		else
			snprintf(msg, sizeof msg, "the run ended with exit "
			         "status %d%s", rc, rc == 0 || rc == 1 ?
			         " but no readable summary" : "");
		setup_message(logfd, msg, sizeof msg);
	}
	close(logfd);
	len = result_line(x, k, verdict, fields, nf, *msg ? msg : NULL, line,
	                  sizeof line - 1);
	if (write_line(x, line, len) < 0) {
		fprintf(stderr, "torture: --out %s: %s\n", x->out ? x->out :
		        "(stdout)", strerror(errno));
		return 2;
	}
	if (!x->quiet)
		fprintf(stderr, "torture: campaign %s shard %" PRIu64 "/%" PRIu64
		        ": run %zu: %s:%s %s %s seed %" PRIu64 ": %s, %s cycles"
		        "%s%s\n", x->c->id, x->index, x->count, k,
		        x->c->runs[k].adapter->name, x->c->runs[k].config,
		        campaign_fault_name(x->c->runs[k].fault),
		        campaign_device_name(x->c->runs[k].device),
		        x->c->runs[k].seed, verdict, num(fields, nf, "cycles"),
		        *msg ? ": " : "", msg);
	return *verdict == 's' ? 1 : 0;
}

static int list_shard(const shard *x)
{
	size_t held = 0;

	for (size_t k = x->index; k < x->c->nruns; k += x->count)
		held++;
	printf("# campaign %s: %zu runs, at most %" PRIu64 " cycles or %.3f s "
	       "each; shard %" PRIu64 "/%" PRIu64 " holds %zu\n", x->c->id,
	       x->c->nruns, x->c->cycles, (double)x->c->duration_ns / 1e9,
	       x->index, x->count, held);
	for (size_t k = x->index; k < x->c->nruns; k += x->count) {
		const campaign_run *r = &x->c->runs[k];
		printf("%zu %s:%s %s %s %" PRIu64 "\n", k, r->adapter->name,
		       r->config, campaign_fault_name(r->fault),
		       campaign_device_name(r->device), r->seed);
	}
	return fflush(stdout) == 0 ? 0 : 2;
}

static int run_shard(shard *x)
{
	struct sigaction sa;
	ssize_t n;
	int rc = 0;

	n = readlink("/proc/self/exe", x->exe, sizeof x->exe - 1);
	if (n <= 0) {
		fprintf(stderr, "torture: cannot find this program: %s\n",
		        strerror(errno));
		return 2;
	}
	x->exe[n] = '\0';
	snprintf(x->bindir, sizeof x->bindir, "%s", x->exe);
	*strrchr(x->bindir, '/') = '\0';
	if (gethostname(x->host, sizeof x->host) < 0)
		snprintf(x->host, sizeof x->host, "?");
	x->host[sizeof x->host - 1] = '\0';
	clean_text(x->host);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (size_t k = x->index; k < x->c->nruns; k += x->count) {
		int r = run_one(x, k);
		if (r == 2)
			return 2;
		if (r == 3) {
			fprintf(stderr, "torture: campaign %s shard %" PRIu64 "/%"
			        PRIu64 ": stopped by a signal during run %zu, "
			        "which is not recorded; run the shard again for "
			        "the rest\n", x->c->id, x->index, x->count, k);
			return 2;
		}
		rc |= r;
	}
	if (x->index >= x->c->nruns && !x->quiet)
		fprintf(stderr, "torture: campaign %s shard %" PRIu64 "/%" PRIu64
		        ": no runs (the campaign has %zu)\n", x->c->id, x->index,
		        x->count, x->c->nruns);
	return rc;
}

int campaign_main(int argc, char **argv)
{
	static shard x;
	campaign c;
	const char *file = NULL, *shard_arg = "0/1";
	char why[200];
	int list = 0, rc;

	memset(&x, 0, sizeof x);
	x.prog = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		const char **dst = NULL;

		if (len == 10 && strncmp(a, "--campaign", len) == 0)
			dst = &file;
		else if (len == 7 && strncmp(a, "--shard", len) == 0)
			dst = &shard_arg;
		else if (len == 5 && strncmp(a, "--out", len) == 0)
			dst = &x.out;
		else if (strcmp(a, "--list") == 0)
			list = 1;
		else if (strcmp(a, "--quiet") == 0)
			x.quiet = 1;
		else
			return usage_error("--campaign: '%s' is not a campaign "
			                   "flag", a);
		if (!dst)
			continue;
		if (eq)
			*dst = eq + 1;
		else if (i + 1 < argc)
			*dst = argv[++i];
		else
			return usage_error("%s needs a value", a);
		if (!**dst)
			return usage_error("%s: empty value", a);
	}
	if (!file)
		return usage_error("%s", "--campaign needs FILE");
	if (campaign_shard_parse(shard_arg, &x.index, &x.count, why,
	                         sizeof why) < 0) {
		fprintf(stderr, "torture: --shard %s: %s\n", shard_arg, why);
		return 2;
	}
	if (campaign_parse(file, &c) < 0)
		return 2;
	x.c = &c;
	if (list) {
		rc = list_shard(&x);
		goto out;
	}
	x.out_fd = 1;
	if (x.out) {
		x.out_fd = open(x.out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		                0644);
		if (x.out_fd < 0) {
			fprintf(stderr, "torture: --out %s: %s\n", x.out,
			        strerror(errno));
			rc = 2;
			goto out;
		}
	}
	rc = run_shard(&x);
	if (x.out && close(x.out_fd) < 0 && rc != 2) {
		fprintf(stderr, "torture: --out %s: %s\n", x.out, strerror(errno));
		rc = 2;
	}
out:
	campaign_free(&c);
	return rc;
}
