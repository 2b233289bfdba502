/*
 * unseen.c -- a workload that writes where the shim's wrappers cannot see,
 * for the soundness floor (shim.h, shim_tree_check) and the seccomp guard
 * (supervisor/supervisor.h):
 *
 *     unseen DIR MODE [N]    (the workload: N puts, default a million)
 *     unseen DIR --check     (its checker)
 *
 * DIR/data holds one 32-byte record, "data vNNN" padded with spaces, made
 * durable first through the wrappers (write, fsync, fsync of DIR).  Each
 * put overwrites the record in place -- the file's size never changes, so
 * the shim's own size check cannot notice a write it missed -- and then
 * acknowledges it.  MODE says how the record is written:
 *
 *   safe      pwrite + fdatasync: the kit sees both; it must pass
 *   unsafe    pwrite, never a sync: seen, and lost at a power cut
 *   syscall   syscall(SYS_pwrite64, ...), no sync: the shim passes
 *             syscall(2) straight through, recording nothing
 *   asm       a syscall instruction of its own, no sync
 *   uring     IORING_OP_WRITE through liburing, no sync
 *   uring-sync     the record's first 4 bytes with write(2), the rest
 *             through liburing: IORING_OP_WRITEV at the descriptor's
 *             position (offset -1), then
 *             IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, each submitted
 *             and waited for, and the record read back (IORING_OP_READ)
 *             and compared; a thread of its own waits for every
 *             completion (io_uring_wait_cqe), as MariaDB's does: under
 *             the supervisor it holds, under the shim it is refused
 *   uring-link     one submission: IORING_OP_WRITE linked (IOSQE_IO_LINK)
 *             to an IORING_OP_FSYNC, both completions waited for: holds
 *             under the supervisor
 *   uring-nosync   as uring-sync without the FSYNC: lost at a power cut
 *   uring-sqpoll   uring on a ring set up with IORING_SETUP_SQPOLL (a
 *             kernel thread takes the submissions): refused
 *   uring-pipe     uring-link, each acknowledgement written to the
 *             protocol's pipe through the ring too (a write the supervisor
 *             does not record, made only if it need not wait): holds
 *   uring-open     an IORING_OP_OPENAT submitted: refused by name
 *   uring-hostile  uring-link, each put after two submissions of
 *             garbage, entered with to_submit 4294967295 and the ring's
 *             tail a billion entries ahead: first every index out of
 *             range (Linux 6.1 consumes one, counts it dropped, submits
 *             nothing), then every entry a NOP whose completion is
 *             skipped (it takes a ring's worth, no more); then a write
 *             to no descriptor linked to an fsync (EBADF, then the
 *             fsync ECANCELED) -- a ring made elsewhere must do the
 *             same, bounded, and go on: it holds
 *   scm       the descriptor comes from a forked child over a socketpair,
 *             received with syscall(SYS_recvmsg) (no wrapper sees it);
 *             written with pwrite, no sync: the shim adopts the descriptor
 *             at its first write, so the loss is seen and judged
 *   scm-raw   the same descriptor written with syscall(SYS_pwrite64)
 *   scm-reuse as scm, but received with recvmsg (the wrapper) into the
 *             number of a descriptor on DIR/other that the shim saw opened
 *             and did not see closed (a raw close): the receipt must make
 *             the number name DIR/data, or its writes are recorded
 *             against the wrong file
 *   mixed     bytes 0-30 with syscall(SYS_pwrite64), then byte 31 with
 *             pwrite, no sync: a recorded change after an unseen one must
 *             not hide it
 *
 * and the modes that must pass (nothing unseen, nothing unsynced):
 *
 *   rename    no write at all: each put renames data to data.tmp and back
 *             and syncs the directory, acknowledging the value the record
 *             already holds (a file this life never wrote, renamed)
 *   symlink   safe, and a symbolic link ln.CYCLE.N made to data at each put
 *   touch     safe, and futimens(fd, NULL) after each fdatasync
 *   direct    the record at the head of a 4 KiB block, written through a
 *             descriptor opened with O_DIRECT, then fdatasync (the kit
 *             models direct I/O as the device's volatile cache: it holds)
 *   direct-dsync  the same block with O_DIRECT | O_DSYNC as two aligned
 *             2 KiB segments of one pwritev, never a sync (it holds)
 *   init      makes the record durable and exits (for --setup: then no
 *             life records a write of its own, and the shim's sample of
 *             the newest recorded write has nothing to compare)
 *
 * Two more that must pass, for the supervisor's own paths:
 *
 *   copy      the record written to a file in $TMPDIR (outside DIR), then
 *             copied into DIR/data with copy_file_range (every other put
 *             from the source's position, the others from an offset
 *             given), looping on a short count (--fail pwrite:short makes
 *             them), then fdatasync; when
 *             a count came back short it makes the file $UNSEEN_SHORTS
 *             (outside DIR), so a test can tell the fault reached it
 *   fallocate safe, with 8 fallocate(fd, 0, 0, 32) calls before each put
 *             (the file keeps its size): a front end that keeps a
 *             descriptor per call runs out of them under a low ulimit -n
 *   truncate  the same with 8 truncate(DIR/data, 32) calls (by path: the
 *             shim opens the file to truncate it through its descriptor)
 *   bytewise  safe, the record written one byte a call, then fdatasync:
 *             a front end that copies a call's buffer must copy a single
 *             byte too.  A kill between two bytes of a record written in
 *             place would leave a value nobody wrote (v159 -> v160 cut
 *             after its '6' reads v169), so the record goes, a byte a
 *             call, into the older of two slots after it, each with a
 *             sequence number and a hash (64 bytes: 20 digits, a space,
 *             the record, spaces, 8 hex digits of the FNV-1a of the 55
 *             bytes before them, '\n'); the checker
 *             reads the newest slot whose hash holds, else the record
 *
 * and direct-unsafe, the direct block never synced: a direct write waits
 * in the device's volatile cache like any other, and a power cut loses it.
 *
 * Every mode but safe, direct, direct-dsync, copy, fallocate, truncate and
 * bytewise loses acknowledged writes at a power cut; the kit must say so
 * (unsafe, scm, scm-reuse, direct-unsafe) or refuse the run (the rest),
 * never pass it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* copy_file_range, fallocate (musl-gcc has no -D) */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<liburing.h>) && defined(HAVE_LIBURING)
#include <liburing.h>
#include <pthread.h>
#define UNSEEN_URING 1
#endif

#define REC 32

static void die(const char *what)
{
	fprintf(stderr, "unseen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void say(int fd, const char *line)
{
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		die("protocol");
}

#ifdef UNSEEN_URING
/* uring-sync, uring-nosync: a thread waits for every completion and hands
 * each result to the submitter, which waits on a condition variable (the
 * wait is on a thread of its own, as MariaDB's io_uring_wait thread) */
static struct io_uring wring;
static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcv = PTHREAD_COND_INITIALIZER;
static int wres, wdone;

static void *waiter(void *arg)
{
	(void)arg;
	for (;;) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_wait_cqe(&wring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc < 0) {
			errno = -rc;
			die("io_uring_wait_cqe");
		}
		pthread_mutex_lock(&wmu);
		wres = cqe->res;
		wdone = 1;
		io_uring_cqe_seen(&wring, cqe);
		pthread_cond_signal(&wcv);
		pthread_mutex_unlock(&wmu);
	}
	return NULL;
}

/* the SQE prepared by PREP (on the ring's next entry) submitted, and its
 * result as the waiting thread saw it */
static int uring_one(void (*prep)(struct io_uring_sqe *, void *), void *arg)
{
	pthread_mutex_lock(&wmu);
	wdone = 0;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wring);
	if (!sqe)
		die("io_uring_get_sqe");
	prep(sqe, arg);
	if (io_uring_submit(&wring) != 1)
		die("io_uring_submit");
	while (!wdone)
		pthread_cond_wait(&wcv, &wmu);
	int rc = wres;
	pthread_mutex_unlock(&wmu);
	return rc;
}

/* uring-hostile: garbage submitted, then the ring put back as liburing
 * keeps it (its own copy of the tail is where its entries end) */
static void hostile(struct io_uring *ring)
{
	unsigned n = *ring->sq.kring_entries, drop = *ring->sq.kdropped;
	unsigned head = io_uring_smp_load_acquire(ring->sq.khead);

	for (unsigned k = 0; k < n; k++)
		ring->sq.array[k] = 0xffffffffu;
	io_uring_smp_store_release(ring->sq.ktail, head + 1000000000u);
	int got = (int)syscall(__NR_io_uring_enter, ring->ring_fd, 0xffffffffu,
	                       0, 0, NULL, 0);
	if (got != 0 || *ring->sq.kdropped != drop + 1)
		die("io_uring: a bad index not dropped");
	head = io_uring_smp_load_acquire(ring->sq.khead);
	for (unsigned k = 0; k < n; k++) {
		ring->sq.array[k] = k;
		io_uring_prep_nop(&ring->sq.sqes[k]);
		ring->sq.sqes[k].flags = IOSQE_CQE_SKIP_SUCCESS;
	}
	io_uring_smp_store_release(ring->sq.ktail, head + 1000000000u);
	got = (int)syscall(__NR_io_uring_enter, ring->ring_fd, 0xffffffffu, 0, 0,
	                   NULL, 0);
	if (got != (int)n)
		die("io_uring: more than a ring's worth taken");
	/* liburing's view: every entry it handed out was submitted */
	head = io_uring_smp_load_acquire(ring->sq.khead);
	io_uring_smp_store_release(ring->sq.ktail, head);
	ring->sq.sqe_head = ring->sq.sqe_tail = head;
	if (io_uring_cq_ready(ring) != 0)
		die("io_uring: a skipped completion posted");
	/* a failed entry cancels the rest of its chain: a write to no
	 * descriptor, linked to an fsync (EBADF, then ECANCELED) */
	struct io_uring_sqe *w = io_uring_get_sqe(ring);
	io_uring_prep_write(w, -1, "x", 1, 0);
	w->flags |= IOSQE_IO_LINK;
	io_uring_prep_fsync(io_uring_get_sqe(ring), 0, 0);
	if (io_uring_submit_and_wait(ring, 2) != 2)
		die("io_uring: a failing chain not submitted");
	for (int k = 0; k < 2; k++) {
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(ring, &cqe) != 0)
			die("io_uring: a failing chain's completion");
		if (cqe->res != (k == 0 ? -EBADF : -ECANCELED)) {
			errno = cqe->res < 0 ? -cqe->res : 0;
			die(k == 0 ? "io_uring: a write to no descriptor"
			           : "io_uring: the entry linked to a failure");
		}
		io_uring_cqe_seen(ring, cqe);
	}
}

struct uarg { int fd; struct iovec *iov; char *buf; };
/* at the descriptor's position (offset -1, IORING_FEAT_RW_CUR_POS) */
static void prep_writev(struct io_uring_sqe *sqe, void *a)
{
	struct uarg *u = a;
	io_uring_prep_writev(sqe, u->fd, u->iov, 2, (uint64_t)-1);
}
static void prep_fdatasync(struct io_uring_sqe *sqe, void *a)
{
	io_uring_prep_fsync(sqe, ((struct uarg *)a)->fd, IORING_FSYNC_DATASYNC);
}
static void prep_read(struct io_uring_sqe *sqe, void *a)
{
	struct uarg *u = a;
	io_uring_prep_read(sqe, u->fd, u->buf, REC, 0);
}
#endif

/* bytewise's slots (see above): SLOTS of SLOT bytes from SLOT0 */
#define SLOT 64
#define SLOT0 64
#define SLOTS 2
#define SLOT_HASH (SLOT - 9) /* the hash's 8 hex digits, of the bytes before */

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* Slot K of FD: its sequence number, and its record into REC (REC bytes),
 * or 0 when it is empty or its hash does not hold */
static unsigned long long slot_read(int fd, int k, char *rec)
{
	unsigned char s[SLOT + 1];
	char hex[9];
	unsigned long long seq;

	if (pread(fd, s, SLOT, SLOT0 + (off_t)k * SLOT) != SLOT)
		return 0;
	s[SLOT] = '\0';
	snprintf(hex, sizeof hex, "%08x", fnv1a(s, SLOT_HASH));
	if (memcmp(s + SLOT_HASH, hex, 8) != 0 || s[SLOT - 1] != '\n' ||
	    sscanf((char *)s, "%20llu", &seq) != 1)
		return 0;
	memcpy(rec, s + 21, REC);
	return seq;
}

/* The newest slot that holds: its index, or -1; *SEQ its number */
static int slot_newest(int fd, char *rec, unsigned long long *seq)
{
	char r[REC];
	int best = -1;

	*seq = 0;
	for (int k = 0; k < SLOTS; k++) {
		unsigned long long q = slot_read(fd, k, r);
		if (q > *seq) {
			*seq = q;
			best = k;
			memcpy(rec, r, REC);
		}
	}
	return best;
}

static int check(const char *dir)
{
	char path[4096], rec[REC + 1], key[16], val[REC];
	unsigned long long seq;
	int fd;

	snprintf(path, sizeof path, "%s/data", dir);
	if ((fd = open(path, O_RDONLY)) < 0)
		return errno == ENOENT ? 0 : 1;
	ssize_t n = pread(fd, rec, REC, 0);
	if (n == REC && slot_newest(fd, rec, &seq) < 0)
		n = pread(fd, rec, REC, 0);
	close(fd);
	if (n != REC)
		return 0; /* not made yet */
	rec[REC] = '\0';
	if (sscanf(rec, "%15s %31s", key, val) == 2 && strcmp(key, "data") == 0)
		printf("data %s\n", val);
	return 0;
}

/* The record made durable through the wrappers, once; in a workload (PROTO
 * a descriptor) as an operation of its own, so that a kill right after it
 * leaves a value the workload named. */
static int open_data(const char *dir, int proto)
{
	char path[4096], rec[REC];
	int fd, dfd;

	snprintf(path, sizeof path, "%s/data", dir);
	if ((fd = open(path, O_RDWR | O_CREAT, 0644)) < 0)
		die("open");
	if (lseek(fd, 0, SEEK_END) == REC)
		return fd;
	memset(rec, ' ', REC);
	memcpy(rec, "data v0", 7);
	rec[REC - 1] = '\n';
	if (proto >= 0)
		say(proto, "intent 0 data v0\n");
	if (pwrite(fd, rec, REC, 0) != REC || fsync(fd) != 0)
		die("first write");
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0 || fsync(dfd) != 0)
		die("fsync of the directory");
	close(dfd);
	if (proto >= 0)
		say(proto, "ack 0\n");
	return fd;
}

static long raw_pwrite(int fd, const void *buf, size_t n, long off)
{
#if defined(__x86_64__)
	long rc;
	register long r10 __asm__("r10") = off;
	__asm__ volatile("syscall"
	                 : "=a"(rc)
	                 : "0"((long)SYS_pwrite64), "D"((long)fd), "S"(buf),
	                   "d"(n), "r"(r10)
	                 : "rcx", "r11", "memory");
	return rc;
#else
	return syscall(SYS_pwrite64, fd, buf, n, off);
#endif
}

/* copy mode: REC bytes into FD at 0 through copy_file_range from a file
 * outside the watched directory, a short count (even 0) continued from
 * where it stopped, at most 64 calls; then fdatasync.  REC, or -1. */
static long copy_in(int fd, const char *rec)
{
	static int src = -1, told;
	const char *tmp = getenv("TMPDIR"), *mark = getenv("UNSEEN_SHORTS");
	loff_t so = 0, doff = 0;
	int shorts = 0;

	if (src < 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/unseen-copy.XXXXXX",
		         tmp ? tmp : "/tmp");
		if ((src = mkstemp(path)) < 0)
			die("mkstemp");
		unlink(path);
	}
	if (pwrite(src, rec, REC, 0) != REC)
		die("pwrite of the copy's source");
	/* every other put copies from the source's own position (no
	 * offset given); the others name the offset, with the position
	 * left elsewhere (7), so a front end that read from the position
	 * for them would copy the wrong bytes */
	static unsigned calls;
	int by_pos = calls++ % 2;
	if (lseek(src, by_pos ? 0 : 7, SEEK_SET) < 0)
		die("lseek of the copy's source");
	for (int k = 0; k < 64 && doff < REC; k++) {
		ssize_t want = REC - (ssize_t)doff;
		ssize_t n = copy_file_range(src, by_pos ? NULL : &so, fd,
		                            &doff, (size_t)want, 0);
		if (n < 0)
			die("copy_file_range");
		if (n < want)
			shorts++;
	}
	if (doff != REC)
		return -1;
	if (fdatasync(fd) != 0)
		die("fdatasync");
	if (shorts && mark && !told) {
		int m = open(mark, O_WRONLY | O_CREAT, 0644);
		if (m < 0)
			die("open of $UNSEEN_SHORTS");
		close(m);
		told = 1;
	}
	return REC;
}

/* close(2) through a syscall instruction of its own: no wrapper, nor
 * the shim's watch on syscall(3), sees it */
static long raw_close(int fd)
{
#if defined(__x86_64__)
	long rc;
	__asm__ volatile("syscall"
	                 : "=a"(rc)
	                 : "0"((long)SYS_close), "D"((long)fd)
	                 : "rcx", "r11", "memory");
	return rc;
#else
	return syscall(SYS_close, fd);
#endif
}

/* A descriptor on DIR/data that this process never opened: a child opens
 * it and sends it; it is received with a raw recvmsg. */
static int received_fd(const char *dir, int reuse)
{
	int sv[2], fd = -1, stale = -1;
	char cbuf[CMSG_SPACE(sizeof(int))], c = 0;
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	                    .msg_control = cbuf, .msg_controllen = sizeof cbuf };

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid == 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/data", dir);
		int f = open(path, O_RDWR);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &f, sizeof f);
		_exit(f < 0 || sendmsg(sv[1], &m, 0) != 1);
	}
	if (reuse) {
		/* opened through the wrapper, closed where no wrapper sees */
		char other[4096];
		snprintf(other, sizeof other, "%s/other", dir);
		if ((stale = open(other, O_RDWR | O_CREAT, 0644)) < 0)
			die("open of other");
		if (raw_close(stale) != 0)
			die("close");
		if (recvmsg(sv[0], &m, 0) != 1)
			die("recvmsg");
	} else if (syscall(SYS_recvmsg, sv[0], &m, 0) != 1) {
		die("recvmsg");
	}
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof fd);
	waitpid(pid, NULL, 0);
	close(sv[0]);
	close(sv[1]);
	if (fd < 0)
		die("no descriptor received");
	if (reuse && fd != stale) {
		fprintf(stderr, "unseen: received descriptor %d, not %d\n", fd,
		        stale);
		exit(2);
	}
	return fd;
}

int main(int argc, char **argv)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	char line[128], rec[REC + 1];
	int proto, fd;

	if (argc < 3) {
		fprintf(stderr, "usage: unseen DIR MODE | unseen DIR --check\n");
		return 2;
	}
	if (strcmp(argv[2], "--check") == 0)
		return check(argv[1]);
	proto = env ? atoi(env) : -1;
	if (!env && strcmp(argv[2], "init") != 0)
		return 2;
	const char *mode = argv[2];
	fd = open_data(argv[1], proto);
	if (strcmp(mode, "init") == 0)
		return 0;
#ifdef UNSEEN_URING
	struct io_uring ring;
	if ((strcmp(mode, "uring") == 0 || strcmp(mode, "uring-link") == 0 ||
	     strcmp(mode, "uring-hostile") == 0 ||
	     strcmp(mode, "uring-pipe") == 0 || strcmp(mode, "uring-open") == 0 ||
	     strcmp(mode, "uring-sqpoll") == 0) &&
	    io_uring_queue_init(4, &ring, strcmp(mode, "uring-sqpoll") ? 0
	                        : IORING_SETUP_SQPOLL) < 0) {
		/* the guard answers ENOSYS: the run is refused already */
		fprintf(stderr, "unseen: io_uring_queue_init failed\n");
		return 1;
	}
	if (strcmp(mode, "uring-sync") == 0 || strcmp(mode, "uring-nosync") == 0) {
		pthread_t t;
		if (io_uring_queue_init(4, &wring, 0) < 0) {
			fprintf(stderr, "unseen: io_uring_queue_init failed\n");
			return 1;
		}
		if (pthread_create(&t, NULL, waiter, NULL) != 0)
			die("pthread_create");
	}
#else
	if (strncmp(mode, "uring", 5) == 0) {
		fprintf(stderr, "unseen: built without liburing\n");
		return 2;
	}
#endif
	if (strncmp(mode, "scm", 3) == 0) {
		close(fd);
		fd = received_fd(argv[1], strcmp(mode, "scm-reuse") == 0);
	}
	unsigned char *block = NULL;
	if (strncmp(mode, "direct", 6) == 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/data", argv[1]);
		close(fd);
		fd = open(path, O_RDWR | O_DIRECT |
		          (strcmp(mode, "direct-dsync") ? 0 : O_DSYNC));
		if (fd < 0)
			die("open O_DIRECT");
		if (posix_memalign((void **)&block, 4096, 4096) != 0)
			die("posix_memalign");
		memset(block, '\n', 4096);
	}
	int puts = argc > 3 ? atoi(argv[3]) : 1000000;
	for (int i = 1; i <= puts; i++) {
		if (strcmp(mode, "rename")) {
			snprintf(line, sizeof line, "intent %d data v%d\n", i, i);
			say(proto, line);
		}
		memset(rec, ' ', REC);
		int n = snprintf(rec, sizeof rec, "data v%d", i);
		rec[n] = ' ';
		rec[REC - 1] = '\n';
		long rc;
		if (!strcmp(mode, "rename")) {
			/* the value stays what the record holds */
			char cur[REC + 1], key[16], val[REC];
			if (pread(fd, cur, REC, 0) != REC)
				die("pread");
			cur[REC] = '\0';
			if (sscanf(cur, "%15s %31s", key, val) != 2)
				die("record");
			snprintf(line, sizeof line, "intent %d data %s\n", i, val);
			say(proto, line);
			char a[4096], b[4096];
			snprintf(a, sizeof a, "%s/data", argv[1]);
			snprintf(b, sizeof b, "%s/data.tmp", argv[1]);
			int dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
			if (rename(a, b) || rename(b, a) || dfd < 0 || fsync(dfd))
				die("rename");
			close(dfd);
			snprintf(line, sizeof line, "ack %d\n", i);
			say(proto, line);
			continue;
		}
		if (!strcmp(mode, "fallocate"))
			for (int k = 0; k < 8; k++)
				if (fallocate(fd, 0, 0, REC) != 0)
					die("fallocate");
		if (!strcmp(mode, "truncate")) {
			char path[4096];
			snprintf(path, sizeof path, "%s/data", argv[1]);
			for (int k = 0; k < 8; k++)
				if (truncate(path, REC) != 0)
					die("truncate");
		}
		if (!strcmp(mode, "safe") || !strcmp(mode, "unsafe") ||
		    !strcmp(mode, "scm") || !strcmp(mode, "symlink") ||
		    !strcmp(mode, "touch") || !strcmp(mode, "fallocate") ||
		    !strcmp(mode, "truncate") ||
		    !strcmp(mode, "scm-reuse")) {
			rc = pwrite(fd, rec, REC, 0);
			if (rc == REC && strcmp(mode, "unsafe") &&
			    strncmp(mode, "scm", 3) && fdatasync(fd) != 0)
				die("fdatasync");
			if (!strcmp(mode, "touch") && futimens(fd, NULL) != 0)
				die("futimens");
			if (!strcmp(mode, "symlink")) {
				char ln[4096];
				const char *cy = getenv("KEEL_TORTURE_CYCLE");
				snprintf(ln, sizeof ln, "%s/ln.%s.%d", argv[1],
				         cy ? cy : "0", i);
				if (symlink("data", ln) != 0)
					die("symlink");
			}
		} else if (block) {
			memcpy(block, rec, REC);
			struct iovec v[2] = { { block, 2048 },
			                      { block + 2048, 2048 } };
			if (!strcmp(mode, "direct-dsync"))
				rc = pwritev(fd, v, 2, 0);
			else
				rc = pwrite(fd, block, 4096, 0);
			if (rc == 4096 && !strcmp(mode, "direct") &&
			    fdatasync(fd) != 0)
				die("fdatasync");
			rc = rc == 4096 ? REC : -1;
		} else if (!strcmp(mode, "bytewise")) {
			/* into the slot the newest that holds is not in */
			unsigned char sl[SLOT + 1];
			unsigned long long seq;
			char cur[REC];
			int k = slot_newest(fd, cur, &seq) == 0 ? 1 : 0;
			memset(sl, ' ', sizeof sl);
			snprintf((char *)sl, 21, "%020llu", seq + 1);
			sl[20] = ' ';
			memcpy(sl + 21, rec, REC);
			snprintf((char *)sl + SLOT_HASH, 10, "%08x\n",
			         fnv1a(sl, SLOT_HASH));
			rc = 0;
			for (int b = 0; b < SLOT; b++)
				if (pwrite(fd, sl + b, 1, SLOT0 + k * SLOT + b) == 1)
					rc++;
			rc = rc == SLOT ? REC : -1;
			if (rc == REC && fdatasync(fd) != 0)
				die("fdatasync");
		} else if (!strcmp(mode, "copy")) {
			rc = copy_in(fd, rec);
		} else if (!strcmp(mode, "mixed")) {
			rc = syscall(SYS_pwrite64, fd, rec, REC - 1, 0L);
			if (rc == REC - 1)
				rc = pwrite(fd, rec + REC - 1, 1, REC - 1) + REC - 1;
		} else if (!strcmp(mode, "syscall")) {
			rc = syscall(SYS_pwrite64, fd, rec, REC, 0L);
		} else if (!strcmp(mode, "asm") || !strcmp(mode, "scm-raw")) {
			rc = raw_pwrite(fd, rec, REC, 0);
#ifdef UNSEEN_URING
		} else if (!strcmp(mode, "uring") || !strcmp(mode, "uring-sqpoll")) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			struct io_uring_cqe *cqe;
			io_uring_prep_write(sqe, fd, rec, REC, 0);
			io_uring_submit(&ring);
			if (io_uring_wait_cqe(&ring, &cqe) < 0)
				die("io_uring_wait_cqe");
			rc = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		} else if (!strcmp(mode, "uring-open")) {
			struct io_uring_cqe *cqe;
			io_uring_prep_openat(io_uring_get_sqe(&ring), AT_FDCWD,
			                     "/dev/null", O_RDONLY, 0);
			if (io_uring_submit_and_wait(&ring, 1) != 1 ||
			    io_uring_peek_cqe(&ring, &cqe) != 0)
				die("io_uring openat");
			rc = cqe->res >= 0 ? REC : -1;
			if (cqe->res >= 0)
				close(cqe->res);
			io_uring_cqe_seen(&ring, cqe);
		} else if (!strcmp(mode, "uring-link") ||
		           !strcmp(mode, "uring-pipe") ||
		           !strcmp(mode, "uring-hostile")) {
			if (!strcmp(mode, "uring-hostile"))
				hostile(&ring);
			struct io_uring_sqe *w = io_uring_get_sqe(&ring);
			io_uring_prep_write(w, fd, rec, REC, 0);
			w->flags |= IOSQE_IO_LINK;
			io_uring_prep_fsync(io_uring_get_sqe(&ring), fd,
			                    IORING_FSYNC_DATASYNC);
			if (io_uring_submit_and_wait(&ring, 2) != 2)
				die("io_uring_submit_and_wait");
			rc = REC;
			for (int k = 0; k < 2; k++) {
				struct io_uring_cqe *cqe;
				if (io_uring_peek_cqe(&ring, &cqe) != 0)
					die("io_uring_peek_cqe");
				/* the write's count, then the sync's 0 */
				if (cqe->res != (k == 0 ? REC : 0))
					rc = -1;
				io_uring_cqe_seen(&ring, cqe);
			}
		} else if (!strcmp(mode, "uring-sync") ||
		           !strcmp(mode, "uring-nosync")) {
			/* the first 4 bytes with write(2), the rest through
			 * the ring at the position that left */
			char back[REC];
			struct iovec v[2] = { { rec + 4, 6 }, { rec + 10, REC - 10 } };
			struct uarg u = { fd, v, back };
			if (lseek(fd, 0, SEEK_SET) != 0 || write(fd, rec, 4) != 4)
				die("write");
			rc = uring_one(prep_writev, &u) + 4;
			if (rc == REC && !strcmp(mode, "uring-sync") &&
			    uring_one(prep_fdatasync, &u) != 0)
				die("io_uring fdatasync");
			if (rc == REC && (uring_one(prep_read, &u) != REC ||
			                  memcmp(back, rec, REC) != 0))
				die("io_uring read back");
#endif
		} else {
			fprintf(stderr, "unseen: unknown mode %s\n", mode);
			return 2;
		}
		if (rc != REC)
			die("write");
		snprintf(line, sizeof line, "ack %d\n", i);
#ifdef UNSEEN_URING
		if (!strcmp(mode, "uring-pipe")) {
			struct io_uring_cqe *cqe;
			io_uring_prep_write(io_uring_get_sqe(&ring), proto, line,
			                    (unsigned)strlen(line), (uint64_t)-1);
			if (io_uring_submit_and_wait(&ring, 1) != 1 ||
			    io_uring_peek_cqe(&ring, &cqe) != 0 ||
			    cqe->res != (int)strlen(line))
				die("io_uring ack");
			io_uring_cqe_seen(&ring, cqe);
			continue;
		}
#endif
		say(proto, line);
	}
	return 0;
}
