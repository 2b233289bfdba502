/*
 * zk_kv.c -- a ZooKeeper client small enough to run once per check: it
 * speaks ZooKeeper's wire protocol over one TCP connection to 127.0.0.1
 * and is what tests/targets/zookeeper.sh drives (ZooKeeper's own client,
 * zkCli.sh, starts a JVM per call).
 *
 *   zk_kv PORT --ping            exit 0 once a session is granted (the
 *                                server has loaded its data and serves)
 *   zk_kv PORT --workload [N [PAD]]
 *                                N puts (default 100000) on the znodes
 *                                /k0 ... /k7, each announced with "intent"
 *                                on $KEEL_TORTURE_FD and acknowledged with
 *                                "ack" once the server answered it; with
 *                                PAD, each value VALUE is stored as
 *                                "VALUE." and PAD bytes 'x' (a transaction
 *                                that spans several sectors)
 *   zk_kv PORT --check           "NAME VALUE" for every child of / but
 *                                /zookeeper (the server's own); a stored
 *                                "VALUE.xxx..." prints as VALUE, and one
 *                                whose padding is not all 'x' in hex
 *
 * Exit status: 0 done; 1 the server refused a request or the connection
 * failed; 2 usage.
 *
 * The protocol, as written down in zookeeper-jute's zookeeper.jute and the
 * Programmer's Guide.  Every message is a frame: a 4-byte big-endian length,
 * then that many bytes.  The first frame each way is the session
 * handshake; after it, a request is a RequestHeader and its record, a reply
 * a ReplyHeader and, when err is 0, its record:
 *
 *   ConnectRequest   int protocolVersion (0), long lastZxidSeen,
 *                    int timeOut (ms), long sessionId (0: a new one),
 *                    buffer passwd (16 zero bytes)
 *   ConnectResponse  int protocolVersion, int timeOut, long sessionId,
 *                    buffer passwd (the server may add a readOnly byte)
 *   RequestHeader    int xid, int type
 *   ReplyHeader      int xid, long zxid, int err (0, or a negative code)
 *   create (1)       ustring path, buffer data, vector<ACL> acl, int flags
 *                    -> ustring path
 *   getData (4)      ustring path, boolean watch -> buffer data, Stat
 *   setData (5)      ustring path, buffer data, int version (-1: any)
 *                    -> Stat
 *   getChildren (8)  ustring path, boolean watch -> vector<ustring>
 *
 * int and long are big-endian 4 and 8 bytes; boolean one byte; a ustring
 * or buffer is an int length (-1: null) and the bytes; a vector an int
 * count and its elements; an ACL int perms, then the Id's two ustrings
 * (scheme "world", id "anyone"; perms 31, all).  Replies to our requests
 * come in order; xid -1 is a watch event and -2 a ping reply, neither of
 * which this client asks for, so both are skipped.
 *
 * A reply is hostile input: its frame length is bounded (MAX_FRAME) before
 * anything is read into the buffer, and every field is read through
 * reader_*, which refuse to pass the frame's end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define KEYS 8
#define MAX_FRAME (1 << 20)	/* ZooKeeper's own default jute.maxbuffer */
#define SESSION_TIMEOUT_MS 30000
#define MAX_PAD 3000		/* a request is built in 4096 bytes */

enum zk_op {
	OP_CREATE = 1,
	OP_GET_DATA = 4,
	OP_SET_DATA = 5,
	OP_GET_CHILDREN = 8,
};

enum zk_err {
	ZK_NONODE = -101,
	ZK_NODEEXISTS = -110,
};

/* A request being built: bytes after the 4-byte length slot. */
struct writer {
	unsigned char buf[4096];	/* the frame, length slot first */
	size_t len;			/* bytes used, slot included */
	int overflow;			/* a put did not fit: refuse to send */
};

/* A reply being read: never past len. */
struct reader {
	const unsigned char *buf;	/* the frame's body */
	size_t len;			/* its length */
	size_t pos;			/* the next byte to read */
	int bad;			/* a read went past the end */
};

struct conn {
	int fd;				/* the socket */
	int32_t xid;			/* the last request's xid */
	unsigned char *reply;		/* MAX_FRAME bytes for replies */
};

static void put_bytes(struct writer *w, const void *p, size_t n)
{
	if (w->overflow || n > sizeof w->buf - w->len) {
		w->overflow = 1;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void put_int(struct writer *w, int32_t v)
{
	uint32_t be = htonl((uint32_t)v);

	put_bytes(w, &be, 4);
}

static void put_long(struct writer *w, int64_t v)
{
	put_int(w, (int32_t)((uint64_t)v >> 32));
	put_int(w, (int32_t)((uint64_t)v & 0xffffffffu));
}

/* a ustring or buffer: its length, then its bytes */
static void put_buffer(struct writer *w, const void *p, size_t n)
{
	put_int(w, (int32_t)n);
	put_bytes(w, p, n);
}

static void put_string(struct writer *w, const char *s)
{
	put_buffer(w, s, strlen(s));
}

static uint32_t get_u32(struct reader *r)
{
	const unsigned char *p;

	if (r->bad || r->len - r->pos < 4) {
		r->bad = 1;
		return 0;
	}
	p = r->buf + r->pos;
	r->pos += 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int32_t get_int(struct reader *r)
{
	return (int32_t)get_u32(r);
}

static int64_t get_long(struct reader *r)
{
	uint64_t hi = get_u32(r);

	return (int64_t)(hi << 32 | get_u32(r));
}

/*
 * A buffer or ustring in place: *n its length (0 for null).  Its length is
 * checked against what is left of the frame before it is trusted.
 */
static const unsigned char *get_buffer(struct reader *r, size_t *n)
{
	int32_t len = get_int(r);
	const unsigned char *p;

	*n = 0;
	if (r->bad || len < 0)
		return NULL;
	if ((size_t)len > r->len - r->pos) {
		r->bad = 1;
		return NULL;
	}
	p = r->buf + r->pos;
	r->pos += (size_t)len;
	*n = (size_t)len;
	return p;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = write(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n > 0) {
		ssize_t k = read(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Fill the length slot and send the frame. */
static int send_frame(struct conn *c, struct writer *w)
{
	uint32_t be = htonl((uint32_t)(w->len - 4));

	if (w->overflow)
		return -1;
	memcpy(w->buf, &be, 4);
	return write_all(c->fd, w->buf, w->len);
}

/* Read one frame into c->reply; its length bounded before it is read. */
static int recv_frame(struct conn *c, struct reader *r)
{
	uint32_t be;
	size_t len;

	if (read_all(c->fd, &be, 4) != 0)
		return -1;
	len = ntohl(be);
	if (len > MAX_FRAME) {
		fprintf(stderr, "zk_kv: a reply of %zu bytes (over %d)\n",
			len, MAX_FRAME);
		return -1;
	}
	if (read_all(c->fd, c->reply, len) != 0)
		return -1;
	*r = (struct reader){ .buf = c->reply, .len = len };
	return 0;
}

static void begin(struct writer *w)
{
	w->len = 4;
	w->overflow = 0;
}

/* TCP to 127.0.0.1:port, then the session handshake. */
static int zk_connect(struct conn *c, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 10 };
	static const unsigned char passwd[16];
	struct writer w;
	struct reader r;
	int one = 1;
	int32_t timeout;
	int64_t session;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0)
		return -1;
	begin(&w);
	put_int(&w, 0);				/* protocolVersion */
	put_long(&w, 0);			/* lastZxidSeen */
	put_int(&w, SESSION_TIMEOUT_MS);	/* timeOut */
	put_long(&w, 0);			/* sessionId: a new one */
	put_buffer(&w, passwd, sizeof passwd);
	if (send_frame(c, &w) != 0 || recv_frame(c, &r) != 0)
		return -1;
	get_int(&r);				/* protocolVersion */
	timeout = get_int(&r);
	session = get_long(&r);
	/* a server that is not serving yet closes the connection; one that
	 * refuses the session answers a zero timeout */
	if (r.bad || timeout <= 0 || session == 0)
		return -1;
	c->xid = 0;
	return 0;
}

/*
 * Send the request in w (begun with request()) and read its reply: *err is
 * the server's error code, r is left at the reply's record.
 */
static int call(struct conn *c, struct writer *w, struct reader *r,
		int32_t *err)
{
	if (send_frame(c, w) != 0)
		return -1;
	for (;;) {
		int32_t xid;

		if (recv_frame(c, r) != 0)
			return -1;
		xid = get_int(r);
		get_long(r);			/* zxid */
		*err = get_int(r);
		if (r->bad)
			return -1;
		if (xid == c->xid)
			return 0;
		if (xid != -1 && xid != -2) {
			fprintf(stderr, "zk_kv: a reply to xid %d, waiting "
				"for %d\n", xid, c->xid);
			return -1;
		}
	}
}

static void request(struct conn *c, struct writer *w, enum zk_op op)
{
	begin(w);
	put_int(w, ++c->xid);
	put_int(w, op);
}

static int zk_set(struct conn *c, const char *path, const char *val,
		  int32_t *err)
{
	struct writer w;
	struct reader r;

	request(c, &w, OP_SET_DATA);
	put_string(&w, path);
	put_string(&w, val);
	put_int(&w, -1);			/* any version */
	return call(c, &w, &r, err);
}

static int zk_create(struct conn *c, const char *path, const char *val,
		     int32_t *err)
{
	struct writer w;
	struct reader r;

	request(c, &w, OP_CREATE);
	put_string(&w, path);
	put_string(&w, val);
	put_int(&w, 1);				/* one ACL: */
	put_int(&w, 31);			/* all permissions */
	put_string(&w, "world");
	put_string(&w, "anyone");
	put_int(&w, 0);				/* persistent */
	return call(c, &w, &r, err);
}

/* setData, or create when the znode is missing (and set again if another
 * put created it in between). */
static int zk_put(struct conn *c, const char *path, const char *val)
{
	int32_t err;

	if (zk_set(c, path, val, &err) != 0)
		return -1;
	if (err == ZK_NONODE) {
		if (zk_create(c, path, val, &err) != 0)
			return -1;
		if (err == ZK_NODEEXISTS && zk_set(c, path, val, &err) != 0)
			return -1;
	}
	if (err != 0)
		fprintf(stderr, "zk_kv: put %s: error %d\n", path, err);
	return err == 0 ? 0 : -1;
}

/* One protocol line in one write(2). */
static void say(int fd, const char *line)
{
	if (write_all(fd, line, strlen(line)) != 0)
		exit(1);
}

static int workload(struct conn *c, long ops, long pad)
{
	const char *fds = getenv("KEEL_TORTURE_FD");
	char line[128], path[32], val[32 + MAX_PAD], name[32];
	int fd;
	long i;

	if (!fds) {
		fprintf(stderr, "zk_kv: run me under torture --target exec\n");
		return 2;
	}
	if (pad < 0 || pad > MAX_PAD) {
		fprintf(stderr, "zk_kv: PAD is 0 to %d\n", MAX_PAD);
		return 2;
	}
	fd = atoi(fds);
	for (i = 1; i <= ops; i++) {
		size_t n;

		snprintf(path, sizeof path, "/k%ld", i % KEYS);
		snprintf(name, sizeof name, "v%ld", i);
		snprintf(line, sizeof line, "intent %ld %s %s\n", i, path + 1,
			 name);
		n = strlen(name);
		memcpy(val, name, n + 1);
		if (pad > 0) {
			val[n++] = '.';
			memset(val + n, 'x', (size_t)pad);
			val[n + (size_t)pad] = '\0';
		}
		say(fd, line);
		if (zk_put(c, path, val) != 0)
			return 1;
		snprintf(line, sizeof line, "ack %ld\n", i);
		say(fd, line);
	}
	return 0;
}

/*
 * The value as the checker protocol takes it: plain when it is a token (up
 * to the '.' of a padded value whose padding is all 'x'), else hex: (an
 * empty or damaged value is judged byte for byte).
 */
static void print_value(const unsigned char *v, size_t n)
{
	const unsigned char *dot = memchr(v, '.', n);
	size_t i, shown = dot ? (size_t)(dot - v) : n;
	int plain = shown > 0;

	for (i = 0; i < n; i++)
		if (v[i] <= ' ' || v[i] >= 0x7f)
			plain = 0;
	for (i = shown + 1; i < n; i++)
		if (v[i] != 'x')
			plain = 0;
	if (plain) {
		fwrite(v, 1, shown, stdout);
	} else {
		fputs("hex:", stdout);
		for (i = 0; i < n; i++)
			printf("%02x", v[i]);
	}
	putchar('\n');
}

static int print_child(struct conn *c, const char *name)
{
	char path[300];
	struct writer w;
	struct reader r;
	const unsigned char *v;
	size_t n;
	int32_t err;

	snprintf(path, sizeof path, "/%s", name);
	request(c, &w, OP_GET_DATA);
	put_string(&w, path);
	put_bytes(&w, "", 1);			/* watch: false */
	if (call(c, &w, &r, &err) != 0)
		return -1;
	if (err == ZK_NONODE)
		return 0;
	if (err != 0) {
		fprintf(stderr, "zk_kv: getData %s: error %d\n", path, err);
		return -1;
	}
	v = get_buffer(&r, &n);
	if (r.bad)
		return -1;
	printf("%s ", name);
	print_value(v, n);
	return 0;
}

static int check(struct conn *c)
{
	/* the names, copied out of the reply: each getData reuses it */
	static char names[1024][256];
	struct writer w;
	struct reader r;
	int32_t err, count, i;

	request(c, &w, OP_GET_CHILDREN);
	put_string(&w, "/");
	put_bytes(&w, "", 1);			/* watch: false */
	if (call(c, &w, &r, &err) != 0 || err != 0)
		return 1;
	count = get_int(&r);
	if (r.bad || count < 0 || count > 1024)
		return 1;
	for (i = 0; i < count; i++) {
		size_t n;
		const unsigned char *p = get_buffer(&r, &n);

		if (r.bad || n == 0 || n >= sizeof names[i] || !p)
			return 1;
		memcpy(names[i], p, n);
		names[i][n] = '\0';
	}
	for (i = 0; i < count; i++)
		if (strcmp(names[i], "zookeeper") != 0 &&
		    print_child(c, names[i]) != 0)
			return 1;
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct conn c = { .fd = -1 };
	int port, rc;

	if (argc < 3) {
		fprintf(stderr, "usage: zk_kv PORT --ping | --workload [N [PAD]] | "
			"--check\n");
		return 2;
	}
	port = atoi(argv[1]);
	if (port <= 0 || port > 65535)
		return 2;
	c.reply = malloc(MAX_FRAME);
	if (!c.reply)
		return 1;
	if (zk_connect(&c, port) != 0) {
		rc = 1;
		goto out;
	}
	if (strcmp(argv[2], "--ping") == 0)
		rc = 0;
	else if (strcmp(argv[2], "--workload") == 0)
		rc = workload(&c, argc > 3 ? atol(argv[3]) : 100000,
			      argc > 4 ? atol(argv[4]) : 0);
	else if (strcmp(argv[2], "--check") == 0)
		rc = check(&c);
	else
		rc = 2;
out:
	if (c.fd >= 0)
		close(c.fd);
	free(c.reply);
	return rc;
}
