/*
 * oracle.c -- the two-sided check of a recovered store (contract in
 * oracle.h, reasoning in docs/torture.md).
 *
 * Every key's recovered content is reduced to a TOKEN: -1 absent, 0 the
 * start state, j+1 the value put by operation j of this cycle (its thread's
 * j-th operation since the last verification), -2 something that is none of
 * these (already reported as a phantom).  A thread's state after a prefix
 * of P operations is then one token per key, and "is the recovered state a
 * prefix?" becomes "is there a P whose tokens all equal the observed ones?",
 * answered in one pass by replaying the operations and counting mismatches.
 */
#include "oracle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_ABSENT (-1)
#define TOKEN_START 0
#define TOKEN_GARBAGE (-2)
#define MSG_MAX 16     /* violation lines kept per cycle */
#define MSG_LEN 300

typedef struct op {
	uint64_t seq;          /* the thread's operation number         */
	uint32_t count;        /* changes used                          */
	proto_change change[PROTO_BATCH_MAX];
	int acked;             /* the writer acknowledged it            */
	int done;              /* DONE arrived                          */
	int32_t rc;            /* DONE's result                         */
	uint64_t rev;          /* DONE's txid (rc == 0)                 */
	uint64_t seen_rev;     /* revision found on its keys (0: none)  */
	uint64_t intent_at;    /* arrival number of INTENT              */
	uint64_t done_at;      /* arrival number of DONE                */
	int seen;              /* a reader process was shown its value  */
	uint32_t seen_key;     /* on this key                           */
} op;

typedef struct thread_log {
	uint64_t first_seq; /* seq of ops[0]                              */
	op *ops;            /* this cycle's operations, in program order   */
	size_t n, cap;
	size_t acked;       /* ops[0..acked) hold every acknowledged one   */
	size_t seen;        /* ops[0..seen) hold every one a reader saw    */
} thread_log;

typedef struct observed {
	int32_t token; /* see the top of the file  */
	int seen;      /* listed by the iteration  */
	uint64_t rev;  /* revision it carried      */
} observed;

struct oracle {
	uint32_t keys, threads;
	uint64_t nonce;
	oracle_key_state *start; /* per key: state verified last cycle */
	observed *obs;           /* per key: what recovery shows       */
	int32_t *scratch;        /* per key: replay state              */
	int32_t *lastdel;        /* per key: newest op deleting it     */
	thread_log *log;         /* per thread                         */
	long *prefix;            /* per thread: recovered prefix length */
	uint64_t arrivals;       /* records fed so far                 */
	uint64_t head_txid;      /* txid of the recovered head         */
	uint64_t counts[ORACLE_KINDS];
	char msg[MSG_MAX][MSG_LEN];
	int msg_kind[MSG_MAX];
	int nmsg;
};

const char *oracle_kind_name(int kind)
{
	static const char *const names[ORACLE_KINDS] = {
		"lost", "phantom", "hole", "order"};
	return kind >= 0 && kind < ORACLE_KINDS ? names[kind] : "?";
}

int oracle_new(uint32_t keys, uint32_t threads, uint64_t nonce, oracle **out)
{
	oracle *o = calloc(1, sizeof(*o));

	*out = NULL;
	if (!o)
		return -1;
	o->keys = keys;
	o->threads = threads;
	o->nonce = nonce;
	o->start = calloc(keys, sizeof(*o->start));
	o->obs = calloc(keys, sizeof(*o->obs));
	o->scratch = calloc(keys, sizeof(*o->scratch));
	o->lastdel = calloc(keys, sizeof(*o->lastdel));
	o->log = calloc(threads, sizeof(*o->log));
	o->prefix = calloc(threads, sizeof(*o->prefix));
	if (!o->prefix || !o->start || !o->obs || !o->scratch ||
	    !o->lastdel || !o->log) {
		oracle_free(o);
		return -1;
	}
	for (uint32_t t = 0; t < threads; t++)
		o->log[t].first_seq = 1;
	*out = o;
	return 0;
}

void oracle_free(oracle *o)
{
	if (!o)
		return;
	for (uint32_t t = 0; o->log && t < o->threads; t++)
		free(o->log[t].ops);
	free(o->log);
	free(o->prefix);
	free(o->scratch);
	free(o->lastdel);
	free(o->obs);
	free(o->start);
	free(o);
}

uint32_t oracle_keys(const oracle *o) { return o->keys; }
uint32_t oracle_threads(const oracle *o) { return o->threads; }
uint64_t oracle_nonce(const oracle *o) { return o->nonce; }

const oracle_key_state *oracle_key(const oracle *o, uint32_t k)
{
	return &o->start[k];
}

uint64_t oracle_next_seq(const oracle *o, uint32_t thread)
{
	const thread_log *l = &o->log[thread];
	return l->first_seq + l->n;
}

uint64_t oracle_acked(const oracle *o)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < o->threads; t++)
		for (size_t j = 0; j < o->log[t].n; j++)
			n += o->log[t].ops[j].acked != 0;
	return n;
}

uint64_t oracle_issued(const oracle *o)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < o->threads; t++)
		n += o->log[t].n;
	return n;
}

/* Records a violation: counted always, its words kept for the first few. */
static void violation(oracle *o, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void violation(oracle *o, int kind, const char *fmt, ...)
{
	va_list ap;

	o->counts[kind]++;
	if (o->nmsg >= MSG_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(o->msg[o->nmsg], MSG_LEN, fmt, ap);
	va_end(ap);
	o->msg_kind[o->nmsg++] = kind;
}

/* Key bytes for a message: printable ASCII as is, the rest as \xNN. */
static const char *show_key(const void *key, size_t klen, char *buf,
                            size_t cap)
{
	const unsigned char *p = key;
	size_t o = 0;

	for (size_t i = 0; i < klen && o + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			buf[o++] = (char)p[i];
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", p[i]);
	}
	buf[o] = '\0';
	return buf;
}

/* ---- adopting an existing store ------------------------------------------ */

int oracle_adopt(oracle *o, const void *key, size_t klen, const void *val,
                 size_t vlen, uint64_t rev, const char **why)
{
	uint32_t k;
	value_id id;

	if (value_key_parse(key, klen, &k) < 0 || k >= o->keys) {
		*why = "a key outside torture's key space";
		return -1;
	}
	if (value_decode(val, vlen, &id, why) < 0)
		return -1;
	if (id.key != k || rev == 0) {
		*why = "a value that names another key";
		return -1;
	}
	o->start[k].present = 1;
	o->start[k].rev = rev;
	o->start[k].id = id;
	return 0;
}

/* ---- the writer's records ---------------------------------------------- */

static int intent_valid(const oracle *o, const proto_rec *r, const char **why)
{
	if (r->count < 1 || r->count > PROTO_BATCH_MAX) {
		*why = "intent with a bad change count";
		return -1;
	}
	for (uint32_t i = 0; i < r->count; i++) {
		const proto_change *c = &r->change[i];
		if (c->key >= o->keys || c->key % o->threads != r->thread) {
			*why = "intent names a key the thread does not own";
			return -1;
		}
		if (c->len != 0 && c->len < VALUE_HEADER) {
			*why = "intent with a value shorter than its header";
			return -1;
		}
		for (uint32_t j = 0; j < i; j++)
			if (r->change[j].key == c->key) {
				*why = "intent changes one key twice";
				return -1;
			}
	}
	return 0;
}

static int record_intent(oracle *o, const proto_rec *r, const char **why)
{
	thread_log *l = &o->log[r->thread];
	op *x;

	if (r->seq != l->first_seq + l->n) {
		*why = "intent out of sequence";
		return -1;
	}
	if (intent_valid(o, r, why) < 0)
		return -1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		op *ops = realloc(l->ops, cap * sizeof(*ops));
		if (!ops) {
			*why = "out of memory";
			return -1;
		}
		l->ops = ops;
		l->cap = cap;
	}
	x = &l->ops[l->n++];
	memset(x, 0, sizeof(*x));
	x->seq = r->seq;
	x->count = r->count;
	memcpy(x->change, r->change, sizeof(x->change));
	x->intent_at = o->arrivals;
	x->done_at = UINT64_MAX;
	return 0;
}

/* A reader process was shown the value operation SEQ of the thread put on
 * change[0].key.  Its INTENT was written before the commit began, so it
 * has arrived; an operation of an earlier cycle is in the start state. */
static int record_seen(oracle *o, const proto_rec *r, const char **why)
{
	thread_log *l = &o->log[r->thread];
	uint32_t k = r->change[0].key;
	op *x;
	int puts = 0;

	if (r->seq < l->first_seq)
		return 0;
	if (r->seq >= l->first_seq + l->n) {
		*why = "a reader was shown the value of an operation never "
		       "issued";
		return -1;
	}
	x = &l->ops[r->seq - l->first_seq];
	for (uint32_t i = 0; i < x->count; i++)
		puts |= x->change[i].key == k && x->change[i].len != 0;
	if (!puts) {
		*why = "a reader was shown a value its operation did not put "
		       "on that key";
		return -1;
	}
	x->seen = 1;
	x->seen_key = k;
	if ((size_t)(r->seq - l->first_seq) + 1 > l->seen)
		l->seen = (size_t)(r->seq - l->first_seq) + 1;
	return 0;
}

int oracle_record(oracle *o, const proto_rec *r, const char **why)
{
	thread_log *l;
	op *x;

	o->arrivals++;
	if (r->kind == PROTO_OPENED || r->kind == PROTO_VIEWS)
		return 0;
	if (r->thread >= o->threads) {
		*why = "record from an unknown thread";
		return -1;
	}
	if (r->kind == PROTO_INTENT)
		return record_intent(o, r, why);
	if (r->kind == PROTO_SEEN)
		return record_seen(o, r, why);
	l = &o->log[r->thread];
	/* An ACK may name any operation of this cycle (a writer that keeps
	 * several in flight acknowledges an older one after issuing a newer
	 * one): it and everything before it count as acknowledged. */
	if (r->kind == PROTO_ACK && r->seq >= l->first_seq &&
	    r->seq - l->first_seq < l->n) {
		size_t j = (size_t)(r->seq - l->first_seq);
		l->ops[j].acked = 1;
		if (l->acked < j + 1)
			l->acked = j + 1;
		return 0;
	}
	/* ACK and DONE always follow their INTENT, and the thread issues
	 * nothing new before DONE: they name the newest operation. */
	if (l->n == 0 || l->ops[l->n - 1].seq != r->seq) {
		*why = "acknowledgement for an operation not in flight";
		return -1;
	}
	x = &l->ops[l->n - 1];
	if (r->kind == PROTO_ACK) {
		x->acked = 1;
	} else if (r->kind == PROTO_DONE && !x->done) {
		x->done = 1;
		x->rc = r->rc;
		x->rev = r->rc == 0 ? r->rev : 0;
		x->done_at = o->arrivals;
		if (r->rc == 0)
			x->acked = 1;
	} else {
		*why = "unknown or repeated record";
		return -1;
	}
	if (x->acked)
		l->acked = l->n;
	return 0;
}

/* ---- observing the recovered store --------------------------------------- */

void oracle_verify_begin(oracle *o, uint64_t head_txid)
{
	o->head_txid = head_txid;
	memset(o->counts, 0, sizeof(o->counts));
	o->nmsg = 0;
	for (uint32_t k = 0; k < o->keys; k++) {
		o->obs[k].token = TOKEN_ABSENT;
		o->obs[k].seen = 0;
		o->obs[k].rev = 0;
	}
}

static int same_id(const value_id *a, const value_id *b)
{
	return a->key == b->key && a->thread == b->thread &&
	       a->index == b->index && a->seq == b->seq &&
	       a->nonce == b->nonce && a->len == b->len;
}

/* The value is the key's start state: same bytes, same revision. */
static int32_t observe_start(oracle *o, uint32_t k, const void *val,
                             size_t vlen, uint64_t rev)
{
	const oracle_key_state *s = &o->start[k];

	if (value_equal(&s->id, val, vlen) < 0) {
		violation(o, ORACLE_PHANTOM, "key %u: bytes differ from the "
		          "value verified last cycle", k);
		return TOKEN_GARBAGE;
	}
	if (rev != s->rev)
		violation(o, ORACLE_ORDER, "key %u: revision moved from %llu "
		          "to %llu without a write", k,
		          (unsigned long long)s->rev, (unsigned long long)rev);
	return TOKEN_START;
}

/* Revision checks for a value of operation X: the commit order. */
static void observe_rev(oracle *o, uint32_t k, op *x, uint64_t rev)
{
	if (rev == 0 || rev > o->head_txid)
		violation(o, ORACLE_ORDER, "key %u: revision %llu is outside "
		          "the recovered head's range 1..%llu", k,
		          (unsigned long long)rev,
		          (unsigned long long)o->head_txid);
	if (x->done && x->rc == 0 && x->rev != rev)
		violation(o, ORACLE_ORDER, "key %u: revision %llu, but the "
		          "commit of op seq %llu returned txid %llu", k,
		          (unsigned long long)rev, (unsigned long long)x->seq,
		          (unsigned long long)x->rev);
	if (x->seen_rev && x->seen_rev != rev)
		violation(o, ORACLE_ORDER, "key %u: revision %llu, but another "
		          "change of the same batch (op seq %llu) has %llu", k,
		          (unsigned long long)rev, (unsigned long long)x->seq,
		          (unsigned long long)x->seen_rev);
	x->seen_rev = rev;
}

/* A value of this cycle: it must be a put of an issued operation. */
static int32_t observe_op(oracle *o, uint32_t k, const value_id *id,
                          const void *val, size_t vlen, uint64_t rev)
{
	thread_log *l = &o->log[id->thread];
	op *x;
	size_t j;

	if (id->seq < l->first_seq) {
		violation(o, ORACLE_PHANTOM, "key %u: value of thread %u op seq "
		          "%llu, an operation verified lost in an earlier "
		          "cycle, came back", k, id->thread,
		          (unsigned long long)id->seq);
		return TOKEN_GARBAGE;
	}
	j = (size_t)(id->seq - l->first_seq);
	if (j >= l->n) {
		violation(o, ORACLE_PHANTOM, "key %u: value of thread %u op seq "
		          "%llu, which was never issued", k, id->thread,
		          (unsigned long long)id->seq);
		return TOKEN_GARBAGE;
	}
	x = &l->ops[j];
	if (id->index >= x->count || x->change[id->index].key != k ||
	    x->change[id->index].len != id->len) {
		violation(o, ORACLE_PHANTOM, "key %u: op seq %llu of thread %u "
		          "never wrote this value (change %u, %u bytes)", k,
		          (unsigned long long)id->seq, id->thread, id->index,
		          id->len);
		return TOKEN_GARBAGE;
	}
	if (value_equal(id, val, vlen) < 0) {
		violation(o, ORACLE_PHANTOM, "key %u: bytes differ from what op "
		          "seq %llu wrote", k, (unsigned long long)id->seq);
		return TOKEN_GARBAGE;
	}
	observe_rev(o, k, x, rev);
	return (int32_t)(j + 1);
}

static int32_t observe_value(oracle *o, uint32_t k, const void *val,
                             size_t vlen, uint64_t rev)
{
	value_id id;
	const char *why;

	if (value_decode(val, vlen, &id, &why) < 0) {
		violation(o, ORACLE_PHANTOM, "key %u: %zu-byte value that was "
		          "never written (%s)", k, vlen, why);
		return TOKEN_GARBAGE;
	}
	if (o->start[k].present && same_id(&id, &o->start[k].id))
		return observe_start(o, k, val, vlen, rev);
	if (id.nonce != o->nonce || id.key != k ||
	    id.thread != k % o->threads) {
		violation(o, ORACLE_PHANTOM, "key %u: value written for key %u "
		          "by thread %u%s", k, id.key, id.thread,
		          id.nonce != o->nonce ? " of another run" : "");
		return TOKEN_GARBAGE;
	}
	return observe_op(o, k, &id, val, vlen, rev);
}

void oracle_observe(oracle *o, const void *key, size_t klen, const void *val,
                    size_t vlen, uint64_t rev)
{
	char shown[200];
	uint32_t k;

	if (value_key_parse(key, klen, &k) < 0 || k >= o->keys) {
		violation(o, ORACLE_PHANTOM, "key \"%s\" was never written",
		          show_key(key, klen, shown, sizeof(shown)));
		return;
	}
	if (o->obs[k].seen) {
		violation(o, ORACLE_PHANTOM, "key %u listed twice", k);
		o->obs[k].token = TOKEN_GARBAGE;
		return;
	}
	o->obs[k].seen = 1;
	o->obs[k].rev = rev;
	o->obs[k].token = observe_value(o, k, val, vlen, rev);
}

/* ---- the end of a cycle: lost, prefix, order ----------------------------- */

static int32_t start_token(const oracle *o, uint32_t k)
{
	return o->start[k].present ? TOKEN_START : TOKEN_ABSENT;
}

static void describe(const oracle *o, uint32_t k, int32_t token, char *buf,
                     size_t cap)
{
	const thread_log *l = &o->log[k % o->threads];

	if (token == TOKEN_GARBAGE)
		snprintf(buf, cap, "a value never written");
	else if (token == TOKEN_ABSENT)
		snprintf(buf, cap, "nothing");
	else if (token == TOKEN_START)
		snprintf(buf, cap, "the value verified last cycle");
	else
		snprintf(buf, cap, "the value of op seq %llu",
		         (unsigned long long)l->ops[token - 1].seq);
}

/* "txid 12", or why it is not known. */
static const char *show_txid(const op *x, char *buf, size_t cap)
{
	if (x->done && x->rc == 0 && x->rev)
		snprintf(buf, cap, "txid %llu", (unsigned long long)x->rev);
	else
		snprintf(buf, cap, x->done ? "txid not reported" :
		         "acknowledged before its commit returned");
	return buf;
}

/*
 * LOST: for each key, W = the newest acknowledged operation touching it.
 * The key may show W's result or anything a later operation left; showing
 * an older operation's value, the start state (when W exists), or nothing
 * (when neither W nor a later operation deleted it) loses W.
 */
/* 1 when one of T's keys holds a phantom (reported already): no prefix can
 * match it, and saying so again would count one fault twice. */
static int has_garbage(const oracle *o, uint32_t t)
{
	for (uint32_t k = t; k < o->keys; k += o->threads)
		if (o->obs[k].token == TOKEN_GARBAGE)
			return 1;
	return 0;
}

static uint64_t check_lost(oracle *o, uint32_t t)
{
	thread_log *l = &o->log[t];
	uint64_t lost = 0;
	char have[64], txid[40];

	for (uint32_t k = t; k < o->keys; k += o->threads)
		o->scratch[k] = o->lastdel[k] = -1;
	for (size_t j = 0; j < l->n; j++)
		for (uint32_t i = 0; i < l->ops[j].count; i++) {
			uint32_t k = l->ops[j].change[i].key;
			if (j < l->acked)
				o->scratch[k] = (int32_t)j;
			if (l->ops[j].change[i].len == 0)
				o->lastdel[k] = (int32_t)j;
		}
	for (uint32_t k = t; k < o->keys; k += o->threads) {
		int32_t w = o->scratch[k], tok = o->obs[k].token;
		int ok;

		if (tok == TOKEN_GARBAGE)
			continue;
		if (tok == TOKEN_ABSENT)
			ok = (w < 0 && !o->start[k].present) ||
			     (o->lastdel[k] >= 0 && o->lastdel[k] >= w);
		else
			ok = tok - 1 >= w; /* TOKEN_START is op "-1" */
		if (ok)
			continue;
		lost++;
		describe(o, k, tok, have, sizeof(have));
		if (w < 0) /* only the start state was required */
			violation(o, ORACLE_LOST, "key %u: the value verified "
			          "last cycle is gone; the store holds %s", k, have);
		else
			violation(o, ORACLE_LOST, "key %u: acknowledged op seq "
			          "%llu of thread %u (%s) is missing; the store "
			          "holds %s", k, (unsigned long long)l->ops[w].seq,
			          t, show_txid(&l->ops[w], txid, sizeof(txid)),
			          have);
	}
	return lost;
}

/* Applies operation J of thread log L to the replay state, keeping *MISM,
 * the number of keys whose replay token differs from the observed one. */
static void replay_op(oracle *o, const op *x, size_t j, size_t *mism)
{
	for (uint32_t i = 0; i < x->count; i++) {
		uint32_t k = x->change[i].key;
		int32_t now = x->change[i].len ? (int32_t)(j + 1) : TOKEN_ABSENT;

		*mism -= o->obs[k].token != o->scratch[k];
		o->scratch[k] = now;
		*mism += o->obs[k].token != now;
	}
}

static size_t replay_reset(oracle *o, uint32_t t)
{
	size_t mism = 0;

	for (uint32_t k = t; k < o->keys; k += o->threads) {
		o->scratch[k] = start_token(o, k);
		mism += o->obs[k].token != o->scratch[k];
	}
	return mism;
}

/* The newest operation whose value is visible on one of T's keys. */
static size_t newest_visible(const oracle *o, uint32_t t)
{
	size_t m = 0;

	for (uint32_t k = t; k < o->keys; k += o->threads)
		if (o->obs[k].token > 0 && (size_t)o->obs[k].token > m)
			m = (size_t)o->obs[k].token;
	return m;
}

/* Why no prefix fits: replay up to the newest visible operation and name a
 * key that disagrees (an earlier change missing, or a batch cut short). */
static void explain_hole(oracle *o, uint32_t t)
{
	thread_log *l = &o->log[t];
	size_t m = newest_visible(o, t), mism = replay_reset(o, t);
	char want[64], have[64];

	for (size_t j = 0; j < m; j++)
		replay_op(o, &l->ops[j], j, &mism);
	for (uint32_t k = t; m && k < o->keys; k += o->threads) {
		if (o->obs[k].token == o->scratch[k])
			continue;
		describe(o, k, o->scratch[k], want, sizeof(want));
		describe(o, k, o->obs[k].token, have, sizeof(have));
		violation(o, ORACLE_HOLE, "thread %u: op seq %llu is visible, "
		          "so key %u should hold %s, but holds %s (not a "
		          "prefix of the thread's operations)", t,
		          (unsigned long long)l->ops[m - 1].seq, k, want, have);
		return;
	}
	violation(o, ORACLE_HOLE, "thread %u: the recovered keys match no "
	          "prefix of its %zu operations", t, l->n);
}

/* The prefix length P (acked <= P <= n) whose state the thread's keys show,
 * or -1.  Every operation changes some key (batches touch distinct keys and
 * a delete removes a present key), so P is unique when it exists. */
static long find_prefix(oracle *o, uint32_t t)
{
	thread_log *l = &o->log[t];
	size_t mism = replay_reset(o, t);

	if (mism == 0 && l->acked == 0)
		return 0;
	for (size_t j = 0; j < l->n; j++) {
		replay_op(o, &l->ops[j], j, &mism);
		if (mism == 0 && j + 1 >= l->acked)
			return (long)(j + 1);
	}
	return -1;
}

/* The revision an operation is known to carry: its commit's answer, or what
 * its keys showed; 0 when unknown. */
static uint64_t known_rev(const op *x)
{
	return x->done && x->rc == 0 ? x->rev : x->seen_rev;
}

/* Along one thread, operation j+1 was issued after j returned, so known
 * revisions must grow with j; an acknowledged txid beyond the head means
 * recovery settled on a head older than an acknowledged commit. */
static void check_thread_order(oracle *o, uint32_t t, long p)
{
	thread_log *l = &o->log[t];
	uint64_t prev = 0, prev_seq = 0;

	for (long j = 0; j < p; j++) {
		uint64_t r = known_rev(&l->ops[j]);
		if (!r)
			continue;
		if (r <= prev)
			violation(o, ORACLE_ORDER, "thread %u: op seq %llu has "
			          "txid %llu, not above op seq %llu's %llu", t,
			          (unsigned long long)l->ops[j].seq,
			          (unsigned long long)r,
			          (unsigned long long)prev_seq,
			          (unsigned long long)prev);
		if (l->ops[j].done && l->ops[j].rc == 0 && r > o->head_txid)
			violation(o, ORACLE_ORDER, "thread %u: op seq %llu was "
			          "acknowledged with txid %llu, beyond the "
			          "recovered head %llu", t,
			          (unsigned long long)l->ops[j].seq,
			          (unsigned long long)r,
			          (unsigned long long)o->head_txid);
		prev = r;
		prev_seq = l->ops[j].seq;
	}
}

/* One operation with a known revision, for the real-time order check. */
typedef struct timed {
	uint64_t intent_at, done_at, rev, seq;
	uint32_t thread;
} timed;

static int by_done(const void *a, const void *b)
{
	const timed *x = a, *y = b;
	return x->done_at < y->done_at ? -1 : x->done_at > y->done_at;
}

static int by_intent(const void *a, const void *b)
{
	const timed *x = a, *y = b;
	return x->intent_at < y->intent_at ? -1 : x->intent_at > y->intent_at;
}

/* Collects the operations inside each thread's prefix whose revision is
 * known.  Returns the count, or -1 when memory ran out. */
static long collect_timed(const oracle *o, const long *prefix, timed **out)
{
	size_t n = 0, cap = 0;
	timed *v;

	for (uint32_t t = 0; t < o->threads; t++)
		cap += prefix[t] > 0 ? (size_t)prefix[t] : 0;
	v = malloc((cap ? cap : 1) * 2 * sizeof(*v));
	if (!v)
		return -1;
	for (uint32_t t = 0; t < o->threads; t++)
		for (long j = 0; j < prefix[t]; j++) {
			const op *x = &o->log[t].ops[j];
			if (!known_rev(x))
				continue;
			v[n].intent_at = x->intent_at;
			v[n].done_at = x->done_at;
			v[n].rev = known_rev(x);
			v[n].seq = x->seq;
			v[n].thread = t;
			n++;
		}
	*out = v;
	return (long)n;
}

/*
 * Real-time order across threads: the pipe orders records by the time their
 * write() ran, so when X's DONE arrived before Y's INTENT, X's commit had
 * returned before Y's began, and Y's txid must be larger.  Sweep the
 * operations by INTENT arrival, folding in every DONE that came earlier.
 */
static void check_realtime_order(oracle *o, const long *prefix)
{
	timed *v, *by_i, best = {0};
	long n = collect_timed(o, prefix, &v);
	size_t d = 0;

	if (n <= 1) {
		if (n >= 0)
			free(v);
		return;
	}
	by_i = v + n;
	memcpy(by_i, v, (size_t)n * sizeof(*v));
	qsort(v, (size_t)n, sizeof(*v), by_done);
	qsort(by_i, (size_t)n, sizeof(*v), by_intent);
	for (long i = 0; i < n; i++) {
		while (d < (size_t)n && v[d].done_at < by_i[i].intent_at) {
			if (v[d].rev > best.rev)
				best = v[d];
			d++;
		}
		if (best.rev && by_i[i].rev <= best.rev)
			violation(o, ORACLE_ORDER, "thread %u op seq %llu began "
			          "after thread %u op seq %llu returned txid %llu, "
			          "yet has txid %llu", by_i[i].thread,
			          (unsigned long long)by_i[i].seq, best.thread,
			          (unsigned long long)best.seq,
			          (unsigned long long)best.rev,
			          (unsigned long long)by_i[i].rev);
	}
	free(v);
}

/* No violation: what recovery shows becomes the next cycle's start. */
static void adopt_recovered(oracle *o)
{
	for (uint32_t k = 0; k < o->keys; k++) {
		int32_t tok = o->obs[k].token;
		oracle_key_state *s = &o->start[k];
		const op *x;

		if (tok == TOKEN_START)
			continue;
		if (tok == TOKEN_ABSENT) {
			memset(s, 0, sizeof(*s));
			continue;
		}
		x = &o->log[k % o->threads].ops[tok - 1];
		s->present = 1;
		s->rev = o->obs[k].rev;
		s->id.key = k;
		s->id.thread = k % o->threads;
		s->id.seq = x->seq;
		s->id.nonce = o->nonce;
		for (uint32_t i = 0; i < x->count; i++)
			if (x->change[i].key == k) {
				s->id.index = i;
				s->id.len = x->change[i].len;
			}
	}
	for (uint32_t t = 0; t < o->threads; t++) {
		o->log[t].first_seq += o->log[t].n;
		o->log[t].n = 0;
		o->log[t].acked = 0;
		o->log[t].seen = 0;
	}
}

/* The recovered prefix P of thread T lacks operations a reader saw. */
static void check_seen(oracle *o, uint32_t t, size_t p)
{
	thread_log *l = &o->log[t];

	for (size_t j = l->seen; j-- > p;)
		if (l->ops[j].seen) {
			violation(o, ORACLE_LOST, "key %u: a reader process was "
			          "shown the value of op seq %llu of thread %u; "
			          "recovery rolled it back (the thread's state "
			          "is that after op seq %llu)", l->ops[j].seen_key,
			          (unsigned long long)l->ops[j].seq, t,
			          (unsigned long long)(l->first_seq + p - 1));
			return;
		}
}

uint64_t oracle_verify_end(oracle *o, oracle_report_fn report, void *arg,
                           uint64_t counts[ORACLE_KINDS])
{
	long *prefix = o->prefix;
	uint64_t total = 0;

	for (uint32_t t = 0; t < o->threads; t++) {
		prefix[t] = -1;
		/* A lost write or a phantom also breaks the prefix: say it once. */
		if (check_lost(o, t) || has_garbage(o, t))
			continue;
		prefix[t] = find_prefix(o, t);
		if (prefix[t] < 0)
			explain_hole(o, t);
		else
			check_thread_order(o, t, prefix[t]);
		if (prefix[t] >= 0 && (size_t)prefix[t] < o->log[t].seen)
			check_seen(o, t, (size_t)prefix[t]);
	}
	check_realtime_order(o, prefix);
	for (int i = 0; i < ORACLE_KINDS; i++) {
		total += o->counts[i];
		if (counts)
			counts[i] = o->counts[i];
	}
	for (int i = 0; report && i < o->nmsg; i++)
		report(arg, o->msg_kind[i], o->msg[i]);
	if (total == 0)
		adopt_recovered(o);
	return total;
}
