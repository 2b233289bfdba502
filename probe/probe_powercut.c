/* probe_powercut.c -- the power-cut check; see probe_powercut.h. */
#include "probe_powercut.h"
#include "probe_hist.h"
#include "probe_run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC "KEELPCB1"
#define HEADER 40
#define MAX_SLOTS (16u * 1024 * 1024) /* 128 MiB of listener memory */
#define MAX_SESSIONS 64
#define MAX_CLIENTS 32
#define LINE_MAX_LEN 8192

/* ---- the block format ---------------------------------------------------- */

static void put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* FNV-1a 64 over the block, reading the checksum field as zeros. */
static uint64_t block_sum(const unsigned char *buf, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < size; i++) {
		h ^= (i >= 32 && i < 40) ? 0 : buf[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void probe_cut_block_fill(unsigned char *buf, size_t size, uint64_t seq,
			  uint64_t slot)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	memcpy(buf, MAGIC, 8);
	put64(buf + 8, seq);
	put64(buf + 16, slot);
	put64(buf + 24, (uint64_t)size); /* size, then four zero bytes */
	put64(buf + 32, 0);
	for (i = HEADER; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	put64(buf + 32, block_sum(buf, size));
}

enum probe_cut_block probe_cut_block_check(const unsigned char *buf, size_t size,
					   uint64_t *seq, uint64_t *slot)
{
	size_t i;

	for (i = 0; i < size && buf[i] == 0; i++)
		;
	if (i == size)
		return PROBE_CUT_ZERO;
	if (size < HEADER || memcmp(buf, MAGIC, 8) != 0 ||
	    get64(buf + 24) != (uint64_t)size ||
	    get64(buf + 32) != block_sum(buf, size))
		return PROBE_CUT_BAD;
	*seq = get64(buf + 8);
	*slot = get64(buf + 16);
	return PROBE_CUT_VALID;
}

/* ---- addresses and keys ---------------------------------------------------- */

int probe_cut_split_hostport(const char *s, char *host, size_t hostlen,
			     char *port, size_t portlen)
{
	const char *colon, *h = s;
	size_t hl;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -1;
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= portlen ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

/* Connect to "host:port"; a descriptor, or PROBE_EINPUT / PROBE_EIO. */
static int connect_to(const char *hostport)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char host[256], port[16];
	int fd = -1, one = 1, rc;

	if (probe_cut_split_hostport(hostport, host, sizeof(host), port,
				     sizeof(port)) < 0) {
		fprintf(stderr, "fsync-probe: %s is not HOST:PORT\n", hostport);
		return PROBE_EINPUT;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "fsync-probe: cannot resolve %s: %s\n", host,
			gai_strerror(rc));
		return PROBE_EINPUT;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "fsync-probe: cannot reach the listener at %s: %s\n",
			hostport, strerror(errno));
		return PROBE_EIO;
	}
	/* an acknowledgement must leave as soon as its sync returned */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* "hostname:/absolute/path": the same before and after the reboot, whether
 * or not the file exists. */
static int session_key(const char *path, char *key, size_t len)
{
	char copy[PATH_MAX], dir[PATH_MAX], host[256];
	const char *base;
	int n;

	if (strchr(path, '\n')) {
		fprintf(stderr, "fsync-probe: a newline in the path is not supported\n");
		return PROBE_EINPUT;
	}
	snprintf(copy, sizeof(copy), "%s", path);
	if (!realpath(dirname(copy), dir)) {
		fprintf(stderr, "fsync-probe: cannot resolve the directory of %s: %s\n",
			path, strerror(errno));
		return PROBE_EINPUT;
	}
	snprintf(copy, sizeof(copy), "%s", path);
	base = basename(copy);
	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	n = snprintf(key, len, "%s:%s/%s", host, strcmp(dir, "/") ? dir : "", base);
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "fsync-probe: path too long: %s\n", path);
		return PROBE_EINPUT;
	}
	return PROBE_OK;
}

/* Send all of a string; 0 or -1. */
static int send_all(int fd, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;

	while (len > 0) {
		n = send(fd, s, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- the listener ------------------------------------------------------------ */

/* What the listener knows about one writer's file. */
struct session {
	char key[512];          /* "hostname:/path"; "" = unused */
	uint32_t size;          /* block size */
	uint64_t slots;         /* slots in the file */
	uint64_t *acked;        /* per slot: last acknowledged seq, 0 = none */
	uint64_t last_acked;    /* highest acknowledged seq */
	uint64_t inflight_seq;  /* begun and not acknowledged, 0 = none */
	uint64_t inflight_slot;
	uint64_t reported;      /* last_acked when progress was last printed */
};

/* One connection and its partial input line. */
struct client {
	int fd;                 /* -1 = unused */
	struct session *s;      /* the writer's session, after HELLO */
	size_t len;
	char buf[LINE_MAX_LEN];
};

struct listener {
	struct session sessions[MAX_SESSIONS];
	struct client clients[MAX_CLIENTS];
};

static struct session *session_find(struct listener *l, const char *key, int create)
{
	struct session *free_one = NULL;
	int i;

	for (i = 0; i < MAX_SESSIONS; i++) {
		if (strcmp(l->sessions[i].key, key) == 0 && key[0])
			return &l->sessions[i];
		if (!l->sessions[i].key[0] && !free_one)
			free_one = &l->sessions[i];
	}
	if (create && free_one)
		snprintf(free_one->key, sizeof(free_one->key), "%s", key);
	return create ? free_one : NULL;
}

/* HELLO size slots key: a writer (re)starts; its file is new, so forget
 * what an earlier run of the same key acknowledged. */
static int on_hello(struct listener *l, struct client *c, const char *args)
{
	unsigned long long size, slots;
	struct session *s;
	int used = 0;

	if (sscanf(args, "%llu %llu %n", &size, &slots, &used) != 2 || !used ||
	    size < PROBE_SIZE_MIN || size > PROBE_SIZE_MAX || slots == 0 ||
	    slots > MAX_SLOTS || !args[used] || strlen(args + used) >= sizeof(s->key))
		return send_all(c->fd, "ERR bad HELLO\n"), -1;
	s = session_find(l, args + used, 1);
	if (!s)
		return send_all(c->fd, "ERR too many sessions\n"), -1;
	free(s->acked);
	s->acked = calloc(slots, sizeof(*s->acked));
	if (!s->acked) {
		s->key[0] = '\0';
		return send_all(c->fd, "ERR out of memory\n"), -1;
	}
	s->size = (uint32_t)size;
	s->slots = slots;
	s->last_acked = s->inflight_seq = s->inflight_slot = s->reported = 0;
	c->s = s;
	printf("fsync-probe: writer %s: %llu slots of %llu bytes\n", s->key,
	       slots, size);
	fflush(stdout);
	return send_all(c->fd, "OK\n");
}

/* VERIFY key: everything acknowledged, slot by slot. */
static int on_verify(struct listener *l, struct client *c, const char *key)
{
	struct session *s = session_find(l, key, 0);
	char line[128];
	uint64_t i, n = 0;

	if (!s)
		return send_all(c->fd, "NONE\n");
	snprintf(line, sizeof(line), "S %u %" PRIu64 " %" PRIu64 " %" PRIu64
		 " %" PRIu64 "\n", s->size, s->slots, s->last_acked,
		 s->inflight_seq, s->inflight_slot);
	if (send_all(c->fd, line) < 0)
		return -1;
	for (i = 0; i < s->slots; i++) {
		if (!s->acked[i])
			continue;
		snprintf(line, sizeof(line), "K %" PRIu64 " %" PRIu64 "\n", i,
			 s->acked[i]);
		if (send_all(c->fd, line) < 0)
			return -1;
		n++;
	}
	printf("fsync-probe: verify %s: sent %" PRIu64 " acknowledged slots, "
	       "last seq %" PRIu64 "\n", s->key, n, s->last_acked);
	fflush(stdout);
	return send_all(c->fd, "END\n");
}

/* One complete line from a client; -1 closes the connection. */
static int on_line(struct listener *l, struct client *c, char *line)
{
	unsigned long long seq, slot;
	struct session *s = c->s;

	if (strncmp(line, "HELLO ", 6) == 0)
		return on_hello(l, c, line + 6);
	if (strncmp(line, "VERIFY ", 7) == 0)
		return on_verify(l, c, line + 7);
	if (!s)
		return -1;
	if (strcmp(line, "END") == 0) {
		s->inflight_seq = 0; /* a clean stop: nothing in flight */
		return 0;
	}
	if (sscanf(line + 1, " %llu %llu", &seq, &slot) != 2 || slot >= s->slots)
		return -1;
	if (line[0] == 'B') {
		s->inflight_seq = seq;
		s->inflight_slot = slot;
	} else if (line[0] == 'A') {
		s->acked[slot] = seq;
		if (seq > s->last_acked)
			s->last_acked = seq;
		if (seq == s->inflight_seq)
			s->inflight_seq = 0;
	} else {
		return -1;
	}
	return 0;
}

/* Read what a client sent and act on every complete line. */
static void on_readable(struct listener *l, struct client *c)
{
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
	char *start, *nl;

	if (n <= 0)
		goto out_close;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	start = c->buf;
	while ((nl = strchr(start, '\n'))) {
		*nl = '\0';
		if (on_line(l, c, start) < 0)
			goto out_close;
		start = nl + 1;
	}
	c->len -= (size_t)(start - c->buf);
	memmove(c->buf, start, c->len);
	if (c->len == sizeof(c->buf) - 1)
		goto out_close; /* a line longer than any message */
	return;
out_close:
	close(c->fd);
	c->fd = -1;
	c->s = NULL;
	c->len = 0;
}

/* Every 10 s, one line per writer that made progress, so whoever pulls
 * the plug can see the writer is running. */
static void report_progress(struct listener *l)
{
	int i;

	for (i = 0; i < MAX_SESSIONS; i++) {
		struct session *s = &l->sessions[i];

		if (!s->key[0] || s->last_acked == s->reported)
			continue;
		printf("fsync-probe: writer %s: acknowledged up to seq %" PRIu64 "\n",
		       s->key, s->last_acked);
		s->reported = s->last_acked;
	}
	fflush(stdout);
}

static int listen_socket(const char *bind_addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE },
			*res;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	char host[128], serv[16];
	int fd, one = 1, rc;

	rc = getaddrinfo(bind_addr, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "fsync-probe: cannot listen on %s:%s: %s\n",
			bind_addr ? bind_addr : "*", port, gai_strerror(rc));
		return PROBE_EINPUT;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		fprintf(stderr, "fsync-probe: cannot listen on %s:%s: %s\n",
			bind_addr ? bind_addr : "*", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return PROBE_EIO;
	}
	freeaddrinfo(res);
	if (getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 &&
	    getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), serv,
			sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		printf("fsync-probe: listening on %s:%s\n", host, serv);
	fflush(stdout);
	return fd;
}

int probe_cut_listen(const char *bind_addr, const char *port, double duration_s)
{
	struct listener *l = calloc(1, sizeof(*l));
	struct pollfd pfd[MAX_CLIENTS + 1];
	uint64_t end = 0, next_report = probe_run_now_ns() + 10000000000ull;
	int lfd, i, n, rc = PROBE_OK;

	if (!l)
		return PROBE_EIO;
	for (i = 0; i < MAX_CLIENTS; i++)
		l->clients[i].fd = -1;
	lfd = listen_socket(bind_addr, port);
	if (lfd < 0) {
		rc = lfd;
		goto out_free;
	}
	if (duration_s > 0)
		end = probe_run_now_ns() + (uint64_t)(duration_s * 1e9);
	/* the writer's connection may be half-open for ever after its power
	 * cut, so every connection is served side by side */
	while (!end || probe_run_now_ns() < end) {
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < MAX_CLIENTS; i++)
			pfd[i + 1] = (struct pollfd){ .fd = l->clients[i].fd, .events = POLLIN };
		n = poll(pfd, MAX_CLIENTS + 1, 500);
		if (n < 0 && errno != EINTR) {
			rc = PROBE_EIO;
			break;
		}
		if (probe_run_now_ns() >= next_report) {
			report_progress(l);
			next_report += 10000000000ull;
		}
		for (i = 0; n > 0 && i < MAX_CLIENTS; i++)
			if (l->clients[i].fd >= 0 && pfd[i + 1].revents)
				on_readable(l, &l->clients[i]);
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			for (i = 0; cfd >= 0 && i < MAX_CLIENTS; i++)
				if (l->clients[i].fd < 0) {
					l->clients[i].fd = cfd;
					break;
				}
			if (cfd >= 0 && i == MAX_CLIENTS)
				close(cfd); /* full: the oldest half-open ones stay */
		}
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		if (l->clients[i].fd >= 0)
			close(l->clients[i].fd);
	close(lfd);
out_free:
	for (i = 0; i < MAX_SESSIONS; i++)
		free(l->sessions[i].acked);
	free(l);
	return rc;
}

/* ---- the writer ------------------------------------------------------------- */

/* Read one line (up to '\n') from fd, waiting at most 10 s. */
static int read_reply(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;

	while (n + 1 < len) {
		if (poll(&p, 1, 10000) <= 0 || recv(fd, buf + n, 1, 0) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

/* Create the file with every slot zeroed and make it, its size and its
 * name durable, so that after the cut only the block writes are in doubt. */
static int writer_prepare(const struct probe_config *cfg, uint64_t slots)
{
	char copy[PATH_MAX];
	int fd, dfd, created, rc = PROBE_OK;
	unsigned char *zero;
	uint64_t i;

	fd = probe_run_create(cfg->path, cfg->force, &created);
	if (fd < 0)
		return fd;
	zero = calloc(1, cfg->write_size);
	if (!zero || ftruncate(fd, 0) < 0)
		goto out_io;
	for (i = 0; i < slots; i++)
		if (probe_run_pwrite_all(fd, zero, cfg->write_size,
					 i * cfg->write_size) < 0)
			goto out_io;
	if (fsync(fd) < 0)
		goto out_io;
	snprintf(copy, sizeof(copy), "%s", cfg->path);
	dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		if (dfd >= 0)
			close(dfd);
		goto out_io;
	}
	close(dfd);
	goto out_close;
out_io:
	fprintf(stderr, "fsync-probe: preparing %s: %s\n", cfg->path, strerror(errno));
	rc = PROBE_EIO;
out_close:
	free(zero);
	close(fd);
	return rc;
}

/* The write loop: B, write, sync, A, until the duration ends. */
static int writer_loop(int sock, int fd, const struct probe_config *cfg,
		       uint64_t slots, unsigned char *buf, uint64_t *acked)
{
	uint64_t t0 = probe_run_now_ns(), next = t0 + 10000000000ull, seq, now;
	uint64_t end = cfg->duration_s > 0 ? t0 + (uint64_t)(cfg->duration_s * 1e9) : 0;
	char line[96];
	int rc;

	for (seq = 1;; seq++) {
		uint64_t slot = (seq - 1) % slots;

		now = probe_run_now_ns();
		if (end && now >= end)
			break;
		if (!cfg->quiet && now >= next) {
			fprintf(stderr, "fsync-probe: %" PRIu64 " blocks acknowledged\n",
				*acked);
			next = now + 10000000000ull;
		}
		snprintf(line, sizeof(line), "B %" PRIu64 " %" PRIu64 "\n", seq, slot);
		if (send_all(sock, line) < 0)
			goto out_net;
		probe_cut_block_fill(buf, cfg->write_size, seq, slot);
		rc = probe_run_pwrite_all(fd, buf, cfg->write_size, slot * cfg->write_size);
		if (rc == 0)
			rc = probe_run_sync(fd, cfg->mode, slot * cfg->write_size,
					    cfg->write_size);
		if (rc < 0) {
			fprintf(stderr, "fsync-probe: block %" PRIu64 " failed: %s\n",
				seq, strerror(-rc));
			return PROBE_EIO;
		}
		snprintf(line, sizeof(line), "A %" PRIu64 " %" PRIu64 "\n", seq, slot);
		if (send_all(sock, line) < 0)
			goto out_net;
		(*acked)++;
	}
	return send_all(sock, "END\n") < 0 ? PROBE_EIO : PROBE_OK;
out_net:
	fprintf(stderr, "fsync-probe: the listener went away: %s\n", strerror(errno));
	return PROBE_EIO;
}

int probe_cut_write(const char *hostport, const struct probe_config *cfg)
{
	uint64_t slots = cfg->file_size / cfg->write_size, acked = 0;
	char key[600], line[700];
	unsigned char *buf = NULL;
	int sock, fd = -1, rc;

	if (slots == 0 || slots > MAX_SLOTS) {
		fprintf(stderr, "fsync-probe: --file-size must hold 1 to %u blocks "
			"of --size\n", MAX_SLOTS);
		return PROBE_EINPUT;
	}
	if ((rc = session_key(cfg->path, key, sizeof(key))) < 0)
		return rc;
	sock = connect_to(hostport);
	if (sock < 0)
		return sock;
	snprintf(line, sizeof(line), "HELLO %zu %" PRIu64 " %s\n", cfg->write_size,
		 slots, key);
	if (send_all(sock, line) < 0 || read_reply(sock, line, sizeof(line)) < 0 ||
	    strcmp(line, "OK") != 0) {
		fprintf(stderr, "fsync-probe: the listener refused the writer\n");
		rc = PROBE_EIO;
		goto out_sock;
	}
	if ((rc = writer_prepare(cfg, slots)) < 0)
		goto out_sock;
	fd = probe_run_open(cfg->path, cfg->mode);
	if (fd < 0) {
		rc = fd;
		goto out_sock;
	}
	if (posix_memalign((void **)&buf, 4096, cfg->write_size) != 0) {
		rc = PROBE_EIO;
		goto out_close;
	}
	printf("fsync-probe: writing %" PRIu64 " slots of %zu bytes to %s with %s; "
	       "cut the power now, then run --verify %s %s\n", slots,
	       cfg->write_size, cfg->path, probe_run_mode_name(cfg->mode),
	       hostport, cfg->path);
	fflush(stdout);
	rc = writer_loop(sock, fd, cfg, slots, buf, &acked);
	printf("fsync-probe: %" PRIu64 " blocks acknowledged\n", acked);
	free(buf);
out_close:
	close(fd);
out_sock:
	close(sock);
	return rc;
}

/* ---- the verifier -------------------------------------------------------------- */

/* What the listener said about the file. */
struct verdict {
	unsigned long long size, slots, last, inflight_seq, inflight_slot;
	uint64_t checked, ok, newer, lost, damaged, torn;
};

/* Judge one acknowledged slot; prints a line for every problem. */
static void judge_slot(int fd, unsigned char *buf, struct verdict *v,
		       uint64_t slot, uint64_t acked)
{
	uint64_t seq = 0, found_slot = 0;
	int inflight = v->inflight_seq > acked && v->inflight_slot == slot;
	ssize_t n = pread(fd, buf, v->size, (off_t)(slot * v->size));
	enum probe_cut_block b;
	int verbose = v->lost + v->damaged + v->torn < 50;

	v->checked++;
	if (n < (ssize_t)v->size)
		memset(buf + (n > 0 ? n : 0), 0, v->size - (size_t)(n > 0 ? n : 0));
	b = probe_cut_block_check(buf, v->size, &seq, &found_slot);
	if (b == PROBE_CUT_VALID && found_slot == slot && seq >= acked) {
		v->ok++;
		v->newer += seq > acked;
		return;
	}
	if (inflight && b != PROBE_CUT_VALID) {
		v->torn++;
		if (verbose)
			printf("torn    slot %" PRIu64 ": the write of seq %llu was in "
			       "flight at the cut (expected, not counted)\n", slot,
			       v->inflight_seq);
		return;
	}
	if (b == PROBE_CUT_VALID && found_slot != slot) {
		v->damaged++;
		if (verbose)
			printf("DAMAGED slot %" PRIu64 ": acknowledged seq %" PRIu64
			       ", holds slot %" PRIu64 "'s block (misdirected write)\n",
			       slot, acked, found_slot);
	} else if (b == PROBE_CUT_VALID || b == PROBE_CUT_ZERO) {
		v->lost++;
		if (verbose && b == PROBE_CUT_ZERO)
			printf("LOST    slot %" PRIu64 ": acknowledged seq %" PRIu64
			       ", found zeros%s\n", slot, acked,
			       n < (ssize_t)v->size ? " (beyond the end of the file)" : "");
		else if (verbose)
			printf("LOST    slot %" PRIu64 ": acknowledged seq %" PRIu64
			       ", found older seq %" PRIu64 "\n", slot, acked, seq);
	} else {
		v->damaged++;
		if (verbose)
			printf("DAMAGED slot %" PRIu64 ": acknowledged seq %" PRIu64
			       ", header or checksum wrong\n", slot, acked);
	}
}

/* Read the listener's answer and judge every slot it lists. */
static int verify_stream(FILE *in, int fd, const char *path, struct verdict *v)
{
	unsigned long long slot, seq;
	unsigned char *buf = NULL;
	char line[256];

	if (!fgets(line, sizeof(line), in))
		goto out_proto;
	if (strcmp(line, "NONE\n") == 0) {
		fprintf(stderr, "fsync-probe: the listener knows no writer for %s\n", path);
		return PROBE_EINPUT;
	}
	if (sscanf(line, "S %llu %llu %llu %llu %llu", &v->size, &v->slots,
		   &v->last, &v->inflight_seq, &v->inflight_slot) != 5 ||
	    v->size < PROBE_SIZE_MIN || v->size > PROBE_SIZE_MAX)
		goto out_proto;
	buf = malloc(v->size);
	if (!buf)
		return PROBE_EIO;
	while (fgets(line, sizeof(line), in)) {
		if (strcmp(line, "END\n") == 0) {
			free(buf);
			return PROBE_OK;
		}
		if (sscanf(line, "K %llu %llu", &slot, &seq) != 2 || slot >= v->slots)
			break;
		judge_slot(fd, buf, v, slot, seq);
	}
	free(buf);
out_proto:
	fprintf(stderr, "fsync-probe: the listener's answer was cut short or "
		"malformed\n");
	return PROBE_EIO;
}

int probe_cut_verify(const char *hostport, const char *path)
{
	struct verdict v;
	char key[600], line[700];
	int sock, fd, rc;
	FILE *in;

	memset(&v, 0, sizeof(v));
	if ((rc = session_key(path, key, sizeof(key))) < 0)
		return rc;
	/* a file that vanished is read as all zeros: every block LOST */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT) {
		fprintf(stderr, "fsync-probe: cannot read %s: %s\n", path, strerror(errno));
		return PROBE_EINPUT;
	}
	if (fd < 0)
		printf("LOST    the file %s is gone\n", path);
	sock = connect_to(hostport);
	if (sock < 0) {
		rc = sock;
		goto out_close;
	}
	snprintf(line, sizeof(line), "VERIFY %s\n", key);
	in = fdopen(sock, "r");
	if (!in || send_all(sock, line) < 0) {
		fprintf(stderr, "fsync-probe: cannot talk to %s\n", hostport);
		rc = PROBE_EIO;
		if (!in)
			close(sock);
		else
			fclose(in);
		goto out_close;
	}
	rc = verify_stream(in, fd, path, &v);
	fclose(in);
	if (rc < 0)
		goto out_close;
	printf("verify: %" PRIu64 " acknowledged blocks checked (last acknowledged "
	       "seq %llu): %" PRIu64 " ok (%" PRIu64 " newer than acknowledged), "
	       "%" PRIu64 " LOST, %" PRIu64 " DAMAGED, %" PRIu64 " torn in flight\n",
	       v.checked, v.last, v.ok, v.newer, v.lost, v.damaged, v.torn);
	if (v.inflight_seq)
		printf("verify: in flight at the cut: seq %llu, slot %llu\n",
		       v.inflight_seq, v.inflight_slot);
	if (v.lost + v.damaged > 0)
		printf("verify: FAILED: acknowledged syncs did not survive\n");
	else
		printf("verify: passed: every acknowledged block survived\n");
	rc = v.lost + v.damaged > 0 ? PROBE_ELOST : PROBE_OK;
out_close:
	if (fd >= 0)
		close(fd);
	return rc;
}
