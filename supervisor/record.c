/*
 * record.c -- the supervisor's recorder (supervisor.h): the calls that
 * change files, recorded in the faultsim cache as the shim records them,
 * made by the harness on the program's behalf, answered with their result.
 *
 * One notification at a time, on the guard's thread.  For each call:
 *   1. what it names: a descriptor (one met before: the guard's table,
 *      checked by inode; else readlink /proc/TID/fd/N) or a path (read
 *      from the program's memory, resolved against its working directory
 *      or its directory descriptor) -- fds.c;
 *   2. not below the watched directory (or volatile, or a stash): it
 *      continues in the kernel, untouched;
 *   3. below it: the program's descriptor is fetched (pidfd_getfd: the same
 *      open file, so the same offset and flags), the faults asked, the
 *      record begun, the real call made here, the record ended, the call
 *      entered in the shim's ring and this life's tables (shim.h), and the
 *      program answered with the call's result.
 * The invariants the shim keeps hold the same way: a change is recorded
 * before it is made (a kill between the two leaves a record the crash
 * trims to what the file shows), and a name is entered in this life's
 * table before it changes.
 *
 * Per-descriptor error reporting after a failed sync (errseq: the shim
 * reports a failure once to every descriptor open on the file) is the
 * shim's alone: here the failed call gets its error, and later syncs
 * through other descriptors succeed.
 */

#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/falloc.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WRITE_MAX (8u << 20)  /* bytes one call moves; more: a short write */
#define IOV_MAX_CALL 1024     /* iovecs one call may name (UIO_MAXIOV)   */
#define ZERO_MAX (64u << 20)  /* a zeroed range recorded as zeros, at most */

#if defined(__x86_64__)
#define ARCH_NATIVE_RECORD AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_NATIVE_RECORD AUDIT_ARCH_AARCH64
#else
#define ARCH_NATIVE_RECORD 0
#endif

/* ---- the filter ------------------------------------------------------------ */

static int put(struct sock_filter *prog, unsigned short *n, unsigned short cap,
               struct sock_filter f)
{
	if (*n >= cap)
		return -1;
	prog[(*n)++] = f;
	return 0;
}

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

int sup_record_filter(struct sock_filter *prog, unsigned short *n,
                      unsigned short cap)
{
	static const uint32_t calls[] = {
		__NR_write, __NR_pwrite64, __NR_writev, __NR_pwritev,
		__NR_pwritev2, __NR_openat, __NR_openat2, __NR_truncate,
		__NR_ftruncate, __NR_fallocate, __NR_fsync, __NR_fdatasync,
		__NR_sync, __NR_syncfs, __NR_renameat, __NR_renameat2,
		__NR_unlinkat, __NR_linkat, __NR_mkdirat, __NR_symlinkat,
		__NR_mknodat, __NR_copy_file_range, __NR_splice,
		__NR_utimensat, __NR_io_uring_enter, __NR_io_uring_register,
#ifdef __NR_open
		__NR_open, __NR_creat, __NR_rename, __NR_unlink, __NR_rmdir,
		__NR_link, __NR_mkdir, __NR_symlink, __NR_mknod,
#endif
#ifdef __NR_sendfile
		__NR_sendfile,
#endif
	};
	int bad = 0;

	/* A holds the call's number */
#if defined(__x86_64__)
	/* x32's numbers (bit 30): not followed, so sent here to be refused */
	bad |= put(prog, n, cap, (struct sock_filter)BPF_JUMP(
	                    BPF_JMP | BPF_JSET | BPF_K, 0x40000000u, 0, 1));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_STMT(
	                    BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
#endif
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		bad |= put(prog, n, cap, (struct sock_filter)BPF_JUMP(
		                    BPF_JMP | BPF_JEQ | BPF_K, calls[i], 0, 1));
		bad |= put(prog, n, cap, (struct sock_filter)BPF_STMT(
		                    BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
	}
	/* mmap only when shared and writable: a Go runtime maps memory
	 * often, and nothing else of it matters here */
	bad |= put(prog, n, cap, (struct sock_filter)BPF_JUMP(
	                    BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_STMT(
	                    BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_JUMP(
	                    BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 3));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_STMT(
	                    BPF_LD | BPF_W | BPF_ABS, ARG_LO(3)));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_JUMP(
	                    BPF_JMP | BPF_JSET | BPF_K, MAP_SHARED, 0, 1));
	bad |= put(prog, n, cap, (struct sock_filter)BPF_STMT(
	                    BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
	return bad ? -1 : 0;
}

/* The caller's identity, read for a call made here that names a path
 * (creds.c): 0, or -1 when the call has been answered (the caller gone;
 * or in too many groups to wear: refused). */
static int creds_for(const sup_call *c, sup_creds *k)
{
	int rc = sup_creds_of(c, k);

	k->worn = 0;
	if (rc == -E2BIG)
		sup_refuse(c->g, c->req, "a caller in more than %d supplementary "
		           "groups: the supervisor cannot make its calls with its "
		           "identity", SUP_GROUPS);
	else if (rc < 0)
		sup_answer(c->g, c->req->id, -rc, 0);
	return rc < 0 ? -1 : 0;
}

/* RC gets EXPR (0 or a negative errno), evaluated with the caller's
 * identity K worn, or the error of wearing it */
#define AS_CALLER(k, rc, expr)                                           \
	do {                                                             \
		if (((rc) = sup_wear(&(k))) == 0) {                      \
			(rc) = (expr);                                   \
			sup_as_harness(&(k));                            \
		}                                                        \
	} while (0)

/* ---- what the shim's control block learns ----------------------------------- */


/* One call in the ring, complete (the harness made it: nothing in
 * flight outlives the answer). */
static void ring(const sup_call *c, uint32_t op, int file, const char *path,
                 const char *path2, uint64_t off, uint64_t len, int64_t result,
                 int durable)
{
	shim_shared *s = c->r->ctl;
	uint64_t i = __atomic_fetch_add(&s->ncalls, 1, __ATOMIC_ACQ_REL);
	shim_call *e = &s->ring[i % SHIM_RING];

	__atomic_store_n(&e->seq, 0, __ATOMIC_RELEASE);
	e->op = op;
	e->file = file;
	e->pid = c->tid;
	e->durable = (uint32_t)durable;
	e->result = result;
	e->off = off;
	e->len = len;
	e->rec = 0;
	e->site = 0;
	e->module = 0;
	e->role = c->r->role;
	e->inflight = 0;
	if (path2)
		snprintf(e->path, sizeof e->path, "%s -> %s",
		         sup_relative(c->r, path), sup_relative(c->r, path2));
	else
		snprintf(e->path, sizeof e->path, "%s",
		         path ? sup_relative(c->r, path) : "?");
	__atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
}

static void name_touch(const sup_call *c, const char *abs)
{
	const char *rel = sup_relative(c->r, abs);

	if (rel != abs)
		shim_name_enter(c->r->ctl, rel, strlen(rel));
	__atomic_add_fetch(&c->r->ctl->changes, 1, __ATOMIC_RELAXED);
}

/* A change of FILE's bytes is made: its slot in this life's table gets
 * the time it returned (the harness makes it, so nothing is in flight
 * once the answer is sent). */
static void seen_ino(const sup_call *c, const struct stat *st)
{
	__atomic_add_fetch(&c->r->ctl->changes, 1, __ATOMIC_RELAXED);
	shim_seen *e = shim_seen_slot(c->r->ctl, shim_seen_key(
	                              (uint64_t)st->st_dev, (uint64_t)st->st_ino));
	if (e)
		shim_seen_stamp(e, shim_now_ns());
}

/* The same for the file on FD (one fstat: its identity). */
static void seen(const sup_call *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0)
		seen_ino(c, &st);
	else
		__atomic_add_fetch(&c->r->ctl->changes, 1, __ATOMIC_RELAXED);
}

/* The harness made the file on FD for the caller: its slot starts again
 * (shim_seen_created). */
static void seen_created(const sup_call *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0)
		shim_seen_created(c->r->ctl, &st);
}

/* ---- faults, and a full cache ----------------------------------------------- */

/* The fault for OP: 0, a negative errno, or FAULTSIM_SHORT/_CRASH.  An
 * enumeration's crash point kills the caller's process first (*KILLED). */
/* An enumeration's crash point stops the whole workload, as a power cut
 * stops the machine: the caller's process group (exec_spawn gives the
 * workload one of its own), not the caller alone -- a shell above it
 * would go on and acknowledge after a sync its child never made. */
static void crash_point(const sup_call *c)
{
	pid_t g = getpgid(c->tid);

	if (g > 0 && g != getpgrp())
		kill(-g, SIGKILL);
	else
		kill(c->tid, SIGKILL);
}

static int fault(const sup_call *c, faultsim_op op, int step, int *killed)
{
	*killed = 0;
	if (step && faultsim_faults_step_due(c->r->faults)) {
		crash_point(c);
		*killed = 1;
		return 0;
	}
	return c->r->faults ? faultsim_faults_check(c->r->faults, op) : 0;
}

/* sync(2) settles every file and directory: nftw's callback has no
 * argument pointer (one thread records) */
static uint64_t all_mark;
static const sup_record *rec_now;

static int settle_dir(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		faultsim_cache_dir_sync_end(rec_now->cache, path, all_mark, 0);
	return 0;
}

static void settle_all(const sup_record *r, uint64_t mark)
{
	all_mark = mark;
	rec_now = r;
	for (uint32_t i = 0; i < faultsim_cache_nfiles(r->cache); i++)
		faultsim_cache_sync_end(r->cache, (int)i, mark, 0, r->profile);
	nftw(r->dir, settle_dir, 16, FTW_PHYS);
}

/* A full cache in a kills-only run is settled as sync(2) would settle
 * it (nothing recorded can be undone there): 1, try again. */
static int settle_full(const sup_call *c, int rc)
{
	if (rc != -ENOBUFS || !c->r->kills_only)
		return 0;
	uint64_t mark = faultsim_cache_sync_begin(c->r->cache);
	sync();
	settle_all(c->r, mark);
	faultsim_cache_clear_overflow(c->r->cache);
	return 1;
}

/* A recording call failed with RC: a full cache refuses the run; any
 * other error is the call's answer, as the shim answers it (a rename of a
 * name that is not there: ENOENT). */
static void record_failed(const sup_call *c, int rc, const char *what,
                          const char *path)
{
	if (rc == -ENOBUFS)
		sup_refuse(c->g, c->req, "%s %s: the fault simulator's cache is "
		           "full: %s; cut power more often (a shorter "
		           "--kill-every)%s", what, sup_relative(c->r, path),
		           faultsim_cache_nfiles(c->r->cache) >= FAULTSIM_MAX_FILES
		           ? "all of its file entries name files with changes "
		             "a power cut could still undo"
		           : "more unsynced bytes than its records hold",
		           faultsim_cache_nfiles(c->r->cache) >= FAULTSIM_MAX_FILES
		           ? "" : ", or give it more room (--cache-mib)");
	else
		sup_answer(c->g, c->req->id, -rc, 0);
}

/* RC = CALL, a faultsim recording call (made once more after a settled
 * full cache).  On failure the call has been answered or the run
 * refused: the caller only cleans up. */
#define RECORD(c, rc, what, path, call) do {                              \
	(rc) = (call);                                                    \
	if ((rc) < 0 && settle_full((c), (rc)))                           \
		(rc) = (call);                                            \
	if ((rc) < 0)                                                     \
		record_failed((c), (rc), (what), (path));                 \
} while (0)

/* ---- writes -------------------------------------------------------------------- */

/* The guard's buffer, room for at least WANT bytes (at least one: a
 * write of nothing still names a buffer), aligned for direct I/O.  0 or
 * -ENOMEM. */
static int buf_room(sup_guard *g, size_t want)
{
	void *b;

	if (want <= g->bufcap && g->buf)
		return 0;
	if (posix_memalign(&b, SHIM_DIO_ALIGN, want ? want : 1) != 0)
		return -ENOMEM;
	free(g->buf);
	g->buf = b;
	g->bufcap = want ? want : 1;
	return 0;
}

/* The bytes a write call on DFD (its status flags FL) names, gathered
 * into the guard's buffer (at most WRITE_MAX: a longer call becomes a
 * short write).  *LEN gets their count.  0 or a negative errno: -EINVAL, as the kernel answers,
 * for a segment of a direct write (O_DIRECT) that is not aligned as its
 * file asks -- the aligned copy would be taken where the call is not. */
static int gather(const sup_call *c, int dfd, int fl, int vector, size_t *len)
{
	sup_guard *g = c->g;
	size_t want;

	if (!vector) {
		want = c->a[2] < WRITE_MAX ? (size_t)c->a[2] : WRITE_MAX;
	} else {
		if (c->a[2] > IOV_MAX_CALL)
			return -EINVAL;
		want = 0;
	}
	struct iovec iov[IOV_MAX_CALL];
	size_t cnt = vector ? (size_t)c->a[2] : 0;
	if (vector) {
		int rc = sup_peek(c, c->a[1], iov, cnt * sizeof iov[0]);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < cnt && want < WRITE_MAX; i++)
			want += iov[i].iov_len < WRITE_MAX - want ?
			        iov[i].iov_len : WRITE_MAX - want;
	}
	struct iovec one = { (void *)(uintptr_t)c->a[1], (size_t)c->a[2] };
	int dio = shim_dio_check(dfd, fl, vector ? iov : &one,
	                         vector ? (int)cnt : 1);
	if (dio < 0)
		return dio;
	int rc = buf_room(g, want);
	if (rc < 0)
		return rc;
	if (!vector) {
		*len = want;
		return sup_peek(c, c->a[1], g->buf, want);
	}
	size_t got = 0;
	for (size_t i = 0; i < cnt && got < want; i++) {
		size_t n = iov[i].iov_len < want - got ? iov[i].iov_len
		                                       : want - got;
		rc = sup_peek(c, (uint64_t)(uintptr_t)iov[i].iov_base,
		          g->buf + got, n);
		if (rc < 0)
			return rc;
		got += n;
	}
	*len = got;
	return 0;
}

/* The watched regular file descriptor FD of the caller names, fetched
 * and tracked: 1 (*DFD, *FILE, *FL, ABS filled), or 0 when the call has
 * been answered already (it continues: not a watched regular file; or an
 * error, or a refusal). */
static int out_file(const sup_call *c, int fd, char *abs, int *dfd, int *file,
                    int *fl, struct stat *stp)
{
	struct stat st;

	if (!sup_watched_fd(c, fd, abs, dfd))
		return 0;
	*fl = fcntl(*dfd, F_GETFL);
	st.st_mode = 0;
	*file = faultsim_cache_track_stat(c->r->cache, *dfd, abs, &st);
	if (*file == -ENAMETOOLONG) {
		sup_refuse(c->g, c->req, "a write to %s: its name is too long "
		           "for the fault simulator", sup_relative(c->r, abs));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) && fstat(*dfd, &st) == 0 &&
	    !S_ISREG(st.st_mode)) {
		sup_continue(c->g, c->req->id); /* a directory, a device */
		goto out_close;
	}
	if (*file < 0 && settle_full(c, *file))
		*file = faultsim_cache_track_stat(c->r->cache, *dfd, abs, &st);
	if (*file < 0) {
		record_failed(c, *file, "write", abs);
		goto out_close;
	}
	*stp = st;
	return 1;
out_close:
	close(*dfd);
	return 0;
}

/* A descriptor the cache can read the file's bytes through (a record's
 * pre-image): DFD itself, or, when the program opened the file write-only
 * (FL: its status flags; Java's FileOutputStream, a shell's '>' on a file
 * that exists), a read-write one on the same file, opened again through
 * /proc.  The caller closes it when it is not DFD.  Refuses the run (and
 * returns -1) when there is none: a record without its pre-image would
 * answer the program EBADF for a write it may make. */
static int readable_fd(const sup_call *c, int dfd, int fl, const char *abs)
{
	char p[64];
	int rfd;

	if (fl < 0 || (fl & O_ACCMODE) != O_WRONLY)
		return dfd;
	snprintf(p, sizeof p, "/proc/self/fd/%d", dfd);
	if ((rfd = open(p, O_RDWR | O_CLOEXEC)) < 0)
		sup_refuse(c->g, c->req, "%s is open write-only and the "
		           "supervisor cannot open it to read its bytes (the "
		           "pre-image of a change): %s", sup_relative(c->r, abs),
		           strerror(errno));
	return rfd;
}

/* The recorded write of the guard's buffer (LEN bytes) to DFD: at OFF
 * when POSITIONED, else at the descriptor's position (or its end under
 * O_APPEND or RWF_APPEND).  The byte count, or a negative errno; *RECORDED
 * is 0 when recording failed (the call has been answered then). */
static ssize_t write_out(const sup_call *c, int dfd, int file, const char *abs,
                         const struct stat *st, int fl, size_t len,
                         int positioned, uint64_t off, int rwf, int *recorded)
{
	faultsim_ticket t = { 0 };
	int whence = (fl & O_APPEND) || (rwf & RWF_APPEND) ? SEEK_END
	           : positioned ? SEEK_SET : SEEK_CUR;
	int durable = (fl >= 0 && (fl & (O_SYNC | O_DSYNC))) ||
	              (rwf & (RWF_SYNC | RWF_DSYNC));
	int rc, rfd, at = whence;

	*recorded = 0;
	if ((rfd = readable_fd(c, dfd, fl, abs)) < 0)
		return -EBADF;
	if (rfd != dfd && whence == SEEK_CUR) {
		/* the position is the program's descriptor's: the write
		 * below is made through it, at that position */
		off_t cur = lseek(dfd, 0, SEEK_CUR);
		if (cur < 0) {
			rc = -errno;
			close(rfd);
			sup_answer(c->g, c->req->id, -rc, 0);
			return rc;
		}
		off = (uint64_t)cur;
		at = SEEK_SET;
	}
	RECORD(c, rc, "write", abs, faultsim_cache_write_begin_at(c->r->cache,
	       file, rfd, c->g->buf, len, at, &off, &t));
	if (rfd != dfd)
		close(rfd);
	if (rc < 0)
		return rc;
	*recorded = 1;
	ssize_t n = whence == SEEK_SET ? pwrite(dfd, c->g->buf, len, (off_t)off)
	                               : write(dfd, c->g->buf, len);
	int err = n < 0 ? errno : 0;
	seen_ino(c, st);
	if (durable)
		faultsim_cache_write_end_durable(&t, n < 0 ? -err : n);
	else
		faultsim_cache_write_end(&t, n < 0 ? -err : n);
	if (n > 0)
		__atomic_add_fetch(&c->r->ctl->bytes, (uint64_t)n,
		                   __ATOMIC_RELAXED);
	ring(c, SHIM_OP_WRITE, file, abs, NULL, off, len, n < 0 ? -err : n,
	     durable);
	return n < 0 ? -err : n;
}

/* write, pwrite64, writev, pwritev, pwritev2 on a watched file */
static void do_write(const sup_call *c, int nr)
{
	int vector = nr == __NR_writev || nr == __NR_pwritev ||
	             nr == __NR_pwritev2;
	int positioned = nr == __NR_pwrite64 || nr == __NR_pwritev ||
	                 (nr == __NR_pwritev2 && (int64_t)c->a[3] != -1);

	sup_record_write(c, vector, positioned, positioned ? c->a[3] : 0,
	                 nr == __NR_pwritev2 ? (int)c->a[5] : 0);
}

void sup_record_write(const sup_call *c, int vector, int positioned,
                      uint64_t off, int rwf)
{
	char abs[PATH_MAX];
	int dfd, file, fl, killed, e, recorded;
	size_t len;
	struct stat st;

	if (!out_file(c, (int)c->a[0], abs, &dfd, &file, &fl, &st))
		return;
	if ((e = gather(c, dfd, fl, vector, &len)) < 0) {
		sup_answer(c->g, c->req->id, -e, 0);
		goto out_close;
	}
	e = fault(c, FAULTSIM_OP_PWRITE, 1, &killed);
	if (killed)
		goto out_close;
	if (e == FAULTSIM_SHORT) {
		len = shim_short_len(dfd, len);
	} else if (e < 0) {
		sup_answer(c->g, c->req->id, -e, 0);
		goto out_close;
	}
	ssize_t n = write_out(c, dfd, file, abs, &st, fl, len, positioned,
	                      off, rwf, &recorded);
	if (!recorded)
		goto out_close;
	if (e == FAULTSIM_CRASH)
		kill(c->tid, SIGKILL);
	else
		sup_answer(c->g, c->req->id, n < 0 ? (int)-n : 0, n);
out_close:
	close(dfd);
}

/* copy_file_range(in, *off_in, out, *off_out, len, flags) and
 * sendfile(out, in, *offset, count) into a watched file: a read of the
 * source here and a recorded write, as the shim's backstop makes them.
 * The source's position (or *OFF_IN) moves by what was written. */
static void do_copy(const sup_call *c, int nr)
{
	char abs[PATH_MAX];
	int is_cfr = nr == __NR_copy_file_range;
	int in = (int)(is_cfr ? c->a[0] : c->a[1]);
	uint64_t in_offp = is_cfr ? c->a[1] : c->a[2];
	uint64_t out_offp = is_cfr ? c->a[3] : 0;
	uint64_t count = is_cfr ? c->a[4] : c->a[3];
	int dfd, file, fl, din, killed, e, recorded;
	int64_t in_off = 0, out_off = 0;
	struct stat st;

	if (!out_file(c, (int)(is_cfr ? c->a[2] : c->a[0]), abs, &dfd, &file,
	              &fl, &st))
		return;
	if ((din = sup_take_fd(c, in)) < 0) {
		sup_answer(c->g, c->req->id, EBADF, 0);
		goto out_close;
	}
	if ((in_offp && sup_peek(c, in_offp, &in_off, sizeof in_off) < 0) ||
	    (out_offp && sup_peek(c, out_offp, &out_off, sizeof out_off) < 0)) {
		sup_answer(c->g, c->req->id, EFAULT, 0);
		goto out_close_in;
	}
	if (!in_offp && (in_off = lseek(din, 0, SEEK_CUR)) < 0) {
		sup_answer(c->g, c->req->id, errno, 0);
		goto out_close_in;
	}
	size_t len = count < WRITE_MAX ? (size_t)count : WRITE_MAX;
	if (buf_room(c->g, len) < 0) {
		sup_answer(c->g, c->req->id, ENOMEM, 0);
		goto out_close_in;
	}
	ssize_t got = pread(din, c->g->buf, len, (off_t)in_off);
	if (got <= 0) {
		sup_answer(c->g, c->req->id, got < 0 ? errno : 0, 0);
		goto out_close_in;
	}
	e = fault(c, FAULTSIM_OP_PWRITE, 1, &killed);
	if (killed)
		goto out_close_in;
	if (e < 0 && e != FAULTSIM_SHORT) {
		sup_answer(c->g, c->req->id, -e, 0);
		goto out_close_in;
	}
	if (e == FAULTSIM_SHORT)
		got = (ssize_t)shim_short_len(dfd, (size_t)got);
	ssize_t n = write_out(c, dfd, file, abs, &st, fl, (size_t)got,
	                      out_offp != 0, (uint64_t)out_off, 0, &recorded);
	if (!recorded)
		goto out_close_in;
	if (n > 0) {
		in_off += n;
		out_off += n;
		if (in_offp)
			sup_poke(c, in_offp, &in_off, sizeof in_off);
		else
			lseek(din, (off_t)in_off, SEEK_SET);
		if (out_offp)
			sup_poke(c, out_offp, &out_off, sizeof out_off);
	}
	if (e == FAULTSIM_CRASH)
		kill(c->tid, SIGKILL);
	else
		sup_answer(c->g, c->req->id, n < 0 ? (int)-n : 0, n);
out_close_in:
	close(din);
out_close:
	close(dfd);
}

/* A protocol line of the workload's: to the ring, so the trace shows
 * where each acknowledgement fell among the calls.  The call continues. */
static void protocol(const sup_call *c)
{
	char line[SHIM_LABEL];
	size_t n = c->a[2] < sizeof line - 1 ? (size_t)c->a[2] : sizeof line - 1;

	if (sup_peek(c, c->a[1], line, n) == 0) {
		while (n && line[n - 1] == '\n')
			n--;
		line[n] = '\0';
		ring(c, SHIM_OP_PROTOCOL, -1, line, NULL, 0, 0, (int64_t)c->a[2],
		     0);
	}
	sup_continue(c->g, c->req->id);
}

/* ---- syncs ---------------------------------------------------------------------- */

/* fsync, fdatasync of a watched file or directory */
static void do_sync(const sup_call *c, int nr)
{
	sup_record_sync(c, nr == __NR_fdatasync);
}

void sup_record_sync(const sup_call *c, int datasync)
{
	int nr = datasync ? __NR_fdatasync : __NR_fsync;
	char abs[PATH_MAX];
	int fd = (int)c->a[0], dfd, killed, rc, file;
	faultsim_op op = nr == __NR_fsync ? FAULTSIM_OP_FSYNC
	                                  : FAULTSIM_OP_FDATASYNC;
	struct stat st;

	if (!sup_watched_fd(c, fd, abs, &dfd))
		return;
	/* one fstat says what it is: the cache's, for a regular file */
	st.st_mode = 0;
	file = faultsim_cache_track_stat(c->r->cache, dfd, abs, &st);
	if (st.st_mode == 0 && fstat(dfd, &st) != 0)
		st.st_mode = 0;
	if (S_ISDIR(st.st_mode)) {
		rc = fault(c, FAULTSIM_OP_FSYNC_DIR, 1, &killed);
		if (killed)
			goto out_close;
		int crash = rc == FAULTSIM_CRASH;
		uint64_t mark = faultsim_cache_dir_sync_begin(c->r->cache);
		if (rc == 0 || crash)
			rc = (nr == __NR_fsync ? fsync(dfd) : fdatasync(dfd)) == 0
			     ? 0 : -errno;
		faultsim_cache_dir_sync_end(c->r->cache, abs, mark, rc);
		ring(c, SHIM_OP_DIR_FSYNC, -1, abs, NULL, 0, 0, rc, 0);
		if (crash && rc == 0)
			rc = FAULTSIM_CRASH;
	} else if (S_ISREG(st.st_mode)) {
		if (file < 0 && settle_full(c, file))
			file = faultsim_cache_track_stat(c->r->cache, dfd, abs,
			                                 &st);
		if (file < 0) {
			record_failed(c, file, "fsync", abs);
			goto out_close;
		}
		rc = fault(c, op, 1, &killed);
		if (killed)
			goto out_close;
		uint64_t mark = faultsim_cache_sync_begin(c->r->cache);
		if (rc == 0 || rc == FAULTSIM_CRASH) {
			int crash = rc == FAULTSIM_CRASH;
			rc = (nr == __NR_fsync ? fsync(dfd) : fdatasync(dfd)) == 0
			     ? 0 : -errno;
			if (crash && rc == 0)
				rc = FAULTSIM_CRASH;
		}
		/* the simulator may write the file back (a failed sync
		 * under btrfs): a change the record explains */
		if (faultsim_cache_sync_end(c->r->cache, file, mark,
		                            rc == FAULTSIM_CRASH ? 0 : rc,
		                            c->r->profile))
			seen(c, dfd);
		ring(c, nr == __NR_fsync ? SHIM_OP_FSYNC : SHIM_OP_FDATASYNC,
		     file, abs, NULL, 0, 0, rc == FAULTSIM_CRASH ? 0 : rc, 0);
	} else {
		sup_continue(c->g, c->req->id);
		goto out_close;
	}
	if (rc == FAULTSIM_CRASH)
		kill(c->tid, SIGKILL);
	else
		sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
out_close:
	close(dfd);
}

/* sync(2), syncfs(2): every file and directory */
static void do_sync_all(const sup_call *c, int nr)
{
	int dfd = -1, rc;

	if (nr == __NR_syncfs && (dfd = sup_take_fd(c, (int)c->a[0])) < 0) {
		sup_answer(c->g, c->req->id, EBADF, 0);
		return;
	}
	struct stat a, b;
	if (dfd >= 0 && (fstat(dfd, &a) != 0 || stat(c->r->dir, &b) != 0 ||
	                 a.st_dev != b.st_dev)) {
		close(dfd); /* another file system: nothing watched is synced */
		sup_continue(c->g, c->req->id);
		return;
	}
	/* a crash point, as the shim's sync and syncfs are: --enumerate
	 * cuts between the writes before it and the sync */
	if (faultsim_faults_step_due(c->r->faults)) {
		if (dfd >= 0)
			close(dfd);
		crash_point(c);
		return;
	}
	uint64_t mark = faultsim_cache_sync_begin(c->r->cache);
	if (dfd >= 0) {
		rc = syncfs(dfd) == 0 ? 0 : -errno;
		close(dfd);
	} else {
		sync();
		rc = 0;
	}
	if (rc == 0)
		settle_all(c->r, mark);
	ring(c, SHIM_OP_SYNC_ALL, -1, c->r->dir, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* ---- size changes ----------------------------------------------------------------- */

/* A truncate of DFD (a watched regular file at ABS) to LEN: recorded and
 * made.  0 or a negative errno; *REFUSED when the run was refused. */
static int truncate_fd(const sup_call *c, int dfd, const char *abs, uint64_t len,
                       int *refused)
{
	faultsim_ticket t = { 0 };
	struct stat st;
	int file, rc;

	*refused = 0;
	st.st_mode = 0;
	RECORD(c, file, "truncate", abs, faultsim_cache_track_stat(
	       c->r->cache, dfd, abs, &st));
	if (file < 0) {
		*refused = 1;
		return file;
	}
	RECORD(c, rc, "truncate", abs, faultsim_cache_truncate_begin(
	       c->r->cache, file, dfd, len, &t));
	if (rc < 0) {
		*refused = 1;
		return rc;
	}
	rc = ftruncate(dfd, (off_t)len) == 0 ? 0 : -errno;
	seen(c, dfd);
	faultsim_cache_change_end(&t, rc);
	ring(c, SHIM_OP_TRUNCATE, file, abs, NULL, len, 0, rc, 0);
	return rc;
}

/* truncate(path), ftruncate(fd) */
static void do_truncate(const sup_call *c, int by_path)
{
	char abs[PATH_MAX], path[PATH_MAX];
	int dfd, killed, refused, rc;
	struct stat st;

	if (by_path) {
		if ((rc = sup_peek_path(c, c->a[0], path)) < 0 ||
		    (rc = sup_resolve(c, AT_FDCWD, path, abs)) != 0 ||
		    !sup_watched(c->r, abs)) {
			sup_continue(c->g, c->req->id);
			return;
		}
		/* the caller must be allowed to write it; the harness opens
		 * it to read and write (the pre-image) */
		sup_creds k;
		if (creds_for(c, &k) < 0)
			return;
		AS_CALLER(k, rc, faccessat(AT_FDCWD, abs, W_OK, AT_EACCESS) == 0
		                 ? 0 : -errno);
		if (rc < 0 && rc != -ENOENT) {
			sup_answer(c->g, c->req->id, -rc, 0);
			return;
		}
		dfd = open(abs, O_RDWR | O_CLOEXEC);
		if (dfd < 0) {
			sup_continue(c->g, c->req->id); /* the same error there */
			return;
		}
	} else if (!sup_watched_fd(c, (int)c->a[0], abs, &dfd)) {
		return;
	}
	if (fstat(dfd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (int64_t)c->a[1] < 0) {
		sup_continue(c->g, c->req->id);
		goto out_close;
	}
	rc = fault(c, FAULTSIM_OP_FTRUNCATE, 1, &killed);
	if (killed)
		goto out_close;
	if (rc < 0) {
		sup_answer(c->g, c->req->id, -rc, 0);
		goto out_close;
	}
	int rfd = by_path ? dfd : readable_fd(c, dfd, fcntl(dfd, F_GETFL), abs);
	if (rfd < 0)
		goto out_close;
	rc = truncate_fd(c, rfd, abs, c->a[1], &refused);
	if (rfd != dfd)
		close(rfd);
	if (!refused)
		sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
out_close:
	close(dfd);
}

/* fallocate(fd, mode, off, len) */
static void do_fallocate(const sup_call *c)
{
	char abs[PATH_MAX];
	int fd = (int)c->a[0], mode = (int)c->a[1], dfd, file, killed, rc;
	uint64_t off = c->a[2], len = c->a[3];
	faultsim_ticket t = { 0 };
	struct stat st;

	if (!sup_watched_fd(c, fd, abs, &dfd))
		return;
	st.st_mode = 0;
	file = faultsim_cache_track_stat(c->r->cache, dfd, abs, &st);
	if (!S_ISREG(st.st_mode) || (int64_t)off < 0 || (int64_t)len <= 0) {
		sup_continue(c->g, c->req->id);
		goto out_close;
	}
	if (file < 0 && settle_full(c, file))
		file = faultsim_cache_track_stat(c->r->cache, dfd, abs, &st);
	if (file < 0) {
		record_failed(c, file, "fallocate", abs);
		goto out_close;
	}
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
	             FALLOC_FL_ZERO_RANGE)) {
		sup_refuse(c->g, c->req, "fallocate(%#x) on %s: collapsing or "
		           "inserting ranges is not modelled", (unsigned)mode,
		           sup_relative(c->r, abs));
		goto out_close;
	}
	rc = fault(c, FAULTSIM_OP_FALLOCATE, 1, &killed);
	if (killed)
		goto out_close;
	if (rc < 0) {
		sup_answer(c->g, c->req->id, -rc, 0);
		goto out_close;
	}
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		/* a zeroed range: recorded as a write of zeros */
		if ((mode & FALLOC_FL_KEEP_SIZE) && off + len > (uint64_t)st.st_size)
			len = off < (uint64_t)st.st_size ? (uint64_t)st.st_size - off
			                                : 0;
		if (len > ZERO_MAX) {
			sup_refuse(c->g, c->req, "fallocate(%#x) of %" PRIu64
			           " bytes on %s: a zeroed range is recorded as a "
			           "write of zeros, at most %u bytes", (unsigned)mode,
			           len, sup_relative(c->r, abs), ZERO_MAX);
			goto out_close;
		}
		unsigned char *zeros = calloc(1, len ? len : 1);
		if (!zeros) {
			sup_answer(c->g, c->req->id, ENOMEM, 0);
			goto out_close;
		}
		int rfd = readable_fd(c, dfd, fcntl(dfd, F_GETFL), abs);
		if (rfd < 0) {
			free(zeros);
			goto out_close;
		}
		RECORD(c, rc, "fallocate", abs, faultsim_cache_write_begin(
		       c->r->cache, file, rfd, zeros, len, off, &t));
		if (rfd != dfd)
			close(rfd);
		free(zeros);
		if (rc < 0)
			goto out_close;
		rc = fallocate(dfd, mode, (off_t)off, (off_t)c->a[3]) == 0 ? 0
		                                                         : -errno;
		seen(c, dfd);
		faultsim_cache_write_end(&t, rc == 0 ? (ssize_t)len : rc);
	} else if (mode & FALLOC_FL_KEEP_SIZE) {
		/* blocks only: nothing a reader or a crash can tell apart */
		rc = fallocate(dfd, mode, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
		seen(c, dfd);
	} else {
		RECORD(c, rc, "fallocate", abs, faultsim_cache_extend_begin(
		       c->r->cache, file, dfd, off, len, &t));
		if (rc < 0)
			goto out_close;
		rc = fallocate(dfd, mode, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
		seen(c, dfd);
		faultsim_cache_change_end(&t, rc);
	}
	ring(c, SHIM_OP_ALLOCATE, file, abs, NULL, off, len, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
out_close:
	close(dfd);
}

/* ---- opens ------------------------------------------------------------------------ */

/* open, creat, openat, openat2 below the watched directory: one that
 * creates or truncates is made here and its descriptor placed in the
 * caller; any other continues. */
static void do_open(const sup_call *c, int nr)
{
	char path[PATH_MAX], abs[PATH_MAX];
	int dirfd = AT_FDCWD, flags, rc, killed, fd = -1, refused;
	uint64_t pathp, mode;
	faultsim_ticket t = { 0 };
	struct stat st;

	switch (nr) {
#ifdef __NR_open
	case __NR_open:
		pathp = c->a[0], flags = (int)c->a[1], mode = c->a[2];
		break;
	case __NR_creat:
		pathp = c->a[0], flags = O_CREAT | O_WRONLY | O_TRUNC;
		mode = c->a[1];
		break;
#endif
	case __NR_openat2: {
		struct open_how how;
		if (c->a[3] < sizeof how || sup_peek(c, c->a[2], &how, sizeof how)) {
			sup_continue(c->g, c->req->id);
			return;
		}
		dirfd = (int)c->a[0], pathp = c->a[1];
		flags = (int)how.flags, mode = how.mode;
		if (how.resolve && sup_peek_path(c, pathp, path) == 0 &&
		    sup_resolve(c, dirfd, path, abs) == 0 && sup_watched(c->r, abs)) {
			sup_refuse(c->g, c->req, "openat2(%s) with RESOLVE_* "
			           "flags %#llx: not modelled", sup_relative(c->r, abs),
			           (unsigned long long)how.resolve);
			return;
		}
		break;
	}
	default:
		dirfd = (int)c->a[0], pathp = c->a[1];
		flags = (int)c->a[2], mode = c->a[3];
	}
	if (sup_peek_path(c, pathp, path) < 0 || sup_resolve(c, dirfd, path, abs) != 0 ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	int writable = (flags & O_ACCMODE) != O_RDONLY;
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		sup_refuse(c->g, c->req, "open(%s, O_TMPFILE): unnamed files are "
		           "not modelled", sup_relative(c->r, abs));
		return;
	}
	int exists = lstat(abs, &st) == 0;
	if (exists && S_ISLNK(st.st_mode) && !(flags & O_NOFOLLOW)) {
		/* the open acts on what the link names */
		char target[PATH_MAX];
		if (!realpath(abs, target) || !sup_watched(c->r, target)) {
			sup_continue(c->g, c->req->id);
			return;
		}
		snprintf(abs, sizeof abs, "%s", target);
		exists = lstat(abs, &st) == 0;
	}
	int creates = (flags & O_CREAT) && !exists;
	/* Linux truncates even on an O_RDONLY open that names O_TRUNC */
	int truncates = exists && (flags & O_TRUNC) && S_ISREG(st.st_mode);
	/* a crash point, and --fail's open faults, at every open for
	 * writing or creating, as under the shim: also one that changes
	 * nothing (a file that exists, no O_TRUNC) */
	if (writable || (flags & O_CREAT)) {
		rc = fault(c, FAULTSIM_OP_OPEN, 1, &killed);
		if (killed)
			return;
		if (rc < 0) {
			sup_answer(c->g, c->req->id, -rc, 0);
			return;
		}
	}
	if (!creates && !truncates) {
		sup_continue(c->g, c->req->id); /* nothing changes */
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	if (creates) {
		RECORD(c, rc, "open", abs,
		       faultsim_cache_create_begin(c->r->cache, abs, &t));
		if (rc < 0)
			return;
		name_touch(c, abs);
	}
	/* made here with the caller's identity, without O_TRUNC (a
	 * recorded truncate follows, which the caller must be allowed to
	 * make); the caller's umask, not the harness's, shapes the mode */
	if ((fd = sup_wear(&k)) == 0) {
		fd = open(abs, (flags & ~(O_TRUNC | O_NOCTTY)) | O_CLOEXEC,
		          (mode_t)mode);
		if (fd < 0) {
			fd = -errno;
		} else if (truncates &&
		           faccessat(AT_FDCWD, abs, W_OK, AT_EACCESS) != 0) {
			int e = errno;
			close(fd);
			fd = -e;
		}
		sup_as_harness(&k);
	}
	int err = fd < 0 ? -fd : 0;
	if (creates) {
		if (fd >= 0) {
			fchmod(fd, (mode_t)mode & 07777 & ~k.umask);
			seen_created(c, fd);
		}
		faultsim_cache_namespace_end(&t, fd < 0 ? -err : 0);
		ring(c, SHIM_OP_CREATE, -1, abs, NULL, 0, 0, fd < 0 ? -err : 0,
		     0);
	}
	if (fd < 0) {
		sup_answer(c->g, c->req->id, err, 0);
		return;
	}
	if (truncates) {
		/* the caller's descriptor may be write-only: truncate through
		 * one that can also read the pre-image */
		int rw = open(abs, O_RDWR | O_CLOEXEC);
		rc = truncate_fd(c, rw >= 0 ? rw : fd, abs, 0, &refused);
		if (rw >= 0)
			close(rw);
		if (refused || rc < 0) {
			if (!refused)
				sup_answer(c->g, c->req->id, -rc, 0);
			close(fd);
			return;
		}
	} else if (S_ISREG(st.st_mode) || creates) {
		seen(c, fd);
	}
	struct seccomp_notif_addfd add = {
		.id = c->req->id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)fd,
		.newfd = 0,
		.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0,
	};
	c->g->calls++;
	if (ioctl(c->g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 &&
	    errno != ENOENT)
		sup_refuse(c->g, c->req, "open(%s): the descriptor could not be "
		           "placed in the program: %s", sup_relative(c->r, abs),
		           strerror(errno));
	close(fd);
}

/* ---- names -------------------------------------------------------------------------- */

/* rename, renameat, renameat2 */
static void do_rename(const sup_call *c, int nr)
{
	char from[PATH_MAX], to[PATH_MAX], afrom[PATH_MAX], ato[PATH_MAX];
	int odir = AT_FDCWD, ndir = AT_FDCWD, killed, rc;
	uint64_t pf, pt;
	unsigned flags = 0;
	faultsim_ticket t = { 0 };
	struct stat st;

#ifdef __NR_rename
	if (nr == __NR_rename) {
		pf = c->a[0], pt = c->a[1];
	} else
#endif
	{
		odir = (int)c->a[0], pf = c->a[1], ndir = (int)c->a[2];
		pt = c->a[3];
		if (nr == __NR_renameat2)
			flags = (unsigned)c->a[4];
	}
	if (sup_peek_path(c, pf, from) < 0 || sup_peek_path(c, pt, to) < 0 ||
	    sup_resolve(c, odir, from, afrom) != 0 || sup_resolve(c, ndir, to, ato) != 0) {
		sup_continue(c->g, c->req->id);
		return;
	}
	int wf = sup_watched(c->r, afrom), wt = sup_watched(c->r, ato);
	if (!wf && !wt) {
		sup_continue(c->g, c->req->id);
		return;
	}
	if (wf != wt) {
		sup_refuse(c->g, c->req, "rename %s -> %s crosses the watched "
		           "directory's edge", sup_relative(c->r, afrom),
		           sup_relative(c->r, ato));
		return;
	}
	if (flags & RENAME_EXCHANGE) {
		sup_refuse(c->g, c->req, "renameat2(RENAME_EXCHANGE) %s, %s is "
		           "not modelled", sup_relative(c->r, afrom),
		           sup_relative(c->r, ato));
		return;
	}
	if (lstat(afrom, &st) == 0 && S_ISDIR(st.st_mode)) {
		sup_refuse(c->g, c->req, "rename of directory %s is not modelled",
		           sup_relative(c->r, afrom));
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	rc = fault(c, FAULTSIM_OP_RENAME, 1, &killed);
	if (killed)
		return;
	if (rc < 0) {
		sup_answer(c->g, c->req->id, -rc, 0);
		return;
	}
	name_touch(c, afrom);
	name_touch(c, ato);
	faultsim_cache_names_changed(c->r->cache);
	sup_fds_forget(c->g);
	RECORD(c, rc, "rename", afrom,
	       faultsim_cache_rename_begin(c->r->cache, afrom, ato, &t));
	if (rc < 0)
		return;
	AS_CALLER(k, rc, renameat2(AT_FDCWD, afrom, AT_FDCWD, ato, flags) == 0
	                 ? 0 : -errno);
	faultsim_cache_namespace_end(&t, rc);
	ring(c, SHIM_OP_RENAME, -1, afrom, ato, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* unlink, unlinkat, rmdir */
static void do_unlink(const sup_call *c, int nr)
{
	char path[PATH_MAX], abs[PATH_MAX];
	int dirfd = AT_FDCWD, flags = 0, killed, rc;
	uint64_t pp = c->a[0];
	faultsim_ticket t = { 0 };
	struct stat st;

	if (nr == __NR_unlinkat) {
		dirfd = (int)c->a[0], pp = c->a[1], flags = (int)c->a[2];
#ifdef __NR_rmdir
	} else if (nr == __NR_rmdir) {
		flags = AT_REMOVEDIR;
#endif
	}
	int rr = sup_peek_path(c, pp, path) < 0 ? -EFAULT
	                                    : sup_resolve(c, dirfd, path, abs);
	if (rr < 0 || (rr == 1 && !(flags & AT_REMOVEDIR)) ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	faultsim_cache_names_changed(c->r->cache);
	sup_fds_forget(c->g);
	name_touch(c, abs);
	int there = lstat(abs, &st) == 0;
	if ((flags & AT_REMOVEDIR) || (there && S_ISDIR(st.st_mode))) {
		AS_CALLER(k, rc, unlinkat(AT_FDCWD, abs, flags) == 0 ? 0 : -errno);
		ring(c, SHIM_OP_RMDIR, -1, abs, NULL, 0, 0, rc, 0);
		sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
		return;
	}
	rc = fault(c, FAULTSIM_OP_UNLINK, 1, &killed);
	if (killed)
		return;
	if (rc < 0) {
		sup_answer(c->g, c->req->id, -rc, 0);
		return;
	}
	RECORD(c, rc, "unlink", abs, there ?
	       faultsim_cache_unlink_begin_ino(c->r->cache, abs,
	                                       (uint64_t)st.st_ino, &t) :
	       faultsim_cache_unlink_begin(c->r->cache, abs, &t));
	if (rc < 0)
		return;
	AS_CALLER(k, rc, unlinkat(AT_FDCWD, abs, 0) == 0 ? 0 : -errno);
	faultsim_cache_namespace_end(&t, rc);
	ring(c, SHIM_OP_UNLINK, -1, abs, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* link, linkat: a new name, recorded as a create of it */
static void do_link(const sup_call *c, int nr)
{
	char from[PATH_MAX], to[PATH_MAX], afrom[PATH_MAX], ato[PATH_MAX];
	int odir = AT_FDCWD, ndir = AT_FDCWD, flags = 0, rc;
	uint64_t pf = c->a[0], pt = c->a[1];
	faultsim_ticket t = { 0 };

	if (nr == __NR_linkat) {
		odir = (int)c->a[0], pf = c->a[1], ndir = (int)c->a[2];
		pt = c->a[3], flags = (int)c->a[4];
	}
	if (sup_peek_path(c, pt, to) < 0 || sup_resolve(c, ndir, to, ato) != 0 ||
	    !sup_watched(c->r, ato)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	if ((flags & AT_EMPTY_PATH) || sup_peek_path(c, pf, from) < 0 ||
	    sup_resolve(c, odir, from, afrom) != 0) {
		sup_refuse(c->g, c->req, "link to %s from a descriptor or an "
		           "unreadable name is not modelled", sup_relative(c->r, ato));
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	name_touch(c, ato);
	RECORD(c, rc, "link", ato,
	       faultsim_cache_create_begin(c->r->cache, ato, &t));
	if (rc < 0)
		return;
	AS_CALLER(k, rc, linkat(AT_FDCWD, afrom, AT_FDCWD, ato,
	                        flags & AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno);
	faultsim_cache_namespace_end(&t, rc);
	ring(c, SHIM_OP_LINK, -1, ato, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* mkdir, mkdirat: made here (a crash never undoes it, as in the shim) */
static void do_mkdir(const sup_call *c, int nr)
{
	char path[PATH_MAX], abs[PATH_MAX];
	int dirfd = AT_FDCWD, rc;
	uint64_t pp = c->a[0], mode = c->a[1];

	if (nr == __NR_mkdirat)
		dirfd = (int)c->a[0], pp = c->a[1], mode = c->a[2];
	if (sup_peek_path(c, pp, path) < 0 || sup_resolve(c, dirfd, path, abs) < 0 ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	name_touch(c, abs);
	faultsim_cache_names_changed(c->r->cache);
	sup_fds_forget(c->g);
	/* made with the caller's identity and the harness's umask, then
	 * given the caller's umask */
	AS_CALLER(k, rc, mkdir(abs, (mode_t)mode & 07777) == 0 ? 0 : -errno);
	if (rc == 0)
		chmod(abs, (mode_t)mode & 07777 & ~k.umask);
	ring(c, SHIM_OP_MKDIR, -1, abs, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* symlink, symlinkat: made here and listed, as a directory is (a crash
 * never undoes it, as in the shim); mknod, mknodat: refused below the
 * directory (a special file, or a regular one made without an open) */
static void do_special(const sup_call *c, int nr, const char *what)
{
	char path[PATH_MAX], abs[PATH_MAX], target[PATH_MAX];
	int dirfd = AT_FDCWD, symlink = nr != __NR_mknodat, rc;
	uint64_t pp = c->a[0];

#ifdef __NR_mknod
	if (nr == __NR_mknod)
		symlink = 0;
#endif
	if (nr == __NR_symlinkat)
		dirfd = (int)c->a[1], pp = c->a[2];
#ifdef __NR_symlink
	else if (nr == __NR_symlink)
		pp = c->a[1];
#endif
	else if (nr == __NR_mknodat)
		dirfd = (int)c->a[0], pp = c->a[1];
	if (sup_peek_path(c, pp, path) < 0 || sup_resolve(c, dirfd, path, abs) != 0 ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	if (!symlink) {
		sup_refuse(c->g, c->req, "%s %s: not modelled", what,
		           sup_relative(c->r, abs));
		return;
	}
	if (sup_peek_path(c, c->a[0], target) < 0) {
		sup_answer(c->g, c->req->id, EFAULT, 0);
		return;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		return;
	name_touch(c, abs);
	faultsim_cache_names_changed(c->r->cache);
	sup_fds_forget(c->g);
	AS_CALLER(k, rc, symlinkat(target, AT_FDCWD, abs) == 0 ? 0 : -errno);
	ring(c, SHIM_OP_SYMLINK, -1, abs, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
}

/* utimensat(dirfd, path, times, flags) below the directory: made here and
 * entered as a change of the file (this life's table), so the check after
 * the life does not take the new mtime for an unseen write */
static void do_times(const sup_call *c)
{
	char path[PATH_MAX], abs[PATH_MAX];
	struct timespec t[2];
	int flags = (int)c->a[3], rc, dfd = -1;
	struct stat st;

	if (c->a[1] == 0) {
		/* futimens: the descriptor itself */
		if (!sup_watched_fd(c, (int)c->a[0], abs, &dfd))
			return;
	} else if (sup_peek_path(c, c->a[1], path) < 0 ||
	           sup_resolve(c, (int)c->a[0], path, abs) != 0 ||
	           !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	if (c->a[2] && sup_peek(c, c->a[2], t, sizeof t) < 0) {
		sup_answer(c->g, c->req->id, EFAULT, 0);
		goto out_close;
	}
	sup_creds k;
	if (creds_for(c, &k) < 0)
		goto out_close;
	AS_CALLER(k, rc, (dfd >= 0 ? futimens(dfd, c->a[2] ? t : NULL)
	                  : utimensat(AT_FDCWD, abs, c->a[2] ? t : NULL,
	                              flags & AT_SYMLINK_NOFOLLOW)) == 0
	                 ? 0 : -errno);
	if (rc == 0 && (dfd >= 0 ? fstat(dfd, &st) : lstat(abs, &st)) == 0 &&
	    S_ISREG(st.st_mode)) {
		shim_seen *e = shim_seen_slot(c->r->ctl, shim_seen_key(
		                              (uint64_t)st.st_dev,
		                              (uint64_t)st.st_ino));
		uint64_t ns = shim_now_ns(), m = shim_mtime_ns(&st);
		if (e)
			shim_seen_stamp(e, m > ns ? m : ns);
		__atomic_add_fetch(&c->r->ctl->changes, 1, __ATOMIC_RELAXED);
	}
	ring(c, SHIM_OP_TIMES, -1, abs, NULL, 0, 0, rc, 0);
	sup_answer(c->g, c->req->id, rc < 0 ? -rc : 0, 0);
out_close:
	if (dfd >= 0)
		close(dfd);
}

/* ---- what cannot be followed ----------------------------------------------------- */

/* mmap (the filter sends only shared writable ones), copy_file_range,
 * sendfile, splice: refused when they reach a watched file */
static void do_refuse_fd(const sup_call *c, int fd, const char *what)
{
	char abs[PATH_MAX];

	if (fd < 0 || sup_fd_name(c, fd, abs) < 0 || abs[0] != '/' ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return;
	}
	sup_refuse(c->g, c->req, "%s of %s: %s", what, sup_relative(c->r, abs),
	           strncmp(what, "mmap", 4) == 0
	           ? "stores through a shared mapping make no system call the "
	             "supervisor sees (the shim follows them: a dynamically "
	             "linked program that is not Go)"
	           : "copies into a watched file are not modelled by the "
	             "supervisor");
}

/* mmap(addr, len, prot, flags, fd, off), shared and writable: refused on
 * a watched file, but for MAP_SYNC the kernel answers first -- off DAX it
 * refuses the mapping (EOPNOTSUPP) and the program falls back to plain
 * writes (MariaDB's redo log does): the same mapping is tried here,
 * without PROT_WRITE, and its error passed on. */
static void do_mmap(const sup_call *c)
{
	char abs[PATH_MAX];
	int dfd, flags = (int)c->a[3];

	if (!(flags & MAP_SYNC)) {
		do_refuse_fd(c, (int)c->a[4], "mmap(PROT_WRITE, MAP_SHARED)");
		return;
	}
	if (!sup_watched_fd(c, (int)c->a[4], abs, &dfd))
		return;
	void *p = mmap(NULL, (size_t)c->a[1], PROT_READ, flags, dfd,
	               (off_t)c->a[5]);
	if (p == MAP_FAILED) {
		sup_answer(c->g, c->req->id, errno, 0);
	} else {
		munmap(p, (size_t)c->a[1]);
		sup_refuse(c->g, c->req, "mmap(MAP_SYNC) of %s: stores that "
		           "reach the device without a sync are not modelled",
		           sup_relative(c->r, abs));
	}
	close(dfd);
}

/* ---- one notification -------------------------------------------------------------- */

void sup_record_serve(sup_guard *g, const struct seccomp_notif *req)
{
	sup_call c = { g, g->rec, req, (int)req->pid, { 0 } };
	int nr = req->data.nr;

	memcpy(c.a, req->data.args, sizeof c.a);
	if (req->data.arch != ARCH_NATIVE_RECORD || (nr & 0x40000000)) {
		sup_refuse(g, req, "a system call of another architecture (a "
		           "32-bit program): the supervisor knows only this "
		           "machine's calls");
		return;
	}
	switch (nr) {
	case __NR_write:
		if (g->rec->proto_fd >= 0 && (int)c.a[0] == g->rec->proto_fd) {
			char name[PATH_MAX];
			/* the number may name something else in a process
			 * that closed and reused it */
			if (sup_fd_name(&c, (int)c.a[0], name) == 0 &&
			    strncmp(name, "pipe:", 5) == 0) {
				protocol(&c);
				return;
			}
		}
		/* fall through */
	case __NR_pwrite64: case __NR_writev: case __NR_pwritev:
	case __NR_pwritev2:
		do_write(&c, nr);
		return;
	case __NR_fsync: case __NR_fdatasync:
		do_sync(&c, nr);
		return;
	case __NR_sync: case __NR_syncfs:
		do_sync_all(&c, nr);
		return;
	case __NR_truncate:
		do_truncate(&c, 1);
		return;
	case __NR_ftruncate:
		do_truncate(&c, 0);
		return;
	case __NR_fallocate:
		do_fallocate(&c);
		return;
	case __NR_openat: case __NR_openat2:
#ifdef __NR_open
	case __NR_open: case __NR_creat:
#endif
		do_open(&c, nr);
		return;
	case __NR_renameat: case __NR_renameat2:
#ifdef __NR_rename
	case __NR_rename:
#endif
		do_rename(&c, nr);
		return;
	case __NR_unlinkat:
#ifdef __NR_unlink
	case __NR_unlink: case __NR_rmdir:
#endif
		do_unlink(&c, nr);
		return;
	case __NR_linkat:
#ifdef __NR_link
	case __NR_link:
#endif
		do_link(&c, nr);
		return;
	case __NR_mkdirat:
#ifdef __NR_mkdir
	case __NR_mkdir:
#endif
		do_mkdir(&c, nr);
		return;
	case __NR_symlinkat:
#ifdef __NR_symlink
	case __NR_symlink:
#endif
		do_special(&c, nr, "symlink");
		return;
	case __NR_mknodat:
#ifdef __NR_mknod
	case __NR_mknod:
#endif
		do_special(&c, nr, "mknod");
		return;
	case __NR_utimensat:
		do_times(&c);
		return;
	case __NR_mmap:
		do_mmap(&c);
		return;
	case __NR_copy_file_range:
		do_copy(&c, nr);
		return;
	case __NR_io_uring_enter:
		sup_uring_enter(&c);
		return;
	case __NR_io_uring_register:
		sup_uring_register(&c);
		return;
	case __NR_splice:
		do_refuse_fd(&c, (int)c.a[2], "splice");
		return;
#ifdef __NR_sendfile
	case __NR_sendfile:
		do_copy(&c, nr);
		return;
#endif
	default:
		sup_continue(g, req->id);
	}
}
