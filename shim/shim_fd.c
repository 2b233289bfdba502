/*
 * shim_fd.c -- the descriptor table of libkeel-shim.so: per descriptor of
 * this process, the faultsim file it follows (or that it is a directory
 * below the watched one), its path and flags.  A descriptor is tracked
 * when a wrapper opens it (shim_open.c), adopted when it reached the
 * program where no wrapper saw (glibc's opendir, SCM_RIGHTS, inherited
 * across exec), copied by a dup and forgotten when it is closed.
 */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- descriptors ------------------------------------------------------------ */

/* Per descriptor, in this process (inherited across fork, rebuilt from
 * /proc/self/fd after exec). */
int32_t fd_file[SHIM_FDS];   /* faultsim file id + 1; 0 untracked */
uint8_t fd_flags[SHIM_FDS];  /* FD_*                              */
int32_t fd_err[SHIM_FDS];    /* sync error not yet reported (errseq) */
char *fd_path[SHIM_FDS];     /* absolute path (tracked files, dirs) */
static uint32_t fd_gen[SHIM_FDS]; /* the file entry's gen when tracked */
/* 1: the descriptor was looked at and names nothing below the watched
 * directory.  0: not looked at since the shim last saw it opened, closed
 * or duplicated -- it may have come from a call no wrapper sees (glibc's
 * opendir, a descriptor received over a socket), so its first write or
 * sync looks up what it names (fd_adopt). */
uint8_t fd_seen[SHIM_FDS];

int fd_tracked(int fd)
{
	return fd >= 0 && fd < SHIM_FDS &&
	       (__atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE) ||
	        (fd_flags[fd] & FD_DIR));
}

void fd_forget(int fd)
{
	if (fd < 0 || fd >= SHIM_FDS)
		return;
	__atomic_store_n(&fd_file[fd], 0, __ATOMIC_RELEASE);
	fd_flags[fd] = 0;
	fd_err[fd] = 0;
	fd_seen[fd] = 0;
	free(fd_path[fd]);
	fd_path[fd] = NULL;
}

void fd_copy(int from, int to)
{
	if (to < 0 || to >= SHIM_FDS || to == from)
		return;
	fd_forget(to);
	if (from < 0 || from >= SHIM_FDS)
		return;
	fd_flags[to] = fd_flags[from];
	fd_gen[to] = fd_gen[from];
	fd_seen[to] = fd_seen[from];
	fd_path[to] = fd_path[from] ? strdup(fd_path[from]) : NULL;
	__atomic_store_n(&fd_file[to], fd_file[from], __ATOMIC_RELEASE);
}

/* Starts following FD, opened on ABS (below the watched directory). */
int fd_track(int fd, const char *abs, int flags)
{
	struct stat st;
	int file;

	if (fd >= SHIM_FDS)
		refuse("%s: descriptor %d is above the %d the shim follows",
		       relative(abs), fd, SHIM_FDS);
	fd_forget(fd);
	/* one fstat, under the cache's lock: the file's kind, its identity,
	 * and the size its first write's pre-image needs (invariant 10 of
	 * faultsim/cache_internal.h) */
	st.st_mode = 0;
	file = RECORD(faultsim_cache_track_stat(cache, fd, abs, &st));
	if (S_ISDIR(st.st_mode)) {
		fd_flags[fd] = FD_DIR;
		fd_path[fd] = strdup(abs);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	if (file < 0) {
		recording_failed(file, "open", abs);
		return file;
	}
	expect_init(file, &st);
	fd_gen[fd] = faultsim_cache_file_gen(cache, file);
	fd_flags[fd] = (uint8_t)(((flags & O_APPEND) ? FD_APPEND : 0) |
	                         ((flags & (O_SYNC | O_DSYNC)) ? FD_SYNC : 0));
	fd_path[fd] = strdup(abs);
	__atomic_store_n(&fd_file[fd], file + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Invariant (9) of faultsim/cache_internal.h: the cache may have given
 * FD's file entry to another file since FD was tracked (the table was full
 * and nothing in the window named it).  Tracks FD's file again then, at
 * the name it has now.  IN_SHIM is set. */
void fd_revalidate(int fd)
{
	int file = fd_file[fd] - 1;
	char abs[PATH_MAX];

	if (file < 0 || faultsim_cache_file_gen(cache, file) == fd_gen[fd])
		return;
	if (fd_names(fd, abs) < 0) {
		snprintf(abs, sizeof abs, "%s", fd_path[fd]);
	} else {
		free(fd_path[fd]);
		fd_path[fd] = strdup(abs);
	}
	struct stat st;
	st.st_mode = 0;
	file = RECORD(faultsim_cache_track_stat(cache, fd, abs, &st));
	if (!S_ISREG(st.st_mode))
		refuse("%s: cannot track its file again: %s", relative(abs),
		       file < 0 ? strerror(-file) : "not a regular file");
	if (file < 0) {
		recording_failed(file, "write", abs); /* refuses when full */
		refuse("%s: cannot track its file again: %s", relative(abs),
		       strerror(-file));
	}
	expect_init(file, &st);
	fd_gen[fd] = faultsim_cache_file_gen(cache, file);
	__atomic_store_n(&fd_file[fd], file + 1, __ATOMIC_RELEASE);
}

/* FD reached the program without a wrapper seeing it opened (glibc's
 * opendir opens its directory internally; a descriptor received with
 * SCM_RIGHTS; a number an internal open reused): looks up what it names
 * and follows it when that is below the watched directory.  Returns 1
 * when FD is followed now.  IN_SHIM is set. */
int fd_adopt(int fd)
{
	char abs[PATH_MAX];
	int fl;

	if (fd < 0 || fd >= SHIM_FDS)
		return 0;
	fd_seen[fd] = 1;
	if (fd_names(fd, abs) < 0 || abs[0] != '/' || !is_watched(abs) ||
	    (fl = real_fcntl(fd, F_GETFL)) < 0)
		return 0;
	fd_track(fd, abs, fl);
	fd_seen[fd] = 1; /* fd_track began by forgetting FD */
	if (fd_tracked(fd))
		fd_flags[fd] |= FD_ADOPTED; /* its closer may be unseen too */
	return fd_tracked(fd);
}

/* The fast test of every wrapper on a descriptor: 1 when the call passes
 * straight through (the shim is off, or re-entered, or FD names nothing
 * below the watched directory). */
int fd_passes(int fd)
{
	if (!active || in_shim || fd < 0 || fd >= SHIM_FDS)
		return 1;
	if (__atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE))
		return 0;
	if (fd_seen[fd] || (fd_flags[fd] & FD_DIR))
		return 1;
	in_shim = 1;
	int followed = fd_adopt(fd);
	in_shim = 0;
	return !followed || !fd_file[fd];
}

/* The program is closing FD (before the real call). */
void fd_closing(int fd)
{
	if (active && !in_shim && fd >= 0 && fd < SHIM_FDS &&
	    (fd_file[fd] || fd_flags[fd])) {
		if (in_vfork_child())
			return;
		in_shim = 1;
		fd_forget(fd);
		in_shim = 0;
	} else if (fd >= 0 && fd < SHIM_FDS) {
		fd_seen[fd] = 0;
	}
}

/* The same for FIRST..LAST (those the shim can follow). */
void fd_closing_range(unsigned long first, unsigned long last)
{
	for (unsigned long fd = first; fd <= last && fd < SHIM_FDS; fd++)
		fd_closing((int)fd);
}

/* After exec: descriptors inherited on files below the watched directory
 * (a shell's redirection, a parent's open file) are followed again. */
void adopt_inherited(void)
{
	char abs[PATH_MAX];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		if (fd < SHIM_FDS)
			fd_adopt(fd); /* opened before this image */
		else if (fd_names(fd, abs) == 0 && is_watched(abs))
			refuse("%s: descriptor %d is above the %d the shim "
			       "follows", relative(abs), fd, SHIM_FDS);
	}
	if (d)
		closedir(d);
}
