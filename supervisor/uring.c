/*
 * uring.c -- io_uring under the recorder (supervisor.h), made by the
 * harness in the kernel's stead, so that every write and sync submitted
 * through a ring is recorded as the same call made directly would be.
 *
 * io_uring_setup is answered with a descriptor of the harness's: a memfd
 * laid out as the kernel lays out a ring (the offsets it answers in the
 * parameters), which the program maps at the kernel's offsets
 * (IORING_OFF_SQ_RING, _CQ_RING, _SQES) and the harness maps too.  No
 * ring exists in the kernel: the program's io_uring_enter comes here
 * (the filter sends it), and each submission queue entry is made at once,
 * in order, on the harness's thread -- a write through the recorder's own
 * path (sup_record_write: recorded, faults injected, a crash point before
 * it), a sync through sup_record_sync, a read of the file as it is -- its
 * completion entry posted before the call is answered.  So a completion a
 * program sees is one the simulator has made, in the order made: a sync's
 * completion follows its record, a linked write after it follows both.
 *
 * What is made: IORING_OP_NOP, READV, WRITEV, READ, WRITE, FSYNC (whole
 * file, with or without IORING_FSYNC_DATASYNC); links (IOSQE_IO_LINK:
 * a failed or short entry cancels the rest of its chain, ECANCELED;
 * IOSQE_IO_HARDLINK does not), IOSQE_IO_DRAIN and IOSQE_ASYNC (made in
 * order anyway), IOSQE_CQE_SKIP_SUCCESS.  An enter that waits for more
 * completions than the ring holds is answered when another thread's
 * submission brings them (it waits as in the kernel).  The features
 * answered: IORING_FEAT_NODROP, SUBMIT_STABLE, RW_CUR_POS; no
 * SINGLE_MMAP and no EXT_ARG, so liburing maps the two rings apart and
 * never asks for a timed wait.  io_uring_register: file updates and
 * unregistration answer ENXIO, as a ring with no files registered does;
 * a probe EINVAL, as a kernel without probes.
 *
 * What is refused (the run, naming the call, with the answer ENOSYS to
 * the setup, as the guard answers, or EPERM): a setup with SQPOLL, IOPOLL,
 * SQE128, CQE32, NO_MMAP and the other flags below; any other operation
 * (sockets, opens, renames, fallocate, timeouts, ...), registered files
 * (IOSQE_FIXED_FILE) and buffers, buffer selection, personalities, an
 * FSYNC of a range, and any other registration.  A refusal says what a
 * program's own switch to plain calls is where one is known.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* where the rings' fields lie, in each ring (the parameters say so) */
#define R_HEAD 0u
#define R_TAIL 64u
#define R_MASK 128u
#define R_ENTRIES 132u
#define R_SQ_FLAGS 136u
#define R_SQ_DROPPED 140u
#define R_CQ_OVERFLOW 136u
#define R_CQ_FLAGS 140u
#define R_ARRAY 192u           /* the SQ's index array; the CQ's entries  */

#define MAX_ENTRIES 32768u     /* IORING_MAX_ENTRIES                      */
#define MAX_CQ (2u * MAX_ENTRIES)
#define IOV_MAX_RING 1024u     /* UIO_MAXIOV                              */
#define MOVE_MAX (8u << 20)    /* bytes one read moves at a time          */

/* the setup flags made here: the others are refused */
#define SETUP_MADE (IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP |            \
                    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | \
                    IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER)

static const char *const op_names[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED",
	"POLL_ADD", "POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG",
	"TIMEOUT", "TIMEOUT_REMOVE", "ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT",
	"CONNECT", "FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE", "STATX",
	"READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2",
	"EPOLL_CTL", "SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE",
	"SHUTDOWN", "RENAMEAT", "UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT",
};

static const char *op_name(unsigned op)
{
	return op < sizeof op_names / sizeof op_names[0] ? op_names[op] : "?";
}

#define FALLBACK "a program's own switch to plain calls avoids it: " \
                 "MariaDB's innodb_use_native_aio=0"

static uint32_t *u32(unsigned char *base, unsigned off)
{
	return (uint32_t *)(void *)(base + off);
}

static uint32_t load(unsigned char *base, unsigned off)
{
	return __atomic_load_n(u32(base, off), __ATOMIC_ACQUIRE);
}

static void store(unsigned char *base, unsigned off, uint32_t v)
{
	__atomic_store_n(u32(base, off), v, __ATOMIC_RELEASE);
}

void sup_uring_init(sup_guard *g)
{
	for (int i = 0; i < SUP_RINGS; i++)
		g->rings[i].memfd = -1;
	g->nparked = 0;
}

static void ring_free(struct sup_ring *r)
{
	if (r->sq)
		munmap(r->sq, r->sq_len);
	if (r->cq)
		munmap(r->cq, r->cq_len);
	if (r->sqes)
		munmap(r->sqes, r->sqes_len);
	if (r->memfd >= 0)
		close(r->memfd);
	memset(r, 0, sizeof *r);
	r->memfd = -1;
}

void sup_uring_free(sup_guard *g)
{
	for (int i = 0; i < SUP_RINGS; i++)
		if (g->rings[i].memfd >= 0)
			ring_free(&g->rings[i]);
	g->nparked = 0;
}

static uint32_t pow2_up(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static void *map_at(int fd, size_t len, off_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

/* The memfd and the harness's mappings of ring R (sizes set): 0 or -errno */
static int ring_make(struct sup_ring *r)
{
	struct stat st;

	r->sq_len = R_ARRAY + 4u * (size_t)r->sq_entries;
	r->cq_len = R_ARRAY + sizeof(struct io_uring_cqe) * (size_t)r->cq_entries;
	r->sqes_len = sizeof(struct io_uring_sqe) * (size_t)r->sq_entries;
	r->memfd = (int)syscall(SYS_memfd_create, "keel-uring", MFD_CLOEXEC);
	if (r->memfd < 0)
		return -errno;
	if (ftruncate(r->memfd, (off_t)(IORING_OFF_SQES + r->sqes_len)) != 0 ||
	    fstat(r->memfd, &st) != 0)
		return -errno;
	r->ino = (uint64_t)st.st_ino;
	r->sq = map_at(r->memfd, r->sq_len, (off_t)IORING_OFF_SQ_RING);
	r->cq = map_at(r->memfd, r->cq_len, (off_t)IORING_OFF_CQ_RING);
	r->sqes = map_at(r->memfd, r->sqes_len, (off_t)IORING_OFF_SQES);
	if (!r->sq || !r->cq || !r->sqes)
		return -ENOMEM;
	store(r->sq, R_MASK, r->sq_entries - 1);
	store(r->sq, R_ENTRIES, r->sq_entries);
	store(r->cq, R_MASK, r->cq_entries - 1);
	store(r->cq, R_ENTRIES, r->cq_entries);
	return 0;
}

/* io_uring_setup(entries, params): a ring of the harness's, its
 * descriptor placed in the program as the call's answer */
void sup_uring_setup(sup_guard *g, const struct seccomp_notif *req)
{
	sup_call c = { g, g->rec, req, (int)req->pid, { 0 } };
	struct io_uring_params p;
	struct sup_ring *r = NULL;
	uint32_t entries = (uint32_t)req->data.args[0];
	int rc;

	memcpy(c.a, req->data.args, sizeof c.a);
	if ((rc = sup_peek(&c, c.a[1], &p, sizeof p)) < 0) {
		sup_answer(g, req->id, -rc, 0);
		return;
	}
	if (p.flags & ~(uint32_t)SETUP_MADE) {
		sup_refuse(g, req, "io_uring_setup with flags %#x (%s): the "
		           "supervisor makes an io_uring's reads, writes and "
		           "syncs itself, and cannot with these (%s)", p.flags,
		           (p.flags & IORING_SETUP_SQPOLL)
		           ? "SQPOLL: a kernel thread takes the submissions, "
		             "with no call at all"
		           : "not modelled", FALLBACK);
		return;
	}
	if (p.resv[0] || p.resv[1] || p.resv[2]) {
		sup_answer(g, req->id, EINVAL, 0);
		return;
	}
	if (entries == 0 || (entries > MAX_ENTRIES &&
	                     !(p.flags & IORING_SETUP_CLAMP))) {
		sup_answer(g, req->id, EINVAL, 0);
		return;
	}
	if (entries > MAX_ENTRIES)
		entries = MAX_ENTRIES;
	uint32_t sq = pow2_up(entries), cq = 2 * sq;
	if (p.flags & IORING_SETUP_CQSIZE) {
		if (p.cq_entries == 0 || (p.cq_entries > MAX_CQ &&
		                          !(p.flags & IORING_SETUP_CLAMP))) {
			sup_answer(g, req->id, EINVAL, 0);
			return;
		}
		cq = pow2_up(p.cq_entries > MAX_CQ ? MAX_CQ : p.cq_entries);
		if (cq < sq) {
			sup_answer(g, req->id, EINVAL, 0);
			return;
		}
	}
	for (int i = 0; i < SUP_RINGS && !r; i++)
		if (g->rings[i].memfd < 0)
			r = &g->rings[i];
	if (!r) {
		sup_refuse(g, req, "io_uring_setup: more than %d rings in one "
		           "life", SUP_RINGS);
		return;
	}
	r->sq_entries = sq;
	r->cq_entries = cq;
	if ((rc = ring_make(r)) < 0) {
		ring_free(r);
		sup_answer(g, req->id, -rc, 0);
		return;
	}
	p.sq_entries = sq;
	p.cq_entries = cq;
	p.features = IORING_FEAT_NODROP | IORING_FEAT_SUBMIT_STABLE |
	             IORING_FEAT_RW_CUR_POS;
	memset(&p.sq_off, 0, sizeof p.sq_off);
	memset(&p.cq_off, 0, sizeof p.cq_off);
	p.sq_off.head = R_HEAD;
	p.sq_off.tail = R_TAIL;
	p.sq_off.ring_mask = R_MASK;
	p.sq_off.ring_entries = R_ENTRIES;
	p.sq_off.flags = R_SQ_FLAGS;
	p.sq_off.dropped = R_SQ_DROPPED;
	p.sq_off.array = R_ARRAY;
	p.cq_off.head = R_HEAD;
	p.cq_off.tail = R_TAIL;
	p.cq_off.ring_mask = R_MASK;
	p.cq_off.ring_entries = R_ENTRIES;
	p.cq_off.overflow = R_CQ_OVERFLOW;
	p.cq_off.cqes = R_ARRAY;
	p.cq_off.flags = R_CQ_FLAGS;
	if ((rc = sup_poke(&c, c.a[1], &p, sizeof p)) < 0) {
		ring_free(r);
		sup_answer(g, req->id, -rc, 0);
		return;
	}
	struct seccomp_notif_addfd add = {
		.id = req->id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)r->memfd,
		.newfd = 0,
		.newfd_flags = O_CLOEXEC, /* as the kernel's ring descriptor */
	};
	g->calls++;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0) {
		int e = errno;
		ring_free(r);
		if (e != ENOENT)
			sup_refuse(g, req, "io_uring_setup: the ring's descriptor "
			           "could not be placed in the program: %s",
			           strerror(e));
	}
}

/* The ring the caller's descriptor FD names: its index, or -1 when the
 * call has been answered (not a descriptor; or a ring of the kernel's,
 * which cannot be: refused) */
static int ring_of(const sup_call *c, int fd)
{
	char name[PATH_MAX];
	struct stat st;
	int dfd = sup_take_fd(c, fd);

	if (dfd < 0) {
		sup_answer(c->g, c->req->id, dfd == -ESRCH ? ESRCH : EBADF, 0);
		return -1;
	}
	int ok = fstat(dfd, &st) == 0;
	close(dfd);
	for (int i = 0; ok && i < SUP_RINGS; i++)
		if (c->g->rings[i].memfd >= 0 &&
		    c->g->rings[i].ino == (uint64_t)st.st_ino)
			return i;
	if (sup_fd_name(c, fd, name) == 0 && strstr(name, "io_uring"))
		sup_refuse(c->g, c->req, "an io_uring the supervisor did not "
		           "make (received from outside the program?): its "
		           "submissions would go unseen (%s)", FALLBACK);
	else
		sup_answer(c->g, c->req->id, EOPNOTSUPP, 0);
	return -1;
}

/* ---- one submission queue entry ------------------------------------------ */

/* 0 when the harness may move the bytes of IOV (CNT) through DFD on the
 * caller's behalf: a regular file (or, for a WRITE, a character device);
 * 1 for a write to a pipe or a socket, made only if it need not wait;
 * a read of one could block the harness, and with it every call of the
 * program (REFUSE_IT, below).  A direct descriptor's segments must be
 * aligned as the kernel wants them (-EINVAL). */
#define REFUSE_IT INT64_MIN

static int64_t movable(int dfd, int writing, const struct iovec *iov,
                       size_t cnt)
{
	struct stat st;

	if (fstat(dfd, &st) != 0)
		return -errno;
	if (writing && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 1; /* made only if it need not wait (RWF_NOWAIT) */
	if (!S_ISREG(st.st_mode) && !(writing && S_ISCHR(st.st_mode)))
		return REFUSE_IT;
	int rc = shim_dio_check(dfd, -1, iov, (int)cnt);
	return rc < 0 ? rc : 0;
}

/* The bytes of a READ (VECTOR 0: ADDR, LEN) or READV (VECTOR 1: LEN
 * iovecs at ADDR) read from the caller's FD at OFF (-1: its position)
 * into its memory: the count, or a negative errno. */
static int64_t do_read(const sup_call *c, int fd, int vector, uint64_t addr,
                       uint32_t len, uint64_t off, int rwf)
{
	struct iovec one = { (void *)(uintptr_t)addr, len }, *iov = &one;
	size_t cnt = 1;
	int64_t done = 0;
	unsigned char *buf = NULL;

	if (vector) {
		if (len > IOV_MAX_RING)
			return -EINVAL;
		if (!(iov = calloc(len ? len : 1, sizeof *iov)))
			return -ENOMEM;
		int rc = sup_peek(c, addr, iov, len * sizeof *iov);
		if (rc < 0) {
			free(iov);
			return rc;
		}
		cnt = len;
	}
	int dfd = sup_take_fd(c, fd);
	if (dfd < 0) {
		done = dfd == -ESRCH ? -ESRCH : -EBADF;
		goto out;
	}
	if ((done = movable(dfd, 0, iov, cnt)) != 0)
		goto out;
	if (posix_memalign((void **)&buf, 4096, MOVE_MAX) != 0) {
		buf = NULL;
		done = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++) {
		for (size_t at = 0; at < iov[i].iov_len;) {
			size_t want = iov[i].iov_len - at < MOVE_MAX
			              ? iov[i].iov_len - at : MOVE_MAX;
			struct iovec lv = { buf, want };
			ssize_t n = preadv2(dfd, &lv, 1, (int64_t)off == -1 ? -1
			                    : (off_t)(off + (uint64_t)done), rwf);
			if (n < 0) {
				if (done == 0)
					done = -errno;
				goto out;
			}
			int rc = sup_poke(c, (uint64_t)(uintptr_t)iov[i].iov_base
			                  + at, buf, (size_t)n);
			if (rc < 0) {
				if (done == 0)
					done = rc;
				goto out;
			}
			done += n;
			at += (size_t)n;
			if ((size_t)n < want)
				goto out; /* the end of the file */
		}
	}
out:
	if (dfd >= 0)
		close(dfd);
	free(buf);
	if (iov != &one)
		free(iov);
	return done;
}

/* A write to a descriptor the recorder does not watch (a pipe, a file
 * elsewhere): made here, as the kernel would.  The count or -errno. */
static int64_t write_plain(const sup_call *c, int fd, int vector,
                           uint64_t addr, uint32_t len, uint64_t off, int rwf)
{
	struct iovec one = { (void *)(uintptr_t)addr, len }, *iov = &one;
	size_t cnt = 1, total = 0;
	unsigned char *buf = NULL;
	int64_t rc = 0;

	if (vector) {
		if (len > IOV_MAX_RING)
			return -EINVAL;
		if (!(iov = calloc(len ? len : 1, sizeof *iov)))
			return -ENOMEM;
		if ((rc = sup_peek(c, addr, iov, len * sizeof *iov)) < 0)
			goto out;
		cnt = len;
	}
	for (size_t i = 0; i < cnt; i++)
		total += iov[i].iov_len < MOVE_MAX - total ? iov[i].iov_len
		                                           : MOVE_MAX - total;
	if (posix_memalign((void **)&buf, 4096, total ? total : 1) != 0) {
		buf = NULL;
		rc = -ENOMEM;
		goto out;
	}
	size_t got = 0;
	for (size_t i = 0; i < cnt && got < total; i++) {
		size_t n = iov[i].iov_len < total - got ? iov[i].iov_len
		                                        : total - got;
		if ((rc = sup_peek(c, (uint64_t)(uintptr_t)iov[i].iov_base,
		                   buf + got, n)) < 0)
			goto out;
		got += n;
	}
	int dfd = sup_take_fd(c, fd);
	if (dfd < 0) {
		rc = dfd == -ESRCH ? -ESRCH : -EBADF;
		goto out;
	}
	int64_t how = movable(dfd, 1, iov, cnt);
	if (how != 0 && how != 1) {
		rc = how;
		close(dfd);
		goto out;
	}
	struct iovec lv = { buf, total };
	ssize_t n = pwritev2(dfd, &lv, 1, (int64_t)off == -1 ? -1 : (off_t)off,
	                     rwf | (how == 1 ? RWF_NOWAIT : 0));
	rc = n < 0 ? -errno : n;
	if (how == 1 && (rc == -EAGAIN || rc == -EOPNOTSUPP))
		rc = REFUSE_IT; /* it would wait: not made here */
	close(dfd);
out:
	free(buf);
	if (iov != &one)
		free(iov);
	return rc;
}

/* SUP_SINK_* of one recorder call made for an entry (*RES its result);
 * a NONE: the caller was killed at a crash point */
static int sunk(sup_guard *g, struct sup_sink *s, int64_t *res)
{
	g->sink = NULL;
	*res = s->val;
	return s->state;
}

/* The refusal of an entry the harness cannot make without blocking */
static void refuse_kind(const sup_call *c, unsigned op)
{
	sup_refuse(c->g, c->req, "io_uring %s on a pipe, a socket or a "
	           "device that is not ready: not modelled (made here it "
	           "could block every call of the program; %s)", op_name(op),
	           FALLBACK);
}

/* Entry E of the caller's ring, made: 1 with *RES (its completion's
 * result), 0 when the caller was killed (at a crash point, or by a
 * crash: nothing more is made, the enter is not answered), -1 when the
 * run was refused.  Every answer and refusal of the calls made for it
 * lands in a sink, none in the kernel: the enter is answered once. */
static int make_one(const sup_call *c, const struct io_uring_sqe *e,
                    int64_t *res, int64_t *want)
{
	sup_guard *g = c->g;
	struct sup_sink s = { SUP_SINK_NONE, 0 };
	sup_call w = *c;
	unsigned op = e->opcode;
	int vector = op == IORING_OP_READV || op == IORING_OP_WRITEV;
	int rwf = (int)e->rw_flags;
	int64_t n;

	*want = -1;
	g->sink = &s;
	memset(w.a, 0, sizeof w.a);
	w.a[0] = (uint64_t)(int64_t)e->fd;
	w.a[1] = e->addr;
	w.a[2] = e->len;
	if (e->flags & (IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT) ||
	    e->personality) {
		sup_refuse(g, c->req, "io_uring %s with %s: not modelled (%s)",
		           op_name(op), (e->flags & IOSQE_FIXED_FILE)
		           ? "a registered file" : (e->flags & IOSQE_BUFFER_SELECT)
		           ? "a selected buffer" : "a personality", FALLBACK);
	} else switch (op) {
	case IORING_OP_NOP:
		s.state = SUP_SINK_ANSWERED, s.val = 0;
		break;
	case IORING_OP_READV: case IORING_OP_READ:
		*want = vector ? -1 : (int64_t)e->len;
		n = do_read(c, e->fd, vector, e->addr, e->len, e->off, rwf);
		if (n == REFUSE_IT)
			refuse_kind(c, op);
		else
			s.state = SUP_SINK_ANSWERED, s.val = n;
		break;
	case IORING_OP_WRITEV: case IORING_OP_WRITE:
		*want = vector ? -1 : (int64_t)e->len;
		sup_record_write(&w, vector, (int64_t)e->off != -1,
		                 (int64_t)e->off != -1 ? e->off : 0, rwf);
		break;
	case IORING_OP_FSYNC:
		if (e->off || e->len || e->addr || e->buf_index)
			sup_refuse(g, c->req, "io_uring FSYNC of a range (offset "
			           "%llu, %u bytes): not modelled (%s)",
			           (unsigned long long)e->off, e->len, FALLBACK);
		else if (e->fsync_flags & ~IORING_FSYNC_DATASYNC)
			s.state = SUP_SINK_ANSWERED, s.val = -EINVAL;
		else
			sup_record_sync(&w, !!(e->fsync_flags &
			                       IORING_FSYNC_DATASYNC));
		break;
	default:
		sup_refuse(g, c->req, "io_uring %s (opcode %u): not modelled "
		           "(the supervisor makes an io_uring's reads, writes, "
		           "syncs and no-ops; %s)", op_name(op), op, FALLBACK);
	}
	if (s.state == SUP_SINK_CONTINUE) {
		/* not watched: made here all the same, as the kernel would */
		if (op == IORING_OP_FSYNC) {
			int dfd = sup_take_fd(c, e->fd);
			if (dfd < 0) {
				n = dfd == -ESRCH ? -ESRCH : -EBADF;
			} else {
				int rc = (e->fsync_flags & IORING_FSYNC_DATASYNC)
				         ? fdatasync(dfd) : fsync(dfd);
				n = rc == 0 ? 0 : -errno;
				close(dfd);
			}
		} else {
			n = write_plain(c, e->fd, vector, e->addr, e->len,
			                e->off, rwf);
		}
		if (n == REFUSE_IT)
			refuse_kind(c, op);
		else
			s.state = SUP_SINK_ANSWERED, s.val = n;
	}
	switch (sunk(g, &s, res)) {
	case SUP_SINK_ANSWERED:
		return 1;
	case SUP_SINK_REFUSED:
		return -1;
	default:
		return 0; /* killed at a crash point, or by a crash */
	}
}

/* ---- the rings --------------------------------------------------------------- */

/* A completion posted (the CQ has room: the caller checked) */
static void post(struct sup_ring *r, uint64_t data, int64_t res)
{
	uint32_t tail = load(r->cq, R_TAIL);
	struct io_uring_cqe *q = (struct io_uring_cqe *)(void *)
	        (r->cq + R_ARRAY) + (tail & (r->cq_entries - 1));

	q->user_data = data;
	q->res = (int32_t)res;
	q->flags = 0;
	store(r->cq, R_TAIL, tail + 1);
}

static uint32_t ready(struct sup_ring *r)
{
	return load(r->cq, R_TAIL) - load(r->cq, R_HEAD);
}

/* Every waiting enter of ring RING whose completions have come: answered */
static void wake(sup_guard *g, int ring)
{
	for (int i = 0; i < g->nparked;) {
		struct sup_parked *p = &g->parked[i];
		if (p->ring == ring && ready(&g->rings[ring]) >= p->min) {
			sup_answer(g, p->id, 0, p->val); /* gone: dropped too */
			*p = g->parked[--g->nparked];
		} else {
			i++;
		}
	}
}

/* io_uring_enter(fd, to_submit, min_complete, flags, arg, argsz) */
void sup_uring_enter(const sup_call *c)
{
	sup_guard *g = c->g;
	uint32_t to_submit = (uint32_t)c->a[1], min = (uint32_t)c->a[2];
	uint32_t flags = (uint32_t)c->a[3];
	int64_t submitted = 0, err = 0;
	int chain_cancel = 0;

	/* a thread waits in one call at a time: an entry of its own left
	 * in the table is one the kernel dropped (it was killed) */
	for (int i = 0; i < g->nparked; i++)
		if (g->parked[i].tid == c->tid) {
			g->parked[i] = g->parked[--g->nparked];
			break;
		}
	if (flags & ~(uint32_t)(IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP |
	                        IORING_ENTER_SQ_WAIT)) {
		sup_refuse(g, c->req, "io_uring_enter with flags %#x (a "
		           "registered ring, a timed wait): not modelled (%s)",
		           flags, FALLBACK);
		return;
	}
	int ri = ring_of(c, (int)c->a[0]);
	if (ri < 0)
		return;
	struct sup_ring *r = &g->rings[ri];
	uint32_t head = load(r->sq, R_HEAD), tail = load(r->sq, R_TAIL);
	uint32_t n = tail - head < to_submit ? tail - head : to_submit;
	if (n > r->sq_entries) /* as the kernel: a ring's worth at most */
		n = r->sq_entries;
	for (uint32_t k = 0; k < n; k++) {
		if (ready(r) >= r->cq_entries) { /* no room for its completion */
			if (submitted == 0)
				err = -EBUSY;
			break;
		}
		uint32_t idx = load(r->sq, R_ARRAY + 4u * ((head + k) &
		                                          (r->sq_entries - 1)));
		if (idx >= r->sq_entries) {
			/* as Linux 6.1: the entry is consumed and counted as
			 * dropped, and the submission stops there */
			store(r->sq, R_SQ_DROPPED,
			      load(r->sq, R_SQ_DROPPED) + 1);
			store(r->sq, R_HEAD, head + k + 1);
			break;
		}
		submitted++;
		struct io_uring_sqe e;
		memcpy(&e, r->sqes + sizeof e * idx, sizeof e);
		/* consumed: the program may reuse the entry now
		 * (IORING_FEAT_SUBMIT_STABLE) */
		store(r->sq, R_HEAD, head + k + 1);
		int64_t res, want;
		int linked = !!(e.flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK));
		if (chain_cancel) {
			res = -ECANCELED;
		} else {
			int made = make_one(c, &e, &res, &want);
			if (made == 0)
				return; /* killed: nothing more happens */
			if (made < 0) {
				sup_answer(g, c->req->id, EPERM, 0);
				return; /* refused: the run ends there */
			}
			/* a failed or short entry breaks a soft link */
			if ((e.flags & IOSQE_IO_LINK) &&
			    (res < 0 || (want >= 0 && res < want)))
				chain_cancel = 1;
		}
		if (!linked)
			chain_cancel = 0;
		if (!((e.flags & IOSQE_CQE_SKIP_SUCCESS) && res >= 0))
			post(r, e.user_data, res);
	}
	wake(g, ri);
	if (err < 0) {
		sup_answer(g, c->req->id, (int)-err, 0);
		return;
	}
	if ((flags & IORING_ENTER_GETEVENTS) && min > 0 && ready(r) < min) {
		if (min > r->cq_entries) {
			sup_answer(g, c->req->id, EINVAL, 0);
			return;
		}
		if (g->nparked >= SUP_PARKED) {
			sup_refuse(g, c->req, "io_uring_enter: more than %d "
			           "threads waiting for completions", SUP_PARKED);
			return;
		}
		/* answered when another thread's submission brings them */
		g->parked[g->nparked++] = (struct sup_parked){
			c->req->id, c->tid, ri, min, submitted };
		return;
	}
	sup_answer(g, c->req->id, 0, submitted);
}

/* io_uring_register(fd, opcode, arg, nr_args) */
void sup_uring_register(const sup_call *c)
{
	unsigned op = (unsigned)c->a[1];

	if (ring_of(c, (int)c->a[0]) < 0)
		return;
	switch (op) {
	case IORING_REGISTER_FILES_UPDATE:
	case IORING_UNREGISTER_FILES:
		/* a ring with no files registered answers so */
		sup_answer(c->g, c->req->id, ENXIO, 0);
		return;
	case IORING_REGISTER_PROBE:
		sup_answer(c->g, c->req->id, EINVAL, 0); /* no probes */
		return;
	default:
		sup_refuse(c->g, c->req, "io_uring_register opcode %u (files, "
		           "buffers, an eventfd, ...): not modelled (%s)", op,
		           FALLBACK);
	}
}
