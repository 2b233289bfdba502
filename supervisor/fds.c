/*
 * fds.c -- the program as the supervisor's recorder sees it: its memory
 * (process_vm_readv), its descriptors (pidfd_getfd, by a pidfd kept per
 * thread) and the paths they and its calls name, resolved as the kernel
 * would, and whether they lie below the watched directory.
 *
 * The table of descriptors met before (struct sup_fd_seen, the guard's):
 * a watched file's (thread, number) -> (device, inode, name).  An entry is
 * a hint, never trusted alone: each use fetches the descriptor and checks
 * its inode, so a number closed and opened again on another file misses;
 * every rename, unlink and rmdir the recorder sees forgets the whole table
 * (sup_fds_forget), so a name kept is the inode's name now.  It holds no
 * descriptor of the program's files: a file the program closes is closed
 * (its flock and OFD locks released, an unlinked file's space freed).
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif


/* Reads LEN bytes at ADDR of the caller: 0 or a negative errno. */
int sup_peek(const sup_call *c, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	if (len == 0)
		return 0;
	ssize_t n = process_vm_readv(c->tid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno != EFAULT ? -errno : -EFAULT;
}

int sup_poke(const sup_call *c, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	if (len == 0)
		return 0;
	ssize_t n = process_vm_writev(c->tid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno != EFAULT ? -errno : -EFAULT;
}

/* A NUL-terminated string at ADDR (PATH_MAX bytes at most), read a page at
 * a time: the string may end just before an unmapped page. */
int sup_peek_path(const sup_call *c, uint64_t addr, char *out)
{
	size_t got = 0;

	while (got < PATH_MAX) {
		size_t page = 4096 - ((addr + got) & 4095);
		if (page > PATH_MAX - got)
			page = PATH_MAX - got;
		int rc = sup_peek(c, addr + got, out + got, page);
		if (rc < 0)
			return rc;
		char *z = memchr(out + got, '\0', page);
		if (z)
			return 0;
		got += page;
	}
	return -ENAMETOOLONG;
}

static int sup_link_of(const sup_call *c, const char *what, char *out)
{
	char p[64];

	snprintf(p, sizeof p, "/proc/%d/%s", c->tid, what);
	ssize_t n = readlink(p, out, PATH_MAX - 1);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	return 0;
}

/* What descriptor FD names (a path, "pipe:[...]", ...) in OUT; a name
 * removed since shows without its " (deleted)". */
int sup_fd_name(const sup_call *c, int fd, char *out)
{
	char what[32];

	snprintf(what, sizeof what, "fd/%d", fd);
	int rc = sup_link_of(c, what, out);
	if (rc == 0) {
		size_t n = strlen(out), d = sizeof " (deleted)" - 1;
		if (n > d && strcmp(out + n - d, " (deleted)") == 0)
			out[n - d] = '\0';
	}
	return rc;
}

/* PATH as the caller names it relative to DIRFD, made absolute with its
 * directory part resolved (the last part is kept: it may not exist yet,
 * or be a link the call acts on).  0; 1 when PATH ends in a slash (only a
 * directory call takes it as the caller means it: others let the kernel
 * answer); or a negative errno (an empty PATH: ENOENT, as the kernel's). */
int sup_resolve(const sup_call *c, int dirfd, const char *path, char *abs)
{
	char base[PATH_MAX], joined[PATH_MAX * 2], dir[PATH_MAX];
	int rc = 0;

	if (!path[0])
		return -ENOENT;
	if (path[0] == '/') {
		snprintf(joined, sizeof joined, "%s", path);
	} else {
		if ((int)dirfd == AT_FDCWD)
			rc = sup_link_of(c, "cwd", base);
		else
			rc = sup_fd_name(c, dirfd, base);
		if (rc < 0)
			return rc;
		snprintf(joined, sizeof joined, "%s/%s", base, path);
	}
	size_t n = strlen(joined);
	int slashed = n > 1 && joined[n - 1] == '/';
	while (n > 1 && joined[n - 1] == '/')
		joined[--n] = '\0';
	char *slash = strrchr(joined, '/');
	const char *last = slash + 1;
	if (!strcmp(last, ".") || !strcmp(last, "..") || !*last) {
		if (!realpath(joined, abs))
			return -errno;
		return slashed;
	}
	if (slash == joined)
		snprintf(dir, sizeof dir, "/");
	else {
		*slash = '\0';
		if (!realpath(joined, dir))
			return -errno;
	}
	if (snprintf(abs, PATH_MAX, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "",
	             last) >= PATH_MAX)
		return -ENAMETOOLONG;
	return slashed;
}

int sup_watched(const sup_record *r, const char *abs)
{
	size_t n = strlen(r->dir);

	return strncmp(abs, r->dir, n) == 0 &&
	       (abs[n] == '/' || abs[n] == '\0') &&
	       !shim_volatile_match(r->volatile_pats, abs) &&
	       !faultsim_is_stash(abs);
}

/* The caller's descriptor FD in the harness (the same open file). */
/* A pidfd of the caller's thread, kept per thread id (the guard's table,
 * closed with it): a pidfd names one task for good, so a cached one is
 * either the caller's or fails with ESRCH (the task is gone, its id may be
 * another's now: opened again, and checked against the notification). */
static int sup_pidfd_of(const sup_call *c, int *fresh)
{
	sup_guard *g = c->g;
	unsigned h = (unsigned)c->tid % SUP_PIDFDS;
	int pidfd;

	*fresh = 0;
	if (g->pidfd_tid[h] == c->tid && g->pidfd[h] >= 0)
		return g->pidfd[h];
	pidfd = (int)syscall(SYS_pidfd_open, c->tid, PIDFD_THREAD);
	if (pidfd < 0) {
		/* a kernel before 6.9 knows only thread-group leaders */
		char p[64], line[128];
		int tgid = -1;
		snprintf(p, sizeof p, "/proc/%d/status", c->tid);
		FILE *f = fopen(p, "re");
		while (f && fgets(line, sizeof line, f))
			if (sscanf(line, "Tgid: %d", &tgid) == 1)
				break;
		if (f)
			fclose(f);
		pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
		if (pidfd < 0)
			return -errno;
	}
	if (g->pidfd[h] >= 0)
		close(g->pidfd[h]);
	g->pidfd[h] = pidfd;
	g->pidfd_tid[h] = c->tid;
	*fresh = 1;
	return pidfd;
}

/* The caller's descriptor FD in the harness (the same open file). */
int sup_take_fd(const sup_call *c, int fd)
{
	int fresh, pidfd = sup_pidfd_of(c, &fresh), dfd;

	if (pidfd < 0)
		return pidfd;
	dfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (dfd < 0 && errno == ESRCH && !fresh) {
		/* the cached task is gone: its id is someone else's now */
		close(c->g->pidfd[(unsigned)c->tid % SUP_PIDFDS]);
		c->g->pidfd[(unsigned)c->tid % SUP_PIDFDS] = -1;
		if ((pidfd = sup_pidfd_of(c, &fresh)) < 0)
			return pidfd;
		dfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	}
	int e = errno;
	/* a pidfd opened now by number: the caller must still be waiting,
	 * else the number may name a task that reused its id */
	if (dfd >= 0 && fresh &&
	    ioctl(c->g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID,
	          &c->req->id) != 0) {
		close(dfd);
		return -ESRCH;
	}
	return dfd < 0 ? -e : dfd;
}

const char *sup_relative(const sup_record *r, const char *abs)
{
	size_t n = strlen(r->dir);

	if (strncmp(abs, r->dir, n) == 0 && abs[n] == '/')
		return abs + n + 1;
	return abs;
}

/* take_fd failed with RC for the file at ABS: gone (the caller died), a
 * bad number, or not allowed (Yama's ptrace_scope, a program that made
 * itself undumpable): the last refuses the run, the others answer. */
static void sup_fd_failed(const sup_call *c, int rc, const char *abs)
{
	if (rc == -EPERM || rc == -EACCES)
		sup_refuse(c->g, c->req, "%s: the supervisor may not take the "
		           "program's descriptor (%s: kernel.yama.ptrace_scope "
		           "above 1, or the program is not dumpable)",
		           sup_relative(c->r, abs), strerror(-rc));
	else
		sup_answer(c->g, c->req->id, rc == -ESRCH ? ESRCH : EBADF, 0);
}

/* The slot of the descriptor table for (TID, FD). */
static struct sup_fd_seen *seen_slot(sup_guard *g, int tid, int fd)
{
	return &g->seen[((unsigned)tid * 31u + (unsigned)fd) % SUP_FDS_SEEN];
}

void sup_fds_forget(sup_guard *g)
{
	for (int i = 0; i < SUP_FDS_SEEN; i++)
		g->seen[i].abs[0] = '\0';
}

/* The table's answer for FD of the caller: 1 with *DFD (fetched, the
 * same inode as when its name was read) and its name in ABS; 0 when the
 * table does not know it, or knows it no longer (the slot is freed). */
static int seen_fd(const sup_call *c, int fd, char *abs, int *dfd)
{
	struct sup_fd_seen *e = seen_slot(c->g, c->tid, fd);
	struct stat st;

	if (e->tid != c->tid || e->fd != fd || !e->abs[0])
		return 0;
	if ((*dfd = sup_take_fd(c, fd)) < 0) {
		e->abs[0] = '\0';
		return 0; /* the lookup by name answers as it would */
	}
	if (fstat(*dfd, &st) == 0 && (uint64_t)st.st_dev == e->dev &&
	    (uint64_t)st.st_ino == e->ino) {
		memcpy(abs, e->abs, strlen(e->abs) + 1);
		return 1;
	}
	close(*dfd); /* closed and opened again on another file */
	e->abs[0] = '\0';
	return 0;
}

/* The caller's descriptor FD, fetched when it names something below the
 * watched directory (its name in ABS): 1 with *DFD, or 0 when the call has
 * been answered (it continues: not watched; or an error, or a refusal).
 *
 * A descriptor met before is in the guard's table (seen_fd): fetched at
 * once and known by its inode, two readlinks fewer on every write and
 * sync.  Otherwise the name is looked up before the fetch, so that the
 * many calls on pipes and sockets cost one readlink, and again on the copy
 * after it: another thread may have put something else on the number
 * between the two, and the copy's own name decides; a watched file's
 * (tid, number, inode, name) then enter the table. */
int sup_watched_fd(const sup_call *c, int fd, char *abs, int *dfd)
{
	char p[64], now[PATH_MAX];
	struct stat st;

	if (fd >= 0 && seen_fd(c, fd, abs, dfd))
		return 1;
	if (fd < 0 || sup_fd_name(c, fd, abs) < 0 || abs[0] != '/' ||
	    !sup_watched(c->r, abs)) {
		sup_continue(c->g, c->req->id);
		return 0;
	}
	if ((*dfd = sup_take_fd(c, fd)) < 0) {
		sup_fd_failed(c, *dfd, abs);
		return 0;
	}
	snprintf(p, sizeof p, "/proc/self/fd/%d", *dfd);
	ssize_t n = readlink(p, now, sizeof now - 1);
	if (n > 0) {
		now[n] = '\0';
		if (strcmp(now, abs) != 0) {
			if (now[0] != '/' || !sup_watched(c->r, now)) {
				close(*dfd);
				sup_continue(c->g, c->req->id);
				return 0;
			}
			memcpy(abs, now, (size_t)n + 1);
		}
	}
	size_t len = strlen(abs);
	if (len < sizeof c->g->seen[0].abs && fstat(*dfd, &st) == 0) {
		struct sup_fd_seen *e = seen_slot(c->g, c->tid, fd);
		e->tid = c->tid;
		e->fd = fd;
		e->dev = (uint64_t)st.st_dev;
		e->ino = (uint64_t)st.st_ino;
		memcpy(e->abs, abs, len + 1);
	}
	return 1;
}
