/*
 * guard.c -- the supervisor's filter, its listener and the thread that
 * serves it (supervisor.h): the guard alone sends io_uring_setup and
 * io_setup to the harness, wherever in the program's tree of processes and
 * threads they are made; the recorder (record.c) adds the calls that change
 * files.
 *
 * The filter is built before the fork (the child only installs it).  The
 * listener goes from child to parent over a socketpair (SCM_RIGHTS); a
 * child that could not install the filter sends its errno instead, so the
 * parent never waits for a listener that will not come.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH_NATIVE AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#define NR_X32_IO_SETUP 543u      /* x32's own number                  */
#define NR_I386_IO_SETUP 245u
#define NR_I386_IO_URING_SETUP 425u
#elif defined(__aarch64__)
#define ARCH_NATIVE AUDIT_ARCH_AARCH64
#endif

#define LISTENER_WAIT_MS 10000

/* Linux 6.6: the notifying task and the supervisor are switched on one
 * CPU, without a wake-up through the scheduler (newer than Debian 12's
 * headers) */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif


/* ---- the filter, built before the fork ------------------------------------ */

#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
                         offsetof(struct seccomp_data, arch))
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

static int emit(sup_guard *g, struct sock_filter f)
{
	if (g->nprog >= SUP_FILTER_MAX)
		return -1;
	g->prog[g->nprog++] = f;
	return 0;
}

/* NR goes to the harness: two instructions */
static int notify_if(sup_guard *g, uint32_t nr)
{
	return emit(g, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                            nr, 0, 1)) |
	       emit(g, (struct sock_filter)RET(SECCOMP_RET_USER_NOTIF));
}

/*
 *   load arch
 *   [x86-64: arch i386?  io_setup, io_uring_setup -> notify; else allow;
 *    the recorder: anything -> notify (refused: not modelled)]
 *   arch not native -> allow
 *   load nr
 *   io_setup, io_uring_setup (and their x32 numbers) -> notify
 *   [the recorder's calls: record.c]
 *   allow
 */
static int build(sup_guard *g)
{
	int bad = 0;

	g->nprog = 0;
#ifdef ARCH_NATIVE
	bad |= emit(g, (struct sock_filter)LD_ARCH);
	bad |= emit(g, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                            ARCH_NATIVE, 1, 0));
	bad |= emit(g, (struct sock_filter)RET(g->rec ? SECCOMP_RET_USER_NOTIF
	                                              : SECCOMP_RET_ALLOW));
	bad |= emit(g, (struct sock_filter)LD_NR);
	bad |= notify_if(g, __NR_io_setup);
	bad |= notify_if(g, __NR_io_uring_setup);
#if defined(__x86_64__)
	bad |= notify_if(g, X32_BIT | NR_X32_IO_SETUP);
	bad |= notify_if(g, X32_BIT | __NR_io_uring_setup);
#endif
	if (g->rec && sup_record_filter(g->prog, &g->nprog, SUP_FILTER_MAX) < 0)
		bad = 1;
	bad |= emit(g, (struct sock_filter)RET(SECCOMP_RET_ALLOW));
#if defined(__x86_64__)
	/* 32-bit programs under the guard alone: their own numbers */
	if (!g->rec && !bad) {
		/* the arch test above jumps over one RET when native: put the
		 * 32-bit checks in that RET's place */
		struct sock_filter tail[SUP_FILTER_MAX];
		unsigned short n = g->nprog;
		memcpy(tail, g->prog, n * sizeof tail[0]);
		g->nprog = 0;
		bad |= emit(g, (struct sock_filter)LD_ARCH);
		bad |= emit(g, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
		                                            BPF_K, AUDIT_ARCH_I386,
		                                            0, 5));
		bad |= emit(g, (struct sock_filter)LD_NR);
		bad |= notify_if(g, NR_I386_IO_SETUP);
		bad |= notify_if(g, NR_I386_IO_URING_SETUP);
		/* not i386: the rest, from its arch test */
		for (unsigned short k = 1; k < n && !bad; k++)
			bad |= emit(g, tail[k]);
		/* A holds the number when an i386 call falls through here:
		 * no number equals ARCH_NATIVE, so it is allowed */
	}
#endif
#else
	bad |= emit(g, (struct sock_filter)RET(SECCOMP_RET_ALLOW));
	if (g->rec)
		bad = 1; /* the recorder knows x86-64's and arm64's numbers */
#endif
	return bad ? -ENOSPC : 0;
}

int sup_guard_prepare(sup_guard **out, const sup_record *rec)
{
	sup_guard *g = calloc(1, sizeof *g);
	int rc;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->listener = -1;
	g->stop[0] = g->stop[1] = -1;
	g->sock[0] = g->sock[1] = -1;
	for (int i = 0; i < SUP_PIDFDS; i++)
		g->pidfd[i] = -1;
	sup_uring_init(g);
	g->rec = rec;
	if ((rc = build(g)) < 0) {
		free(g);
		return rc;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, g->sock) != 0) {
		rc = -errno;
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

/* ---- the child's side ------------------------------------------------------ */

static int send_result(int sock, int fd, int err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &err, sizeof err };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(cbuf, 0, sizeof cbuf);
	if (fd >= 0) {
		m.msg_control = cbuf;
		m.msg_controllen = sizeof cbuf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int sup_guard_child(sup_guard *g)
{
	struct sock_fprog prog = { g->nprog, g->prog };
	int fd, err = 0;

	close(g->sock[0]);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		err = errno;
		fd = -1;
	} else {
		/* once the harness has taken a call, the caller waits for
		 * its answer through every signal but a kill: the recorder
		 * makes the call itself, and a call interrupted after that
		 * (a Go runtime's SIGURG) would be made twice (Linux 5.19) */
		fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		                  SECCOMP_FILTER_FLAG_NEW_LISTENER |
		                  SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
		if (fd < 0 && errno == EINVAL && !g->rec)
			fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			                  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		if (fd < 0)
			err = errno;
	}
	int rc = send_result(g->sock[1], fd, err);
	if (fd >= 0)
		close(fd);
	close(g->sock[1]);
	return err ? -err : rc;
}

/* ---- the parent's side ----------------------------------------------------- */

static const char *call_name(const struct seccomp_data *d)
{
#if defined(__x86_64__)
	if (d->arch == AUDIT_ARCH_I386)
		return d->nr == NR_I386_IO_SETUP ? "io_setup (32-bit)"
		                                 : "io_uring_setup (32-bit)";
	if (d->nr == (int)(X32_BIT | NR_X32_IO_SETUP))
		return "io_setup (x32)";
	if (d->nr == (int)(X32_BIT | __NR_io_uring_setup))
		return "io_uring_setup (x32)";
#endif
	return d->nr == __NR_io_setup ? "io_setup" : "io_uring_setup";
}

static int is_async_io(const struct seccomp_data *d)
{
#if defined(__x86_64__)
	if (d->arch == AUDIT_ARCH_I386)
		return d->nr == NR_I386_IO_SETUP ||
		       d->nr == NR_I386_IO_URING_SETUP;
	if (d->nr == (int)(X32_BIT | NR_X32_IO_SETUP) ||
	    d->nr == (int)(X32_BIT | __NR_io_uring_setup))
		return 1;
#endif
	return d->arch == ARCH_NATIVE &&
	       (d->nr == __NR_io_setup || d->nr == __NR_io_uring_setup);
}

void sup_site(int pid, uint64_t ip, char *out, size_t cap)
{
	char path[64], line[512];
	FILE *f;

	snprintf(out, cap, "0x%" PRIx64, ip);
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		int name = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off,
		           &name) < 3 || ip < lo || ip >= hi)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(out, cap, "%s+0x%llx", name && line[name] ?
		         line + name : "[anonymous]", ip - lo + off);
		break;
	}
	fclose(f);
}

static void comm_of(int pid, char *out, size_t cap)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(out, cap, "?");
	snprintf(path, sizeof path, "/proc/%d/comm", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	n = read(fd, out, cap - 1);
	close(fd);
	if (n <= 0) {
		snprintf(out, cap, "?");
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* The kernel's answer structure may be larger than this header's: the
 * thread's buffer has the kernel's size, zeroed for each answer. */
static __thread struct seccomp_notif_resp *resp_buf;
static __thread size_t resp_size;

static int send_resp(sup_guard *g, uint64_t id, int error, int64_t val,
                     uint32_t flags)
{
	memset(resp_buf, 0, resp_size);
	resp_buf->id = id;
	resp_buf->error = error;
	resp_buf->val = val;
	resp_buf->flags = flags;
	g->calls++;
	return ioctl(g->listener, SECCOMP_IOCTL_NOTIF_SEND, resp_buf) == 0
	       ? 0 : -errno;
}

int sup_answer(sup_guard *g, uint64_t id, int error, int64_t val)
{
	if (g->sink) { /* one entry of an io_uring submission */
		g->sink->state = SUP_SINK_ANSWERED;
		g->sink->val = error ? -(int64_t)error : val;
		return 0;
	}
	return send_resp(g, id, error ? -error : 0, error ? 0 : val, 0);
}

int sup_continue(sup_guard *g, uint64_t id)
{
	if (g->sink) {
		g->sink->state = SUP_SINK_CONTINUE;
		return 0;
	}
	return send_resp(g, id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

static void refuse_v(sup_guard *g, const struct seccomp_notif *req, int err,
                     const char *fmt, va_list ap)
{
	char msg[400], site[300], comm[32], what[800];

	vsnprintf(msg, sizeof msg, fmt, ap);
	/* the caller waits in the kernel: its maps are still there to read */
	sup_site((int)req->pid, req->data.instruction_pointer, site, sizeof site);
	comm_of((int)req->pid, comm, sizeof comm);
	snprintf(what, sizeof what, "%s, by pid %u (%s) at %s", msg, req->pid,
	         comm, site);
	g->fn(g->arg, what);
	if (g->sink) {
		g->sink->state = SUP_SINK_REFUSED;
		return;
	}
	sup_answer(g, req->id, err, 0);
}

static void refuse_with(sup_guard *g, const struct seccomp_notif *req,
                        int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse_with(sup_guard *g, const struct seccomp_notif *req,
                        int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	refuse_v(g, req, err, fmt, ap);
	va_end(ap);
}

void sup_refuse(sup_guard *g, const struct seccomp_notif *req,
                const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	refuse_v(g, req, EPERM, fmt, ap);
	va_end(ap);
}

/* Takes one notification and answers it: 0, or -1 with errno (EINTR, or
 * ENOENT: the caller died between its notification and the take). */
static int serve_one(sup_guard *g, struct seccomp_notif *req, size_t reqsize)
{
	memset(req, 0, reqsize);
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_RECV, req) != 0)
		return -1;
#ifdef ARCH_NATIVE
	if (g->rec && req->data.arch == ARCH_NATIVE &&
	    req->data.nr == __NR_io_uring_setup) {
		sup_uring_setup(g, req); /* made here, in the kernel's stead */
		return 0;
	}
#endif
	if (is_async_io(&req->data)) {
		/* ENOSYS: as a kernel without it answers, so a program's
		 * fallback is taken if it lives on */
		int uring = strstr(call_name(&req->data), "uring") != NULL;
		refuse_with(g, req, ENOSYS, "%s: I/O submitted through %s never passes a "
		           "call the kit records (a program's own switch to "
		           "plain writes avoids it: MariaDB's "
		           "innodb_use_native_aio=0%s)", call_name(&req->data),
		           uring ? "io_uring" : "Linux AIO",
		           !uring ? "" : g->rec ? "; a 32-bit or x32 ring is not "
		           "modelled" : "; or run it under --front-end "
		           "supervisor, which makes an io_uring's reads, writes "
		           "and syncs itself");
		return 0;
	}
	if (g->rec)
		sup_record_serve(g, req);
	else
		sup_continue(g, req->id); /* not asked for: let it be */
	return 0;
}

static void *serve(void *arg)
{
	sup_guard *g = arg;
	struct seccomp_notif_sizes sz = { 0 };
	size_t reqsize = sizeof(struct seccomp_notif);

	resp_size = sizeof(struct seccomp_notif_resp);
	/* the kernel's structures may have grown: RECV fills its size */
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) == 0) {
		if (sz.seccomp_notif > reqsize)
			reqsize = sz.seccomp_notif;
		if (sz.seccomp_notif_resp > resp_size)
			resp_size = sz.seccomp_notif_resp;
	}
	/* each watched call is a round trip: on one CPU it costs a context
	 * switch, through the scheduler a wake-up on another (an older
	 * kernel says EINVAL: the round trip is slower, nothing else) */
	(void)ioctl(g->listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	struct seccomp_notif *req = calloc(1, reqsize);
	resp_buf = calloc(1, resp_size);
	if (!req || !resp_buf)
		goto out;
	/* the recorder waits in the take itself, which the synchronous
	 * wake-up needs; sup_guard_stop interrupts it with STOP_SIGNAL */
	while (g->rec && !__atomic_load_n(&g->stopping, __ATOMIC_ACQUIRE))
		if (serve_one(g, req, reqsize) < 0 && errno != EINTR &&
		    errno != ENOENT)
			goto out;
	for (; !g->rec;) {
		struct pollfd p[2] = { { g->listener, POLLIN, 0 },
		                       { g->stop[0], POLLIN, 0 } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents & POLLIN)
			(void)serve_one(g, req, reqsize); /* before a stop */
		else if (p[1].revents)
			break;
		else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break; /* every filtered process is gone */
	}
out:
	free(req);
	free(resp_buf);
	resp_buf = NULL;
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The child's answer: its listener, or its errno. */
static int take_listener(sup_guard *g, int *err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { err, sizeof *err };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	                    .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	struct pollfd p = { g->sock[0], POLLIN, 0 };
	int fd = -1, rc;

	*err = 0;
	do
		rc = poll(&p, 1, LISTENER_WAIT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0) {
		*err = rc == 0 ? ETIMEDOUT : errno;
		return -1;
	}
	ssize_t n = recvmsg(g->sock[0], &m, MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof *err) {
		*err = n < 0 ? errno : EPROTO; /* the child died before it said */
		return -1;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
	if (fd < 0 && !*err)
		*err = EPROTO;
	return fd;
}

/* STOP_SIGNAL only interrupts the recorder's take (EINTR): a handler
 * that does nothing, installed without SA_RESTART, once. */
#define STOP_SIGNAL (SIGRTMIN + 4)

static void on_stop_signal(int sig)
{
	(void)sig;
}

static void install_stop_signal(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(STOP_SIGNAL, &sa, NULL);
}

int sup_guard_start(sup_guard *g, sup_refusal_fn fn, void *arg, char *why,
                    size_t whylen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int err;

	close(g->sock[1]);
	g->sock[1] = -1;
	g->fn = fn;
	g->arg = arg;
	g->listener = take_listener(g, &err);
	close(g->sock[0]);
	g->sock[0] = -1;
	if (g->listener < 0) {
		snprintf(why, whylen, "the %s could not be installed: %s",
		         g->rec ? "supervisor's filter" : "seccomp guard",
		         strerror(err));
		return -1;
	}
	pthread_once(&once, install_stop_signal);
	int rc = pipe2(g->stop, O_CLOEXEC) != 0 ? errno
	         : pthread_create(&g->thread, NULL, serve, g);
	if (rc != 0) {
		snprintf(why, whylen, "the seccomp guard's thread: %s",
		         strerror(rc));
		/* no one serves it: closed, the filter's calls fail (ENOSYS)
		 * instead of waiting for an answer that never comes */
		close(g->listener);
		g->listener = -1;
		return -1;
	}
	g->running = 1;
	return 0;
}

void sup_guard_stop(sup_guard *g)
{
	if (!g)
		return;
	if (g->running) {
		__atomic_store_n(&g->stopping, 1, __ATOMIC_RELEASE);
		(void)!write(g->stop[1], "x", 1);
		/* the recorder's thread may be in the take, or about to enter
		 * it: signalled until it has ended (a few tries at most) */
		for (int i = 0; g->rec && i < 10000 &&
		                !__atomic_load_n(&g->done, __ATOMIC_ACQUIRE); i++) {
			pthread_kill(g->thread, STOP_SIGNAL);
			struct timespec nap = { 0, 1000000 };
			nanosleep(&nap, NULL);
		}
		pthread_join(g->thread, NULL);
	}
	for (int i = 0; i < 2; i++) {
		if (g->sock[i] >= 0)
			close(g->sock[i]);
		if (g->stop[i] >= 0)
			close(g->stop[i]);
	}
	if (g->listener >= 0)
		close(g->listener);
	for (int i = 0; i < SUP_PIDFDS; i++)
		if (g->pidfd[i] >= 0)
			close(g->pidfd[i]);
	sup_uring_free(g);
	free(g->buf);
	free(g);
}

uint64_t sup_guard_calls(const sup_guard *g)
{
	return g ? g->calls : 0;
}
