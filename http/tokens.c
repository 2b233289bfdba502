/*
 * tokens.c -- the tokens file and token look-up described in tokens.h.
 *
 * A table is built whole by tokens_load and never changed after, so any
 * number of shard threads may read it without a lock; replacing it is the
 * caller's business (serve_main.c publishes a new one with one atomic
 * store).
 */
#include "tokens.h"
#include "http_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

_Static_assert(TOKENS_PREFIX_MAX == HTTP_KEY_MAX,
               "a prefix is at most one key long");

struct tokens_entry {
	unsigned char hash[TOKENS_HASH_LEN]; /* SHA-256 of the token           */
	int write;                           /* scope write (else read)        */
	unsigned line;                       /* in the file, for messages      */
	const char *prefix;                  /* in the table's pool            */
	size_t prefix_len;                   /* 0: not limited                 */
};

struct tokens_table {
	size_t n;                  /* entries used                           */
	char *pool;                /* decoded prefixes, back to back         */
	struct tokens_entry e[];   /* TOKENS_MAX of them                     */
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* "PATH: line N: ..." into WHY.  Returns -1. */
static int fail(char *why, size_t cap, const char *path, unsigned line,
                const char *fmt, ...)
{
	va_list ap;
	int n = line ? snprintf(why, cap, "%s: line %u: ", path, line)
	             : snprintf(why, cap, "%s: ", path);

	if (n < 0 || (size_t)n >= cap)
		return -1;
	va_start(ap, fmt);
	vsnprintf(why + n, cap - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Reads all of PATH into a new buffer (*LEN bytes, not NUL-ended), at most
 * TOKENS_FILE_MAX.  Returns it, or NULL after fail(). */
static char *read_file(const char *path, size_t *len, char *why, size_t cap)
{
	char *buf = malloc(TOKENS_FILE_MAX + 1);
	size_t have = 0;
	int fd, e;

	if (buf == NULL) {
		fail(why, cap, path, 0, "out of memory");
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out_errno;
	/* One byte more than allowed tells a file that is too large. */
	while (have <= TOKENS_FILE_MAX) {
		ssize_t r = read(fd, buf + have, TOKENS_FILE_MAX + 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out_errno_close;
		if (r == 0)
			break;
		have += (size_t)r;
	}
	close(fd);
	if (have > TOKENS_FILE_MAX) {
		fail(why, cap, path, 0, "larger than %d bytes: not a tokens file",
		     TOKENS_FILE_MAX);
		free(buf);
		return NULL;
	}
	*len = have;
	return buf;

out_errno_close:
	e = errno;
	close(fd);
	errno = e;
out_errno:
	fail(why, cap, path, 0, "%s", strerror(errno));
	free(buf);
	return NULL;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* upper case too: the format is byte-exact */
}

/* 64 lowercase hex digits into HASH.  Returns 0 or -1. */
static int parse_hash(const char *s, size_t n, unsigned char *hash)
{
	size_t i;

	if (n != 2 * TOKENS_HASH_LEN)
		return -1;
	for (i = 0; i < TOKENS_HASH_LEN; i++) {
		int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		hash[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* A prefix as written (S[0..N)) decoded into OUT (TOKENS_PREFIX_MAX).
 * Returns its length, or -1 with the reason in *WHAT. */
static ssize_t parse_prefix(const char *s, size_t n, char *out,
                            const char **what)
{
	ssize_t len;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) {
			*what = "the prefix holds a byte outside 0x21-0x7e "
			        "(write it as %XX)";
			return -1;
		}
	}
	len = http_pct_decode(s, n, out, TOKENS_PREFIX_MAX, 0);
	if (len == -400)
		*what = "the prefix has a bad %XX escape";
	else if (len < 0)
		*what = "the prefix is longer than 1024 bytes decoded";
	else if (len == 0)
		*what = "the prefix is empty";
	return len > 0 ? len : -1;
}

/* Splits LINE[0..N) into at most MAX blank-separated fields; returns how
 * many there were (MAX + 1 when there are more). */
static size_t split_fields(const char *line, size_t n, const char **f,
                           size_t *fl, size_t max)
{
	size_t i = 0, count = 0;

	for (;;) {
		size_t s;
		while (i < n && is_blank(line[i]))
			i++;
		if (i == n)
			return count;
		if (count == max)
			return max + 1;
		s = i;
		while (i < n && !is_blank(line[i]))
			i++;
		f[count] = line + s;
		fl[count++] = i - s;
	}
}

/* One line (its LF and CR removed) into T; a blank or comment line adds
 * nothing.  POOL is where decoded prefixes go (*USED bytes taken). */
static int parse_line(tokens_table *t, const char *line, size_t n,
                      unsigned lno, size_t *used, const char *path,
                      char *why, size_t cap)
{
	const char *f[3], *what = NULL;
	size_t fl[3], nf = split_fields(line, n, f, fl, 3), i;
	struct tokens_entry *e;
	ssize_t plen;

	if (nf == 0 || f[0][0] == '#')
		return 0;
	if (nf > 3)
		return fail(why, cap, path, lno, "unexpected text after the "
		            "prefix (expected HASH read|write [PREFIX])");
	if (t->n == TOKENS_MAX)
		return fail(why, cap, path, lno, "more than %d tokens",
		            TOKENS_MAX);
	e = &t->e[t->n];
	memset(e, 0, sizeof *e);
	if (parse_hash(f[0], fl[0], e->hash) < 0)
		return fail(why, cap, path, lno, "expected the token's SHA-256 "
		            "as 64 lowercase hex digits first (keel-serve "
		            "--hash-token makes the line)");
	if (nf < 2)
		return fail(why, cap, path, lno, "no scope after the hash "
		            "(expected read or write)");
	if (fl[1] == 4 && memcmp(f[1], "read", 4) == 0)
		e->write = 0;
	else if (fl[1] == 5 && memcmp(f[1], "write", 5) == 0)
		e->write = 1;
	else
		return fail(why, cap, path, lno, "the scope must be read or "
		            "write");
	if (nf == 3) {
		plen = parse_prefix(f[2], fl[2], t->pool + *used, &what);
		if (plen < 0)
			return fail(why, cap, path, lno, "%s", what);
		e->prefix = t->pool + *used;
		e->prefix_len = (size_t)plen;
		*used += (size_t)plen;
	}
	for (i = 0; i < t->n; i++)
		if (memcmp(t->e[i].hash, e->hash, TOKENS_HASH_LEN) == 0)
			return fail(why, cap, path, lno, "the same token as line "
			            "%u", t->e[i].line);
	e->line = lno;
	t->n++;
	return 0;
}

/* Every line of BUF[0..LEN) into T. */
static int parse_file(tokens_table *t, const char *buf, size_t len,
                      const char *path, char *why, size_t cap)
{
	size_t off = 0, used = 0;
	unsigned lno = 0;

	while (off < len) {
		const char *lf = memchr(buf + off, '\n', len - off);
		size_t end = lf ? (size_t)(lf - buf) : len, n = end - off;

		lno++;
		if (n > TOKENS_LINE_MAX)
			return fail(why, cap, path, lno, "longer than %d bytes",
			            TOKENS_LINE_MAX);
		if (n && buf[end - 1] == '\r')
			n--;
		if (memchr(buf + off, 0, n))
			return fail(why, cap, path, lno, "holds a NUL byte");
		if (parse_line(t, buf + off, n, lno, &used, path, why, cap) < 0)
			return -1;
		off = end + 1;
	}
	return 0;
}

int tokens_load(const char *path, tokens_table **out, char *why, size_t cap)
{
	size_t len = 0;
	char *buf = read_file(path, &len, why, cap);
	tokens_table *t;

	if (buf == NULL)
		return -1;
	/* A decoded prefix is never longer than the text it came from, so
	 * the file's size bounds the pool. */
	t = calloc(1, sizeof *t + TOKENS_MAX * sizeof t->e[0]);
	if (t)
		t->pool = malloc(len + 1);
	if (t == NULL || t->pool == NULL) {
		fail(why, cap, path, 0, "out of memory");
		goto out_free;
	}
	if (parse_file(t, buf, len, path, why, cap) < 0)
		goto out_free;
	free(buf);
	*out = t;
	return 0;

out_free:
	tokens_free(t);
	free(buf);
	return -1;
}

size_t tokens_count(const tokens_table *t)
{
	return t->n;
}

static int sha256(const char *s, size_t n, unsigned char *hash)
{
	unsigned int len = 0;

	if (EVP_Digest(s, n, hash, &len, EVP_sha256(), NULL) != 1 ||
	    len != TOKENS_HASH_LEN)
		return -1;
	return 0;
}

/*
 * Constant time over the table: every entry is compared, each compare
 * looks at all 32 bytes, and the match is picked with masks rather than a
 * branch, so neither which entry matched nor how many leading bytes of a
 * guess were right changes the time taken.
 */
int tokens_find(const tokens_table *t, const char *token, size_t n,
                struct tokens_grant *g)
{
	unsigned char h[TOKENS_HASH_LEN];
	size_t i, j, match = 0, found = 0;

	if (sha256(token, n, h) < 0)
		return 0;
	for (i = 0; i < t->n; i++) {
		unsigned diff = 0;
		size_t eq, mask;
		for (j = 0; j < TOKENS_HASH_LEN; j++)
			diff |= (unsigned)(h[j] ^ t->e[i].hash[j]);
		eq = (size_t)(((diff - 1u) >> 8) & 1u); /* 1 iff diff == 0 */
		mask = (size_t)0 - eq;
		match = (match & ~mask) | (i & mask);
		found |= eq;
	}
	if (!found)
		return 0;
	g->write = t->e[match].write;
	g->prefix = t->e[match].prefix;
	g->prefix_len = t->e[match].prefix_len;
	return 1;
}

int tokens_covers(const struct tokens_grant *g, const char *key, size_t klen)
{
	return klen >= g->prefix_len &&
	       memcmp(key, g->prefix, g->prefix_len) == 0;
}

int tokens_line(const char *token, size_t n, const char *scope,
                const char *prefix, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char h[TOKENS_HASH_LEN];
	char hash[2 * TOKENS_HASH_LEN + 1], decoded[TOKENS_PREFIX_MAX];
	const char *what = NULL;
	size_t i;

	if (!http_token68_valid(token, n)) {
		snprintf(out, cap, "the token must be a token68 (letters, digits, "
		         "-._~+/ then optional '='), or a client could not send "
		         "it");
		return -1;
	}
	if (strcmp(scope, "read") != 0 && strcmp(scope, "write") != 0) {
		snprintf(out, cap, "the scope must be read or write");
		return -1;
	}
	if (prefix && parse_prefix(prefix, strlen(prefix), decoded, &what) < 0) {
		snprintf(out, cap, "%s", what);
		return -1;
	}
	if (sha256(token, n, h) < 0) {
		snprintf(out, cap, "SHA-256 is not available");
		return -1;
	}
	for (i = 0; i < TOKENS_HASH_LEN; i++) {
		hash[2 * i] = hex[h[i] >> 4];
		hash[2 * i + 1] = hex[h[i] & 15];
	}
	hash[2 * TOKENS_HASH_LEN] = 0;
	if ((size_t)snprintf(out, cap, "%s %s%s%s\n", hash, scope,
	                     prefix ? " " : "", prefix ? prefix : "") >= cap) {
		snprintf(out, cap, "the line does not fit");
		return -1;
	}
	return 0;
}

void tokens_free(tokens_table *t)
{
	if (t == NULL)
		return;
	free(t->pool);
	free(t);
}
