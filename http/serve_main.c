/*
 * serve_main.c -- keel-serve: flags, listeners, shards, signals.
 *
 *   keel-serve --db PATH [--listen ADDR:PORT] [--threads N] [--max-conns N]
 *              [--max-body BYTES] [--body-budget BYTES]
 *              [--idle-timeout DUR] [--header-timeout DUR]
 *              [--body-min-rate BYTES] [--busy-poll auto|USEC]
 *              [--defer-accept SECONDS] [--sendfile-min BYTES]
 *              [--no-direct-commit] [--no-batch-threads]
 *              [--tokens FILE] [--insecure-open]
 *              [--tls-cert FILE --tls-key FILE] [--max-handshakes N]
 *              [--no-http3] [--h3-retry auto|always] [--no-0rtt]
 *   keel-serve --hash-token TOKEN|- read|write [PREFIX]
 *
 * Startup prints one line, "keel-serve: listening on ADDR:PORT ...", once
 * every listener is bound, so scripts may wait for it (and learn the port
 * when --listen asked for port 0).  SIGTERM or SIGINT: stop accepting,
 * finish the answers in flight (at most 10 seconds), close the store, exit 0.
 * With --tokens, SIGHUP re-reads the tokens file (serve.h, TOKENS); a file
 * that does not load leaves the tokens in force as they were.  With
 * --tls-cert, SIGHUP also loads the certificate and key again into a new
 * context for new connections (serve.h, TLS); a pair that does not load
 * leaves the old one in force; HTTP/3 (QUIC, serve_h3.h) takes the new
 * pair for its new handshakes too.
 */
#include "serve.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RETIRED_MAX 16 /* replaced token tables and TLS contexts not
                          yet freed */

/* A token table or TLS context (with QUIC's certificate) replaced by a
 * SIGHUP, freed once every shard has seen generation GEN (serve.h,
 * TOKENS).  The table or the TLS context is set. */
struct retired {
	tokens_table *table;
	SSL_CTX *tls;
	struct h3_cert *h3; /* QUIC's, with tls; NULL: none           */
	uint64_t gen;
};

static void usage(FILE *f)
{
	fputs("usage: keel-serve --db PATH [options]\n"
	      "  --listen ADDR:PORT   address to listen on (default 127.0.0.1:8080;"
	      " port 0 picks one;\n"
	      "                       ADDR may be a host name, * or empty for every"
	      " address)\n"
	      "  --db PATH            the keel store (created if missing)\n"
	      "  --threads N          shards, each with its own listener and epoll"
	      " (default 1)\n"
	      "  --max-conns N        connections over all shards; more get 503"
	      " (default 10000)\n"
	      "  --max-handshakes N   TLS handshakes in progress over all shards"
	      " (about 45 KB\n"
	      "                       each); a ClientHello past it closes its"
	      " connection\n"
	      "                       (default 1000)\n"
	      "  --max-handshakes-per-source N  of those, what one source (an"
	      " IPv4 /24, an\n"
	      "                       IPv6 /64) may hold; its next ClientHello"
	      " closes its\n"
	      "                       connection (default an eighth of"
	      " --max-handshakes)\n"
	      "  --max-body BYTES     largest PUT body, k/m/g suffixes (default 64m)\n"
	      "  --body-budget BYTES  memory for all request bodies held at once;"
	      " past it 503\n"
	      "                       with Retry-After (default 256m, at least"
	      " --max-body)\n"
	      "  --idle-timeout DUR   close connections idle this long (default 60s)\n"
	      "  --header-timeout DUR a request head must arrive whole within this"
	      " (default 10s);\n"
	      "                       else 408 and close\n"
	      "  --body-min-rate BYTES  a body must bring this many bytes a second,"
	      " measured over\n"
	      "                       windows of --header-timeout; else 408 and close"
	      " (default 8k)\n"
	      "  --busy-poll auto|USEC  before a shard sleeps, poll its sockets:"
	      " auto (default)\n"
	      "                       while commits that lately took under 1 ms"
	      " are in flight,\n"
	      "                       for at most that long; USEC (0-10000) always,"
	      " up to USEC;\n"
	      "                       0 never.  Polling costs CPU time"
	      " (docs/http.md)\n"
	      "  --defer-accept SECONDS  the kernel hands a connection over only"
	      " once its first\n"
	      "                       bytes come, or after about SECONDS"
	      " (TCP_DEFER_ACCEPT;\n"
	      "                       0 = off, the default): docs/http.md\n"
	      "  --sendfile-min BYTES  send a GET body of at least BYTES with"
	      " sendfile(2), the\n"
	      "                       file's pages by reference (plain"
	      " HTTP/1.1; default 64k,\n"
	      "                       0 = never, always copy): docs/http.md\n"
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
	      "  --tokens FILE        requests need Authorization: Bearer TOKEN, a"
	      " token of FILE\n"
	      "                       (lines: SHA256-HEX read|write [PREFIX]);"
	      " SIGHUP re-reads it\n"
	      "  --insecure-open      without --tokens, listen on an address other"
	      " than loopback\n"
	      "                       anyway (by default that is refused)\n"
	      "  --tls-cert FILE      serve HTTPS (TLS 1.2 or 1.3; ALPN h2, then"
	      " http/1.1): the\n"
	      "                       certificate, then its chain (PEM); SIGHUP"
	      " loads it and\n"
	      "                       the key again\n"
	      "  --tls-key FILE       the certificate's private key (PEM), readable"
	      " by its owner\n"
	      "                       only (chmod 600); the handshake must finish"
	      " within\n"
	      "                       --header-timeout\n"
	      "  --no-http3           with --tls-cert, do not serve HTTP/3 (QUIC"
	      " on the same UDP\n"
	      "                       port) nor announce it with Alt-Svc\n"
	      "  --h3-retry WHEN      when a new QUIC connection must prove its"
	      " address with a\n"
	      "                       Retry first: auto (a shard's handshakes"
	      " past its budget)\n"
	      "                       or always\n"
	      "  --no-0rtt            HTTP/3 takes no early data (0-RTT); session"
	      " tickets\n"
	      "                       still let clients resume\n"
	      "  --help               this text\n"
	      "keel-serve --hash-token TOKEN|- read|write [PREFIX]\n"
	      "                       print the tokens-file line for TOKEN (- reads"
	      " it from stdin)\n"
	      "DUR: a number of seconds, or with a suffix ms, s or m (1.5s, 250ms,"
	      " 2m).\n"
	      "GET/HEAD/PUT/DELETE /<key>, GET /?prefix=P&after=K&limit=N; a PUT is"
	      " answered once durable.\n"
	      "HTTP/1.1, and HTTP/2: h2 over TLS (ALPN), h2c on a plain port by"
	      " prior knowledge.\n", f);
}

/* A bad flag value: names it and what was expected.  Returns -1. */
static int bad_value(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, "keel-serve: %s '%s': %s\n"
	                "try 'keel-serve --help'\n", flag, value, want);
	return -1;
}

/* ADDR:PORT, ADDR an IPv4 address, a host name (resolved to its first
 * IPv4 address), "*" or empty (every address).  Returns 0, or -1 after
 * saying what is wrong. */
static int parse_listen(const char *s, struct sockaddr_in *a)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char host[256];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;
	int rc;

	if (colon == NULL)
		return bad_value("--listen", s, "expected ADDR:PORT, e.g. "
		                 "127.0.0.1:8080");
	if ((size_t)(colon - s) >= sizeof host)
		return bad_value("--listen", s, "the address is too long");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == 0 || *end || errno || port < 0 || port > 65535)
		return bad_value("--listen", s, "the port must be a number from 0 "
		                 "to 65535");
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (host[0] == 0 || strcmp(host, "*") == 0) {
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
		return 0;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		char why[320];
		snprintf(why, sizeof why, "cannot resolve '%s': %s", host,
		         gai_strerror(rc));
		return bad_value("--listen", s, why);
	}
	a->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

/* Is A loopback (127.0.0.0/8)?  A host name was resolved to its first
 * IPv4 address by parse_listen, so "localhost" counts when it names one. */
static int is_loopback(const struct sockaddr_in *a)
{
	return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}

/* BYTES with an optional k/m/g suffix (binary). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || s[0] == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A duration: a bare number is seconds; suffixes ms, s and m (the rule
 * every keel tool follows).  Fractions are fine (1.5s).  *MS gets
 * milliseconds. */
static int parse_duration_ms(const char *s, double *ms)
{
	char *end;
	double v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno)
		return -1;
	if (strcmp(end, "ms") == 0)
		*ms = v;
	else if (*end == 0 || strcmp(end, "s") == 0)
		*ms = v * 1000;
	else if (strcmp(end, "m") == 0)
		*ms = v * 60000;
	else
		return -1;
	return 0;
}

/* An integer from LO to HI. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct serve_config *cfg)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"db", required_argument, NULL, 'd'},
		{"threads", required_argument, NULL, 't'},
		{"max-conns", required_argument, NULL, 'c'},
		{"max-handshakes", required_argument, NULL, 'S'},
		{"max-handshakes-per-source", required_argument, NULL, 'P'},
		{"max-body", required_argument, NULL, 'b'},
		{"body-budget", required_argument, NULL, 'M'},
		{"idle-timeout", required_argument, NULL, 'i'},
		{"header-timeout", required_argument, NULL, 'H'},
		{"body-min-rate", required_argument, NULL, 'r'},
		{"busy-poll", required_argument, NULL, 'p'},
		{"defer-accept", required_argument, NULL, 'A'},
		{"sendfile-min", required_argument, NULL, 'F'},
		{"no-direct-commit", no_argument, NULL, 'D'},
		{"no-batch-threads", no_argument, NULL, 'B'},
		{"tokens", required_argument, NULL, 'k'},
		{"insecure-open", no_argument, NULL, 'O'},
		{"tls-cert", required_argument, NULL, 'C'},
		{"tls-key", required_argument, NULL, 'K'},
		{"no-http3", no_argument, NULL, '3'},
		{"h3-retry", required_argument, NULL, 'R'},
		{"no-0rtt", no_argument, NULL, '0'},
		{"hash-token", no_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *flag;
	double ms;
	int ch;

	parse_listen("127.0.0.1:8080", &cfg->addr);
	cfg->threads = 1;
	cfg->http3 = 1;
	cfg->max_conns = 10000;
	cfg->max_handshakes = 1000;
	cfg->max_body = 64u << 20;
	cfg->body_budget = 256u << 20;
	cfg->idle_timeout_ms = 60000;
	cfg->header_timeout_ms = 10000;
	cfg->body_min_rate = 8u << 10;
	cfg->direct_commit = 1;
	cfg->batch_threads = 1;
	cfg->busy_poll_us = -1; /* auto */
	cfg->sendfile_min = SERVE_SENDFILE_MIN;
	opterr = 0; /* unknown options are named below */
	while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		flag = argv[optind - 1];
		switch (ch) {
		case 'l':
			if (parse_listen(optarg, &cfg->addr) < 0)
				return -1;
			break;
		case 'd': cfg->db_path = optarg; break;
		case 't':
			if (parse_int(optarg, 1, 256, &cfg->threads) < 0)
				return bad_value("--threads", optarg,
				                 "expected a number from 1 to 256");
			break;
		case 'c':
			if (parse_int(optarg, 1, 10000000, &cfg->max_conns) < 0)
				return bad_value("--max-conns", optarg,
				                 "expected a number from 1 to 10000000");
			break;
		case 'S':
			if (parse_int(optarg, 1, 10000000, &cfg->max_handshakes) < 0)
				return bad_value("--max-handshakes", optarg,
				                 "expected a number from 1 to 10000000");
			break;
		case 'P':
			if (parse_int(optarg, 1, 10000000,
			              &cfg->max_handshakes_per_source) < 0)
				return bad_value("--max-handshakes-per-source",
				                 optarg, "expected a number from 1 "
				                 "to 10000000");
			break;
		case 'b':
			if (parse_size(optarg, &cfg->max_body) < 0 ||
			    cfg->max_body > KEEL_VALUE_MAX)
				return bad_value("--max-body", optarg,
				                 "expected bytes with an optional k, m or g"
				                 " suffix, under 2g");
			break;
		case 'M':
			if (parse_size(optarg, &cfg->body_budget) < 0)
				return bad_value("--body-budget", optarg,
				                 "expected bytes with an optional k, m or g"
				                 " suffix");
			break;
		case 'i':
			if (parse_duration_ms(optarg, &ms) < 0 || ms < 1 ||
			    ms > 86400000)
				return bad_value("--idle-timeout", optarg,
				                 "expected a duration from 1ms to 24 hours "
				                 "(60, 1.5s, 250ms, 2m)");
			cfg->idle_timeout_ms = (int)ms;
			break;
		case 'H':
			if (parse_duration_ms(optarg, &ms) < 0 || ms < 1 ||
			    ms > 86400000)
				return bad_value("--header-timeout", optarg,
				                 "expected a duration from 1ms to 24 hours "
				                 "(10, 1.5s, 250ms, 2m)");
			cfg->header_timeout_ms = (int)ms;
			break;
		case 'r':
			if (parse_size(optarg, &cfg->body_min_rate) < 0 ||
			    cfg->body_min_rate > KEEL_VALUE_MAX)
				return bad_value("--body-min-rate", optarg,
				                 "expected bytes a second with an optional k,"
				                 " m or g suffix (0: any progress will do)");
			break;
		case 'p':
			if (strcmp(optarg, "auto") == 0)
				cfg->busy_poll_us = -1;
			else if (parse_int(optarg, 0, 10000, &cfg->busy_poll_us) < 0)
				return bad_value("--busy-poll", optarg,
				                 "expected auto or microseconds from 0 to "
				                 "10000");
			break;
		case 'A':
			if (parse_int(optarg, 0, 3600, &cfg->defer_accept_s) < 0)
				return bad_value("--defer-accept", optarg,
				                 "expected seconds from 0 to 3600");
			break;
		case 'F':
			if (parse_size(optarg, &cfg->sendfile_min) < 0)
				return bad_value("--sendfile-min", optarg,
				                 "expected bytes, k/m/g suffixes, "
				                 "or 0 for never");
			break;
		case 'D': cfg->direct_commit = 0; break;
		case 'B': cfg->batch_threads = 0; break;
		case 'k': cfg->tokens_path = optarg; break;
		case 'O': cfg->insecure_open = 1; break;
		case 'C': cfg->tls_cert = optarg; break;
		case 'K': cfg->tls_key = optarg; break;
		case '3': cfg->http3 = 0; break;
		case '0': cfg->h3_no_0rtt = 1; break;
		case 'R':
			if (strcmp(optarg, "always") == 0)
				cfg->h3_retry_always = 1;
			else if (strcmp(optarg, "auto") == 0)
				cfg->h3_retry_always = 0;
			else
				return bad_value("--h3-retry", optarg, "auto or always");
			break;
		case 'T':
			fprintf(stderr, "keel-serve: --hash-token is a command of its "
			        "own, first on the line: keel-serve --hash-token "
			        "TOKEN|- read|write [PREFIX]\n");
			return -1;
		case 'h': usage(stdout); exit(0);
		case ':':
			fprintf(stderr, "keel-serve: %s needs a value\n"
			                "try 'keel-serve --help'\n", flag);
			return -1;
		default:
			fprintf(stderr, "keel-serve: unknown option '%s'\n"
			                "try 'keel-serve --help'\n", flag);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "keel-serve: unexpected argument '%s'\n"
		                "try 'keel-serve --help'\n", argv[optind]);
		return -1;
	}
	if (cfg->db_path == NULL) {
		fprintf(stderr, "keel-serve: --db PATH is required\n"
		                "try 'keel-serve --help'\n");
		return -1;
	}
	if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL)) {
		fprintf(stderr, "keel-serve: %s needs %s as well\n"
		                "try 'keel-serve --help'\n",
		        cfg->tls_cert ? "--tls-cert" : "--tls-key",
		        cfg->tls_cert ? "--tls-key FILE" : "--tls-cert FILE");
		return -1;
	}
	/* TLS hides the traffic, not the store: the rule stands with it */
	if (cfg->tokens_path == NULL && !cfg->insecure_open &&
	    !is_loopback(&cfg->addr)) {
		fprintf(stderr, "keel-serve: --listen: refusing to serve an address "
		        "other than loopback (127.0.0.0/8) without --tokens FILE: "
		        "anyone who can reach it could read and write every key.\n"
		        "Give --tokens FILE, or --insecure-open to serve it open "
		        "anyway\n");
		return -1;
	}
	if (cfg->body_budget < cfg->max_body) {
		fprintf(stderr, "keel-serve: --body-budget (%llu bytes) is smaller "
		                "than --max-body (%llu bytes): the largest body could "
		                "never be taken\n",
		        (unsigned long long)cfg->body_budget,
		        (unsigned long long)cfg->max_body);
		return -1;
	}
	return 0;
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

static int listener(struct sockaddr_in *a, int defer_s)
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
	    (defer_s > 0 && setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT,
	                               &defer_s, sizeof defer_s) < 0) ||
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
		fds[i] = listener(&cfg->addr, cfg->defer_accept_s);
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

/*
 * keel-serve --hash-token TOKEN|- read|write [PREFIX]: prints the tokens
 * file's line for TOKEN.  "-" reads the token from the first line of stdin,
 * which keeps it out of the process list and the shell's history.  Exits
 * 0, or 2 for bad arguments (never naming the token).
 */
static int hash_token_main(int argc, char **argv)
{
	char line[TOKENS_LINE_MAX + 2], in[TOKENS_LINE_MAX + 2];
	const char *token = argc > 0 ? argv[0] : NULL;
	size_t n;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: keel-serve --hash-token TOKEN|- read|write "
		        "[PREFIX]\n");
		return 2;
	}
	if (strcmp(token, "-") == 0) {
		if (fgets(in, sizeof in, stdin) == NULL) {
			fprintf(stderr, "keel-serve: --hash-token -: no token on "
			        "stdin\n");
			return 2;
		}
		if (strchr(in, '\n') == NULL && !feof(stdin)) {
			/* cut short, the hash would be of another token */
			fprintf(stderr, "keel-serve: --hash-token -: the token is "
			        "longer than %d bytes\n", TOKENS_LINE_MAX);
			return 2;
		}
		in[strcspn(in, "\r\n")] = 0;
		token = in;
	}
	n = strlen(token);
	if (tokens_line(token, n, argv[1], argc == 3 ? argv[2] : NULL, line,
	                sizeof line) < 0) {
		fprintf(stderr, "keel-serve: --hash-token: %s\n", line);
		return 2;
	}
	fputs(line, stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Frees the retired tables every shard has moved past; returns how many
 * are left.  Called on the main thread while the shards run. */
static int retired_sweep(struct serve_server *srv, struct retired *r, int n)
{
	uint64_t seen = UINT64_MAX;
	int i, kept = 0;

	for (i = 0; i < srv->cfg.threads; i++) {
		uint64_t s = atomic_load(&srv->shards[i].tokens_seen);
		if (s < seen)
			seen = s;
	}
	for (i = 0; i < n; i++) {
		if (r[i].gen <= seen) {
			tokens_free(r[i].table);
			serve_tls_ctx_free(r[i].tls); /* connections keep theirs */
			h3_cert_put(r[i].h3);         /* handshakes keep theirs */
		} else
			r[kept++] = r[i];
	}
	return kept;
}

/* SIGHUP: loads the tokens file again and publishes it.  A file that does
 * not load is refused with a message and the tokens stay as they were.
 * Returns the number of retired tables. */
static int tokens_reload(struct serve_server *srv, struct retired *r, int n)
{
	char why[TOKENS_ERR_MAX];
	tokens_table *t, *old = atomic_load(&srv->tokens);

	n = retired_sweep(srv, r, n);
	if (n == RETIRED_MAX) {
		fprintf(stderr, "keel-serve: SIGHUP: not re-read: %d earlier "
		        "token tables are still in use; the %zu tokens stay in "
		        "force (send SIGHUP again in a second)\n", RETIRED_MAX,
		        tokens_count(old));
		return n;
	}
	if (tokens_load(srv->cfg.tokens_path, &t, why, sizeof why) < 0) {
		fprintf(stderr, "keel-serve: SIGHUP: %s; the %zu tokens loaded "
		        "before stay in force\n", why, tokens_count(old));
		return n;
	}
	atomic_store(&srv->tokens, t);
	r[n].table = old;
	r[n].tls = NULL;
	r[n].h3 = NULL;
	r[n++].gen = atomic_fetch_add(&srv->tokens_gen, 1) + 1;
	fprintf(stderr, "keel-serve: SIGHUP: %s: %zu tokens\n",
	        srv->cfg.tokens_path, tokens_count(t));
	return n;
}

/* SIGHUP: loads --tls-cert and --tls-key again into a new context for new
 * connections; those open keep the context they were made with.  A pair
 * that does not load is refused with a message and the old one stays.
 * Returns the number of retired entries. */
static int tls_reload(struct serve_server *srv, struct retired *r, int n)
{
	char why[SERVE_TLS_ERR_MAX], what[512];
	SSL_CTX *ctx;

	n = retired_sweep(srv, r, n);
	if (n == RETIRED_MAX) {
		fprintf(stderr, "keel-serve: SIGHUP: TLS certificate not reloaded: "
		        "%d earlier contexts are still being retired; the one in "
		        "force stays (send SIGHUP again in a second)\n",
		        RETIRED_MAX);
		return n;
	}
	if (serve_tls_load(srv->cfg.tls_cert, srv->cfg.tls_key, &ctx, why,
	                   sizeof why) < 0) {
		fprintf(stderr, "keel-serve: SIGHUP: %s; the certificate loaded "
		        "before stays in force\n", why);
		return n;
	}
	r[n].table = NULL;
	r[n].tls = atomic_exchange(&srv->tls, ctx);
	/* QUIC's TLS is GnuTLS's: the same files loaded again for it */
	r[n].h3 = srv->h3 ? h3_cert_reload(srv->h3, srv->cfg.tls_cert,
	                                   srv->cfg.tls_key, why, sizeof why)
	                  : NULL;
	if (srv->h3 && r[n].h3 == NULL)
		fprintf(stderr, "keel-serve: SIGHUP: HTTP/3: %s; QUIC keeps the "
		        "certificate loaded before\n", why);
	r[n++].gen = atomic_fetch_add(&srv->tokens_gen, 1) + 1;
	serve_tls_describe(ctx, what, sizeof what);
	fprintf(stderr, "keel-serve: SIGHUP: %s: certificate %s\n",
	        srv->cfg.tls_cert, what);
	return n;
}

/* The startup load of --tls-cert and --tls-key: a bad pair stops
 * keel-serve before it opens the store.  Returns 0 or -1. */
static int tls_first_load(struct serve_server *srv)
{
	char why[SERVE_TLS_ERR_MAX];
	SSL_CTX *ctx;

	if (srv->cfg.tls_cert == NULL)
		return 0;
	if (serve_tls_load(srv->cfg.tls_cert, srv->cfg.tls_key, &ctx, why,
	                   sizeof why) < 0) {
		fprintf(stderr, "keel-serve: %s\n", why);
		return -1;
	}
	atomic_store(&srv->tls, ctx);
	if (srv->cfg.http3 && h3_creds_load(srv->cfg.tls_cert, srv->cfg.tls_key,
	                                    &srv->h3, why, sizeof why) < 0) {
		fprintf(stderr, "keel-serve: HTTP/3: %s\n", why);
		return -1;
	}
	return 0;
}

/* The startup load: a bad file stops keel-serve before it opens the
 * store.  Returns 0 or -1. */
static int tokens_first_load(struct serve_server *srv)
{
	char why[TOKENS_ERR_MAX];
	tokens_table *t;

	if (srv->cfg.tokens_path == NULL)
		return 0;
	if (tokens_load(srv->cfg.tokens_path, &t, why, sizeof why) < 0) {
		fprintf(stderr, "keel-serve: --tokens %s\n", why);
		return -1;
	}
	if (tokens_count(t) == 0)
		fprintf(stderr, "keel-serve: %s holds no tokens: every request "
		        "will be refused\n", srv->cfg.tokens_path);
	atomic_store(&srv->tokens, t);
	return 0;
}

/* Waits for SIGINT or SIGTERM, re-reading the tokens and the TLS
 * certificate on SIGHUP (when it is in SET) and freeing replaced tables
 * and contexts once the shards are past them.
 * Returns with every retired table freed or handed to the caller's exit. */
static void serve_until_stopped(struct serve_server *srv, const sigset_t *set,
                                struct retired *r, int *nr)
{
	const struct timespec tick = {.tv_sec = 1};
	int sig;

	for (;;) {
		sig = *nr ? sigtimedwait(set, NULL, &tick) : sigwaitinfo(set, NULL);
		if (sig == SIGINT || sig == SIGTERM)
			return;
		if (sig == SIGHUP) {
			if (srv->cfg.tokens_path)
				*nr = tokens_reload(srv, r, *nr);
			if (srv->cfg.tls_cert)
				*nr = tls_reload(srv, r, *nr);
		} else if (*nr)
			*nr = retired_sweep(srv, r, *nr);
	}
}

int main(int argc, char **argv)
{
	static struct serve_server srv;
	static struct retired retired[RETIRED_MAX];
	int *fds = NULL, i, rc, started = 0, status = 1, nretired = 0;
	char ip[INET_ADDRSTRLEN];
	keel_stats st;
	uint64_t direct = 0;
	sigset_t set;

	if (argc > 1 && strcmp(argv[1], "--hash-token") == 0)
		return hash_token_main(argc - 2, argv + 2);
	if (parse_args(argc, argv, &srv.cfg) < 0 || tokens_first_load(&srv) < 0)
		return 2;
	if (tls_first_load(&srv) < 0) {
		tokens_free(atomic_load(&srv.tokens));
		return 2;
	}
	raise_nofile(&srv.cfg);
	srv.budget.cap = srv.cfg.body_budget;
	if (srv.cfg.max_handshakes_per_source == 0)
		srv.cfg.max_handshakes_per_source =
			srv.cfg.max_handshakes / 8 ? srv.cfg.max_handshakes / 8 : 1;
	srv.hs_sources.cap = (uint32_t)srv.cfg.max_handshakes;
	srv.hs_sources.share = (uint32_t)srv.cfg.max_handshakes_per_source;
	if (getrandom(&srv.hs_sources.key, sizeof srv.hs_sources.key, 0) !=
	    (ssize_t)sizeof srv.hs_sources.key)
		srv.hs_sources.key = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^
		                     (uint64_t)getpid();
	srv.limits.header_timeout_ms = srv.cfg.header_timeout_ms;
	srv.limits.body_min_rate = srv.cfg.body_min_rate;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	/* Without --tokens or --tls-cert SIGHUP keeps its default (it ends the
	 * process, as it always did): there is nothing to re-read. */
	if (srv.cfg.tokens_path || srv.cfg.tls_cert)
		sigaddset(&set, SIGHUP);
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
		tokens_free(atomic_load(&srv.tokens));
		serve_tls_ctx_free(atomic_load(&srv.tls));
		h3_creds_free(srv.h3);
		return 1;
	}
	fds = calloc((size_t)srv.cfg.threads, sizeof *fds);
	srv.shards = calloc((size_t)srv.cfg.threads, sizeof *srv.shards);
	if (fds == NULL || srv.shards == NULL || open_listeners(&srv.cfg, fds) < 0)
		goto out_close;
	if (srv.h3) /* the port is known now (port 0 resolved) */
		snprintf(srv.alt_svc, sizeof srv.alt_svc,
		         "Alt-Svc: h3=\":%u\"\r\n", ntohs(srv.cfg.addr.sin_port));
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
		printf("keel-serve: listening on %s:%u (%d %s, max %d connections%s)\n",
		       ip, ntohs(srv.cfg.addr.sin_port), srv.cfg.threads,
		       srv.cfg.threads == 1 ? "thread" : "threads",
		       srv.cfg.max_conns, srv.h3 ? ", TLS, HTTP/3"
		                         : srv.cfg.tls_cert ? ", TLS" : "");
		fflush(stdout);
		serve_until_stopped(&srv, &set, retired, &nretired);
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
	/* every shard has ended (or never started): no table is in use */
	while (nretired) {
		nretired--;
		tokens_free(retired[nretired].table);
		serve_tls_ctx_free(retired[nretired].tls);
		h3_cert_put(retired[nretired].h3);
	}
	tokens_free(atomic_load(&srv.tokens));
	serve_tls_ctx_free(atomic_load(&srv.tls));
	h3_creds_free(srv.h3);
	free(srv.shards);
	free(fds);
	return status;
}
