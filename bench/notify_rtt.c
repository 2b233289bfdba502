/*
 * notify_rtt.c -- the floor under the supervisor front end: what one
 * system call sent to a seccomp user-notification listener costs when the
 * listener answers it at once (SECCOMP_USER_NOTIF_FLAG_CONTINUE), with no
 * work of its own.  Every call the supervisor records pays this round trip
 * (the caller sleeps, the listener wakes, answers, the caller wakes) before
 * any recording, so a write+fdatasync pair costs at least twice it.
 *
 *     notify_rtt N     -> "SYNC ASYNC" microseconds per notified call
 *
 * A child installs a filter that notifies getppid() alone and calls it N
 * times; the parent answers, first with the synchronous wake-up the
 * supervisor asks for (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6:
 * the answer hands the CPU to the caller), then without it.  The two
 * figures on one line; 0 for a mode the kernel refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "notify_rtt: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The child: the filter, its listener's number sent up, then N notified
 * calls timed; the microseconds per call written to SOCK. */
static void child(int sock, long n)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	char go;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("PR_SET_NO_NEW_PRIVS");
	int l = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	                     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (l < 0)
		die("seccomp");
	if (write(sock, &l, sizeof l) != sizeof l || read(sock, &go, 1) != 1)
		die("handshake");
	double t0 = now();
	for (long i = 0; i < n; i++)
		syscall(__NR_getppid);
	double us = (now() - t0) * 1e6 / (double)n;
	if (write(sock, &us, sizeof us) != sizeof us)
		die("result");
	_exit(0);
}

/* One run of N calls answered by this process: microseconds per call,
 * or 0 when the kernel refuses the wake-up mode asked for. */
static double run(long n, int sync_wake)
{
	int sv[2], l, pidfd, lfd;
	double us = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], n);
	}
	close(sv[1]);
	if (read(sv[0], &l, sizeof l) != sizeof l)
		die("the child's listener");
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0 ||
	    (lfd = (int)syscall(SYS_pidfd_getfd, pidfd, l, 0)) < 0)
		die("pidfd_getfd");
	int ok = !sync_wake ||
	         ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	               SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0;
	if (write(sv[0], "g", 1) != 1)
		die("go");
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (long i = 0; i < n; i++) {
		memset(&req, 0, sizeof req);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
			if (errno == EINTR)
				continue;
			die("NOTIF_RECV");
		}
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0)
			die("NOTIF_SEND");
	}
	if (read(sv[0], &us, sizeof us) != sizeof us)
		die("the child's figure");
	waitpid(pid, NULL, 0);
	close(lfd);
	close(pidfd);
	close(sv[0]);
	return ok ? us : 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;

	if (n <= 0 || n > 100000000) {
		fprintf(stderr, "usage: notify_rtt N (1 to 100000000)\n");
		return 2;
	}
	double s = run(n, 1), a = run(n, 0);
	printf("%.2f %.2f\n", s, a);
	return 0;
}
