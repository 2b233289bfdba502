/*
 * serve.h -- keel-serve's insides: the server, its shards and connections.
 * This header is for the server's files of http/ (serve_main.c: flags,
 * startup and shutdown; serve_conn.c: the event loop and connection I/O;
 * serve_req.c: what each request does to the store; serve_h2.c: HTTP/2
 * connections, serve_h2.h).  The HTTP contract is in docs/http.md.
 *
 * HTTP/2 (serve_h2.h)
 *   A connection is HTTP/1.1 or HTTP/2 from its first bytes on
 *   (serve_conn.c, conn_protocol_*).  An h2 connection has c->h2 and none
 *   of the HTTP/1.1 queue: serve_out_new() hands each answer to the
 *   stream being handled, serve_conn_flush() is h2_flush(), and reading
 *   does not stop for commits in flight (only for a full socket).
 *
 * HTTP/3 (serve_h3.h)
 *   With --tls-cert each shard also reads a UDP socket at the same port.
 *   A QUIC connection is a serve_conn with c->h3, fd -1, on the idle list
 *   only for shutdown's and conn_close's sake; ngtcp2 keeps its timers
 *   (h3_timers bounds the shard's epoll_wait).  Its streams reach
 *   serve_handle() as HTTP/2's do (serve_conn_streams).  HTTP/1.1 and
 *   HTTP/2 answers then carry Alt-Svc (serve_server.alt_svc).
 *
 * THREADS
 *   One shard per --threads: a thread with its own SO_REUSEPORT listener,
 *   epoll set and connections.  Every shard uses the one keel_db.  A shard
 *   never touches another shard's connections.  The only cross-thread path is
 *   a commit's completion: keel calls serve_commit_done() on an engine
 *   thread, which queues the result on the shard (mutex) and wakes it through
 *   its eventfd; the shard then writes the answer.
 *
 * TOKENS (--tokens, docs/http.md "Access tokens")
 *   The table is immutable and published through serve_server.tokens.  A
 *   shard loads that pointer afresh for each request and keeps it no
 *   longer than the request's checks, so at the top of each loop turn it
 *   holds none; it then copies serve_server.tokens_gen into its own
 *   tokens_seen.  On SIGHUP the main thread loads the file into a new table,
 *   swaps the pointer, then raises tokens_gen to G: a shard that has
 *   stored a tokens_seen >= G read the new pointer, so the old table is
 *   freed once every shard has (serve_main.c, retired_sweep).  A file
 *   that does not load changes nothing.
 *
 * TLS (--tls-cert, serve_tls.h, docs/http.md "TLS")
 *   The context for new connections is published through
 *   serve_server.tls and retired by the same generations as the token
 *   table: a shard loads the pointer when a connection's first record is
 *   whole in its socket (CONN_TLS until then, and no SSL), and SSL_new
 *   takes its own reference, so an old context lives on in the connections
 *   made with it after SIGHUP swapped in a new one.  A TLS connection
 *   starts on the head timer (--header-timeout bounds the handshake,
 *   --max-handshakes how many hold an SSL before they are up: a
 *   ClientHello past it closes its connection);
 *   until CONN_TLS_UP every event drives the handshake.  A first byte that is not a TLS
 *   handshake record gets a clear-text 400 and the connection ends.  Its
 *   I/O goes through serve_tls_read / serve_tls_writev (serve_conn.c,
 *   conn_read and conn_writev), which read until EAGAIN: a short read says
 *   nothing about bytes OpenSSL holds.  Lingering drains the raw socket.
 *
 * DIRECT COMMITS
 *   Those two hand-offs cost a lone writer a large part of its rate.  So
 *   when no commit of the whole server is in flight (serve_server.commits),
 *   the shard has nothing else to do (serve_shard.lone) and the writer is
 *   the one that wrote last (serve_shard.last_writer), the shard commits
 *   with keel_commit on its own thread and answers at once (serve_req.c,
 *   direct_ok).  Under load commits are in flight and the async path, which
 *   groups them, is taken.  --no-direct-commit turns it off.
 *
 * WHAT A PUT'S ANSWER MEANS
 *   A 2xx to PUT or DELETE is written only for a commit that finished with
 *   rc == KEEL_OK (a completion, or keel_commit's return on the direct
 *   path), i.e. after the commit's fdatasync returned.  Requests after a
 *   write on the same connection are not looked at until the write's answer
 *   is queued, so a pipelined GET sees the PUT before it.
 *
 * GET AND THE MAPPING
 *   A GET's body is the keel_view itself: writev() sends straight from the
 *   mapped file and the view is released only after its last byte was
 *   written (or the connection died), so overwrites and compaction cannot
 *   change what a slow reader receives.
 *
 * MEMORY (docs/http.md, "Memory under hostile clients")
 *   An idle keep-alive connection is one struct serve_conn (about 100
 *   bytes; with TLS also its SSL, about 14 KB with its record buffers
 *   released) and nothing else: input is read into the shard's scratch buffer
 *   and is copied into a per-connection buffer only when a request is
 *   incomplete.  That buffer starts at SERVE_RX_MIN and doubles only when
 *   the bytes that really arrived fill it, so a client holds about twice
 *   what it sent.  Every such buffer, and every body held by a commit in
 *   flight, is charged to one server-wide budget (--body-budget,
 *   serve_server.budget, serve_limits.h); a request
 *   that would pass it is answered 503 with Retry-After.  Answers are
 *   allocated while queued; a listing is at most about SERVE_LIST_BYTES,
 *   and a connection stops being read while SERVE_PIPELINE_MAX answers or
 *   SERVE_QUEUED_MAX bytes of listings wait for it to read them.
 *
 * TIMERS
 *   Each connection is on exactly one of the shard's timer lists, each
 *   with one fixed duration, so every list is in deadline order and the
 *   sweep stops at the first entry not yet due: idle (--idle-timeout, from
 *   the last progress), head (--header-timeout, from the first byte of a
 *   request head), body (windows of --header-timeout, each of which must
 *   bring --body-min-rate bytes a second) and linger (SERVE_LINGER_MS).
 *   What is due is decided by serve_limits.h, for both protocols.  An h2
 *   connection is on head while a header block is open, on body while any
 *   stream's body is coming (h2_timer_wanted; each expiry judges every
 *   stream whose own window is over, h2_expire) and on idle otherwise.
 */
#ifndef SERVE_H
#define SERVE_H

#include <netinet/in.h>
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "http_parse.h"
#include "keel.h"
#include "serve_h2.h"
#include "serve_h3.h"
#include "serve_fields.h"
#include "serve_limits.h"
#include "serve_tls.h"
#include "tokens.h"

#define SERVE_SCRATCH (64 * 1024) /* per-shard read buffer                 */
#define SERVE_RX_MIN 1024         /* a connection's first input buffer     */
#define SERVE_LIST_BYTES (64 * 1024) /* a listing stops after this much JSON */
#define SERVE_QUEUED_MAX (256 * 1024) /* listing bytes queued on one
                                     connection before reading pauses    */
#define SERVE_HEAD_MAX 320        /* one response head                     */
#define SERVE_PIPELINE_MAX 64     /* queued answers before reading pauses  */
#define SERVE_AUTO_POLL_US 1000   /* --busy-poll auto: commits faster than
                                     this are waited for by polling       */
#define SERVE_IOV_MAX 128         /* iovecs per writev                     */
#define SERVE_SENDFILE_MIN (64 * 1024) /* --sendfile-min's default         */
#define SERVE_SENDFILE_LOWAT (128 * 1024) /* unsent bytes a socket holds
                                     once it has sent a file body        */
#define SERVE_LINGER_MS 2000      /* draining a refused body before close  */
#define SERVE_TRIM_MIN 64          /* connections at a peak before memory
                                     is given back after it (serve_conn.c) */
#define SERVE_CLOSE_CLEAN 1       /* close_after: the request asked for it  */
#define SERVE_CLOSE_ERROR 2       /* close_after: input may still be coming */

struct serve_config {
	struct sockaddr_in addr; /* --listen; port 0 = pick one             */
	const char *db_path;     /* --db                                    */
	int threads;             /* --threads                               */
	int max_conns;           /* --max-conns, over all shards            */
	int max_handshakes;      /* --max-handshakes: TLS handshakes under
	                            way (an SSL made, not yet up), all
	                            shards                                 */
	int max_handshakes_per_source; /* --max-handshakes-per-source: of
	                            those, one source's (serve_limits.h,
	                            SHARES); 0 until set: an eighth      */
	uint64_t max_body;       /* --max-body in bytes                     */
	int idle_timeout_ms;     /* --idle-timeout                          */
	int header_timeout_ms;   /* --header-timeout: a whole request head;
	                            also the window of --body-min-rate      */
	uint64_t body_min_rate;  /* --body-min-rate, bytes per second       */
	uint64_t body_budget;    /* --body-budget: all request bodies held  */
	int defer_accept_s;      /* --defer-accept: TCP_DEFER_ACCEPT seconds
	                            on the plain listener; 0 off            */
	uint64_t sendfile_min;   /* --sendfile-min: a GET body of at least
	                            this many bytes on a plain HTTP/1.1
	                            connection goes by sendfile(2) from the
	                            store file; 0 never                     */
	int busy_poll_us;        /* --busy-poll: poll this long before
	                            sleeping in epoll_wait; 0 never, -1
	                            auto (serve_conn.c, shard_wait)      */
	int direct_commit;       /* 0 after --no-direct-commit              */
	int batch_threads;       /* 0 after --no-batch-threads              */
	const char *tokens_path; /* --tokens; NULL: no access control       */
	int insecure_open;       /* --insecure-open: serve a non-loopback
	                            address without --tokens               */
	const char *tls_cert;    /* --tls-cert; NULL: plain HTTP            */
	const char *tls_key;     /* --tls-key, given with --tls-cert        */
	int http3;               /* 0 after --no-http3 (or without TLS)     */
	int h3_retry_always;     /* --h3-retry always: every new QUIC
	                            connection validates its address first */
	int h3_no_0rtt;          /* --no-0rtt: QUIC resumes, takes no early
	                            data                                   */
};

struct serve_server;
struct serve_conn;

/* One queued answer: a head, then a body from a view or owned memory. */
struct serve_out {
	struct serve_out *next;
	uint8_t ready;       /* 0 while a commit is pending               */
	uint8_t close_after; /* 0, or SERVE_CLOSE_* once it is written    */
	uint16_t head_len;   /* bytes used in head[]                      */
	size_t sent;         /* bytes of head + body already written      */
	const char *body;    /* body bytes (in the view or in owned)      */
	size_t body_len;
	keel_view view;      /* pinned GET body; released when freed      */
	int file_fd;         /* >= 0: the body is sent with sendfile(2)
	                        from this descriptor (the view's,
	                        keel_view_file) at file_off; -1: from body */
	uint64_t file_off;
	char *owned;         /* malloc'd body (a listing), freed with it;
	                        counted in serve_conn.queued             */
	char head[SERVE_HEAD_MAX];
};

/* Input kept across reads while a request is incomplete. */
struct serve_rx {
	char *buf;                /* unparsed bytes (the request starts at 0) */
	size_t len, cap;          /* bytes held, bytes allocated              */
	size_t charged;           /* of cap, charged to the body budget       */
	size_t head_len;          /* head length once parsed, else 0          */
	size_t body_have;         /* chunked: decoded bytes after the head    */
	size_t body_want;         /* Content-Length of the waiting body       */
	struct http_chunked ch;   /* chunked decoder state                    */
	int continue_sent;        /* "100 Continue" already queued            */
};

/* Connection flags */
#define CONN_DEAD 0x1     /* closed; struct kept for pending commits      */
#define CONN_CLOSING 0x2  /* read nothing more; close after the answers  */
#define CONN_LINGER 0x4   /* answers sent, write side shut, draining      */
#define CONN_EOF 0x8      /* the client shut its side                     */
#define CONN_RX_HELD 0x10 /* stopped reading; resume when answers drain   */
#define CONN_PEER_SHUT 0x20 /* RDHUP/HUP seen: read on to EOF, not to a
                               short read                                */
#define CONN_TLS_HELLO 0x40 /* TLS: a whole handshake record came first  */
#define CONN_TLS_UP 0x80    /* TLS: handshake done, HTTP may flow         */
#define CONN_PROTO_KNOWN 0x100 /* HTTP/1.1 or HTTP/2 decided (h2 set or not) */
#define CONN_TLS 0x200      /* a --tls-cert connection: its ssl is made
                               once its first record is whole         */
#define CONN_RX_EMPTY 0x400 /* the last plain read was short (the socket
                               held no more), in this event's pass, and
                               no commit ran since: an answer that
                               closes the connection in the same pass
                               needs no look for more (cleared when the
                               pass ends and when a commit starts: bytes
                               may come while a sync runs, and closing
                               over them resets the answer away)      */
#define CONN_SF_LOWAT 0x800 /* TCP_NOTSENT_LOWAT set for sendfile          */

/* The timer lists (TIMERS in the comment at the top) */
enum serve_timer {
	SERVE_TIMER_IDLE = 0, /* --idle-timeout after the last progress      */
	SERVE_TIMER_HEAD,     /* --header-timeout after a head's first byte  */
	SERVE_TIMER_BODY,     /* one --body-min-rate window                  */
	SERVE_TIMER_LINGER,   /* SERVE_LINGER_MS after the closing answer    */
	SERVE_TIMERS
};

/* A place in a timer list; first in struct serve_conn. */
struct serve_link {
	struct serve_link *prev, *next;
};

struct serve_conn {
	struct serve_link link;         /* on sh->timers[timer], due order     */
	struct serve_shard *shard;
	struct serve_rx *rx;            /* NULL when no partial request        */
	struct serve_out *out, *out_tail; /* answers in order                  */
	struct serve_conn *grave;       /* next in the graveyard, once dead    */
	int64_t armed_ms;               /* when its timer started              */
	uint64_t received;              /* bytes read, ever (body windows)     */
	uint64_t mark;                  /* received when the body's window
	                                   started (armed_ms): with it, a
	                                   struct limits_body (conn_expire)   */
	uint32_t queued;                /* listing bytes in out                */
	SSL *ssl;                       /* with --tls-cert; else NULL          */
	struct h2_conn *h2;             /* HTTP/2 (serve_h2.c); else NULL      */
	struct h3_conn *h3;             /* HTTP/3 (serve_h3_internal.h); else
	                                   NULL                                 */
	int fd;
	uint16_t flags;                 /* CONN_*                              */
	uint16_t nout;                  /* entries in out                      */
	uint8_t timer;                  /* enum serve_timer                    */
	uint32_t inflight;              /* commits not completed yet           */
	uint16_t src;                   /* its source's bucket, while its TLS
	                                   handshake is counted (HELLO, not UP) */
};

/* A commit in flight, from keel_commit_async to the shard's answer. */
struct serve_commit {
	struct serve_commit *next; /* shard's completion queue              */
	struct serve_conn *conn;
	size_t charged;            /* body bytes charged to the budget      */
	struct serve_out *out;     /* the answer to fill in                 */
	keel_batch *batch;
	int method;                /* HTTP_METHOD_PUT or _DELETE            */
	int created;               /* the key was absent when checked       */
	int minor;                 /* the request's HTTP minor version      */
	int rc;                    /* from the engine                       */
	int implicit;              /* a PUT without conditions, committed as
	                              "still at the revision we read", so
	                              201 and 204 are exact; retried on a
	                              conflict (serve_commit_finish)        */
	int tries;
	int64_t started_us;        /* when its commit was submitted         */
	uint64_t txid;
	struct serve_shard *shard;
	size_t klen;
	char key[];                /* for a retry's fresh read              */
};

struct serve_shard {
	struct serve_server *srv;
	pthread_t thread;
	int id, epfd, lfd, evfd;
	int ufd;                      /* HTTP/3's UDP socket; -1 without   */
	struct h3_shard *h3;          /* its connections
	                                 (serve_h3_internal.h)               */
	struct serve_link timers[SERVE_TIMERS]; /* list heads (sentinels) */
	int64_t timer_ms[SERVE_TIMERS]; /* each list's one duration         */
	struct serve_conn *graveyard; /* closed, freed at the loop's end    */
	int nconns;
	int conns_peak;               /* the server's connections at their
	                                 most since memory was last given
	                                 back (shard 0: serve_conn.c,
	                                 memory_give_back)                  */
	struct h2_conn *h2_idle_first, *h2_idle_last; /* HTTP/2 connections
	                                 gone idle with frame-buffer pages
	                                 resident, oldest first (serve_h2.c,
	                                 h2_sweep)                          */
	int accept_paused;            /* accept4 failed (out of descriptors,
	                                 memory): the level-triggered listener
	                                 is out of epoll until the next sweep */
	int pending_commits;          /* commits queued, not yet answered   */
	int64_t commit_us_avg;        /* moving average of a commit's time,
	                                 submission to answer (auto polling) */
	int64_t last_done_us;         /* when the last commit was answered  */
	int lone;                     /* this epoll batch is one event: no
	                                 other connection of the shard waits */
	uint64_t direct_commits;      /* committed on this thread (counted
	                                 for the exit line)                 */
	const struct serve_conn *last_writer; /* started the shard's last
	                                 commit; compared, never followed (a
	                                 reused address only misjudges one
	                                 write's path, not its answer)      */
	pthread_mutex_t lock;         /* protects done                      */
	struct serve_commit *done;    /* completions waiting for the shard  */
	struct serve_commit *done_tail; /* its last entry                   */
	int64_t now_ms;
	int64_t date_sec;
	char date[40];                /* "Sun, 06 Nov 1994 08:49:37 GMT"    */
	keel_snapshot *snap;          /* renewed per read burst (serve_req) */
	int snap_fresh;               /* snap is current for this burst     */
	_Atomic uint64_t tokens_seen; /* tokens_gen at the top of its latest
	                                 loop turn (TOKENS above; TLS too)  */
	char scratch[SERVE_SCRATCH];
};

struct serve_server {
	struct serve_config cfg;
	keel_db *db;
	atomic_int conns;    /* open connections, all shards            */
	struct limits_sources hs_sources; /* TLS handshakes under way (TCP:
	                        CONN_TLS_HELLO, not _UP; QUIC: not done),
	                        by source: --max-handshakes and its shares */
	atomic_int stopping; /* SIGTERM/SIGINT seen                     */
	atomic_int commits;  /* commits started, not finished, all shards */
	struct limits_budget budget; /* --body-budget: all shards' bodies */
	struct limits_config limits; /* --header-timeout, --body-min-rate */
	_Atomic(tokens_table *) tokens; /* --tokens' table; NULL without  */
	_Atomic uint64_t tokens_gen; /* raised after each swap of tokens
	                                or of tls (TOKENS above)         */
	_Atomic(SSL_CTX *) tls; /* --tls-cert's context for new
	                           connections; NULL without          */
	struct serve_shard *shards;
	struct h3_creds *h3;  /* QUIC's certificate; NULL: no HTTP/3     */
	char alt_svc[40];     /* "Alt-Svc: h3=\":PORT\"\r\n", or ""       */
};

/* Does C multiplex requests as streams (HTTP/2 or HTTP/3)? */
static inline int serve_conn_streams(const struct serve_conn *c)
{
	return c->h2 != NULL || c->h3 != NULL;
}

/* CLOCK_MONOTONIC in microseconds */
static inline int64_t serve_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* serve_conn.c */
/* Would the shard poll around a commit of its own (--busy-poll USEC, or
 * auto with commits lately under SERVE_AUTO_POLL_US)? */
int serve_would_poll(const struct serve_shard *sh);
void *serve_shard_run(void *arg);
int serve_shard_init(struct serve_shard *sh, struct serve_server *srv, int id,
                     int lfd);
void serve_shard_wake(struct serve_shard *sh);
struct serve_out *serve_out_new(struct serve_conn *c);
void serve_out_free(struct serve_out *o);
void serve_conn_flush(struct serve_conn *c);
/* For serve_h2.c: the connection's read and writev (through TLS when it
 * has it; as the system calls, EAGAIN included), progress (the idle
 * timer starts again), the end after a last answer (SERVE_CLOSE_*), and
 * closing at once. */
ssize_t serve_conn_read(struct serve_conn *c, void *buf, size_t n);
ssize_t serve_conn_writev(struct serve_conn *c, const struct iovec *iov,
                          int cnt);
void serve_conn_progress(struct serve_conn *c);
void serve_conn_end(struct serve_conn *c, int how);
void serve_conn_close(struct serve_conn *c);
/* For serve_h3.c: counts C (made by the caller, fd -1) as one of SH's
 * connections and puts it on the idle list. */
void serve_conn_adopt(struct serve_shard *sh, struct serve_conn *c);

/* serve_req.c */
/* Handles one complete request; queues its answer (or starts its commit). */
void serve_handle(struct serve_conn *c, const struct http_request *req,
                  const char *body, size_t blen);
/* With --tokens: may REQ go on?  0, or 401 / 403 with the
 * WWW-Authenticate line to send in *CHALLENGE (docs/http.md, "Access
 * tokens"). */
int serve_authorize(struct serve_server *srv, const struct http_request *req,
                    const char **challenge);
/* Queues an error answer; CLOSE ends the connection after it. */
void serve_error(struct serve_conn *c, int status, int minor, int close);
/* Queues 503 with Retry-After (the body budget is full) and ends the
 * connection after it. */
void serve_error_busy(struct serve_conn *c, int minor);
/* Queues 401 or 403 to REQ with CHALLENGE (a WWW-Authenticate line);
 * CLOSE ends the connection after it. */
void serve_error_auth(struct serve_conn *c, const struct http_request *req,
                      int status, int close, const char *challenge);
/* Writes the canned 503 for a connection over --max-conns into BUF;
 * returns its length. */
size_t serve_busy_response(char *buf, size_t cap);
/* On the shard: turns a finished commit, async or direct, into its
 * answer. */
void serve_commit_finish(struct serve_shard *sh, struct serve_commit *cm);
/* keel_commit_cb: runs on an engine thread; hands over to the shard. */
void serve_commit_done(void *arg, int rc, uint64_t txid, size_t failed_index);

#endif /* SERVE_H */
