/*
 * exec_proto.c -- the workload protocol and its translation into the oracle
 * (contract in exec_proto.h, protocol in docs/targets.md).
 */
#include "exec_proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "value.h"

#define REV 1 /* every value carries revision 1: the exec model has no txids */

typedef struct xop {
	uint32_t key;   /* key number                                   */
	uint64_t seq;   /* the key's operation number (oracle thread seq) */
	char *name;     /* OP as the workload named it                  */
	char *value;    /* NULL: a delete                               */
	int acked;
	int64_t prev;   /* the previous operation on the same key, or -1 */
} xop;

struct exec_model {
	oracle *o;
	uint32_t max_keys, nkeys;
	uint64_t nonce;
	char **key_name;      /* per key                                  */
	char **start_val;     /* per key: verified value, NULL when absent */
	char **obs_val;       /* per key: what the checker printed          */
	int64_t *key_last;    /* per key: newest operation this cycle, -1   */
	uint32_t *khash;      /* key name -> number + 1                     */
	size_t khcap;
	xop *ops;             /* this cycle's operations, in intent order   */
	size_t nops, opcap;
	uint32_t *ohash;      /* op name -> index + 1                       */
	size_t ohcap;
	uint64_t acked, issued;
	uint64_t unknown;     /* checker keys the workload never named      */
	char unknown_msg[EXEC_TOKEN_MAX + 100];
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void say(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

int exec_model_new(uint32_t max_keys, uint64_t nonce, exec_model **out)
{
	exec_model *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -1;
	m->max_keys = max_keys;
	m->nonce = nonce;
	m->khcap = 16;
	while (m->khcap < 2 * (size_t)max_keys)
		m->khcap *= 2;
	m->key_name = calloc(max_keys, sizeof(char *));
	m->start_val = calloc(max_keys, sizeof(char *));
	m->obs_val = calloc(max_keys, sizeof(char *));
	m->key_last = malloc(max_keys * sizeof(int64_t));
	m->khash = calloc(m->khcap, sizeof(uint32_t));
	if (!m->key_name || !m->start_val || !m->obs_val || !m->key_last ||
	    !m->khash || oracle_new(max_keys, max_keys, nonce, &m->o) < 0) {
		exec_model_free(m);
		return -1;
	}
	for (uint32_t k = 0; k < max_keys; k++)
		m->key_last[k] = -1;
	*out = m;
	return 0;
}

static void clear_ops(exec_model *m)
{
	for (size_t i = 0; i < m->nops; i++) {
		free(m->ops[i].name);
		free(m->ops[i].value);
		m->key_last[m->ops[i].key] = -1;
	}
	m->nops = 0;
	if (m->ohash)
		memset(m->ohash, 0, m->ohcap * sizeof(uint32_t));
	m->acked = m->issued = 0;
}

void exec_model_free(exec_model *m)
{
	if (!m)
		return;
	if (m->key_last)
		clear_ops(m);
	for (uint32_t k = 0; k < m->nkeys; k++) {
		free(m->key_name[k]);
		free(m->start_val[k]);
		free(m->obs_val[k]);
	}
	free(m->key_name);
	free(m->start_val);
	free(m->obs_val);
	free(m->key_last);
	free(m->khash);
	free(m->ops);
	free(m->ohash);
	oracle_free(m->o);
	free(m);
}

/* The number of KEY, or -1 when unknown (ADD: make it known, -2 when the
 * key space is full, -3 without memory). */
static int64_t key_find(exec_model *m, const char *key, int add)
{
	size_t i = hash(key) & (m->khcap - 1);

	for (; m->khash[i]; i = (i + 1) & (m->khcap - 1))
		if (strcmp(m->key_name[m->khash[i] - 1], key) == 0)
			return m->khash[i] - 1;
	if (!add)
		return -1;
	if (m->nkeys >= m->max_keys)
		return -2;
	m->key_name[m->nkeys] = strdup(key);
	if (!m->key_name[m->nkeys])
		return -3;
	m->khash[i] = ++m->nkeys;
	return m->nkeys - 1;
}

/* A token: 1..EXEC_TOKEN_MAX printable bytes, no spaces.  Splits LINE in
 * place; returns the next token or NULL. */
static char *token(char **p)
{
	char *s = *p, *t;

	while (*s == ' ')
		s++;
	if (!*s)
		return NULL;
	t = s;
	while (*s && *s != ' ')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return t;
}

static int token_ok(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > EXEC_TOKEN_MAX)
		return 0;
	for (; *t; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
			return 0;
	return 1;
}

/* ---- values of any bytes ----------------------------------------------------
 *
 * A KEY or VALUE on the wire is a plain token, or "hex:" and an even number
 * of hex digits, or a JSON string ("..." with \" \\ \/ \b \f \n \r \t and
 * \u00XX for one byte).  Each is decoded to bytes, then kept in ONE
 * canonical spelling so that the two sides compare as strings: the bytes
 * themselves when they form a plain token (1..255 printable bytes, no space,
 * not starting with '"' or "hex:"), else "hex:" and their hex.  A checker
 * line's VALUE is the rest of its line: besides the forms above, raw bytes
 * (spaces, control bytes, NULs: a checker that prints what it found) are
 * taken as they are -- such a value was never intended, so it is reported
 * as found, never as a set-up error. */

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes S[0..N) into OUT (CAP bytes); *LEN gets the byte count.  0, or -1
 * when S is a malformed hex: or JSON form.  RAW: anything else is taken as
 * bytes; otherwise only a plain token is. */
static int wire_decode(const char *s, size_t n, int raw, unsigned char *out,
                        size_t cap, size_t *len)
{
	size_t o = 0;

	if (n >= 4 && memcmp(s, "hex:", 4) == 0) {
		if ((n - 4) % 2 || (n - 4) / 2 > cap || n == 4)
			return -1;
		for (size_t i = 4; i < n; i += 2) {
			int hi = unhex(s[i]), lo = unhex(s[i + 1]);
			if (hi < 0 || lo < 0)
				return -1;
			out[o++] = (unsigned char)(hi << 4 | lo);
		}
	} else if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		for (size_t i = 1; i + 1 < n; i++) {
			unsigned char c = (unsigned char)s[i];
			if (o == cap)
				return -1;
			if (c == '"')
				return -1;
			if (c != '\\') {
				out[o++] = c;
				continue;
			}
			if (++i + 1 >= n)
				return -1;
			switch (s[i]) {
			case '"': case '\\': case '/': out[o++] = (unsigned char)s[i]; break;
			case 'b': out[o++] = '\b'; break;
			case 'f': out[o++] = '\f'; break;
			case 'n': out[o++] = '\n'; break;
			case 'r': out[o++] = '\r'; break;
			case 't': out[o++] = '\t'; break;
			case 'u':
				if (i + 4 >= n - 1 || s[i + 1] != '0' ||
				    s[i + 2] != '0' || unhex(s[i + 3]) < 0 ||
				    unhex(s[i + 4]) < 0)
					return -1; /* one byte: \u0000-\u00ff */
				out[o++] = (unsigned char)(unhex(s[i + 3]) << 4 |
				                           unhex(s[i + 4]));
				i += 4;
				break;
			default:
				return -1;
			}
		}
	} else {
		if (n == 0 || n > cap)
			return -1;
		for (size_t i = 0; !raw && i < n; i++)
			if ((unsigned char)s[i] <= 0x20 ||
			    (unsigned char)s[i] >= 0x7f)
				return -1;
		memcpy(out, s, n);
		o = n;
	}
	*len = o;
	return 0;
}

/* The canonical spelling of B[0..N) in OUT (at least 2 * N + 5 bytes). */
static void wire_canonical(const unsigned char *b, size_t n, char *out)
{
	int plain = n > 0 && n <= EXEC_TOKEN_MAX && b[0] != '"' &&
	            !(n >= 4 && memcmp(b, "hex:", 4) == 0);
	for (size_t i = 0; plain && i < n; i++)
		plain = b[i] > 0x20 && b[i] < 0x7f;
	if (plain) {
		memcpy(out, b, n);
		out[n] = '\0';
		return;
	}
	memcpy(out, "hex:", 4);
	for (size_t i = 0; i < n; i++)
		sprintf(out + 4 + 2 * i, "%02x", b[i]);
	out[4 + 2 * n] = '\0';
}

#define VALUE_BYTES_MAX 1024 /* a checker's value longer than this: cut */
#define CANON_MAX (2 * VALUE_BYTES_MAX + 8)

/* One token of a workload line, in its canonical spelling.  0, or -1. */
static int token_canonical(const char *t, char *out)
{
	unsigned char b[EXEC_TOKEN_MAX];
	size_t n;
	if (strlen(t) > 2 * EXEC_TOKEN_MAX + 4 ||
	    wire_decode(t, strlen(t), 0, b, sizeof b, &n) < 0)
		return -1;
	wire_canonical(b, n, out);
	return 0;
}

/* The bytes a canonical spelling stands for. */
static size_t canonical_bytes(const char *c, unsigned char *out, size_t cap)
{
	size_t n = 0;
	if (wire_decode(c, strlen(c), 1, out, cap, &n) < 0)
		return 0;
	return n;
}

static int64_t op_find(exec_model *m, const char *name)
{
	if (!m->ohcap)
		return -1;
	for (size_t i = hash(name) & (m->ohcap - 1); m->ohash[i];
	     i = (i + 1) & (m->ohcap - 1))
		if (strcmp(m->ops[m->ohash[i] - 1].name, name) == 0)
			return m->ohash[i] - 1;
	return -1;
}

static int op_index_grow(exec_model *m)
{
	size_t cap = m->ohcap ? m->ohcap * 2 : 256;
	uint32_t *h = calloc(cap, sizeof(uint32_t));

	if (!h)
		return -1;
	for (size_t j = 0; j < m->nops; j++) {
		size_t i = hash(m->ops[j].name) & (cap - 1);
		while (h[i])
			i = (i + 1) & (cap - 1);
		h[i] = (uint32_t)j + 1;
	}
	free(m->ohash);
	m->ohash = h;
	m->ohcap = cap;
	return 0;
}

static int intent(exec_model *m, const char *op, const char *key,
                  const char *value, char *why, size_t whylen)
{
	proto_rec r;
	const char *w = NULL;
	int64_t k;
	xop *x;

	if (op_find(m, op) >= 0) {
		say(why, whylen, "operation '%s' has a second intent (each OP "
		    "names one operation)", op);
		return -1;
	}
	k = key_find(m, key, 1);
	if (k == -2) {
		say(why, whylen, "the workload used more than %u distinct keys "
		    "(raise --keys)", m->max_keys);
		return -1;
	}
	if (k < 0) {
		say(why, whylen, "out of memory");
		return -1;
	}
	if (m->nops == m->opcap) {
		size_t cap = m->opcap ? 2 * m->opcap : 256;
		xop *ops = realloc(m->ops, cap * sizeof(*ops));
		if (!ops) {
			say(why, whylen, "out of memory");
			return -1;
		}
		m->ops = ops;
		m->opcap = cap;
	}
	if (2 * (m->nops + 1) > m->ohcap && op_index_grow(m) < 0) {
		say(why, whylen, "out of memory");
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_INTENT;
	r.thread = (uint32_t)k;
	r.seq = oracle_next_seq(m->o, (uint32_t)k);
	r.count = 1;
	r.change[0].key = (uint32_t)k;
	r.change[0].len = value ? VALUE_HEADER : 0;
	if (oracle_record(m->o, &r, &w) < 0) {
		say(why, whylen, "the oracle refused intent '%s': %s", op, w);
		return -1;
	}
	x = &m->ops[m->nops];
	x->key = (uint32_t)k;
	x->seq = r.seq;
	x->name = strdup(op);
	x->value = value ? strdup(value) : NULL;
	x->acked = 0;
	x->prev = m->key_last[k];
	m->key_last[k] = (int64_t)m->nops;
	size_t i = hash(op) & (m->ohcap - 1);
	while (m->ohash[i])
		i = (i + 1) & (m->ohcap - 1);
	m->ohash[i] = (uint32_t)++m->nops;
	m->issued++;
	return 0;
}

static int ack(exec_model *m, const char *op, char *why, size_t whylen)
{
	int64_t j = op_find(m, op);
	const char *w = NULL;
	proto_rec r;

	if (j < 0) {
		say(why, whylen, "'ack %s' names no operation of this workload "
		    "process (send 'intent %s KEY VALUE' first)", op, op);
		return -1;
	}
	if (m->ops[j].acked)
		return 0; /* said twice: still durable */
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_ACK;
	r.thread = m->ops[j].key;
	r.seq = m->ops[j].seq;
	if (oracle_record(m->o, &r, &w) < 0) {
		say(why, whylen, "the oracle refused 'ack %s': %s", op, w);
		return -1;
	}
	m->ops[j].acked = 1;
	m->acked++;
	return 0;
}

int exec_model_line(exec_model *m, const char *line, char *why,
                    size_t whylen)
{
	char buf[4 * EXEC_TOKEN_MAX + 32], *p = buf, *verb, *op, *key, *val;

	if (strlen(line) >= sizeof(buf)) {
		say(why, whylen, "protocol line longer than %zu bytes",
		    sizeof(buf) - 1);
		return -1;
	}
	strcpy(buf, line);
	verb = token(&p);
	op = token(&p);
	if (verb && op && token_ok(op) && strcmp(verb, "ack") == 0 &&
	    !token(&p))
		return ack(m, op, why, whylen);
	key = token(&p);
	val = token(&p);
	char ckey[CANON_MAX], cval[CANON_MAX];
	if (verb && strcmp(verb, "intent") == 0 && op && key && val &&
	    !token(&p) && token_ok(op) && token_canonical(key, ckey) == 0 &&
	    (strcmp(val, "delete") == 0 || token_canonical(val, cval) == 0))
		return intent(m, op, ckey, strcmp(val, "delete") ? cval : NULL,
		              why, whylen);
	say(why, whylen, "malformed protocol line '%.80s' (expected 'intent "
	    "OP KEY VALUE', 'intent OP KEY delete' or 'ack OP', tokens of "
	    "1-%d printable bytes, or hex:HEX, or a JSON string without "
	    "spaces)", line, EXEC_TOKEN_MAX);
	return -1;
}

uint64_t exec_model_acked(const exec_model *m) { return m->acked; }
uint64_t exec_model_issued(const exec_model *m) { return m->issued; }

void exec_model_new_process(exec_model *m)
{
	(void)m; /* OP names live for one cycle; verify_end clears them */
}

/* ---- adopting and observing ------------------------------------------------ */

/* The self-describing value the oracle expects for operation SEQ on K. */
static void encode(const exec_model *m, uint32_t k, uint64_t seq,
                   unsigned char buf[VALUE_HEADER])
{
	value_id id = { .key = k, .thread = k, .index = 0, .seq = seq,
	                .nonce = m->nonce, .len = VALUE_HEADER };
	value_encode(&id, buf);
}

static int checker_split(const char *line, size_t len, char *key, char *val,
                         char *why, size_t whylen);

int exec_model_adopt_line(exec_model *m, const char *line, size_t len,
                          char *why, size_t whylen)
{
	char key[CANON_MAX], val[CANON_MAX];
	int rc = checker_split(line, len, key, val, why, whylen);
	return rc <= 0 ? rc : exec_model_adopt(m, key, val, why, whylen);
}

int exec_model_adopt(exec_model *m, const char *key, const char *value,
                     char *why, size_t whylen)
{
	unsigned char buf[VALUE_HEADER];
	char kb[VALUE_KEY_MAX];
	const char *w = "";
	int64_t k;

	k = key_find(m, key, 1);
	if (k < 0) {
		say(why, whylen, "more than %u distinct keys (raise --keys)",
		    m->max_keys);
		return -1;
	}
	/* seq 0 is never issued: the value "from before the run" */
	encode(m, (uint32_t)k, 0, buf);
	if (oracle_adopt(m->o, kb, value_key((uint32_t)k, kb), buf, sizeof buf,
	                 REV, &w) < 0) {
		say(why, whylen, "key %s: %s", key, w);
		return -1;
	}
	free(m->start_val[k]);
	m->start_val[k] = strdup(value);
	return 0;
}

void exec_model_verify_begin(exec_model *m)
{
	oracle_verify_begin(m->o, REV);
	for (uint32_t k = 0; k < m->nkeys; k++) {
		free(m->obs_val[k]);
		m->obs_val[k] = NULL;
	}
	m->unknown = 0;
	m->unknown_msg[0] = '\0';
}

/* Splits checker line LINE[0..LEN) into its KEY and VALUE, each in its
 * canonical spelling.  1 (a pair), 0 (an empty line), -1 with WHY. */
static int checker_split(const char *line, size_t len, char *key, char *val,
                        char *why, size_t whylen)
{
	unsigned char b[VALUE_BYTES_MAX];
	size_t i = 0, k0, k1, n;

	while (i < len && line[i] == ' ')
		i++;
	if (i == len)
		return 0;
	k0 = i;
	while (i < len && line[i] != ' ')
		i++;
	k1 = i;
	while (i < len && line[i] == ' ')
		i++;
	char kt[2 * EXEC_TOKEN_MAX + 8];
	/* "KEY " -- a key and an empty rest -- is a value found (empty, as a
	 * checker that prints an empty file shows it), judged like any
	 * other; "KEY" alone says nothing of a value */
	if (k1 == len || k1 - k0 >= sizeof kt) {
		say(why, whylen, "malformed checker line '%.80s' (expected "
		    "'KEY VALUE')", line);
		return -1;
	}
	memcpy(kt, line + k0, k1 - k0);
	kt[k1 - k0] = '\0';
	if (memchr(kt, '\0', k1 - k0) || token_canonical(kt, key) < 0) {
		say(why, whylen, "malformed checker line '%.80s' (a KEY is a "
		    "token of 1-%d printable bytes, hex:HEX or a JSON string)",
		    line, EXEC_TOKEN_MAX);
		return -1;
	}
	/* the value: the rest of the line, whatever its bytes */
	size_t vlen = len - i;
	if (wire_decode(line + i, vlen, 1, b, sizeof b, &n) < 0) {
		/* a malformed escape, or too long: the raw bytes, cut */
		n = vlen < sizeof b ? vlen : sizeof b;
		memcpy(b, line + i, n);
	}
	wire_canonical(b, n, val);
	return 1;
}

int exec_model_observe(exec_model *m, const char *line, size_t len,
                       char *why, size_t whylen)
{
	char key[CANON_MAX], val[CANON_MAX], kb[VALUE_KEY_MAX];
	unsigned char enc[VALUE_HEADER];
	int64_t k, j;
	int rc = checker_split(line, len, key, val, why, whylen);

	if (rc <= 0)
		return rc;
	k = key_find(m, key, 0);
	if (k < 0) {
		if (!m->unknown++)
			snprintf(m->unknown_msg, sizeof m->unknown_msg,
			         "key \"%.80s\" is present (\"%.80s\") but the workload "
			         "never named it", key, val);
		return 0;
	}
	if (!m->obs_val[k])
		m->obs_val[k] = strdup(val);
	/* newest operation on K that wrote exactly VAL, else the start value,
	 * else something never written (bytes no value decodes from) */
	for (j = m->key_last[k]; j >= 0; j = m->ops[j].prev)
		if (m->ops[j].value && strcmp(m->ops[j].value, val) == 0)
			break;
	if (j >= 0)
		encode(m, (uint32_t)k, m->ops[j].seq, enc);
	else if (m->start_val[k] && strcmp(m->start_val[k], val) == 0)
		value_encode(&oracle_key(m->o, (uint32_t)k)->id, enc);
	else
		memset(enc, 0xee, sizeof enc);
	oracle_observe(m->o, kb, value_key((uint32_t)k, kb), enc, sizeof enc,
	               REV);
	return 0;
}

/* ---- the verdict ----------------------------------------------------------- */

typedef struct collect {
	exec_model *m;
	exec_report_fn report;
	void *arg;
} collect;

static void describe_found(const exec_model *m, uint32_t k, char *buf,
                           size_t cap)
{
	if (m->obs_val[k])
		snprintf(buf, cap, "\"%s\"", m->obs_val[k]);
	else
		snprintf(buf, cap, "nothing (the key is absent)");
}

/* A value found that is a proper prefix of the acknowledged one: what a
 * torn write leaves.  Said after FOUND (its words, CAP bytes). */
static void torn_prefix(const exec_model *m, uint32_t k, int64_t j,
                        char *found, size_t cap)
{
	unsigned char want[VALUE_BYTES_MAX], got[VALUE_BYTES_MAX];
	size_t nw, ng, at = strlen(found);

	if (j < 0 || !m->ops[j].value || !m->obs_val[k])
		return;
	nw = canonical_bytes(m->ops[j].value, want, sizeof want);
	ng = canonical_bytes(m->obs_val[k], got, sizeof got);
	if (ng < nw && memcmp(want, got, ng) == 0)
		snprintf(found + at, cap - at, ", a torn value: the first %zu "
		         "of its %zu bytes", ng, nw);
}

/* The newest acknowledged operation on K this cycle, or -1. */
static int64_t newest_acked(const exec_model *m, uint32_t k)
{
	for (int64_t j = m->key_last[k]; j >= 0; j = m->ops[j].prev)
		if (m->ops[j].acked)
			return j;
	return -1;
}

static void translate(void *arg, int kind, const char *what)
{
	collect *c = arg;
	exec_model *m = c->m;
	char found[EXEC_TOKEN_MAX + 40], msg[3 * EXEC_TOKEN_MAX + 200];
	unsigned k;
	int64_t j;

	if (sscanf(what, "key %u", &k) != 1 &&
	    sscanf(what, "thread %u", &k) != 1) {
		c->report(c->arg, kind, "", what);
		return;
	}
	if (k >= m->nkeys) {
		c->report(c->arg, kind, "", what);
		return;
	}
	describe_found(m, k, found, sizeof found);
	j = newest_acked(m, k);
	torn_prefix(m, k, j, found, sizeof found);
	if (kind == ORACLE_LOST && j >= 0)
		snprintf(msg, sizeof msg, "acknowledged %s%s%s (op %s) is "
		         "missing; found %s",
		         m->ops[j].value ? "\"" : "a delete",
		         m->ops[j].value ? m->ops[j].value : "",
		         m->ops[j].value ? "\"" : "", m->ops[j].name, found);
	else if (kind == ORACLE_LOST)
		snprintf(msg, sizeof msg, "the value verified after the last "
		         "crash, %s%s%s, is gone; found %s",
		         m->start_val[k] ? "\"" : "",
		         m->start_val[k] ? m->start_val[k] : "nothing",
		         m->start_val[k] ? "\"" : "", found);
	else if (kind == ORACLE_PHANTOM)
		snprintf(msg, sizeof msg, "found %s, which was never intended "
		         "for this key (torn, garbage, another key's, or an "
		         "operation an earlier crash proved lost)", found);
	else
		snprintf(msg, sizeof msg, "%s (found %s)", what, found);
	c->report(c->arg, kind, m->key_name[k], msg);
}

uint64_t exec_model_verify_end(exec_model *m, exec_report_fn report,
                               void *arg, uint64_t counts[ORACLE_KINDS])
{
	collect c = { m, report, arg };
	uint64_t n;

	if (m->unknown && report)
		report(arg, ORACLE_PHANTOM, "", m->unknown_msg);
	n = oracle_verify_end(m->o, report ? translate : NULL, &c, counts);
	if (counts)
		counts[ORACLE_PHANTOM] += m->unknown;
	n += m->unknown;
	if (n == 0)
		for (uint32_t k = 0; k < m->nkeys; k++) {
			free(m->start_val[k]);
			m->start_val[k] = m->obs_val[k];
			m->obs_val[k] = NULL;
		}
	clear_ops(m);
	return n;
}

/* ---- judging a replay (torture's explanation) ------------------------------ */

int exec_model_line_value(const exec_model *m, const char *line, size_t len,
                          const char *key, char **value)
{
	char k[CANON_MAX], v[CANON_MAX], why[200];
	int rc = checker_split(line, len, k, v, why, sizeof why);

	(void)m;
	*value = NULL;
	if (rc <= 0)
		return rc;
	if (strcmp(k, key) != 0)
		return 0;
	*value = strdup(v);
	return *value ? 1 : -1;
}

static int same_value(const char *want, const char *found)
{
	if (!want || !found)
		return want == found;
	return strcmp(want, found) == 0;
}

int exec_model_judge(const exec_model *m, const char *key, const char *value,
                     const char **op)
{
	int64_t k = key_find((exec_model *)m, key, 0), j;

	if (op)
		*op = NULL;
	if (k < 0)
		return -1;
	j = newest_acked(m, (uint32_t)k);
	if (op && j >= 0)
		*op = m->ops[j].name;
	/* the newest acknowledged operation, or any later one, may show */
	for (int64_t i = m->key_last[k]; i >= 0; i = m->ops[i].prev) {
		if (same_value(m->ops[i].value, value))
			return 0;
		if (i == j)
			return 1;
	}
	return same_value(m->start_val[k], value) ? 0 : 1;
}
