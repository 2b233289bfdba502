/*
 * shim_backstop.c -- the system-call backstop of libkeel-shim.so: the calls
 * no wrapper of the shim sees (glibc's internal write behind stdio on a
 * redirected stdout, opendir's open, a raw syscall instruction) are caught
 * by Syscall User Dispatch and sent through the wrappers all the same.
 * Off unless KEEL_SHIM_BACKSTOP=1 (torture --syscall-backstop): every
 * system call of an armed thread costs a signal (docs/targets.md).
 *
 * HOW (Linux 5.11+, x86-64)
 *   prctl(PR_SET_SYSCALL_USER_DISPATCH) names one exempt block of code (the
 *   assembly below: a raw system-call stub, a signal restorer, two clone
 *   trampolines) and a per-thread selector byte.  With the selector at
 *   BLOCK, every system call made outside the block raises SIGSYS instead
 *   of running; the handler reads the call from the saved registers (the
 *   number in RAX, the arguments in RDI RSI RDX R10 R8 R9) and puts the
 *   result in RAX:
 *   - a call the shim models, on a followed descriptor or on a path that
 *     may lie below the watched directory: the shim's exported wrapper
 *     (write, openat, renameat2, fsync, ...), run with the selector at
 *     ALLOW and every signal blocked -- the wrapper's own calls (the real
 *     one through glibc, faultsim's reads) then run as they are, and no
 *     program code (a signal handler) can run unwatched meanwhile;
 *   - copy_file_range, sendfile, splice into a followed file: a read and a
 *     recorded write; FICLONE-type ioctls on one: EOPNOTSUPP (the caller
 *     copies); close_range: its followed descriptors closed through the
 *     wrapper first;
 *   - any other call, or any call the shim makes itself (while a wrapper is
 *     at work in the thread, or through one of shim.c's real_* pointers,
 *     which are replaced by trampolines that mark their calls): made as it
 *     is through the exempt stub.  This path touches nothing but registers
 *     and the stack, so it is safe wherever the program made its call
 *     (inside malloc, with any lock held).
 *   Routing the shim's real calls through the stub instead would spare
 *   their traps, but would give up glibc's versions of them (fallbacks,
 *   cancellation points) and touch every wrapper of the shim; the selector
 *   switch costs two system calls per modelled call.
 *
 * WHAT NEEDS CARE, AND WHY
 *   rt_sigreturn  The kernel checks the selector on every call, the
 *       sigreturn that ends a handler included.  SIGSYS returns through the
 *       restorer in the exempt block; a program handler's sigreturn (glibc's
 *       restorer, outside the block) traps, and is resumed at the exempt
 *       restorer on the program's own frame.
 *   SIGSYS itself  A blocked SIGSYS, when forced, kills.  So SIGSYS is
 *       taken out of every mask the program sets (rt_sigprocmask -- applied
 *       to the mask the handler returns to, since sigreturn restores that
 *       one --, sigaction masks, sigsuspend, ppoll, pselect6, epoll_pwait),
 *       and the program's own SIGSYS disposition is kept aside: reported
 *       back, and acted on for a SIGSYS that did not come from the dispatch.
 *       The handler runs with SA_NODEFER: a program handler that runs
 *       inside it (a signal during a blocking call) may make calls too.
 *   fork, threads  The setting is per thread, and a clone does not inherit
 *       it.  fork (no new stack, no shared memory) is made inside the
 *       handler, and the child re-arms there.  A clone with a new stack
 *       (a thread, posix_spawn) or with shared memory (vfork) cannot come
 *       back through the handler: the program is resumed at an exempt
 *       trampoline that makes the call with the program's own registers,
 *       and continues after the trapped instruction (kept per thread for
 *       the parent, on the new stack for the child).  A child with its own
 *       TLS or memory arms itself there; a child that shares its parent's
 *       memory and TLS (vfork, glibc's posix_spawn) runs unarmed until it
 *       execs, since its wrappers would change the parent's tables.
 *   exec  Clears the setting; the shim's constructor arms the new image
 *       (KEEL_SHIM_BACKSTOP stays in the environment).
 *
 * WHAT IT LEAVES TO THE BYPASS CHECK (shim.h), WHICH STAYS
 *   A path that reaches the watched directory through a symbolic link of its
 *   own spelling (the test here is lexical: no allocation, no libc call, so
 *   that it is safe at any system call); threads that ran before the shim's
 *   constructor; the children above that run unarmed; io_uring is refused.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "shim_internal.h"

#if defined(__x86_64__) && defined(PR_SET_SYSCALL_USER_DISPATCH)

#define SELECT_ALLOW 0      /* SYSCALL_DISPATCH_FILTER_ALLOW              */
#define SELECT_BLOCK 1      /* SYSCALL_DISPATCH_FILTER_BLOCK              */
#define SI_DISPATCH 2       /* si_code SYS_USER_DISPATCH (not in glibc)   */
#define ARCH_X86_64 0xc000003eu /* AUDIT_ARCH_X86_64                      */
#define RESUME_DEPTH 8      /* clones in flight in one thread (nested by
                               signal handlers)                           */
#define BIT(sig) (1ull << ((sig) - 1))
#define KSA_RESTORER 0x04000000 /* SA_RESTORER: the kernel's, not in glibc */

#define HIDDEN __attribute__((visibility("hidden")))
#define TLS_IE __attribute__((tls_model("initial-exec")))

/* The kernel's struct sigaction on x86-64. */
typedef struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
} ksigaction;

/* The head of struct clone_args (linux/sched.h), all the backstop reads. */
typedef struct clone_head {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t stack, stack_size, tls;
} clone_head;

#define CLONE3_MAX 128      /* the largest clone_args copied              */
#define COPY_CHUNK (1u << 20) /* bytes one emulated copy_file_range moves  */
#define FD_SCAN 65536ul     /* descriptors the shim follows (SHIM_FDS)    */

/* ioctl requests that share extents between files (linux/fs.h) */
#define IOCTL_FICLONE 0x40049409ul
#define IOCTL_FICLONERANGE 0x4020940dul
#define IOCTL_FIDEDUPERANGE 0xc0189436ul

/* Per thread, read by the assembly below.  The selector starts at BLOCK in
 * every thread's TLS image: a thread armed by the trampoline is blocking
 * from its first call; in a thread never armed the byte is not read. */
HIDDEN __thread volatile char backstop_selector TLS_IE = SELECT_BLOCK;
HIDDEN __thread unsigned backstop_resume_depth TLS_IE;
HIDDEN __thread uintptr_t backstop_resume_to[RESUME_DEPTH] TLS_IE;
/* clone3's arguments with the child's words taken off its stack, one per
 * resume level: the kernel reads them when the trampoline makes the call */
static __thread uint64_t clone3_copy[RESUME_DEPTH][CLONE3_MAX / 8] TLS_IE;

extern char backstop_exempt_begin[] HIDDEN, backstop_exempt_end[] HIDDEN;
extern char backstop_restorer[] HIDDEN, backstop_clone_shared[] HIDDEN;
extern char backstop_clone_stack[] HIDDEN;
long backstop_raw(long nr, const long *args) HIDDEN;

/*
 * The exempt block.  backstop_raw: a system call with six arguments from
 * an array.  backstop_restorer: rt_sigreturn.  backstop_clone_shared: the
 * trapped clone/vfork made again with the program's registers, after which
 * parent and (memory-sharing) child continue at the parent's top resume
 * address; only the parent pops it.  backstop_clone_stack: the same for a
 * clone with a new stack; the child finds [arm flag][continuation] there,
 * arms itself when told (prctl, saving the argument registers the
 * program's child code may read) and pops them.  RCX and R11 are free after
 * a syscall instruction (it clobbers them).
 */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"backstop_exempt_begin:\n"
	"backstop_raw:\n"
	"	movq %rdi, %rax\n"
	"	movq 40(%rsi), %r9\n"
	"	movq 32(%rsi), %r8\n"
	"	movq 24(%rsi), %r10\n"
	"	movq 16(%rsi), %rdx\n"
	"	movq (%rsi), %rdi\n"
	"	movq 8(%rsi), %rsi\n"
	"	syscall\n"
	"	ret\n"
	"backstop_restorer:\n"
	"	movl $15, %eax\n"                       /* SYS_rt_sigreturn */
	"	syscall\n"
	"	hlt\n"
	"backstop_clone_shared:\n"
	"	syscall\n"
	"	movq backstop_resume_depth@gottpoff(%rip), %rcx\n"
	"	movl %fs:(%rcx), %r11d\n"
	"	leal -1(%r11), %r11d\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	movl %r11d, %fs:(%rcx)\n"
	"1:	movq backstop_resume_to@gottpoff(%rip), %rcx\n"
	"	movq %fs:(%rcx,%r11,8), %rcx\n"
	"	jmp *%rcx\n"
	"backstop_clone_stack:\n"
	"	syscall\n"
	"	testq %rax, %rax\n"
	"	jnz backstop_clone_parent\n"
	"	popq %rcx\n"
	"	testq %rcx, %rcx\n"
	"	jz 2f\n"
	"	pushq %rdi\n"
	"	pushq %rsi\n"
	"	pushq %rdx\n"
	"	pushq %r10\n"
	"	pushq %r8\n"
	"	movl $157, %eax\n"                      /* SYS_prctl */
	"	movl $59, %edi\n"          /* PR_SET_SYSCALL_USER_DISPATCH */
	"	movl $1, %esi\n"                      /* PR_SYS_DISPATCH_ON */
	"	leaq backstop_exempt_begin(%rip), %rdx\n"
	"	leaq backstop_exempt_end(%rip), %r10\n"
	"	subq %rdx, %r10\n"
	"	movq backstop_selector@gottpoff(%rip), %r8\n"
	"	addq %fs:0, %r8\n"
	"	syscall\n"
	"	popq %r8\n"
	"	popq %r10\n"
	"	popq %rdx\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	xorl %eax, %eax\n"
	"2:	popq %rcx\n"
	"	jmp *%rcx\n"
	"backstop_clone_parent:\n"
	"	movq backstop_resume_depth@gottpoff(%rip), %rcx\n"
	"	movl %fs:(%rcx), %r11d\n"
	"	leal -1(%r11), %r11d\n"
	"	movl %r11d, %fs:(%rcx)\n"
	"	movq backstop_resume_to@gottpoff(%rip), %rcx\n"
	"	movq %fs:(%rcx,%r11,8), %rcx\n"
	"	jmp *%rcx\n"
	"backstop_exempt_end:\n"
	"	.hidden backstop_exempt_begin, backstop_exempt_end\n"
	"	.hidden backstop_raw, backstop_restorer\n"
	"	.hidden backstop_clone_shared, backstop_clone_stack\n"
	"	.globl backstop_exempt_begin, backstop_exempt_end\n"
	"	.globl backstop_raw, backstop_restorer\n"
	"	.globl backstop_clone_shared, backstop_clone_stack\n");

/* >0 while a real call of shim.c is made in this thread: its system calls
 * are the shim's own and pass as they are */
static __thread int own_call TLS_IE;

static ksigaction program_sigsys;  /* the program's own SIGSYS action    */
static char given[PATH_MAX];       /* KEEL_SHIM_DIR as the harness wrote it */
static size_t given_len;

static long raw(long nr, long a0, long a1, long a2, long a3)
{
	long a[6] = { a0, a1, a2, a3, 0, 0 };
	return backstop_raw(nr, a);
}

static void select_now(char state)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	backstop_selector = state;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static long arm_thread(void)
{
	select_now(SELECT_BLOCK);
	long a[6] = { PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON,
	              (long)backstop_exempt_begin,
	              backstop_exempt_end - backstop_exempt_begin,
	              (long)&backstop_selector, 0 };
	return backstop_raw(SYS_prctl, a);
}

/* ---- the shim's own calls ------------------------------------------------- */

/*
 * Each real_NAME pointer of shim.c is replaced by own_NAME, which calls the
 * same glibc function with own_call raised.  Without it, a wrapper's real
 * call made while in_shim is clear (dup2, fcntl, mmap, close make theirs
 * so) would trap and be sent through the wrapper a second time.
 */
#define OWN(ret, name, params, args)                                       \
	static ret(*glibc_##name) params;                                  \
	static ret own_##name params                                       \
	{                                                                  \
		own_call++;                                                \
		ret r = glibc_##name args;                                 \
		own_call--;                                                \
		return r;                                                  \
	}

OWN(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n))
OWN(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o))
OWN(int, close, (int fd), (fd))
OWN(int, fsync, (int fd), (fd))
OWN(int, fdatasync, (int fd), (fd))
OWN(int, ftruncate, (int fd, off_t l), (fd, l))
OWN(int, fallocate, (int fd, int m, off_t o, off_t l), (fd, m, o, l))
OWN(int, posix_fallocate, (int fd, off_t o, off_t l), (fd, o, l))
OWN(int, renameat2, (int od, const char *o, int nd, const char *n,
                     unsigned f), (od, o, nd, n, f))
OWN(int, unlinkat, (int d, const char *p, int f), (d, p, f))
OWN(int, linkat, (int od, const char *o, int nd, const char *n, int f),
    (od, o, nd, n, f))
OWN(int, mkdirat, (int d, const char *p, mode_t m), (d, p, m))
OWN(int, dup, (int fd), (fd))
OWN(int, dup3, (int fd, int to, int f), (fd, to, f))
OWN(int, dup2, (int fd, int to), (fd, to))
OWN(void *, mmap, (void *a, size_t l, int p, int f, int fd, off_t o),
    (a, l, p, f, fd, o))
OWN(int, syncfs, (int fd), (fd))
OWN(int, sync_file_range, (int fd, off_t o, off_t l, unsigned f),
    (fd, o, l, f))

static int (*glibc_openat)(int, const char *, int, ...);
static int own_openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int)
	                                              : 0;
	va_end(ap);
	own_call++;
	int r = glibc_openat(dirfd, path, flags, mode);
	own_call--;
	return r;
}

static int (*glibc_fcntl)(int, int, ...);
static int own_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	own_call++;
	int r = glibc_fcntl(fd, cmd, arg);
	own_call--;
	return r;
}

static void (*glibc_sync)(void);
static void own_sync(void)
{
	own_call++;
	glibc_sync();
	own_call--;
}

#define TAKE(name) (glibc_##name = real_##name, real_##name = own_##name)

static void own_calls_marked(void)
{
	TAKE(openat); TAKE(write); TAKE(pwrite); TAKE(close); TAKE(fsync);
	TAKE(fdatasync); TAKE(ftruncate); TAKE(fallocate);
	TAKE(posix_fallocate); TAKE(renameat2); TAKE(unlinkat); TAKE(linkat);
	TAKE(mkdirat); TAKE(dup); TAKE(dup3); TAKE(dup2); TAKE(fcntl);
	TAKE(mmap); TAKE(sync); TAKE(syncfs); TAKE(sync_file_range);
}

/* ---- the shim's turn: every signal blocked, the selector at ALLOW ------- */

static uint64_t window_open(void)
{
	uint64_t all = ~0ull, old = 0;
	raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	select_now(SELECT_ALLOW);
	return old;
}

static void window_close(uint64_t old)
{
	select_now(SELECT_BLOCK);
	raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
}

static void refuse_now(const char *msg) __attribute__((noreturn));
static void refuse_now(const char *msg)
{
	window_open();
	shim_refuse_msg(msg);
}

/* The exported wrapper for call NR; the result as the kernel gives it. */
static long wrapper_call(long nr, const long *a)
{
	const char *p0 = (const char *)a[0], *p1 = (const char *)a[1];
	const struct iovec *iov = (const struct iovec *)a[1];
	int fd = (int)a[0];
	long n;

	switch (nr) {
	case SYS_write: n = write(fd, (const void *)a[1], (size_t)a[2]); break;
	case SYS_pwrite64: n = pwrite(fd, (const void *)a[1], (size_t)a[2],
	                              (off_t)a[3]); break;
	case SYS_writev: n = writev(fd, iov, (int)a[2]); break;
	case SYS_pwritev: n = pwritev(fd, iov, (int)a[2], (off_t)a[3]); break;
	case SYS_pwritev2: n = pwritev2(fd, iov, (int)a[2], (off_t)a[3],
	                                (int)a[5]); break;
	case SYS_ftruncate: n = ftruncate(fd, (off_t)a[1]); break;
	case SYS_fallocate: n = fallocate(fd, (int)a[1], (off_t)a[2],
	                                  (off_t)a[3]); break;
	case SYS_fsync: n = fsync(fd); break;
	case SYS_fdatasync: n = fdatasync(fd); break;
	case SYS_sync_file_range: n = sync_file_range(fd, (off_t)a[1],
	                                      (off_t)a[2], (unsigned)a[3]); break;
	case SYS_sync: sync(); return 0;
	case SYS_syncfs: n = syncfs(fd); break;
	case SYS_close: n = close(fd); break;
	case SYS_dup: n = dup(fd); break;
	case SYS_dup2: n = dup2(fd, (int)a[1]); break;
	case SYS_dup3: n = dup3(fd, (int)a[1], (int)a[2]); break;
	case SYS_fcntl: n = fcntl(fd, (int)a[1], a[2]); break;
	case SYS_mmap: {
		void *m = mmap((void *)a[0], (size_t)a[1], (int)a[2], (int)a[3],
		               (int)a[4], (off_t)a[5]);
		return m == MAP_FAILED ? -errno : (long)m;
	}
	case SYS_open: n = openat(AT_FDCWD, p0, (int)a[1], (mode_t)a[2]); break;
	case SYS_creat: n = creat(p0, (mode_t)a[1]); break;
	case SYS_openat: n = openat(fd, p1, (int)a[2], (mode_t)a[3]); break;
	case SYS_truncate: n = truncate(p0, (off_t)a[1]); break;
	case SYS_rename: n = rename(p0, p1); break;
	case SYS_renameat: n = renameat(fd, p1, (int)a[2],
	                                (const char *)a[3]); break;
	case SYS_renameat2: n = renameat2(fd, p1, (int)a[2], (const char *)a[3],
	                                  (unsigned)a[4]); break;
	case SYS_unlink: n = unlink(p0); break;
	case SYS_unlinkat: n = unlinkat(fd, p1, (int)a[2]); break;
	case SYS_rmdir: n = rmdir(p0); break;
	case SYS_link: n = link(p0, p1); break;
	case SYS_linkat: n = linkat(fd, p1, (int)a[2], (const char *)a[3],
	                            (int)a[4]); break;
	case SYS_mkdir: n = mkdir(p0, (mode_t)a[1]); break;
	case SYS_mkdirat: n = mkdirat(fd, p1, (mode_t)a[2]); break;
	default: return -ENOSYS;
	}
	return n < 0 ? -errno : n;
}

static long through_wrappers(long nr, const long *a)
{
	uint64_t mask = window_open();
	long rc = wrapper_call(nr, a);
	window_close(mask);
	return rc;
}

/* ---- copies into a followed file ------------------------------------------- */

static int followed(long fd)
{
	return fd >= 0 && fd <= INT_MAX && shim_fd_followed((int)fd);
}

/*
 * copy_file_range, sendfile and splice write without a write call: into a
 * followed descriptor, the bytes are read as they are and written through
 * the write wrapper, at most COPY_CHUNK a call (a short copy, which all
 * three allow: callers loop).  IN_OFF, OUT_OFF: as the calls take them
 * (NULL: the descriptor's position).  The buffer is mapped through the
 * stub, not malloc'ed: the call may come from anywhere.
 */
static long copy_through(int in, int64_t *in_off, int out, int64_t *out_off,
                         size_t len)
{
	long a[6] = { 0, COPY_CHUNK, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 };
	long buf = backstop_raw(SYS_mmap, a), n, w;

	if (buf < 0 && buf > -4096)
		return buf;
	if (len > COPY_CHUNK)
		len = COPY_CHUNK;
	n = in_off ? raw(SYS_pread64, in, buf, (long)len, *in_off)
	           : raw(SYS_read, in, buf, (long)len, 0);
	w = n;
	if (n > 0) {
		long b[6] = { out, buf, n, out_off ? *out_off : 0, 0, 0 };
		w = through_wrappers(out_off ? SYS_pwrite64 : SYS_write, b);
		if (w >= 0 && w < n && !in_off) /* give back what was not written */
			raw(SYS_lseek, in, w - n, SEEK_CUR, 0);
		if (w > 0 && in_off)
			*in_off += w;
		if (w > 0 && out_off)
			*out_off += w;
	}
	raw(SYS_munmap, buf, COPY_CHUNK, 0, 0);
	return w;
}

/* The copies and extent sharing calls, when they write a followed file;
 * 1 with the result in *RC, else 0. */
static int copy_call(long nr, const long *a, long *rc)
{
	switch (nr) {
	case SYS_copy_file_range: /* in, &in_off, out, &out_off, len, flags */
		if (!followed(a[2]) || a[5])
			return 0;
		*rc = copy_through((int)a[0], (int64_t *)a[1], (int)a[2],
		                   (int64_t *)a[3], (size_t)a[4]);
		return 1;
	case SYS_splice:          /* the same, with flags for pipes */
		if (!followed(a[2]))
			return 0;
		*rc = copy_through((int)a[0], (int64_t *)a[1], (int)a[2],
		                   (int64_t *)a[3], (size_t)a[4]);
		return 1;
	case SYS_sendfile:        /* out, in, &in_off, count */
		if (!followed(a[0]))
			return 0;
		*rc = copy_through((int)a[1], (int64_t *)a[2], (int)a[0], NULL,
		                   (size_t)a[3]);
		return 1;
	case SYS_ioctl: /* a shared extent would change the file unseen: the
	                   callers (cp) fall back to copying */
		if (((unsigned long)a[1] != IOCTL_FICLONE &&
		     (unsigned long)a[1] != IOCTL_FICLONERANGE &&
		     (unsigned long)a[1] != IOCTL_FIDEDUPERANGE) ||
		    !followed(a[0]))
			return 0;
		*rc = -EOPNOTSUPP;
		return 1;
	}
	return 0;
}

/* close_range (glibc's closefrom, posix_spawn's file actions): the followed
 * descriptors in the range are closed one by one through the wrapper (their
 * slots forgotten: a later file on the same number is not theirs), then the
 * range as it is.  Only 0 or CLOSE_RANGE_UNSHARE (2); CLOEXEC closes
 * nothing yet. */
static long close_range_call(const long *a)
{
	unsigned long last = (unsigned long)a[1] < FD_SCAN ? (unsigned long)a[1]
	                                                  : FD_SCAN - 1;

	if (((unsigned long)a[2] & ~2ul) == 0)
		for (unsigned long fd = (unsigned long)a[0]; fd <= last; fd++)
			if (followed((long)fd)) {
				long b[6] = { (long)fd, 0, 0, 0, 0, 0 };
				through_wrappers(SYS_close, b);
			}
	return backstop_raw(SYS_close_range, a);
}

/* ---- which calls concern the shim ---------------------------------------- */

/* PATH, absolute, made canonical in place without looking at the file
 * system: "//", "." and ".." components.  Returns its length. */
static size_t lexical(char *p)
{
	size_t i = 0, o = 0;

	while (p[i]) {
		while (p[i] == '/')
			i++;
		size_t s = i;
		while (p[i] && p[i] != '/')
			i++;
		size_t l = i - s;
		if (l == 0 || (l == 1 && p[s] == '.'))
			continue;
		if (l == 2 && p[s] == '.' && p[s + 1] == '.') {
			while (o > 0 && p[--o] != '/')
				;
			continue;
		}
		p[o++] = '/';
		memmove(p + o, p + s, l);
		o += l;
	}
	if (o == 0)
		p[o++] = '/';
	p[o] = '\0';
	return o;
}

static int below(const char *p, size_t n, const char *dir, size_t dn)
{
	return dn && n >= dn && memcmp(p, dir, dn) == 0 &&
	       (n == dn || p[dn] == '/' || dn == 1);
}

/* May PATH (relative to DIRFD) name the watched directory or something
 * below it?  Lexical, through raw calls only: safe at any system call.
 * When it cannot tell (a directory and a name longer than PATH_MAX
 * together: the buffer is kept to one page of the stack the program made
 * its call on) it answers yes, and the wrapper resolves. */
static int maybe_watched(long dirfd, const char *path)
{
	char buf[PATH_MAX], link[32] = "/proc/self/fd/";
	size_t n = 0, len, wlen;
	const char *w;
	long r;

	if (!path)
		return 0;
	len = strlen(path);
	if (path[0] != '/') {
		if ((int)dirfd == AT_FDCWD) {
			r = raw(SYS_getcwd, (long)buf, PATH_MAX, 0, 0);
			n = r > 0 ? strlen(buf) : 0;
		} else {
			char digits[16];
			int d = 0;
			unsigned v = (unsigned)dirfd;
			do
				digits[d++] = (char)('0' + v % 10);
			while ((v /= 10) && d < 15);
			size_t at = strlen(link);
			while (d)
				link[at++] = digits[--d];
			link[at] = '\0';
			r = raw(SYS_readlinkat, AT_FDCWD, (long)link, (long)buf,
			        PATH_MAX - 1);
			n = r > 0 ? (size_t)r : 0;
		}
		if (n == 0 || buf[0] != '/')
			return 1;
		buf[n++] = '/';
	}
	if (n + len + 1 > sizeof buf)
		return 1;
	memcpy(buf + n, path, len + 1);
	n = lexical(buf);
	w = shim_watched(&wlen);
	return below(buf, n, w, wlen) || below(buf, n, given, given_len);
}

/* 1 when call NR is one the shim models and may concern what it follows:
 * it goes through the wrappers. */
static int modelled(long nr, const long *a)
{
	const char *p0 = (const char *)a[0], *p1 = (const char *)a[1];

	switch (nr) {
	case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_pwritev:
	case SYS_pwritev2: case SYS_ftruncate: case SYS_fallocate:
	case SYS_fsync: case SYS_fdatasync: case SYS_sync_file_range:
	case SYS_close: case SYS_dup:
		return followed(a[0]);
	case SYS_fcntl: /* the commands the wrapper follows; a lock wait
	                   must stay interruptible */
		return (a[1] == F_DUPFD || a[1] == F_DUPFD_CLOEXEC ||
		        a[1] == F_SETFL) && followed(a[0]);
	case SYS_mmap:
		return followed(a[4]);
	case SYS_dup2: case SYS_dup3:
		return followed(a[0]) || followed(a[1]);
	case SYS_sync: case SYS_syncfs:
		return 1;
	case SYS_open: case SYS_creat: case SYS_truncate: case SYS_unlink:
	case SYS_rmdir: case SYS_mkdir:
		return maybe_watched(AT_FDCWD, p0);
	case SYS_openat: case SYS_unlinkat: case SYS_mkdirat:
		return maybe_watched(a[0], p1);
	case SYS_rename:
		return maybe_watched(AT_FDCWD, p0) || maybe_watched(AT_FDCWD, p1);
	case SYS_renameat: case SYS_renameat2:
		return maybe_watched(a[0], p1) ||
		       maybe_watched(a[2], (const char *)a[3]);
	case SYS_link:
		return maybe_watched(AT_FDCWD, p1);
	case SYS_linkat:
		return maybe_watched(a[2], (const char *)a[3]);
	}
	return 0;
}

/* ---- signals --------------------------------------------------------------- */

static long sig_action(long *a)
{
	ksigaction act, *set = (ksigaction *)a[1], *old = (ksigaction *)a[2];

	if (a[3] != 8)
		return -EINVAL;
	if (a[0] == SIGSYS) {
		ksigaction was = program_sigsys;
		if (set)
			program_sigsys = *set;
		if (old)
			*old = was;
		return 0;
	}
	if (set) {
		act = *set;
		act.mask &= ~BIT(SIGSYS);
		a[1] = (long)&act;
	}
	return backstop_raw(SYS_rt_sigaction, a);
}

/* Applied to the mask the handler's sigreturn restores. */
static long sig_procmask(const long *a, ucontext_t *uc)
{
	uint64_t cur, set = 0;

	if (a[3] != 8)
		return -EINVAL;
	memcpy(&cur, &uc->uc_sigmask, 8);
	if (a[1]) {
		memcpy(&set, (const void *)a[1], 8);
		if (a[0] == SIG_BLOCK)
			set |= cur;
		else if (a[0] == SIG_UNBLOCK)
			set = cur & ~set;
		else if (a[0] != SIG_SETMASK)
			return -EINVAL;
		set &= ~(BIT(SIGSYS) | BIT(SIGKILL) | BIT(SIGSTOP));
	}
	if (a[2])
		memcpy((void *)a[2], &cur, 8);
	if (a[1])
		memcpy(&uc->uc_sigmask, &set, 8);
	return 0;
}

/* rt_sigsuspend, ppoll, pselect6, epoll_pwait(2): the mask they wait with,
 * SIGSYS taken out. */
static long wait_masked(long nr, long *a)
{
	struct { const uint64_t *set; size_t len; } ps;
	uint64_t mask;
	int at = nr == SYS_rt_sigsuspend ? 0 : nr == SYS_ppoll ? 3 : 4;

	if (nr == SYS_pselect6) {
		if (a[5]) {
			memcpy(&ps, (const void *)a[5], sizeof ps);
			if (ps.set) {
				mask = *ps.set & ~BIT(SIGSYS);
				ps.set = &mask;
			}
			a[5] = (long)&ps;
		}
	} else if (a[at]) {
		mask = *(const uint64_t *)a[at] & ~BIT(SIGSYS);
		a[at] = (long)&mask;
	}
	return backstop_raw(nr, a);
}

/* A SIGSYS the dispatch did not send (seccomp, kill): the program's. */
static void program_signal(int sig, siginfo_t *si, void *ctx)
{
	void *h = program_sigsys.handler;

	if (h == (void *)SIG_IGN)
		return;
	if (h == (void *)SIG_DFL) {
		ksigaction dfl = { (void *)SIG_DFL, 0, NULL, 0 };
		raw(SYS_rt_sigaction, SIGSYS, (long)&dfl, 0, 8);
		raw(SYS_tgkill, raw(SYS_getpid, 0, 0, 0, 0),
		    raw(SYS_gettid, 0, 0, 0, 0), SIGSYS, 0);
		return;
	}
	if (program_sigsys.flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))h)(sig, si, ctx);
	else
		((void (*)(int))h)(sig);
}

/* ---- clones ------------------------------------------------------------------ */

/* fork: made here; the child, a copy of this thread, re-arms.  A clone
 * with a new stack or shared memory: resumed at a trampoline (above). */
static long clone_call(long nr, long *a, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t flags, stack = 0;
	clone_head *ca = NULL;
	unsigned d = backstop_resume_depth;

	if (nr == SYS_fork) {
		flags = SIGCHLD;
	} else if (nr == SYS_vfork) {
		flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
	} else if (nr == SYS_clone) {
		flags = (uint64_t)a[0];
		stack = (uint64_t)a[1];
	} else {
		if ((size_t)a[1] < sizeof(clone_head))
			return backstop_raw(nr, a); /* the kernel's EINVAL */
		if ((size_t)a[1] > CLONE3_MAX)
			return -E2BIG;
		ca = (clone_head *)clone3_copy[d < RESUME_DEPTH ? d : 0];
		memcpy(ca, (const void *)a[0], (size_t)a[1]);
		flags = ca->flags;
		stack = ca->stack ? ca->stack + ca->stack_size : 0;
	}
	if (!stack && !(flags & CLONE_VM)) {
		long rc = backstop_raw(nr, a);
		if (rc == 0 && arm_thread() < 0)
			refuse_now("fork: the child could not arm the syscall "
			           "backstop");
		return rc;
	}
	if (!stack && (flags & CLONE_SETTLS))
		refuse_now("clone(CLONE_VM | CLONE_SETTLS) without a stack of "
		           "its own is not supported by the syscall backstop");
	if (d >= RESUME_DEPTH)
		refuse_now("more clones in flight in one thread than the "
		           "syscall backstop follows");
	backstop_resume_to[d] = (uintptr_t)g[REG_RIP];
	backstop_resume_depth = d + 1;
	g[REG_RAX] = nr;
	if (!stack) {
		g[REG_RIP] = (greg_t)backstop_clone_shared;
		return nr;
	}
	uint64_t *top = (uint64_t *)stack;
	top[-1] = (uint64_t)g[REG_RIP];
	top[-2] = (flags & CLONE_SETTLS) || !(flags & CLONE_VM);
	if (ca) {
		ca->stack_size -= 16;
		g[REG_RDI] = (greg_t)ca;
	} else {
		g[REG_RSI] = (greg_t)(stack - 16);
	}
	g[REG_RIP] = (greg_t)backstop_clone_stack;
	return nr;
}

/* ---- the handler -------------------------------------------------------------- */

static void exec_check(long nr, const long *a)
{
	char path[PATH_MAX + 32];
	const char *p = (const char *)a[nr == SYS_execve ? 0 : 1];
	char *const *envp = (char *const *)a[nr == SYS_execve ? 2 : 3];

	if (nr == SYS_execveat && p && p[0] != '/' && (int)a[0] != AT_FDCWD) {
		snprintf(path, sizeof path, *p ? "/proc/self/fd/%d/%s"
		                               : "/proc/self/fd/%d%s",
		         (int)a[0], p);
		p = path;
	}
	uint64_t mask = window_open();
	shim_exec_check(p, envp);
	window_close(mask);
}

static long open_how_call(long *a)
{
	struct { uint64_t flags, mode, resolve; } how;
	char msg[PATH_MAX + 80];

	if (!maybe_watched(a[0], (const char *)a[1]) ||
	    (size_t)a[3] < sizeof how)
		return backstop_raw(SYS_openat2, a);
	memcpy(&how, (const void *)a[2], sizeof how);
	if (how.resolve) {
		snprintf(msg, sizeof msg, "openat2(%s) with RESOLVE_ flags is "
		         "not modelled", (const char *)a[1]);
		refuse_now(msg);
	}
	long b[6] = { a[0], a[1], (long)how.flags, (long)how.mode, 0, 0 };
	return through_wrappers(SYS_openat, b);
}

static long dispatch(long nr, long *a, ucontext_t *uc)
{
	long rc;

	switch (nr) {
	case SYS_rt_sigreturn: /* a program handler's: on its own frame */
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)backstop_restorer;
		return nr;
	case SYS_rt_sigaction:
		return sig_action(a);
	case SYS_rt_sigprocmask:
		return sig_procmask(a, uc);
	case SYS_rt_sigsuspend: case SYS_ppoll: case SYS_pselect6:
	case SYS_epoll_pwait: case SYS_epoll_pwait2:
		return wait_masked(nr, a);
	case SYS_clone: case SYS_clone3: case SYS_fork: case SYS_vfork:
		return clone_call(nr, a, uc);
	case SYS_io_uring_setup:
		refuse_now("io_uring_setup: I/O through io_uring is not seen "
		           "by the shim");
	case SYS_prctl:
		if (a[0] == PR_SET_SYSCALL_USER_DISPATCH)
			refuse_now("prctl(PR_SET_SYSCALL_USER_DISPATCH): the "
			           "program's own dispatch would turn the "
			           "syscall backstop off");
		break;
	}
	if (shim_in_call() || own_call)
		return backstop_raw(nr, a);
	if (nr == SYS_execve || nr == SYS_execveat)
		exec_check(nr, a);
	else if (nr == SYS_openat2)
		return open_how_call(a);
	else if (copy_call(nr, a, &rc))
		return rc;
	else if (nr == SYS_close_range)
		return close_range_call(a);
	else if (modelled(nr, a))
		return through_wrappers(nr, a);
	return backstop_raw(nr, a);
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *g = uc->uc_mcontext.gregs;
	long a[6] = { g[REG_RDI], g[REG_RSI], g[REG_RDX],
	              g[REG_R10], g[REG_R8], g[REG_R9] };
	int err = errno;

	if (si->si_code != SI_DISPATCH) {
		program_signal(sig, si, ctx);
	} else if (si->si_arch != ARCH_X86_64) {
		refuse_now("a 32-bit system call (int $0x80): the syscall "
		           "backstop decodes x86-64 calls only");
	} else {
		g[REG_RAX] = dispatch(g[REG_RAX], a, uc);
	}
	errno = err;
}

/* ---- arming ------------------------------------------------------------------- */

void shim_backstop_init(void)
{
	const char *on = getenv("KEEL_SHIM_BACKSTOP");
	const char *dir = getenv("KEEL_SHIM_DIR");
	ksigaction sa = { (void *)on_sigsys,
	                  SA_SIGINFO | SA_NODEFER | KSA_RESTORER,
	                  (void *)backstop_restorer, 0 };
	uint64_t sys = BIT(SIGSYS);
	char msg[300];
	long rc;

	if (!on || strcmp(on, "1") != 0)
		return;
	if (dir && dir[0] == '/' && strlen(dir) < sizeof given) {
		strcpy(given, dir);
		given_len = lexical(given);
	}
	own_calls_marked();
	raw(SYS_rt_sigaction, SIGSYS, (long)&sa, (long)&program_sigsys, 8);
	raw(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&sys, 0, 8);
	rc = arm_thread();
	if (rc < 0) {
		raw(SYS_rt_sigaction, SIGSYS, (long)&program_sigsys, 0, 8);
		int n = snprintf(msg, sizeof msg, "keel-shim: KEEL_SHIM_BACKSTOP"
		                 "=1, but Syscall User Dispatch is unavailable "
		                 "(prctl: %s; Linux 5.11+ on x86-64): writes "
		                 "that bypass the wrappers are refused as "
		                 "before\n", strerror((int)-rc));
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n
			                                           : sizeof msg - 1);
	}
}

#else /* no Syscall User Dispatch on this architecture */

void shim_backstop_init(void)
{
	const char *on = getenv("KEEL_SHIM_BACKSTOP");
	static const char msg[] = "keel-shim: KEEL_SHIM_BACKSTOP=1, but the "
		"syscall backstop needs Syscall User Dispatch on x86-64: writes "
		"that bypass the wrappers are refused as before\n";

	if (on && strcmp(on, "1") == 0)
		(void)!write(2, msg, sizeof msg - 1);
}

#endif
