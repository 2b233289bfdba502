/*
 * http_target.c -- keel-serve as the process torture kills (see
 * http_target.h).
 */
#include "http_target.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "http_conn.h"
#include "http_writer.h"

/* A server that has not printed its port by then is not coming up: its
 * start is exec, keel_open (recovery) and a bind. */
#define SERVER_START_TIMEOUT_MS 30000
/* A client whose server is dead ends within a millisecond or so; one that
 * takes longer than this is stuck and is killed. */
#define CLIENT_END_TIMEOUT_MS 5000

static char serve_bin[PATH_MAX]; /* keel-serve, resolved in the first cycle */
static pid_t client_pid = -1;    /* this cycle's client process, or -1      */
/* --http-tls: the certificate and key made at set-up, and the client's
 * context that pins the certificate; made in the first cycle. */
static char tls_cert[PATH_MAX + 64], tls_key[PATH_MAX + 64];
static SSL_CTX *tls_ctx;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* keel-serve's path: --serve, else the file next to this program (the
 * build directory holds both). */
static int find_server(const torture_options *o)
{
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (o->serve) {
		snprintf(serve_bin, sizeof(serve_bin), "%s", o->serve);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -1;
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (!slash) { /* the kernel's link is absolute; be sure */
			errno = ENOENT;
			return -1;
		}
		*slash = '\0';
		if (snprintf(serve_bin, sizeof(serve_bin), "%s/keel-serve",
		             self) >= (int)sizeof(serve_bin)) {
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	return access(serve_bin, X_OK);
}

/* What keel-serve cannot do: it opens its store itself, so the engine flags
 * and I/O backend of the fault simulator, the --unsafe modes that are engine
 * flags and the writer's compaction thread would not reach it. */
int http_target_check(const torture_options *o)
{
	if (o->io || o->engine_flags || options_faultsim(o) ||
	    o->compact_every_ns ||
	    (o->unsafe & ~TORTURE_UNSAFE_ACK_BEFORE_COMMIT)) {
		fprintf(stderr, "torture: --target http: keel-serve opens the "
		        "store itself; the fault simulator's flags, "
		        "--compact-every and the engine's --unsafe modes apply "
		        "to the embedded writer only\n");
		return -1;
	}
	if (find_server(o) < 0) {
		fprintf(stderr, "torture: --target http: cannot run keel-serve "
		        "at %s: %s (build it beside torture, or name it with "
		        "--serve PATH)\n", serve_bin[0] ? serve_bin : "?",
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* The server's child side: never returns. */
static void __attribute__((noreturn)) exec_server(const writer_plan *plan,
                                                  pid_t parent, int out)
{
	char conns[16], body[24];
	char *argv[] = {
		serve_bin, "--db", (char *)plan->path, "--listen",
		"127.0.0.1:0", "--threads", "1", "--max-conns", conns,
		"--max-body", body, "--idle-timeout", "3600",
		tls_ctx ? "--tls-cert" : NULL, tls_cert, "--tls-key", tls_key,
		NULL,
	};

	/* Die with the harness (an orphaned server would hold the store);
	 * its own process group keeps a terminal's ^C, meant for torture,
	 * from stopping it cleanly in the middle of a cycle. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	setpgid(0, 0);
	snprintf(conns, sizeof(conns), "%u", plan->opt->threads + 8);
	snprintf(body, sizeof(body), "%u", plan->opt->value_max);
	if (dup2(out, STDOUT_FILENO) < 0)
		_exit(127);
	execv(serve_bin, argv);
	fprintf(stderr, "torture: cannot run %s: %s\n", serve_bin,
	        strerror(errno));
	_exit(127);
}

/* Reads the server's first stdout line, "keel-serve: listening on
 * 127.0.0.1:PORT (...)", into *PORT.  0, or -1 with *WHY. */
static int read_port(int fd, uint16_t *port, const char **why)
{
	static const char tag[] = "keel-serve: listening on 127.0.0.1:";
	char line[256];
	size_t have = 0;
	uint64_t deadline = now_ns() + SERVER_START_TIMEOUT_MS * 1000000ull;
	unsigned long v;
	char *end;

	while (!memchr(line, '\n', have)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ns();
		ssize_t n;
		if (have == sizeof(line) - 1 || now >= deadline) {
			*why = have == sizeof(line) - 1 ?
			       "its first line is too long" :
			       "it printed no port within 30 s";
			return -1;
		}
		if (poll(&p, 1, (int)((deadline - now) / 1000000u) + 1) < 0 &&
		    errno != EINTR)
			return *why = "poll failed", -1;
		n = read(fd, line + have, sizeof(line) - 1 - have);
		if (n == 0)
			return *why = "it exited before it listened", -1;
		if (n > 0)
			have += (size_t)n;
	}
	line[have] = '\0';
	if (strncmp(line, tag, sizeof(tag) - 1) != 0)
		return *why = "its first line is not \"keel-serve: listening "
		              "on 127.0.0.1:PORT\"", -1;
	v = strtoul(line + sizeof(tag) - 1, &end, 10);
	if (v == 0 || v > 65535 || (*end != ' ' && *end != '\n'))
		return *why = "its first line has no port", -1;
	*port = (uint16_t)v;
	return 0;
}

/* Starts the server and waits until it listens.  0 with *PID, *PORT and
 * *NS (how long the start took); -1 with *WHY, *PID the server or -1. */
static int start_server(const writer_plan *plan, pid_t *pid, uint16_t *port,
                        uint64_t *ns, const char **why)
{
	uint64_t t0 = now_ns();
	pid_t parent = getpid();
	int out[2], rc;

	*pid = -1;
	if (pipe2(out, O_CLOEXEC) < 0)
		return *why = strerror(errno), -1;
	*pid = fork();
	if (*pid == 0)
		exec_server(plan, parent, out[1]);
	close(out[1]);
	if (*pid < 0) {
		close(out[0]);
		return *why = strerror(errno), -1;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	rc = read_port(out[0], port, why);
	/* Nothing else comes on stdout; keel-serve ignores SIGPIPE. */
	close(out[0]);
	*ns = now_ns() - t0;
	return rc;
}

/* Forks the client process with the record pipe.  0, or -1 with errno. */
static int start_client(const writer_plan *plan, uint16_t port, uint64_t ns,
                        int *fd)
{
	pid_t parent = getpid();
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	client_pid = fork();
	if (client_pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (client_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(p[0]);
		http_client_main(plan, port, tls_ctx, tls_cert, ns, p[1]);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	*fd = p[0];
	return 0;
}

/* A pipe that is already at end of file: what a client that never started
 * sent.  0, or -1 with errno. */
static int empty_pipe(int *fd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	close(p[1]);
	*fd = p[0];
	return 0;
}

static void kill_and_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Reads exactly LEN bytes.  0, or -1 (end of file, error, timeout). */
static int read_exact(http_conn *c, void *buf, size_t len)
{
	size_t have = 0;

	while (have < len) {
		ssize_t n = http_conn_recv(c, (char *)buf + have, len - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return 0;
}

/*
 * The first cycle's check that the server speaks what the client will:
 * the TLS handshake against the pinned certificate (--http-tls), ALPN h2
 * and the server's first frame being SETTINGS (--http2), a QUIC handshake
 * with ALPN h3 on the same port (--http3).  Without it a
 * server that cannot would show as a run with no acknowledged writes, or
 * as violations, instead of a set-up problem.  0, or -1 with *WHY.
 */
static int probe(const torture_options *o, uint16_t port, const char **why)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	                              "\0\0\0\4\0\0\0\0\0"; /* SETTINGS */
	struct iovec iov = {.iov_base = (void *)preface,
	                    .iov_len = sizeof(preface) - 1};
	unsigned char hd[9];
	char alpn[16];
	http_conn c;
	int rc = 0;

	struct sigaction ign = {.sa_handler = SIG_IGN}, old;

	if (!o->http_tls && !o->http2)
		return 0;
	/* OpenSSL writes with write(2): a server that hangs up must not
	 * end torture with SIGPIPE. */
	sigaction(SIGPIPE, &ign, &old);
	rc = http_conn_open(&c, port, tls_ctx, why);
	if (rc < 0) {
		if (rc == -1)
			*why = o->http_tls ? "the TLS handshake failed (does it "
			       "take --tls-cert?)" : strerror(errno);
		sigaction(SIGPIPE, &old, NULL);
		return -1;
	}
	if (o->http2 && tls_ctx &&
	    strcmp(http_conn_alpn(&c, alpn, sizeof(alpn)), "h2") != 0) {
		*why = "it did not choose h2 by ALPN: it does not speak HTTP/2";
		rc = -1;
	} else if (o->http2 && (http_conn_sendv(&c, &iov, 1) < 0 ||
	                        read_exact(&c, hd, sizeof(hd)) < 0 ||
	                        hd[3] != 4 /* SETTINGS */ || hd[5] || hd[6] ||
	                        hd[7] || hd[8])) {
		*why = "its answer to the HTTP/2 connection preface is not a "
		       "SETTINGS frame: it does not speak HTTP/2";
		rc = -1;
	}
	http_conn_close(&c);
	sigaction(SIGPIPE, &old, NULL);
	if (rc == 0 && o->http3)
		rc = http3_probe(port, tls_cert, why);
	return rc;
}

/* The first cycle's set-up for --http-tls: certificate, key, context. */
static int tls_setup(const writer_plan *plan)
{
	if (!plan->opt->http_tls || tls_ctx)
		return 0;
	if (http_conn_make_cert(plan->path, tls_cert, tls_key,
	                        sizeof(tls_cert)) < 0)
		return -1;
	tls_ctx = http_conn_tls_context(plan->opt->http2);
	return tls_ctx ? 0 : -1;
}

int http_target_spawn(const writer_plan *plan, int first, pid_t *pid,
                      int *fd)
{
	const char *why = "";
	uint16_t port = 0;
	uint64_t ns = 0;

	*pid = -1;
	if (first && tls_setup(plan) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (start_server(plan, pid, &port, &ns, &why) < 0 ||
	    (first && probe(plan->opt, port, &why) < 0)) {
		fprintf(stderr, "torture: keel-serve (%s) %s: %s\n", serve_bin,
		        port ? "cannot be written to as asked" :
		               "did not start", why);
		if (!first && *pid > 0) /* the harness reports it */
			return empty_pipe(fd);
		kill_and_reap(*pid);
		errno = ECHILD;
		return -1;
	}
	if (start_client(plan, port, ns, fd) < 0) {
		int e = errno;
		kill_and_reap(*pid);
		errno = e;
		return -1;
	}
	return 0;
}

int http_target_reap(void)
{
	uint64_t deadline = now_ns() + CLIENT_END_TIMEOUT_MS * 1000000ull;
	struct timespec nap = {.tv_nsec = 250000};
	int status = 0;
	pid_t r = 0;

	if (client_pid < 0)
		return 0;
	while ((r = waitpid(client_pid, &status, WNOHANG)) <= 0) {
		if (r < 0 && errno != EINTR)
			break;
		if (now_ns() >= deadline) {
			fprintf(stderr, "torture: the HTTP client process was "
			        "still running %d ms after the server died; "
			        "killed\n", CLIENT_END_TIMEOUT_MS);
			kill_and_reap(client_pid);
			client_pid = -1;
			return -1;
		}
		nanosleep(&nap, NULL);
	}
	client_pid = -1;
	if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "torture: the HTTP client process ended with %s %d\n",
	        r > 0 && WIFSIGNALED(status) ? "signal" : "exit status",
	        r > 0 && WIFSIGNALED(status) ? WTERMSIG(status) :
	                                       WEXITSTATUS(status));
	return -1;
}
