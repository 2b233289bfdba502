/*
 * serve_main.c -- keel-serve: flags, listeners, shards, signals.
 *
 *   keel-serve --db PATH [--listen ADDR:PORT] [--threads N] [--max-conns N]
 *              [--max-body BYTES] [--idle-timeout SECONDS]
 *              [--busy-poll auto|USEC]
 *              [--no-direct-commit] [--no-batch-threads]
 *
 * Startup prints one line, "keel-serve: listening on ADDR:PORT ...", once
 * every listener is bound, so scripts may wait for it (and learn the port
 * when --listen asked for port 0).  SIGTERM or SIGINT: stop accepting,
 * finish the answers in flight (at most 10 seconds), close the store, exit 0.
 */
#include "serve.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fputs("usage: keel-serve --db PATH [options]\n"
	      "  --listen ADDR:PORT   address to listen on (default 127.0.0.1:8080;"
	      " port 0 picks one)\n"
	      "  --db PATH            the keel store (created if missing)\n"
	      "  --threads N          shards, each with its own listener and epoll"
	      " (default 1)\n"
	      "  --max-conns N        connections over all shards; more get 503"
	      " (default 10000)\n"
	      "  --max-body BYTES     largest PUT body, k/m/g suffixes (default 64m)\n"
	      "  --idle-timeout SECS  close connections idle this long (default 60)\n"
	      "  --busy-poll auto|USEC  before a shard sleeps, poll its sockets:"
	      " auto (default)\n"
	      "                       while commits that lately took under 1 ms"
	      " are in flight,\n"
	      "                       for at most that long; USEC (0-10000) always,"
	      " up to USEC;\n"
	      "                       0 never.  Polling costs CPU time"
	      " (docs/http.md)\n"
	      "  --no-direct-commit   commit every write through keel's committer"
	      " thread (for A/B\n"
	      "                       runs); by default a write with nothing else"
	      " in flight is\n"
	      "                       committed on its shard's thread\n"
	      "  --no-batch-threads   keel's committer and compactor threads run as"
	      " ordinary\n"
	      "                       threads (for A/B runs); by default they run"
	      " under SCHED_BATCH\n"
	      "                       and do not preempt a shard that wakes them\n"
	      "  --help               this text\n"
	      "GET/HEAD/PUT/DELETE /<key>, GET /?prefix=P&after=K&limit=N; a PUT is"
	      " answered once durable.\n", f);
}

static int parse_listen(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535 || colon[1] == 0)
		return -1;
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (host[0] == 0 || strcmp(host, "*") == 0)
		a->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		return -1;
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct serve_config *cfg)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"db", required_argument, NULL, 'd'},
		{"threads", required_argument, NULL, 't'},
		{"max-conns", required_argument, NULL, 'c'},
		{"max-body", required_argument, NULL, 'b'},
		{"idle-timeout", required_argument, NULL, 'i'},
		{"busy-poll", required_argument, NULL, 'p'},
		{"no-direct-commit", no_argument, NULL, 'D'},
		{"no-batch-threads", no_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double secs;
	int ch;

	parse_listen("127.0.0.1:8080", &cfg->addr);
	cfg->threads = 1;
	cfg->max_conns = 10000;
	cfg->max_body = 64u << 20;
	cfg->idle_timeout_ms = 60000;
	cfg->direct_commit = 1;
	cfg->batch_threads = 1;
	cfg->busy_poll_us = -1; /* auto */
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (parse_listen(optarg, &cfg->addr) < 0)
				goto bad;
			break;
		case 'd': cfg->db_path = optarg; break;
		case 't':
			cfg->threads = atoi(optarg);
			if (cfg->threads < 1 || cfg->threads > 256)
				goto bad;
			break;
		case 'c':
			cfg->max_conns = atoi(optarg);
			if (cfg->max_conns < 1)
				goto bad;
			break;
		case 'b':
			if (parse_size(optarg, &cfg->max_body) < 0 ||
			    cfg->max_body > KEEL_VALUE_MAX)
				goto bad;
			break;
		case 'i':
			secs = atof(optarg);
			if (secs <= 0 || secs > 86400)
				goto bad;
			cfg->idle_timeout_ms = (int)(secs * 1000);
			break;
		case 'p': {
			char *end;
			long us;
			if (strcmp(optarg, "auto") == 0) {
				cfg->busy_poll_us = -1;
				break;
			}
			us = strtol(optarg, &end, 10);
			if (end == optarg || *end || us < 0 || us > 10000)
				goto bad;
			cfg->busy_poll_us = (int)us;
			break;
		}
		case 'D': cfg->direct_commit = 0; break;
		case 'B': cfg->batch_threads = 0; break;
		case 'h': usage(stdout); exit(0);
		default: goto bad;
		}
	}
	if (optind != argc || cfg->db_path == NULL)
		goto bad;
	return 0;
bad:
	usage(stderr);
	return -1;
}

/* Raises the descriptor limit as far as allowed and keeps --max-conns
 * under it (listeners, eventfds, epolls and the store need a few). */
static void raise_nofile(struct serve_config *cfg)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)cfg->max_conns + 64 + 4 * (rlim_t)cfg->threads;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < need) {
		rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < need) {
		int max = (int)rl.rlim_cur - 64 - 4 * cfg->threads;
		fprintf(stderr, "keel-serve: file limit %llu: --max-conns lowered to %d\n",
		        (unsigned long long)rl.rlim_cur, max);
		cfg->max_conns = max > 1 ? max : 1;
	}
}

static int listener(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	/* TCP_NODELAY here is inherited by every accepted socket (Linux), which
	 * saves a setsockopt per connection: answers are whole, so Nagle
	 * would only delay them. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)a, sizeof *a) < 0 || listen(fd, 4096) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * One listener per shard on the same port.  Port 0 is resolved by the first
 * bind and reused by the others: asking each for port 0 would give each its
 * own port, and all the load would land on one.
 */
static int open_listeners(struct serve_config *cfg, int *fds)
{
	socklen_t alen = sizeof cfg->addr;
	int i;

	for (i = 0; i < cfg->threads; i++) {
		fds[i] = listener(&cfg->addr);
		if (fds[i] < 0) {
			fprintf(stderr, "keel-serve: listen: %s\n", strerror(errno));
			while (i--)
				close(fds[i]);
			return -1;
		}
		if (i == 0 && getsockname(fds[0], (struct sockaddr *)&cfg->addr,
		                          &alen) < 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct serve_server srv;
	int *fds = NULL, i, rc, sig, started = 0, status = 1;
	char ip[INET_ADDRSTRLEN];
	keel_stats st;
	uint64_t direct = 0;
	sigset_t set;

	if (parse_args(argc, argv, &srv.cfg) < 0)
		return 2;
	raise_nofile(&srv.cfg);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* shards inherit the mask */

	/* The engine's threads under SCHED_BATCH: a shard submits a burst of
	 * async commits and the committer it wakes waits for the shard to
	 * block, instead of preempting it once per commit (docs/http.md:
	 * 1.26-1.28x the durable PUTs at 64 connections, a quarter less CPU
	 * each). */
	keel_options kopt = {.flags = srv.cfg.batch_threads ? KEEL_BATCH_THREADS : 0};
	rc = keel_open(srv.cfg.db_path, &kopt, &srv.db);
	if (rc != KEEL_OK) {
		fprintf(stderr, "keel-serve: %s: %s\n", srv.cfg.db_path,
		        keel_strerror(rc));
		return 1;
	}
	fds = calloc((size_t)srv.cfg.threads, sizeof *fds);
	srv.shards = calloc((size_t)srv.cfg.threads, sizeof *srv.shards);
	if (fds == NULL || srv.shards == NULL || open_listeners(&srv.cfg, fds) < 0)
		goto out_close;
	for (i = 0; i < srv.cfg.threads; i++) {
		if (serve_shard_init(&srv.shards[i], &srv, i, fds[i]) < 0 ||
		    pthread_create(&srv.shards[i].thread, NULL, serve_shard_run,
		                   &srv.shards[i]) != 0) {
			fprintf(stderr, "keel-serve: shard %d: %s\n", i, strerror(errno));
			atomic_store(&srv.stopping, 1);
			break;
		}
		started++;
	}
	if (started == srv.cfg.threads) {
		inet_ntop(AF_INET, &srv.cfg.addr.sin_addr, ip, sizeof ip);
		printf("keel-serve: listening on %s:%u (%d threads, max %d connections)\n",
		       ip, ntohs(srv.cfg.addr.sin_port), srv.cfg.threads,
		       srv.cfg.max_conns);
		fflush(stdout);
		while (sigwait(&set, &sig) != 0)
			;
		status = 0;
	}
	atomic_store(&srv.stopping, 1);
	for (i = 0; i < started; i++)
		serve_shard_wake(&srv.shards[i]);
	for (i = 0; i < started; i++)
		pthread_join(srv.shards[i].thread, NULL);
	for (i = 0; i < started; i++) /* the shards have ended */
		direct += srv.shards[i].direct_commits;
	if (keel_stat(srv.db, &st) == KEEL_OK)
		fprintf(stderr, "keel-serve: stopped: %llu commits in %llu syncs, "
		        "txid %llu, %llu keys, %llu direct commits\n",
		        (unsigned long long)st.commits,
		        (unsigned long long)st.syncs, (unsigned long long)st.txid,
		        (unsigned long long)st.keys, (unsigned long long)direct);
out_close:
	rc = keel_close(srv.db);
	if (rc != KEEL_OK) {
		fprintf(stderr, "keel-serve: close: %s\n", keel_strerror(rc));
		status = 1;
	}
	free(srv.shards);
	free(fds);
	return status;
}
