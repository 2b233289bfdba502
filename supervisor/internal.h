/*
 * internal.h -- what the supervisor's files share (supervisor.h is the
 * manual): the guard's state, and the recorder's entry points.
 */
#ifndef KEEL_SUPERVISOR_INTERNAL_H
#define KEEL_SUPERVISOR_INTERNAL_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "supervisor.h"

#define SUP_FILTER_MAX 160 /* BPF instructions of the largest filter       */
#define SUP_PIDFDS 64      /* the callers' pidfds kept, by thread id        */
#define SUP_FDS_SEEN 64    /* watched descriptors remembered (fds.c)       */
#define SUP_GROUPS 1024    /* a caller's supplementary groups, at most     */

#define SUP_RINGS 16       /* io_uring instances made in one life (uring.c) */
#define SUP_PARKED 64      /* io_uring_enter calls waiting for completions */

/* Where the answer to a call goes while the recorder makes one entry of an
 * io_uring submission as if it were that call (uring.c): the guard's
 * answers land here instead of in the kernel. */
enum { SUP_SINK_NONE, SUP_SINK_ANSWERED, SUP_SINK_CONTINUE, SUP_SINK_REFUSED };
struct sup_sink {
	int state;             /* SUP_SINK_*: NONE, the caller was killed       */
	int64_t val;           /* ANSWERED: the result, or a negative errno    */
};

/* An io_uring instance the recorder made in the kernel's stead: its rings
 * live in a memfd the program maps as it would the kernel's, and the
 * recorder reads and writes them through a mapping of its own. */
struct sup_ring {
	int memfd;             /* -1: the slot is free                          */
	uint64_t ino;          /* the memfd's inode: how a descriptor is known  */
	uint32_t sq_entries, cq_entries;
	unsigned char *sq, *cq, *sqes; /* the recorder's mappings              */
	size_t sq_len, cq_len, sqes_len;
};

/* An io_uring_enter that waits for completions: answered (with VAL) once
 * the ring holds MIN of them. */
struct sup_parked {
	uint64_t id;           /* the notification                              */
	int tid;
	int ring;              /* index in rings[]                              */
	uint32_t min;
	int64_t val;
};

/* A watched file's descriptor met before: a hint that spares the lookup
 * of its name (fds.c says when it is believed). */
struct sup_fd_seen {
	int tid, fd;           /* whose number                                 */
	uint64_t dev, ino;     /* the file it named                            */
	char abs[PATH_MAX];    /* its name then ("": the slot is free)         */
};

struct sup_guard {
	int sock[2];           /* [0] the parent's end, [1] the child's       */
	int listener;          /* the filter's notification descriptor       */
	int stop[2];           /* a pipe: written to stop the thread         */
	pthread_t thread;
	int running;
	int stopping;          /* set by sup_guard_stop (atomic)              */
	int done;              /* set by the thread as it ends (atomic)       */
	sup_refusal_fn fn;
	void *arg;
	const sup_record *rec; /* NULL: the guard alone                      */
	struct sock_filter prog[SUP_FILTER_MAX]; /* built before the fork    */
	unsigned short nprog;
	uint64_t calls;        /* notifications answered                      */
	unsigned char *buf;    /* a write's bytes, read from the program     */
	size_t bufcap;
	int pidfd[SUP_PIDFDS]; /* the recorder's callers' pidfds (-1: none)   */
	int pidfd_tid[SUP_PIDFDS]; /* whose                                   */
	struct sup_fd_seen seen[SUP_FDS_SEEN];
	struct sup_sink *sink; /* non-NULL: answers go here (uring.c)        */
	struct sup_ring rings[SUP_RINGS];
	struct sup_parked parked[SUP_PARKED];
	int nparked;
};

/* One notification as the recorder serves it. */
typedef struct sup_call {
	sup_guard *g;
	const sup_record *r;
	const struct seccomp_notif *req;
	int tid;
	uint64_t a[6];
} sup_call;

/* guard.c: answers to a notification (0, or a negative errno when the
 * caller is gone) */
int sup_answer(sup_guard *g, uint64_t id, int error, int64_t val);
int sup_continue(sup_guard *g, uint64_t id);
/* the refusal of REQ's call: one line to the harness, EPERM to the call */
void sup_refuse(sup_guard *g, const struct seccomp_notif *req,
                const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the mapping of PID that holds IP, as FILE+0xOFFSET, in OUT */
void sup_site(int pid, uint64_t ip, char *out, size_t cap);

/* fds.c: the program's memory, descriptors and paths.  Each answers 0
 * (or 1 where said) or a negative errno. */
/* LEN bytes at ADDR of the caller into BUF */
int sup_peek(const sup_call *c, uint64_t addr, void *buf, size_t len);
/* LEN bytes of BUF into the caller's memory at ADDR */
int sup_poke(const sup_call *c, uint64_t addr, const void *buf, size_t len);
/* the NUL-terminated path at ADDR into OUT (PATH_MAX bytes) */
int sup_peek_path(const sup_call *c, uint64_t addr, char *out);
/* what the caller's FD names (a path, "pipe:[...]") into OUT */
int sup_fd_name(const sup_call *c, int fd, char *out);
/* PATH relative to the caller's DIRFD, made absolute into ABS (PATH_MAX),
 * its directory part resolved: 0, or 1 when PATH ends in a slash */
int sup_resolve(const sup_call *c, int dirfd, const char *path, char *abs);
/* ABS is below the watched directory, and neither volatile nor a stash */
int sup_watched(const sup_record *r, const char *abs);
/* the caller's FD in the harness (the same open file), or -errno */
int sup_take_fd(const sup_call *c, int fd);
/* ABS below the watched directory (or ABS itself when it is not) */
const char *sup_relative(const sup_record *r, const char *abs);
/* the caller's FD when it names a watched file: 1 with *DFD and ABS, or 0
 * when the call has been answered (continued, failed or refused) */
int sup_watched_fd(const sup_call *c, int fd, char *abs, int *dfd);
/* every remembered descriptor forgotten: a name changed */
void sup_fds_forget(sup_guard *g);

/* creds.c: the caller's identity, worn for one call naming a path */
typedef struct sup_creds {
	mode_t umask;
	unsigned uid, gid;     /* the caller's fsuid and fsgid                */
	int ngroups;           /* -1: not read                                */
	gid_t groups[SUP_GROUPS];
	int worn;              /* this thread wears it now                    */
} sup_creds;
/* K from /proc/TID/status: 0, -ESRCH (gone), -E2BIG (too many groups) */
int sup_creds_of(const sup_call *c, sup_creds *k);
/* this thread takes K where it differs from the harness's identity: 0,
 * or a negative errno (nothing worn then) */
int sup_wear(sup_creds *k);
/* the harness's identity back (errno kept); nothing when none was worn */
void sup_as_harness(sup_creds *k);

/* record.c: the recorder's filter (appended to PROG at *N; 0, or -1 when
 * it does not fit) and its answer to one notification */
int sup_record_filter(struct sock_filter *prog, unsigned short *n,
                      unsigned short cap);
void sup_record_serve(sup_guard *g, const struct seccomp_notif *req);
/* a write as write/pwrite64/writev/pwritev2 make it (C's a[0] the
 * descriptor, a[1] the buffer or the iovec array, a[2] its length or
 * count), and an fsync or fdatasync of a[0]: recorded and made, or
 * continued when not watched */
void sup_record_write(const sup_call *c, int vector, int positioned,
                      uint64_t off, int rwf);
void sup_record_sync(const sup_call *c, int datasync);

/* uring.c: io_uring, made by the recorder in the kernel's stead */
void sup_uring_init(sup_guard *g);
void sup_uring_free(sup_guard *g);
void sup_uring_setup(sup_guard *g, const struct seccomp_notif *req);
void sup_uring_enter(const sup_call *c);
void sup_uring_register(const sup_call *c);

#endif /* KEEL_SUPERVISOR_INTERNAL_H */
