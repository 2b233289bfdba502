/*
 * serve.h -- keel-serve's insides: the server, its shards and connections.
 * This header is for the three files of http/ (serve_main.c: flags, startup
 * and shutdown; serve_conn.c: the event loop and connection I/O;
 * serve_req.c: what each request does to the store).  The HTTP contract is
 * in docs/http.md.
 *
 * THREADS
 *   One shard per --threads: a thread with its own SO_REUSEPORT listener,
 *   epoll set and connections.  Every shard uses the one keel_db.  A shard
 *   never touches another shard's connections.  The only cross-thread path is
 *   a commit's completion: keel calls serve_commit_done() on an engine
 *   thread, which queues the result on the shard (mutex) and wakes it through
 *   its eventfd; the shard then writes the answer.
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
 * MEMORY
 *   An idle keep-alive connection is one struct serve_conn (72 bytes)
 *   and nothing else: input is read into the shard's scratch buffer and is
 *   copied into a per-connection buffer only when a request is incomplete;
 *   responses are allocated while they are queued.
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

#define SERVE_SCRATCH (64 * 1024) /* per-shard read buffer                 */
#define SERVE_HEAD_MAX 320        /* one response head                     */
#define SERVE_PIPELINE_MAX 64     /* queued answers before reading pauses  */
#define SERVE_AUTO_POLL_US 1000   /* --busy-poll auto: commits faster than
                                     this are waited for by polling       */
#define SERVE_IOV_MAX 128         /* iovecs per writev                     */
#define SERVE_LINGER_MS 2000      /* draining a refused body before close  */
#define SERVE_CLOSE_CLEAN 1       /* close_after: the request asked for it  */
#define SERVE_CLOSE_ERROR 2       /* close_after: input may still be coming */

struct serve_config {
	struct sockaddr_in addr; /* --listen; port 0 = pick one             */
	const char *db_path;     /* --db                                    */
	int threads;             /* --threads                               */
	int max_conns;           /* --max-conns, over all shards            */
	uint64_t max_body;       /* --max-body in bytes                     */
	int idle_timeout_ms;     /* --idle-timeout                          */
	int busy_poll_us;        /* --busy-poll: poll this long before
	                            sleeping in epoll_wait; 0 never, -1
	                            auto (serve_conn.c, shard_wait)      */
	int direct_commit;       /* 0 after --no-direct-commit              */
	int batch_threads;       /* 0 after --no-batch-threads              */
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
	char *owned;         /* malloc'd body (a listing), freed with it  */
	char head[SERVE_HEAD_MAX];
};

/* Input kept across reads while a request is incomplete. */
struct serve_rx {
	char *buf;                /* unparsed bytes (the request starts at 0) */
	size_t len, cap;          /* bytes held, bytes allocated              */
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

struct serve_conn {
	struct serve_shard *shard;
	struct serve_conn *prev, *next; /* shard's list, oldest activity first */
	struct serve_rx *rx;            /* NULL when no partial request        */
	struct serve_out *out, *out_tail; /* answers in order                  */
	int64_t last_ms;                /* last progress (CLOCK_MONOTONIC)     */
	int fd;
	uint16_t flags;                 /* CONN_*                              */
	uint16_t nout;                  /* entries in out                      */
	uint32_t inflight;              /* commits not completed yet           */
};

/* A commit in flight, from keel_commit_async to the shard's answer. */
struct serve_commit {
	struct serve_commit *next; /* shard's completion queue              */
	struct serve_conn *conn;
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
	struct serve_conn conns;      /* list head (sentinel), by last_ms   */
	struct serve_conn *graveyard; /* closed, freed at the loop's end    */
	int nconns;
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
	char scratch[SERVE_SCRATCH];
};

struct serve_server {
	struct serve_config cfg;
	keel_db *db;
	atomic_int conns;    /* open connections, all shards            */
	atomic_int stopping; /* SIGTERM/SIGINT seen                     */
	atomic_int commits;  /* commits started, not finished, all shards */
	struct serve_shard *shards;
};

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

/* serve_req.c */
/* Handles one complete request; queues its answer (or starts its commit). */
void serve_handle(struct serve_conn *c, const struct http_request *req,
                  const char *body, size_t blen);
/* Queues an error answer; CLOSE ends the connection after it. */
void serve_error(struct serve_conn *c, int status, int minor, int close);
/* Writes the canned 503 for a connection over --max-conns into BUF;
 * returns its length. */
size_t serve_busy_response(char *buf, size_t cap);
/* On the shard: turns a finished commit, async or direct, into its
 * answer. */
void serve_commit_finish(struct serve_shard *sh, struct serve_commit *cm);
/* keel_commit_cb: runs on an engine thread; hands over to the shard. */
void serve_commit_done(void *arg, int rc, uint64_t txid, size_t failed_index);

#endif /* SERVE_H */
