/*
 * http_parse.c -- the request parser described in http_parse.h.
 *
 * Every loop is bounded by the caller's LEN and every index is checked
 * before it is read: the tests put requests flush against a PROT_NONE page
 * and the fuzzer runs under ASan, so one byte too far is a crash, not a
 * silent bug.  The parser is re-run from the first byte when more input
 * arrives; a head is at most HTTP_HEAD_MAX bytes, so that costs little and
 * keeps the parser free of state.
 */
#include "http_parse.h"

#include <string.h>

/* RFC 9110 section 5.6.2: tchar = "!" / "#" / ... / DIGIT / ALPHA */
static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return 1;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte allowed in a field value: VCHAR, obs-text, SP, HTAB. */
static int is_field_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Case-insensitive comparison of S[0..N) with the lower-case literal LIT. */
static int lit_eq(const char *s, size_t n, const char *lit)
{
	size_t i;

	if (strlen(lit) != n)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lit[i])
			return 0;
	}
	return 1;
}

enum http_method http_method_of(const char *s, size_t n)
{
	/* Methods are case-sensitive (RFC 9110 section 9.1). */
	static const struct {
		const char *name;
		enum http_method m;
	} known[] = {
		{"GET", HTTP_METHOD_GET},         {"HEAD", HTTP_METHOD_HEAD},
		{"PUT", HTTP_METHOD_PUT},         {"DELETE", HTTP_METHOD_DELETE},
		{"POST", HTTP_METHOD_POST},       {"OPTIONS", HTTP_METHOD_OPTIONS},
	};
	size_t i;

	for (i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strlen(known[i].name) == n && memcmp(known[i].name, s, n) == 0)
			return known[i].m;
	return HTTP_METHOD_OTHER;
}

/* Parses a decimal number by value (leading zeros are fine); -1 when
 * malformed or over 64 bits. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Where the request line's target starts, after the method and its SP.
 * Returns the index, HTTP_PARTIAL-style 0 for "need more", or -status. */
static int parse_request_line(const char *buf, size_t len, size_t i,
                              struct http_request *req, size_t *next)
{
	size_t start = i, t, e;

	while (i < len && is_tchar((unsigned char)buf[i]))
		i++;
	if (i - start > 32)
		return -400; /* no method is that long; refuse before 8 KiB */
	if (i == len)
		return HTTP_PARTIAL;
	if (buf[i] != ' ' || i == start)
		return -400;
	req->method_name.p = buf + start;
	req->method_name.n = i - start;
	req->method = http_method_of(buf + start, i - start);

	t = ++i;
	while (i < len && buf[i] != ' ') {
		unsigned char c = (unsigned char)buf[i];
		if (c <= 0x20 || c == 0x7f)
			return -400;
		if (i - t >= HTTP_TARGET_MAX)
			return -414;
		i++;
	}
	if (i == len)
		return HTTP_PARTIAL;
	if (i == t)
		return -400;
	req->target.p = buf + t;
	req->target.n = i - t;

	/* "HTTP/1.1" then CRLF or LF: exactly eight bytes before the end. */
	i++;
	{
		const char *lf = memchr(buf + i, '\n', len - i);
		if (lf == NULL)
			return len - i > 16 ? -400 : HTTP_PARTIAL;
		e = (size_t)(lf - buf);
	}
	*next = e + 1;
	if (e > i && buf[e - 1] == '\r')
		e--;
	if (e - i != 8 || memcmp(buf + i, "HTTP/", 5) != 0 || buf[i + 6] != '.' ||
	    buf[i + 5] < '0' || buf[i + 5] > '9' || buf[i + 7] < '0' ||
	    buf[i + 7] > '9')
		return -400;
	if (buf[i + 5] != '1' || (buf[i + 7] != '0' && buf[i + 7] != '1'))
		return -505;
	req->minor = buf[i + 7] - '0';
	return 1;
}

/*
 * Splits the target into path and query (RFC 9112 section 3.2):
 *   origin-form     /k?q
 *   absolute-form   http://host/k?q or https://... (a server MUST accept
 *                   it, section 3.2.2); "http://host" and "http://host?q"
 *                   have the path "/" (RFC 9110 section 4.2.3)
 *   asterisk-form   *, for OPTIONS only: the path is "*"
 * authority-form (CONNECT) is not served: 400.
 */
static int split_target(struct http_request *req)
{
	const char *p = req->target.p, *q;
	size_t n = req->target.n, skip = 0, a;

	if (n == 1 && p[0] == '*') {
		if (req->method != HTTP_METHOD_OPTIONS)
			return -400;
		req->path = req->target;
		return 0;
	}
	if (n >= 7 && lit_eq(p, 7, "http://"))
		skip = 7;
	else if (n >= 8 && lit_eq(p, 8, "https://"))
		skip = 8;
	if (skip) {
		/* the authority runs to the path or the query */
		for (a = skip; a < n && p[a] != '/' && p[a] != '?'; a++)
			;
		if (a == skip)
			return -400; /* no host */
		p += a;
		n -= a;
		if (n == 0 || p[0] == '?') {
			/* no path: it is "/".  The slice cannot point into BUF, so
			 * it points at a constant "/"; the query still does. */
			req->path = (struct http_slice){"/", 1};
			if (n) {
				req->query.p = p + 1;
				req->query.n = n - 1;
			}
			return 0;
		}
	}
	if (p[0] != '/')
		return -400;
	q = memchr(p, '?', n);
	req->path.p = p;
	req->path.n = q ? (size_t)(q - p) : n;
	if (q) {
		req->query.p = q + 1;
		req->query.n = n - req->path.n - 1;
	}
	return 0;
}

/* Connection: a comma-separated list of tokens. */
static void parse_connection(const char *v, size_t n, int *close_,
                             int *keep)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;
		while (i < n && (is_ows(v[i]) || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && is_ows(v[e - 1]))
			e--;
		if (lit_eq(v + s, e - s, "close"))
			*close_ = 1;
		else if (lit_eq(v + s, e - s, "keep-alive"))
			*keep = 1;
	}
}

struct head_state {
	int hosts, conn_close, conn_keep, seen_te, seen_expect;
};

/* One header field; NAME and VALUE are already delimited and trimmed. */
static int parse_field(const char *name, size_t nn, const char *v, size_t vn,
                       struct http_request *req, struct head_state *st)
{
	uint64_t cl;

	switch (nn) {
	case 4:
		if (lit_eq(name, nn, "host")) {
			if (st->hosts++ == 0)
				req->host = (struct http_slice){v, vn};
		}
		break;
	case 6:
		if (lit_eq(name, nn, "expect")) {
			if (st->seen_expect++)
				return -400;
			if (!lit_eq(v, vn, "100-continue"))
				return -417;
			req->expect_continue = 1;
		}
		break;
	case 8:
		if (lit_eq(name, nn, "if-match")) {
			if (req->if_match.p || http_etag_match(v, vn, 0, 1) < 0)
				return -400;
			req->if_match = (struct http_slice){v, vn};
		}
		break;
	case 10:
		if (lit_eq(name, nn, "connection"))
			parse_connection(v, vn, &st->conn_close, &st->conn_keep);
		break;
	case 13:
		if (lit_eq(name, nn, "authorization")) {
			/* Two credentials: which one would count is ambiguous. */
			if (req->authorization.p)
				return -400;
			req->authorization = (struct http_slice){v, vn};
			break;
		}
		if (lit_eq(name, nn, "if-none-match")) {
			if (req->if_none_match.p || http_etag_match(v, vn, 0, 1) < 0)
				return -400;
			req->if_none_match = (struct http_slice){v, vn};
		}
		break;
	case 14:
		if (lit_eq(name, nn, "content-length")) {
			if (parse_u64(v, vn, &cl) < 0)
				return -400;
			if (req->has_length && req->content_length != cl)
				return -400;
			req->has_length = 1;
			req->content_length = cl;
		}
		break;
	case 17:
		if (lit_eq(name, nn, "transfer-encoding")) {
			if (st->seen_te++)
				return -400;
			if (!lit_eq(v, vn, "chunked"))
				return -501;
			req->chunked = 1;
		}
		break;
	}
	return 0;
}

/* One header line BUF[i..e) (line ending stripped).  Returns 0 or -status. */
static int parse_header_line(const char *buf, size_t i, size_t e,
                             struct http_request *req, struct head_state *st)
{
	size_t s = i, vs, ve, k;

	if (is_ows(buf[i]))
		return -400; /* obs-fold or whitespace before the name */
	while (i < e && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == s || i == e || buf[i] != ':')
		return -400;
	vs = i + 1;
	ve = e;
	for (k = vs; k < ve; k++)
		if (!is_field_byte((unsigned char)buf[k]))
			return -400;
	while (vs < ve && is_ows(buf[vs]))
		vs++;
	while (ve > vs && is_ows(buf[ve - 1]))
		ve--;
	return parse_field(buf + s, i - s, buf + vs, ve - vs, req, st);
}

/* After the empty line: the checks that need every field. */
static int finish_head(struct http_request *req, const struct head_state *st)
{
	if (req->minor == 1 ? st->hosts != 1 : st->hosts > 1)
		return -400;
	if (req->chunked && (req->has_length || req->minor == 0))
		return -400;
	if (req->minor == 1)
		req->keep_alive = !st->conn_close;
	else
		req->keep_alive = st->conn_keep && !st->conn_close;
	return split_target(req);
}

int http_parse_request(const char *buf, size_t len, struct http_request *req)
{
	struct head_state st = {0};
	size_t i = 0, next = 0;
	int rc;

	memset(req, 0, sizeof *req);
	while (i < len && (buf[i] == '\r' || buf[i] == '\n')) {
		if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return -400;
		i++;
		if (i >= HTTP_HEAD_MAX)
			return -431;
	}
	rc = parse_request_line(buf, len, i, req, &next);
	if (rc <= 0)
		return rc == HTTP_PARTIAL && len >= HTTP_HEAD_MAX ? -431 : rc;

	for (i = next;;) {
		const char *lf;
		size_t e;

		if (i > HTTP_HEAD_MAX)
			return -431;
		lf = i < len ? memchr(buf + i, '\n', len - i) : NULL;
		if (lf == NULL)
			return len >= HTTP_HEAD_MAX ? -431 : HTTP_PARTIAL;
		e = (size_t)(lf - buf);
		next = e + 1;
		if (e > i && buf[e - 1] == '\r')
			e--;
		if (e == i)
			break; /* the empty line ends the head */
		rc = parse_header_line(buf, i, e, req, &st);
		if (rc < 0)
			return rc;
		i = next;
	}
	if (next > HTTP_HEAD_MAX)
		return -431;
	rc = finish_head(req, &st);
	return rc < 0 ? rc : (int)next;
}

/* ---- credentials --------------------------------------------------------- */

/* token68 (RFC 9110 section 11.2): 1*( ALPHA / DIGIT / "-" / "." / "_" /
 * "~" / "+" / "/" ) *"=" */
static int is_token68_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_' ||
	       c == '~' || c == '+' || c == '/';
}

int http_token68_valid(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_token68_char((unsigned char)s[i]))
		i++;
	if (i == 0)
		return 0;
	while (i < n && s[i] == '=')
		i++;
	return i == n;
}

int http_bearer_token(const struct http_slice *auth, struct http_slice *token)
{
	const char *s = auth->p;
	size_t n = auth->n, i = 6;

	/* the scheme is case-insensitive (RFC 9110 section 11.1), then one or
	 * more spaces (RFC 6750 section 2.1 says one; curl and others send
	 * one, and accepting more costs nothing) */
	if (s == NULL || n <= 6 || !lit_eq(s, 6, "bearer") || s[6] != ' ')
		return 0;
	while (i < n && s[i] == ' ')
		i++;
	if (!http_token68_valid(s + i, n - i))
		return 0;
	token->p = s + i;
	token->n = n - i;
	return 1;
}

/* ---- entity tags -------------------------------------------------------- */

/* Does the opaque tag T[0..N) spell revision REV in decimal? */
static int tag_is_rev(const char *t, size_t n, uint64_t rev)
{
	uint64_t v;

	if (n > 1 && t[0] == '0')
		return 0;
	return parse_u64(t, n, &v) == 0 && v == rev;
}

int http_etag_is_any(const char *list, size_t len)
{
	return len == 1 && list[0] == '*';
}

int http_etag_match(const char *s, size_t n, uint64_t rev, int weak_ok)
{
	size_t i = 0, count = 0;
	int match = 0;

	if (http_etag_is_any(s, n))
		return rev != 0;
	for (;;) {
		size_t t;
		int weak = 0;

		while (i < n && (is_ows(s[i]) || s[i] == ','))
			i++;
		if (i == n)
			break;
		if (s[i] == 'W' && i + 1 < n && s[i + 1] == '/') {
			weak = 1;
			i += 2;
		}
		if (i >= n || s[i] != '"')
			return -400;
		t = ++i;
		while (i < n && s[i] != '"') {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x21 || c == 0x7f)
				return -400;
			i++;
		}
		if (i >= n)
			return -400;
		count++;
		if (rev != 0 && (weak_ok || !weak) && tag_is_rev(s + t, i - t, rev))
			match = 1;
		i++;
		while (i < n && is_ows(s[i]))
			i++;
		if (i < n && s[i] != ',')
			return -400;
	}
	return count == 0 ? -400 : match;
}

/* ---- chunked transfer coding ------------------------------------------- */

enum {
	CH_SIZE = 0,   /* hex digits of the chunk size                 */
	CH_EXT,        /* chunk extension, skipped up to the line end  */
	CH_SIZE_LF,    /* CR seen after the size line                  */
	CH_DATA,       /* chunk data                                   */
	CH_DATA_CR,    /* CRLF after the data                          */
	CH_DATA_LF,
	CH_TRAILER,    /* at the start of a trailer line               */
	CH_TRAILER_IN, /* inside a trailer line                        */
	CH_END_LF,     /* CR of the final empty line seen              */
};

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The size line ended: start the chunk's data, or the trailer. */
static int chunk_size_done(struct http_chunked *c)
{
	c->line = 0;
	c->digits = 0;
	if (c->remaining == 0) {
		c->state = CH_TRAILER;
		return 0;
	}
	if (c->remaining > UINT64_MAX - c->total ||
	    (c->limit && c->total + c->remaining > c->limit))
		return -413;
	c->state = CH_DATA;
	return 0;
}

/* Handles one byte of a size line or trailer.  Returns 0 or -status. */
static int chunk_byte(struct http_chunked *c, unsigned char ch)
{
	int h;

	if (++c->line > HTTP_HEAD_MAX)
		return -431;
	switch (c->state) {
	case CH_SIZE:
		h = hexval(ch);
		if (h >= 0) {
			/* by value, not by digit count: leading zeros are valid */
			if (c->remaining > UINT64_MAX >> 4)
				return -400; /* over 64 bits */
			c->remaining = c->remaining * 16 + (uint64_t)h;
			c->digits = 1;
			return 0;
		}
		if (c->digits == 0)
			return -400;
		if (ch == ';' || ch == ' ' || ch == '\t')
			c->state = CH_EXT;
		else if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (ch == '\n')
			return chunk_size_done(c);
		else
			return -400;
		return 0;
	case CH_EXT:
		if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (ch == '\n')
			return chunk_size_done(c);
		else if (!is_field_byte(ch))
			return -400;
		return 0;
	case CH_SIZE_LF:
		return ch == '\n' ? chunk_size_done(c) : -400;
	case CH_DATA_CR:
		if (ch == '\r')
			c->state = CH_DATA_LF;
		else if (ch == '\n')
			c->state = CH_SIZE;
		else
			return -400;
		c->line = 0;
		return 0;
	case CH_DATA_LF:
		if (ch != '\n')
			return -400;
		c->state = CH_SIZE;
		c->line = 0;
		return 0;
	case CH_TRAILER:
		if (ch == '\r')
			c->state = CH_END_LF;
		else if (ch == '\n')
			c->done = 1;
		else if (is_field_byte(ch))
			c->state = CH_TRAILER_IN;
		else
			return -400;
		return 0;
	case CH_TRAILER_IN:
		if (ch == '\n')
			c->state = CH_TRAILER;
		else if (ch != '\r' && !is_field_byte(ch))
			return -400;
		return 0;
	case CH_END_LF:
		if (ch != '\n')
			return -400;
		c->done = 1;
		return 0;
	}
	return -400;
}

ssize_t http_chunked_decode(struct http_chunked *c, char *p, size_t n,
                            size_t *out)
{
	size_t i = 0, o = 0;
	int rc;

	while (i < n && !c->done) {
		if (c->state == CH_DATA) {
			size_t take = n - i;
			if (take > c->remaining)
				take = (size_t)c->remaining;
			memmove(p + o, p + i, take);
			o += take;
			i += take;
			c->remaining -= take;
			c->total += take;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		rc = chunk_byte(c, (unsigned char)p[i]);
		if (rc < 0)
			return rc;
		i++;
	}
	*out = o;
	return (ssize_t)i;
}

/* ---- targets and queries -------------------------------------------------- */

ssize_t http_pct_decode(const char *in, size_t n, char *out, size_t cap,
                        int plus_space)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = in[i];
		if (c == '%') {
			int hi, lo;
			if (i + 2 >= n)
				return -400;
			hi = hexval((unsigned char)in[i + 1]);
			lo = hexval((unsigned char)in[i + 2]);
			if (hi < 0 || lo < 0)
				return -400;
			c = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (o >= cap)
			return -414;
		out[o++] = c;
	}
	return (ssize_t)o;
}

int http_query_param(const char *q, size_t qn, const char *name,
                     struct http_slice *val)
{
	size_t i = 0, nl = strlen(name);

	while (q && i < qn) {
		const char *amp = memchr(q + i, '&', qn - i);
		size_t e = amp ? (size_t)(amp - q) : qn;
		const char *eq = memchr(q + i, '=', e - i);
		size_t ne = eq ? (size_t)(eq - q) : e;

		if (ne - i == nl && memcmp(q + i, name, nl) == 0) {
			val->p = eq ? eq + 1 : q + e;
			val->n = eq ? e - ne - 1 : 0;
			return 1;
		}
		i = e + 1;
	}
	return 0;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 425: return "Too Early";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	}
	return "Unknown";
}
