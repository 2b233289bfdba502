/*
 * serve_req.c -- what each request does to the store, and the answers.
 *
 * Conditions (If-Match, If-None-Match) are checked against the shard's
 * snapshot, renewed after the request's bytes were read, so any answer the
 * client saw before sending is visible.  A conditional write then commits
 * with the revision it saw as its expectation (keel checks it again under
 * the commit lock), so a write that raced in between turns into 412, never
 * into a lost update.
 */
#include "serve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ALLOW_ALL "Allow: GET, HEAD, PUT, DELETE, OPTIONS\r\n"
#define ALLOW_ROOT "Allow: GET, HEAD, OPTIONS\r\n"
#define LIST_DEFAULT 100
#define LIST_MAX 1000

/* ---- response heads, built without printf (it shows in profiles) --------- */

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * Fills O's head.  LEN < 0 leaves Content-Length out (204, 304 and 1xx must
 * not carry one); REV 0 leaves ETag out; EXTRA is more header lines.
 * Everything here is bounded: status line ~40, Date 37, length and tag
 * ~60, EXTRA at most ~75 (CHALLENGE_SCOPE), Alt-Svc at most 25,
 * Connection 19, so SERVE_HEAD_MAX holds it.
 */
static void head_fill(struct serve_out *o, struct serve_shard *sh, int status,
                      int minor, int close, int64_t len, uint64_t rev,
                      const char *extra)
{
	char *p = o->head;

	p = put_str(p, "HTTP/1.1 ");
	p = put_u64(p, (uint64_t)status);
	*p++ = ' ';
	p = put_str(p, http_reason(status));
	p = put_str(p, "\r\nServer: keel\r\nDate: ");
	p = put_str(p, sh->date);
	p = put_str(p, "\r\n");
	p = put_str(p, sh->srv->alt_svc); /* "" without HTTP/3 */
	if (len >= 0) {
		p = put_str(p, "Content-Length: ");
		p = put_u64(p, (uint64_t)len);
		p = put_str(p, "\r\n");
	}
	if (rev) {
		p = put_str(p, "ETag: \"");
		p = put_u64(p, rev);
		p = put_str(p, "\"\r\n");
	}
	if (extra)
		p = put_str(p, extra);
	if (close)
		p = put_str(p, "Connection: close\r\n");
	else if (minor == 0)
		p = put_str(p, "Connection: keep-alive\r\n");
	p = put_str(p, "\r\n");
	o->head_len = (uint16_t)(p - o->head);
	o->close_after = (uint8_t)close;
	o->ready = 1;
}

/* Error answers carry their reason as a short text body. */
static void answer_status(struct serve_conn *c, int status, int minor,
                          int close, int head_only, const char *extra)
{
	struct serve_out *o = serve_out_new(c);
	const char *reason = http_reason(status);

	if (o == NULL)
		return; /* out of memory: the connection closes */
	if (status == 204 || status == 304) {
		head_fill(o, c->shard, status, minor, close, -1, 0, extra);
		return;
	}
	head_fill(o, c->shard, status, minor, close, (int64_t)strlen(reason),
	          0, extra);
	if (!head_only) {
		o->body = reason;
		o->body_len = strlen(reason);
	}
}

static void error_extra(struct serve_conn *c, int status, int minor,
                        int close, const char *extra)
{
	if (serve_conn_streams(c))
		close = 0; /* a refused stream, not the connection */
	if (close)
		c->flags |= CONN_CLOSING;
	answer_status(c, status, minor, close, 0, extra);
	if (close && c->out_tail)
		c->out_tail->close_after = SERVE_CLOSE_ERROR; /* linger */
}

void serve_error(struct serve_conn *c, int status, int minor, int close)
{
	error_extra(c, status, minor, close, NULL);
}

void serve_error_busy(struct serve_conn *c, int minor)
{
	error_extra(c, 503, minor, 1, "Retry-After: 1\r\n");
}

void serve_error_auth(struct serve_conn *c, const struct http_request *req,
                      int status, int close, const char *challenge)
{
	/* kept connections are common here, so a HEAD must get no body */
	if (serve_conn_streams(c))
		close = 0;
	if (close)
		c->flags |= CONN_CLOSING;
	answer_status(c, status, req->minor, close,
	              req->method == HTTP_METHOD_HEAD, challenge);
	if (close && c->out_tail)
		c->out_tail->close_after = SERVE_CLOSE_ERROR; /* linger */
}

size_t serve_busy_response(char *buf, size_t cap)
{
	static const char r[] = "HTTP/1.1 503 Service Unavailable\r\n"
	                        "Server: keel\r\nRetry-After: 1\r\n"
	                        "Content-Length: 20\r\nConnection: close\r\n"
	                        "\r\nService Unavailable";
	size_t n = sizeof r - 1 < cap ? sizeof r - 1 : cap;

	memcpy(buf, r, n);
	return n;
}

/* ---- access tokens (--tokens) ------------------------------------------- */

/* No credentials: 401 and the challenge (RFC 6750 section 3).  A token
 * that is not known, or one that does not allow the request: 403, as
 * docs/http.md says (RFC 6750 would answer an unknown token 401; a 403
 * tells a client that retrying with the same token is useless, and keeps
 * one answer for every refused token), with the RFC's error code. */
#define CHALLENGE "WWW-Authenticate: Bearer realm=\"keel\"\r\n"
#define CHALLENGE_INVALID \
	"WWW-Authenticate: Bearer realm=\"keel\", error=\"invalid_token\"\r\n"
#define CHALLENGE_SCOPE \
	"WWW-Authenticate: Bearer realm=\"keel\", " \
	"error=\"insufficient_scope\"\r\n"
_Static_assert(sizeof CHALLENGE_SCOPE < 80, "head_fill's bound on EXTRA");

static int query_decoded(const struct http_request *req, const char *name,
                         char *out, size_t *len);

/*
 * Does a token limited to G's prefix cover REQ?  A key must start with the
 * prefix; a listing's prefix= parameter must (so every key it can show
 * does).  A key or parameter that does not decode is let through: the
 * handler answers it 400 or 414 without touching the store, and the token
 * was valid.  Other requests on "/" and "*" (OPTIONS, or methods answered
 * 405) name no key and read nothing.
 */
static int in_scope(const struct http_request *req,
                    const struct tokens_grant *g)
{
	char key[HTTP_KEY_MAX];
	ssize_t klen;
	size_t plen;
	int rc;

	if (g->prefix_len == 0 || (req->path.n == 1 && req->path.p[0] == '*'))
		return 1;
	klen = http_pct_decode(req->path.p + 1, req->path.n - 1, key,
	                       sizeof key, 0);
	if (klen < 0)
		return 1;
	if (klen > 0)
		return tokens_covers(g, key, (size_t)klen);
	if (req->method != HTTP_METHOD_GET && req->method != HTTP_METHOD_HEAD)
		return 1;
	rc = query_decoded(req, "prefix", key, &plen);
	if (rc < 0)
		return 1;
	return rc == 1 && tokens_covers(g, key, plen);
}

int serve_authorize(struct serve_server *srv, const struct http_request *req,
                    const char **challenge)
{
	tokens_table *t = atomic_load_explicit(&srv->tokens,
	                                       memory_order_acquire);
	struct http_slice token;
	struct tokens_grant g;
	int write = req->method == HTTP_METHOD_PUT ||
	            req->method == HTTP_METHOD_DELETE;

	if (t == NULL)
		return 0; /* no --tokens */
	if (!http_bearer_token(&req->authorization, &token)) {
		*challenge = CHALLENGE;
		return 401;
	}
	if (!tokens_find(t, token.p, token.n, &g)) {
		*challenge = CHALLENGE_INVALID;
		return 403;
	}
	if ((write && !g.write) || !in_scope(req, &g)) {
		*challenge = CHALLENGE_SCOPE;
		return 403;
	}
	return 0;
}

/* ---- conditions ------------------------------------------------------------ */

/*
 * RFC 9110 section 13.2.2 order: If-Match, then If-None-Match.  CUR is the
 * key's revision (0 = absent).  Returns 0 to go on, 412, or 304 (a GET or
 * HEAD whose If-None-Match matched).
 */
static int conditions(const struct http_request *req, uint64_t cur, int read)
{
	const struct http_slice *m = &req->if_match, *nm = &req->if_none_match;

	if (m->p && http_etag_match(m->p, m->n, cur, 0) != 1)
		return 412;
	if (nm->p && http_etag_match(nm->p, nm->n, cur, 1) == 1)
		return read ? 304 : 412;
	return 0;
}

/* The shard keeps one snapshot and renews it once per read burst: one
 * atomic load when nothing was committed since (keel_snapshot_refresh). */
static keel_snapshot *snapshot(struct serve_shard *sh)
{
	if (sh->snap_fresh)
		return sh->snap;
	if (sh->snap == NULL) {
		if (keel_snapshot_open(sh->srv->db, &sh->snap) != KEEL_OK)
			sh->snap = NULL;
	} else if (keel_snapshot_refresh(&sh->snap) != KEEL_OK) {
		return NULL; /* out of memory: the old state is stale */
	}
	sh->snap_fresh = sh->snap != NULL;
	return sh->snap;
}

/* The revision of KEY now (0 = absent), or a keel error. */
static int current_rev(struct serve_shard *sh, const char *key, size_t klen,
                       uint64_t *rev)
{
	keel_snapshot *s = snapshot(sh);
	keel_view v = {0};
	int rc;

	*rev = 0;
	if (s == NULL)
		return KEEL_EIO;
	rc = keel_snapshot_get(s, key, klen, &v);
	if (rc == KEEL_OK) {
		*rev = v.rev;
		keel_view_release(&v);
	}
	return rc == KEEL_ENOTFOUND ? KEEL_OK : rc;
}

static int status_of(int rc)
{
	switch (rc) {
	case KEEL_ENOTFOUND: return 404;
	case KEEL_ECONFLICT: return 412;
	case KEEL_ETOOBIG: return 413;
	case KEEL_EKEY: return 414;
	case KEEL_ENOSPC: return 507;
	case KEEL_EREADONLY: return 405;
	}
	return 500;
}

/* ---- GET and HEAD of one key ----------------------------------------------- */

static void do_get(struct serve_conn *c, const struct http_request *req,
                   const char *key, size_t klen, int close)
{
	struct serve_shard *sh = c->shard;
	int head_only = req->method == HTTP_METHOD_HEAD, cond, rc;
	keel_snapshot *s = snapshot(sh);
	keel_view v = {0};
	struct serve_out *o;

	rc = s ? keel_snapshot_get(s, key, klen, &v) : KEEL_EIO;
	if (rc != KEEL_OK && rc != KEEL_ENOTFOUND) {
		answer_status(c, status_of(rc), req->minor, close, head_only, NULL);
		return;
	}
	cond = conditions(req, rc == KEEL_OK ? v.rev : 0, 1);
	if (cond || rc == KEEL_ENOTFOUND) {
		uint64_t rev = rc == KEEL_OK ? v.rev : 0;
		keel_view_release(&v);
		if (cond == 304) {
			o = serve_out_new(c);
			if (o)
				head_fill(o, sh, 304, req->minor, close, -1, rev, NULL);
			return;
		}
		answer_status(c, cond ? cond : 404, req->minor, close, head_only,
		              NULL);
		return;
	}
	o = serve_out_new(c);
	if (o == NULL) {
		keel_view_release(&v);
		return;
	}
	head_fill(o, sh, 200, req->minor, close, (int64_t)v.len, v.rev, NULL);
	if (head_only) {
		keel_view_release(&v);
		return;
	}
	o->view = v; /* held until the last byte is written */
	o->body = v.data;
	o->body_len = v.len;
	/* a large body on a plain HTTP/1.1 socket: its pages by reference,
	 * not copied into the socket (HTTP/2 and HTTP/3 frame it, TLS
	 * encrypts it: those read o->body) */
	if (v.len >= sh->srv->cfg.sendfile_min && sh->srv->cfg.sendfile_min &&
	    !c->ssl && !c->h2 && !c->h3 &&
	    keel_view_file(&o->view, &o->file_fd, &o->file_off) != KEEL_OK)
		o->file_fd = -1;
}

/* ---- the listing: GET /?prefix=P&after=K&limit=N ----------------------- */

struct jbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void jb_put(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		char *np;
		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (np == NULL) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Keys are bytes: '"', '\\', controls and non-ASCII bytes become \u00XX
 * escapes (each byte on its own, so the key round-trips byte for byte). */
static void jb_key(struct jbuf *b, const unsigned char *k, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		char e[6] = {'\\', 'u', '0', '0', hex[k[i] >> 4], hex[k[i] & 15]};
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '"' && k[i] != '\\')
			jb_put(b, (const char *)k + i, 1);
		else
			jb_put(b, e, 6);
	}
}

static int query_decoded(const struct http_request *req, const char *name,
                         char *out, size_t *len)
{
	struct http_slice v;
	ssize_t n;

	*len = 0;
	if (!http_query_param(req->query.p, req->query.n, name, &v))
		return 0;
	n = http_pct_decode(v.p, v.n, out, HTTP_KEY_MAX, 1);
	if (n < 0)
		return (int)n;
	*len = (size_t)n;
	return 1;
}

static int list_limit(const struct http_request *req)
{
	struct http_slice v;
	long n = 0;
	size_t i;

	if (!http_query_param(req->query.p, req->query.n, "limit", &v))
		return LIST_DEFAULT;
	if (v.n == 0 || v.n > 6)
		return -400;
	for (i = 0; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return -400;
		n = n * 10 + (v.p[i] - '0');
	}
	if (n == 0)
		return -400; /* a page of nothing: paging would never advance */
	return n > LIST_MAX ? LIST_MAX : (int)n;
}

/* Walks the snapshot into B: at most LIMIT keys, and no key is begun once
 * B holds SERVE_LIST_BYTES (a key escapes to at most 6 KiB, so an answer
 * stays under about 70 KiB whatever the keys).  Returns 0 or a keel
 * error. */
static int list_walk(keel_snapshot *s, const char *prefix, size_t plen,
                     const char *after, size_t alen, int has_after, int limit,
                     struct jbuf *b)
{
	keel_iter *it;
	int rc, n = 0;
	char num[24];

	rc = keel_iter_open(s, plen ? prefix : NULL, plen,
	                    has_after ? after : NULL, alen, &it);
	if (rc != KEEL_OK)
		return rc;
	jb_put(b, "{\"keys\":[", 9);
	for (;;) {
		const void *k;
		size_t kl;
		keel_view v;

		rc = keel_iter_next(it, &k, &kl, &v);
		if (rc != KEEL_OK)
			break;
		if (has_after && kl == alen && memcmp(k, after, alen) == 0)
			continue; /* "after" is exclusive */
		if (n == limit || b->len >= SERVE_LIST_BYTES) {
			jb_put(b, "],\"more\":true}\n", 15);
			goto out_close;
		}
		jb_put(b, n ? ",{\"key\":\"" : "{\"key\":\"", n ? 9 : 8);
		jb_key(b, k, kl);
		jb_put(b, "\",\"rev\":", 8);
		jb_put(b, num, (size_t)(put_u64(num, v.rev) - num));
		jb_put(b, ",\"size\":", 8);
		jb_put(b, num, (size_t)(put_u64(num, v.len) - num));
		jb_put(b, "}", 1);
		n++;
	}
	if (rc != KEEL_ENOTFOUND)
		goto out_close;
	rc = KEEL_OK;
	jb_put(b, "],\"more\":false}\n", 16);
out_close:
	keel_iter_close(it);
	return rc;
}

static void do_list(struct serve_conn *c, const struct http_request *req,
                    int close)
{
	char prefix[HTTP_KEY_MAX], after[HTTP_KEY_MAX];
	size_t plen, alen;
	int has_after, limit, rc, head_only = req->method == HTTP_METHOD_HEAD;
	struct jbuf b = {0};
	struct serve_out *o;
	keel_snapshot *s = snapshot(c->shard);

	rc = query_decoded(req, "prefix", prefix, &plen);
	has_after = rc >= 0 ? query_decoded(req, "after", after, &alen) : rc;
	limit = list_limit(req);
	if (rc < 0 || has_after < 0 || limit < 0) {
		rc = rc < 0 ? rc : has_after < 0 ? has_after : limit;
		answer_status(c, -rc, req->minor, close, head_only, NULL);
		return;
	}
	rc = s ? list_walk(s, prefix, plen, after, alen, has_after, limit, &b)
	       : KEEL_EIO;
	if (rc != KEEL_OK || b.oom) {
		free(b.p);
		answer_status(c, 500, req->minor, close, head_only, NULL);
		return;
	}
	o = serve_out_new(c);
	if (o == NULL) {
		free(b.p);
		return;
	}
	head_fill(o, c->shard, 200, req->minor, close, (int64_t)b.len, 0,
	          "Content-Type: application/json\r\n");
	if (head_only) {
		free(b.p);
		return;
	}
	o->owned = b.p; /* counted until written (serve_conn.c, out_advance) */
	o->body = b.p;
	o->body_len = b.len;
	c->queued += (uint32_t)b.len;
}

/* ---- PUT and DELETE ------------------------------------------------------ */

#define SERVE_PUT_TRIES 4 /* conditional attempts of an unconditional PUT */

static void commit_start(struct serve_shard *sh, struct serve_commit *cm);

/*
 * May CM be committed on the shard thread (keel_commit) instead of through
 * keel's committer?  Only when that delays no one:
 *  - no other commit of the server is in flight, so keel_commit leads its
 *    own group at once and waits for no one else's sync (commits other
 *    shards start meanwhile queue behind it and form the next group);
 *  - this epoll batch is the shard's only event: its other connections
 *    have nothing waiting (under load they do, and the async path lets
 *    their writes share one sync);
 *  - the same connection started the shard's previous commit too.  Two
 *    writers taking turns would otherwise each find the other's commit
 *    just finished and go direct in turn, one commit per sync, where the
 *    async path puts both in one group;
 *  - the connection has no answer waiting behind an in-flight commit
 *    (answers go out in order);
 *  - the shard would not poll while an async commit syncs (serve_conn.c,
 *    shard_wait): where commits are fast, the async path with polling
 *    answered one connection 1.2x faster than a direct commit, whose sync
 *    the shard can only sleep through;
 *  - no compaction is due or running: keel_commit could wait for it (for
 *    its switch to the new file, or all of it when it lags), and the whole
 *    shard with it, where an async commit waits in keel's queue.
 * The shard's other connections still wait for the sync while it blocks;
 * that is accepted because by these rules nothing else is committing and
 * nothing else was ready.  Called with CM already counted in
 * srv->commits: the count it found there is BEFORE.
 */
static int direct_ok(struct serve_shard *sh, struct serve_commit *cm,
                     int before)
{
	const struct serve_conn *prev = sh->last_writer;

	sh->last_writer = cm->conn;
	return before == 0 && sh->srv->cfg.direct_commit && sh->lone &&
	       !serve_conn_streams(cm->conn) && /* a sync would stall its streams */
	       prev == cm->conn && cm->conn->inflight == 1 && /* this one only */
	       !serve_would_poll(sh) && !keel_compacting(sh->srv->db);
}

/* The direct path: no thread hand-off either way.  The shard's snapshot
 * is dropped so that a request pipelined behind this one sees the write,
 * as it would after an async completion. */
static void commit_direct(struct serve_shard *sh, struct serve_commit *cm)
{
	cm->rc = keel_commit(sh->srv->db, cm->batch, &cm->txid, NULL);
	sh->snap_fresh = 0;
	sh->direct_commits++;
	serve_commit_finish(sh, cm);
}

/* Starts CM's commit; its answer (CM->out) is filled in by
 * serve_commit_finish, now (direct, or a refused submission) or when the
 * completion reaches the shard. */
static void commit_start(struct serve_shard *sh, struct serve_commit *cm)
{
	int before, rc;

	cm->conn->inflight++;
	/* its answer comes after a sync: what the read saw is stale then */
	cm->conn->flags &= (uint16_t)~CONN_RX_EMPTY;
	sh->pending_commits++;
	cm->started_us = serve_now_us();
	/* One atomic add both counts CM and claims the direct path: of two
	 * shards starting at once only one sees 0. */
	before = atomic_fetch_add(&sh->srv->commits, 1);
	if (direct_ok(sh, cm, before)) {
		commit_direct(sh, cm);
		return;
	}
	rc = keel_commit_async(sh->srv->db, cm->batch, serve_commit_done, cm);
	if (rc != KEEL_OK) {
		/* CB will not run: answer here, as a completion would. */
		cm->rc = rc;
		serve_commit_finish(sh, cm);
	}
}

/* Does BODY lie in C's input buffer (charged to the budget already)?
 * An HTTP/2 or HTTP/3 stream's body always is (serve_h2.c and
 * serve_h3.c charge it). */
static int body_in_rx(const struct serve_conn *c, const char *body)
{
	if (serve_conn_streams(c))
		return 1;
	return c->rx && body >= c->rx->buf && body < c->rx->buf + c->rx->cap;
}

static void do_write(struct serve_conn *c, const struct http_request *req,
                     const char *key, size_t klen, const char *body,
                     size_t blen, int close)
{
	struct serve_shard *sh = c->shard;
	struct serve_commit *cm = NULL;
	keel_batch *batch = NULL;
	uint64_t cur, expect = KEEL_REV_ANY;
	int rc, st, put = req->method == HTTP_METHOD_PUT;
	size_t charged = 0;

	rc = current_rev(sh, key, klen, &cur);
	if (rc != KEEL_OK)
		goto out_status;
	/* The batch copies the body: charge it to the budget until the commit
	 * is done.  A body still in the connection's buffer is charged there
	 * too, for a moment (that buffer is freed or shrunk right after). */
	if (put && limits_budget_take(&sh->srv->budget, blen, body_in_rx(c, body)) != LIMITS_OK) {
		serve_error_busy(c, req->minor);
		return;
	}
	charged = put ? blen : 0;
	st = conditions(req, cur, 0);
	if (st || (!put && cur == 0)) {
		limits_budget_give(&sh->srv->budget, charged);
		answer_status(c, st ? st : 404, req->minor, close, 0, NULL);
		return;
	}
	/* With conditions, the client's.  A PUT without: ours, the key must
	 * still be at the revision just read, so "created" below is exact even
	 * when another writer races this one (a conflict is retried).  A
	 * DELETE without: any revision. */
	if (put || req->if_match.p || req->if_none_match.p)
		expect = cur ? cur : KEEL_REV_ABSENT;
	rc = keel_batch_new(&batch);
	if (rc != KEEL_OK)
		goto out_free_batch;
	rc = put ? keel_batch_put(batch, key, klen, body, blen, expect)
	         : keel_batch_del(batch, key, klen, expect);
	if (rc != KEEL_OK)
		goto out_free_batch;
	rc = KEEL_ENOMEM;
	cm = calloc(1, sizeof *cm + klen);
	if (cm == NULL)
		goto out_free_batch;
	memcpy(cm->key, key, klen);
	cm->klen = klen;
	cm->charged = charged;
	cm->implicit = put && !req->if_match.p && !req->if_none_match.p;
	cm->out = serve_out_new(c);
	if (cm->out == NULL)
		goto out_free_commit; /* the connection is closing */
	cm->out->ready = 0;
	cm->out->close_after = (uint8_t)close;
	cm->conn = c;
	cm->shard = sh;
	cm->batch = batch;
	cm->method = req->method;
	cm->created = cur == 0;
	cm->minor = req->minor;
	commit_start(sh, cm);
	return;

out_free_commit:
	free(cm);
out_free_batch:
	keel_batch_free(batch);
	limits_budget_give(&sh->srv->budget, charged);
out_status:
	answer_status(c, status_of(rc), req->minor, close, 0, NULL);
}

void serve_commit_done(void *arg, int rc, uint64_t txid, size_t failed_index)
{
	struct serve_commit *cm = arg;
	struct serve_shard *sh = cm->shard;
	int was_empty;

	(void)failed_index;
	cm->rc = rc;
	cm->txid = txid;
	cm->next = NULL;
	/* FIFO, in the order keel completes them.  Only the first completion
	 * after the shard emptied the queue writes the eventfd: a group of 64
	 * commits costs the engine thread one syscall, not 64. */
	pthread_mutex_lock(&sh->lock);
	was_empty = sh->done == NULL;
	if (was_empty)
		sh->done = cm;
	else
		sh->done_tail->next = cm;
	sh->done_tail = cm;
	pthread_mutex_unlock(&sh->lock);
	if (was_empty)
		serve_shard_wake(sh);
}

/* An unconditional PUT lost a race: another write changed the key between
 * our read and our commit.  Read it again and commit against what is there
 * now; after a few lost races, commit whatever is there (204: the key was
 * written by someone, so it exists or existed).  Returns 1 when resubmitted
 * (CM's answer comes with that commit). */
static int commit_retry(struct serve_shard *sh, struct serve_commit *cm)
{
	uint64_t cur, expect = KEEL_REV_ANY;

	sh->snap_fresh = 0; /* the newest state, not this burst's */
	if (current_rev(sh, cm->key, cm->klen, &cur) != KEEL_OK)
		return 0;
	if (++cm->tries < SERVE_PUT_TRIES) {
		expect = cur ? cur : KEEL_REV_ABSENT;
		cm->created = cur == 0;
	} else {
		cm->created = 0;
	}
	if (keel_batch_set_expect(cm->batch, 0, expect) != KEEL_OK)
		return 0;
	commit_start(sh, cm);
	return 1;
}

void serve_commit_finish(struct serve_shard *sh, struct serve_commit *cm)
{
	struct serve_conn *c = cm->conn;
	int status;

	sh->pending_commits--;
	sh->last_done_us = serve_now_us();
	sh->commit_us_avg = (sh->commit_us_avg * 7 +
	                     (sh->last_done_us - cm->started_us)) / 8;
	/* Counted down only now, not in serve_commit_done: while the shard
	 * still has completions to answer it is not idle, and a write read
	 * in between should join the next group rather than go direct. */
	atomic_fetch_sub(&sh->srv->commits, 1);
	c->inflight--;
	if (cm->implicit && cm->rc == KEEL_ECONFLICT && !(c->flags & CONN_DEAD) &&
	    commit_retry(sh, cm))
		return;
	limits_budget_give(&sh->srv->budget, cm->charged); /* the batch's body copy */
	keel_batch_free(cm->batch);
	if (c->flags & CONN_DEAD) {
		/* cm->out went with the connection */
		if (c->inflight == 0) {
			c->grave = sh->graveyard;
			sh->graveyard = c;
		}
		free(cm);
		return;
	}
	if (cm->rc == KEEL_OK)
		status = cm->method == HTTP_METHOD_PUT && cm->created ? 201 : 204;
	else
		status = status_of(cm->rc);
	if (status == 201)
		head_fill(cm->out, sh, 201, cm->minor, cm->out->close_after,
		          0, cm->txid, NULL);
	else if (status == 204)
		head_fill(cm->out, sh, 204, cm->minor, cm->out->close_after,
		          -1, cm->method == HTTP_METHOD_PUT ? cm->txid : 0, NULL);
	else {
		const char *r = http_reason(status);
		head_fill(cm->out, sh, status, cm->minor,
		          cm->out->close_after, (int64_t)strlen(r), 0, NULL);
		cm->out->body = r;
		cm->out->body_len = strlen(r);
	}
	free(cm); /* the caller writes the answer (conn_service) */
}

/* ---- dispatch ------------------------------------------------------------ */

void serve_handle(struct serve_conn *c, const struct http_request *req,
                  const char *body, size_t blen)
{
	char key[HTTP_KEY_MAX];
	ssize_t klen;
	int close;

	/* HTTP/2 and HTTP/3 end with GOAWAY instead (h2_stop, h3_stop) */
	if (!serve_conn_streams(c) &&
	    (!req->keep_alive || atomic_load(&c->shard->srv->stopping)))
		c->flags |= CONN_CLOSING;
	close = (c->flags & CONN_CLOSING) != 0;
	if (req->path.n == 1 && req->path.p[0] == '*') {
		/* "OPTIONS *" (the parser lets no other method through): what
		 * the server as a whole allows (RFC 9110 section 9.3.7) */
		answer_status(c, 204, req->minor, close, 1, ALLOW_ALL);
		return;
	}
	klen = http_pct_decode(req->path.p + 1, req->path.n - 1, key, sizeof key,
	                       0);
	if (klen < 0) {
		answer_status(c, (int)-klen, req->minor, close,
		              req->method == HTTP_METHOD_HEAD, NULL);
		return;
	}
	switch (req->method) {
	case HTTP_METHOD_GET:
	case HTTP_METHOD_HEAD:
		if (klen == 0)
			do_list(c, req, close);
		else
			do_get(c, req, key, (size_t)klen, close);
		return;
	case HTTP_METHOD_PUT:
	case HTTP_METHOD_DELETE:
		if (klen == 0)
			break;
		do_write(c, req, key, (size_t)klen, body, blen, close);
		return;
	case HTTP_METHOD_OPTIONS:
		answer_status(c, 204, req->minor, close, 1,
		              klen ? ALLOW_ALL : ALLOW_ROOT);
		return;
	default:
		break;
	}
	answer_status(c, 405, req->minor, close, 0, klen ? ALLOW_ALL : ALLOW_ROOT);
}
