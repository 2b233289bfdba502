/*
 * campaign_json.c -- flat JSON objects for campaigns (campaign.h): the
 * parser that reads result lines and torture's --json summary, and the
 * string writer that makes the lines.
 *
 * The parser is strict where a sloppy one would let garbage through
 * (control bytes, NUL, nesting, trailing bytes, duplicate keys) and
 * lenient only where the kit writes more than it needs: a string longer
 * than CAMPAIGN_VALUE_MAX - 1 bytes is cut, not refused.
 */
#include "campaign.h"

#include <stdio.h>
#include <string.h>

typedef struct cursor {
	const char *p, *start, *end;
	char *why;
	size_t cap;
} cursor;

static int fail(cursor *c, const char *what)
{
	snprintf(c->why, c->cap, "%s at byte %zu", what,
	         (size_t)(c->p - c->start));
	return -1;
}

static void skip_ws(cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
	                         *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char h = p[i];
		unsigned d = h >= '0' && h <= '9' ? (unsigned)(h - '0') :
		             h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10) :
		             h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10) : 16u;
		if (d == 16)
			return -1;
		*v = *v * 16 + d;
	}
	return 0;
}

/* A string at c->p (its opening quote) into OUT (CAP bytes, cut to fit).
 * OVERFLOW_FAILS: a key must fit whole. */
static int parse_string(cursor *c, char *out, size_t cap, int overflow_fails)
{
	size_t n = 0;

	c->p++; /* the opening quote */
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = (unsigned char)*c->p;
		unsigned v;

		if (ch < 0x20)
			return fail(c, "a control byte or NUL inside a string");
		if (ch == '\\') {
			if (c->end - c->p < 2)
				return fail(c, "an unfinished escape");
			switch (c->p[1]) {
			case '"': case '\\': case '/': ch = (unsigned char)c->p[1]; break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'n': ch = '\n'; break;
			case 'r': ch = '\r'; break;
			case 't': ch = '\t'; break;
			case 'u':
				if (c->end - c->p < 6 || hex4(c->p + 2, &v) < 0)
					return fail(c, "a bad \\u escape");
				if (v == 0)
					return fail(c, "\\u0000 inside a string");
				ch = v < 0x7f ? (unsigned char)v : '?';
				c->p += 4;
				break;
			default:
				return fail(c, "an unknown escape");
			}
			c->p += 2;
		} else {
			c->p++;
		}
		if (n + 1 < cap)
			out[n++] = (char)ch;
		else if (overflow_fails)
			return fail(c, "a key too long");
	}
	if (c->p >= c->end)
		return fail(c, "an unterminated string");
	c->p++; /* the closing quote */
	out[n] = '\0';
	return 0;
}

/* A number as JSON writes it: -?digits(.digits)?([eE][+-]?digits)? */
static int parse_number(cursor *c, char *out, size_t cap)
{
	const char *s = c->p;
	size_t len;

	if (c->p < c->end && *c->p == '-')
		c->p++;
#define DIGITS(what) do { \
		const char *d0 = c->p; \
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') \
			c->p++; \
		if (c->p == d0) \
			return fail(c, what); \
	} while (0)
	DIGITS("a malformed value");
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		DIGITS("a malformed number");
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		DIGITS("a malformed number");
	}
#undef DIGITS
	len = (size_t)(c->p - s);
	if (len >= cap)
		return fail(c, "a number too long");
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

static int parse_value(cursor *c, campaign_field *f)
{
	static const struct { const char *word; int kind; } words[] = {
		{"true", CAMPAIGN_JSON_TRUE}, {"false", CAMPAIGN_JSON_FALSE},
		{"null", CAMPAIGN_JSON_NULL},
	};

	f->value[0] = '\0';
	if (c->p >= c->end)
		return fail(c, "a missing value");
	if (*c->p == '"') {
		f->kind = CAMPAIGN_JSON_STRING;
		return parse_string(c, f->value, sizeof f->value, 0);
	}
	if (*c->p == '{' || *c->p == '[')
		return fail(c, "a nested object or array (results are flat)");
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		size_t len = strlen(words[i].word);
		if ((size_t)(c->end - c->p) >= len &&
		    memcmp(c->p, words[i].word, len) == 0) {
			c->p += len;
			f->kind = words[i].kind;
			return 0;
		}
	}
	f->kind = CAMPAIGN_JSON_NUMBER;
	return parse_number(c, f->value, sizeof f->value);
}

int campaign_json_parse(const char *text, size_t len, campaign_field *fields,
                        int max, char *why, size_t cap)
{
	cursor c = { text, text, text + len, why, cap };
	int n = 0;

	skip_ws(&c);
	if (c.p >= c.end || *c.p != '{')
		return fail(&c, "not a JSON object");
	c.p++;
	skip_ws(&c);
	if (c.p < c.end && *c.p == '}') {
		c.p++;
		goto closed;
	}
	for (;;) {
		campaign_field *f;

		if (n >= max)
			return fail(&c, "too many fields");
		f = &fields[n];
		skip_ws(&c);
		if (c.p >= c.end || *c.p != '"')
			return fail(&c, "a missing key");
		if (parse_string(&c, f->key, sizeof f->key, 1) < 0)
			return -1;
		if (campaign_json_get(fields, n, f->key))
			return fail(&c, "a key given twice");
		skip_ws(&c);
		if (c.p >= c.end || *c.p != ':')
			return fail(&c, "a missing ':'");
		c.p++;
		skip_ws(&c);
		if (parse_value(&c, f) < 0)
			return -1;
		n++;
		skip_ws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			continue;
		}
		if (c.p < c.end && *c.p == '}') {
			c.p++;
			break;
		}
		return fail(&c, "a missing ',' or '}'");
	}
closed:
	skip_ws(&c);
	if (c.p != c.end)
		return fail(&c, "bytes after the object");
	return n;
}

const campaign_field *campaign_json_get(const campaign_field *fields, int n,
                                        const char *key)
{
	for (int i = 0; i < n; i++)
		if (strcmp(fields[i].key, key) == 0)
			return &fields[i];
	return NULL;
}

/* Appends LEN bytes; once they do not fit, *N stays at CAP - 1 (full). */
static void put(char *buf, size_t *n, size_t cap, const char *s, size_t len)
{
	if (*n + len + 1 > cap) {
		*n = cap - 1;
		return;
	}
	memcpy(buf + *n, s, len);
	*n += len;
}

void campaign_json_string(char *buf, size_t *n, size_t cap, const char *s,
                          size_t maxlen)
{
	char esc[8];

	if (cap == 0 || *n >= cap - 1)
		return;
	put(buf, n, cap, "\"", 1);
	for (size_t i = 0; i < maxlen && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\') {
			esc[0] = '\\';
			esc[1] = (char)ch;
			put(buf, n, cap, esc, 2);
		} else if (ch < 0x20 || ch == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", ch);
			put(buf, n, cap, esc, 6);
		} else {
			put(buf, n, cap, (const char *)&ch, 1);
		}
	}
	put(buf, n, cap, "\"", 1);
	buf[*n] = '\0';
}
