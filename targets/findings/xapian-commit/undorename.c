/*
 * undorename.c -- an LD_PRELOAD library that plays a power cut for renames
 * whose directory was never synced, as the strictest reading of POSIX (and
 * a file system that does not order metadata) allows: every rename made
 * since the last fsync of its directory is undone, newest first, when the
 * program exits -- the renamed file goes back to its old name and the file
 * it replaced comes back.  Data is left alone: this isolates the rename.
 *
 *   UNDORENAME_DIR=DIR   follow renames whose target lies directly in DIR
 *
 * The file a rename replaces is kept by a hard link (TARGET.undorename)
 * until the directory is synced or the rename undone.  Each rename and
 * directory sync is reported on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ren { char from[PATH_MAX], to[PATH_MAX]; int stashed; struct ren *next; };
static struct ren *pending; /* newest first */

static int in_dir(const char *path)
{
	const char *d = getenv("UNDORENAME_DIR");
	char real[PATH_MAX], dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!d || !slash || !realpath(d, dir))
		return 0;
	snprintf(real, sizeof real, "%.*s", (int)(slash - path), path);
	char r2[PATH_MAX];
	return realpath(real, r2) && strcmp(r2, dir) == 0;
}

static void absolute(int dirfd, const char *p, char *out)
{
	char base[PATH_MAX] = ".";
	if (p[0] == '/') {
		snprintf(out, PATH_MAX, "%s", p);
		return;
	}
	if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base))
			snprintf(base, sizeof base, ".");
	} else {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
		ssize_t n = readlink(link, base, sizeof base - 1);
		base[n > 0 ? n : 0] = '\0';
	}
	snprintf(out, PATH_MAX, "%.*s/%s", PATH_MAX / 2, base, p);
}

int renameat2(int od, const char *from, int nd, const char *to, unsigned fl)
{
	static int (*real)(int, const char *, int, const char *, unsigned);
	if (!real)
		real = (int (*)(int, const char *, int, const char *, unsigned))
			dlsym(RTLD_NEXT, "renameat2");
	struct ren *r = calloc(1, sizeof *r);
	absolute(od, from, r->from);
	absolute(nd, to, r->to);
	if (!in_dir(r->to)) {
		free(r);
		return real(od, from, nd, to, fl);
	}
	char stash[PATH_MAX + 16];
	snprintf(stash, sizeof stash, "%s.undorename", r->to);
	unlink(stash);
	r->stashed = link(r->to, stash) == 0;
	int rc = real(od, from, nd, to, fl);
	if (rc != 0) {
		if (r->stashed)
			unlink(stash);
		free(r);
		return rc;
	}
	fprintf(stderr, "undorename: rename %s -> %s (directory not synced)\n",
	        r->from, r->to);
	r->next = pending;
	pending = r;
	return rc;
}

int renameat(int od, const char *from, int nd, const char *to)
{
	return renameat2(od, from, nd, to, 0);
}

int rename(const char *from, const char *to)
{
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, 0);
}

/* A sync of a directory makes the renames into it durable. */
static void dir_synced(int fd)
{
	struct stat st;
	char link[64], dir[PATH_MAX];
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, dir, sizeof dir - 1);
	if (n <= 0)
		return;
	dir[n] = '\0';
	for (struct ren **p = &pending; *p;) {
		struct ren *r = *p;
		size_t len = strlen(dir);
		if (!strncmp(r->to, dir, len) && r->to[len] == '/' &&
		    !strchr(r->to + len + 1, '/')) {
			char stash[PATH_MAX + 16];
			snprintf(stash, sizeof stash, "%s.undorename", r->to);
			unlink(stash);
			fprintf(stderr, "undorename: %s durable\n", r->to);
			*p = r->next;
			free(r);
		} else {
			p = &r->next;
		}
	}
}

int fsync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	int rc = real(fd);
	if (rc == 0)
		dir_synced(fd);
	return rc;
}

int fdatasync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	int rc = real(fd);
	if (rc == 0)
		dir_synced(fd);
	return rc;
}

__attribute__((destructor)) static void power_cut(void)
{
	int (*real)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	for (struct ren *r = pending; r; r = r->next) {
		char stash[PATH_MAX + 16];
		snprintf(stash, sizeof stash, "%s.undorename", r->to);
		/* the old name comes back, and the replaced file with it */
		if (real(r->to, r->from) == 0 && r->stashed)
			(void)!real(stash, r->to);
		fprintf(stderr, "undorename: power cut: %s -> %s undone\n",
		        r->from, r->to);
	}
	pending = NULL;
}
