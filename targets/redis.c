/*
 * redis.c -- redis-server as a torture --target redis:CONFIG adapter
 * (adapter.h).  The adapter starts redis-server itself (under the shim too:
 * it inherits LD_PRELOAD and lives in the workload's process group, so
 * torture's kill takes it down with the client) on DIR with
 *
 *   --appendonly yes --appendfsync CONFIG --save ""
 *
 * (CONFIG: always, everysec or no), listening on a Unix socket only
 * (--port 0: nothing on the network, and no port two parallel runs could
 * both pick).  The workload is a client: each put is one SET, acknowledged
 * when the server answered +OK.  The checker starts the server on the same
 * directory (it loads the AOF), reads every key (KEYS *, then GET each),
 * and shuts it down with SHUTDOWN NOSAVE.  Every wait is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adapter.h"

#define WAIT_MS 30000 /* the longest a start or a reply may take */

static const char *const configs[] = { "always", "everysec", "no", NULL };

typedef struct store {
	pid_t server;
	int sock;
	char path[108];   /* the Unix socket */
	char buf[65536];  /* replies */
	size_t have;
} store;

static const char *server_prog(void)
{
	const char *p = getenv("REDIS_SERVER");

	return p && *p ? p : "redis-server";
}

static const char *version(void)
{
	static char v[128];
	char cmd[300];
	FILE *f;

	snprintf(cmd, sizeof cmd, "%s --version", server_prog());
	f = popen(cmd, "r");
	if (!f || !fgets(v, sizeof v, f))
		snprintf(v, sizeof v, "unknown (%s --version failed)\n",
		         server_prog());
	if (f)
		pclose(f);
	v[strcspn(v, "\n")] = '\0';
	/* "Redis server v=7.0.15 sha=..." -> "7.0.15" */
	if (strstr(v, "v=")) {
		memmove(v, strstr(v, "v=") + 2, strlen(strstr(v, "v=") + 2) + 1);
		v[strcspn(v, " ")] = '\0';
	}
	return v;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int start_server(store *s, const char *dir, const char *fsync)
{
	char sockopt[140];
	const char *tmp = getenv("TMPDIR");

	snprintf(s->path, sizeof s->path, "%s/keel-redis.%d.sock",
	         tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp", (int)getpid());
	unlink(s->path);
	snprintf(sockopt, sizeof sockopt, "%s", s->path);
	s->server = fork();
	if (s->server < 0) {
		perror("redis: fork");
		return -1;
	}
	if (s->server == 0) {
		/* the server's log goes to stderr, which torture keeps */
		dup2(2, 1);
		execlp(server_prog(), server_prog(), "--port", "0",
		       "--unixsocket", sockopt, "--unixsocketperm", "700",
		       "--dir", dir, "--appendonly", "yes", "--appendfsync",
		       fsync, "--save", "", "--daemonize", "no",
		       "--loglevel", "warning", "--logfile", "",
		       "--aof-use-rdb-preamble", "yes", (char *)NULL);
		fprintf(stderr, "redis: cannot run %s: %s (apt-get install -y "
		        "redis-server, or name it in REDIS_SERVER)\n",
		        server_prog(), strerror(errno));
		_exit(127);
	}
	return 0;
}

/* Connects to the server's socket, waiting at most WAIT_MS for it. */
static int connect_server(store *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long deadline = now_ms() + WAIT_MS;
	int status;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", s->path);
	for (;;) {
		s->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s->sock < 0)
			return -1;
		if (connect(s->sock, (struct sockaddr *)&sa, sizeof sa) == 0)
			return 0;
		close(s->sock);
		s->sock = -1;
		if (waitpid(s->server, &status, WNOHANG) == s->server) {
			s->server = 0;
			fprintf(stderr, "redis: the server exited (status %d) "
			        "before it accepted a connection\n",
			        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			return -1;
		}
		if (now_ms() > deadline) {
			fprintf(stderr, "redis: the server did not listen on %s "
			        "within %d ms\n", s->path, WAIT_MS);
			return -1;
		}
		usleep(10000);
	}
}

static int send_all(store *s, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = send(s->sock, buf, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr, "redis: send: %s\n", strerror(errno));
			return -1;
		}
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One command in RESP: *N $len arg ... */
static int command(store *s, int argc, const char *const *argv)
{
	char buf[1024];
	size_t n = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", argc);

	for (int i = 0; i < argc && n < sizeof buf; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n",
		                      strlen(argv[i]), argv[i]);
	if (n >= sizeof buf)
		return -1;
	return send_all(s, buf, n);
}

/* Reads until BUF holds one whole line ("\r\n"); returns its length
 * without the CRLF, consuming it into LINE; -1 on EOF, error or WAIT_MS. */
static int read_line(store *s, char *line, size_t cap)
{
	long deadline = now_ms() + WAIT_MS;

	for (;;) {
		char *crlf = memmem(s->buf, s->have, "\r\n", 2);
		if (crlf) {
			size_t len = (size_t)(crlf - s->buf);
			if (len >= cap)
				return -1;
			memcpy(line, s->buf, len);
			line[len] = '\0';
			s->have -= len + 2;
			memmove(s->buf, crlf + 2, s->have);
			return (int)len;
		}
		struct pollfd p = { s->sock, POLLIN, 0 };
		long left = deadline - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			fprintf(stderr, "redis: no reply within %d ms\n", WAIT_MS);
			return -1;
		}
		ssize_t k = recv(s->sock, s->buf + s->have,
		                 sizeof s->buf - s->have, 0);
		if (k <= 0) {
			fprintf(stderr, "redis: the server closed the connection"
			        "%s%s\n", k < 0 ? ": " : "",
			        k < 0 ? strerror(errno) : "");
			return -1;
		}
		s->have += (size_t)k;
	}
}

/* Waits until the server has loaded its data (PING answers +PONG, not
 * -LOADING). */
static int wait_loaded(store *s)
{
	static const char *const ping[] = { "PING" };
	long deadline = now_ms() + WAIT_MS;
	char line[512];

	for (;;) {
		if (command(s, 1, ping) != 0 || read_line(s, line, sizeof line) < 0)
			return -1;
		if (strcmp(line, "+PONG") == 0)
			return 0;
		if (strncmp(line, "-LOADING", 8) != 0 || now_ms() > deadline) {
			fprintf(stderr, "redis: PING: %s\n", line);
			return -1;
		}
		usleep(10000);
	}
}

static int rd_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);

	if (!s)
		return -1;
	s->sock = -1;
	*out = s;
	if (start_server(s, dir, configs[config]) != 0 ||
	    connect_server(s) != 0 || wait_loaded(s) != 0)
		return -1;
	return 0;
}

static int rd_put(void *st, const char *key, const char *val)
{
	const char *const set[] = { "SET", key, val };
	store *s = st;
	char line[512];

	if (command(s, 3, set) != 0 || read_line(s, line, sizeof line) < 0)
		return -1;
	if (strcmp(line, "+OK") != 0) {
		fprintf(stderr, "redis: SET %s: %s\n", key, line);
		return -1;
	}
	return 0;
}

/* A bulk string reply ($N then N bytes), or "$-1" (nil: *VAL empty). */
static int read_bulk(store *s, char *val, size_t cap)
{
	char line[512];
	long n;

	if (read_line(s, line, sizeof line) < 0)
		return -1;
	if (line[0] != '$') {
		fprintf(stderr, "redis: expected a bulk string, got %s\n", line);
		return -1;
	}
	n = strtol(line + 1, NULL, 10);
	if (n < 0) {
		val[0] = '\0';
		return 0;
	}
	if ((size_t)n >= cap || read_line(s, val, cap) != n)
		return -1;
	return 0;
}

static int rd_check(void *st)
{
	static const char *const keys[] = { "KEYS", "*" };
	store *s = st;
	char line[512], names[ADAPTER_KEYS * 4][64], val[512];
	long n;

	if (command(s, 2, keys) != 0 || read_line(s, line, sizeof line) < 0)
		return -1;
	if (line[0] != '*') {
		fprintf(stderr, "redis: KEYS: %s\n", line);
		return -1;
	}
	n = strtol(line + 1, NULL, 10);
	if (n < 0 || n > ADAPTER_KEYS * 4) {
		fprintf(stderr, "redis: KEYS: %ld keys\n", n);
		return -1;
	}
	for (long i = 0; i < n; i++)
		if (read_bulk(s, names[i], sizeof names[i]) != 0)
			return -1;
	for (long i = 0; i < n; i++) {
		const char *const get[] = { "GET", names[i] };
		if (command(s, 2, get) != 0 || read_bulk(s, val, sizeof val) != 0)
			return -1;
		if (val[0])
			printf("%s %s\n", names[i], val);
	}
	return 0;
}

/* SHUTDOWN NOSAVE, then wait (bounded) for the server; SIGKILL after. */
static void rd_close(void *st)
{
	static const char *const shut[] = { "SHUTDOWN", "NOSAVE" };
	store *s = st;
	long deadline = now_ms() + WAIT_MS;
	int status;

	if (s->sock >= 0) {
		command(s, 2, shut);
		close(s->sock);
	}
	while (s->server > 0 && waitpid(s->server, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			fprintf(stderr, "redis: the server did not stop within "
			        "%d ms: killing it\n", WAIT_MS);
			kill(s->server, SIGKILL);
			waitpid(s->server, &status, 0);
			break;
		}
		usleep(10000);
	}
	unlink(s->path);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "redis", configs, version, rd_open, rd_put,
		rd_check, rd_close };

	return adapter_main(&a, argc, argv);
}
