/*
 * shim_stdio.c -- stdio on tracked files: glibc's streams write through
 * its internal write, which no wrapper sees, so fopen and fdopen of a
 * tracked file for writing make a fopencookie stream whose writes go
 * through the wrappers; freopen, fileno and fclose keep those streams and
 * the descriptor table true.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- stdio on tracked files -------------------------------------------------- */

/*
 * glibc's stdio writes through its internal write, not the exported one, so
 * a stream on a tracked file is made a fopencookie stream whose write goes
 * through the wrappers (shim_write.c).  fileno() on it answers the
 * descriptor.
 */
typedef struct cookie {
	int fd;
	int acc; /* O_RDONLY, O_WRONLY or O_RDWR: what its mode allows */
	FILE *stream;
	struct cookie *next;
} cookie;

static cookie *cookies;
static pthread_mutex_t cookies_lock = PTHREAD_MUTEX_INITIALIZER;

static ssize_t ck_read(void *c, char *buf, size_t n)
{
	return read(((cookie *)c)->fd, buf, n);
}

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(((cookie *)c)->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int ck_seek(void *c, off64_t *off, int whence)
{
	off_t r = lseek(((cookie *)c)->fd, (off_t)*off, whence);
	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int ck_close(void *c)
{
	cookie *k = c, **p;
	int rc = close(k->fd);

	pthread_mutex_lock(&cookies_lock);
	for (p = &cookies; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	pthread_mutex_unlock(&cookies_lock);
	free(k);
	return rc;
}

/* The cookie of STREAM when the shim made it, else NULL. */
static cookie *cookie_of(FILE *stream)
{
	cookie *k = NULL;

	pthread_mutex_lock(&cookies_lock);
	for (cookie *c = cookies; c && !k; c = c->next)
		if (c->stream == stream)
			k = c;
	pthread_mutex_unlock(&cookies_lock);
	return k;
}

static int mode_flags(const char *mode);

static FILE *cookie_stream(int fd, const char *mode)
{
	cookie_io_functions_t io = { ck_read, ck_write, ck_seek, ck_close };
	cookie *k = calloc(1, sizeof *k);

	if (!k)
		return NULL;
	int flags = mode_flags(mode);

	k->fd = fd;
	k->acc = flags < 0 ? O_RDWR : flags & O_ACCMODE;
	k->stream = fopencookie(k, mode, io);
	if (!k->stream) {
		free(k);
		return NULL;
	}
	pthread_mutex_lock(&cookies_lock);
	k->next = cookies;
	cookies = k;
	pthread_mutex_unlock(&cookies_lock);
	return k->stream;
}

static int mode_flags(const char *mode)
{
	int f = 0;
	switch (mode[0]) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -1;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++) {
		if (*m == '+')
			f = (f & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'x')
			f |= O_EXCL;
		else if (*m == 'e')
			f |= O_CLOEXEC;
	}
	return f;
}

static FILE *shim_fopen(const char *path, const char *mode, const char *name)
{
	FILE *(*real)(const char *, const char *) =
		(FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, name);
	char abs[PATH_MAX];
	int flags = mode ? mode_flags(mode) : -1, fd;
	FILE *f;

	if (!active || in_shim || flags < 0 ||
	    (flags & O_ACCMODE) == O_RDONLY || !watched_path(AT_FDCWD, path, abs))
		return real(path, mode);
	fd = shim_openat(AT_FDCWD, path, flags, 0666);
	if (fd < 0)
		return NULL;
	f = cookie_stream(fd, mode);
	if (!f) {
		close(fd);
		errno = ENOMEM;
	}
	return f;
}

FILE *fopen(const char *path, const char *mode)
{
	return shim_fopen(path, mode, "fopen");
}

FILE *fopen64(const char *path, const char *mode)
{
	return shim_fopen(path, mode, "fopen64");
}

/* freopen of a stream the shim made (fopen or fdopen of a followed file
 * for writing): glibc's own freopen cannot reopen a fopencookie stream (it
 * crashes inside, as it does without the shim), so the same FILE gets the
 * new descriptor here, opened through the wrappers.  As freopen: the old
 * descriptor is closed whether or not the open succeeds; a failure leaves
 * the stream closed (NULL; its cookie answers EBADF until fclose).  A mode
 * that reads where the first one only wrote, or the other way round, is
 * refused (EINVAL, the stream left as it was): fopencookie fixed what the
 * stream may do. */
static FILE *cookie_reopen(cookie *k, const char *path, const char *mode)
{
	char self[64];
	int flags = mode ? mode_flags(mode) : -1, fd, err;

	if (flags < 0 || ((flags & O_ACCMODE) != k->acc && k->acc != O_RDWR)) {
		errno = EINVAL;
		return NULL;
	}
	fflush(k->stream);
	if (!path) { /* the same file again, as glibc does */
		snprintf(self, sizeof self, "/proc/self/fd/%d", k->fd);
		path = self;
	}
	fd = open(path, flags, 0666);
	err = errno;
	close(k->fd);
	k->fd = fd;
	if (fd < 0) {
		errno = err;
		return NULL;
	}
	clearerr(k->stream);
	/* glibc's idea of the position: the new file's (a pipe has none) */
	fseeko(k->stream, 0, (flags & O_APPEND) ? SEEK_END : SEEK_SET);
	clearerr(k->stream);
	return k->stream;
}

/* freopen opens its file inside glibc, where no wrapper sees it: the new
 * descriptor is looked up and followed, so that the check of what the
 * shim saw covers the file (stdio writes through glibc's internal write:
 * without --syscall-backstop they are a bypass, refused, never a verdict). */
/* glibc's freopen opens through its own open, which no wrapper sees: a
 * create or a truncate it would make is made here first, through the
 * wrappers, so that it is recorded.  Returns the mode to hand glibc: "w"
 * becomes "r+" (the file is empty already, and a second truncate would
 * stamp it again where no one sees).  An exclusive create ("x") is left
 * to glibc, and the check after the life refuses what it made. */
static const char *freopen_prepare(const char *path, const char *mode,
                                   char *buf, size_t cap)
{
	char abs[PATH_MAX];
	int fl, fd;

	if (!path || !mode || !active || in_shim || strchr(mode, 'x'))
		return mode;
	fl = mode_flags(mode);
	if (!(fl & (O_CREAT | O_TRUNC)) || !watched_path(AT_FDCWD, path, abs))
		return mode;
	fd = shim_openat(AT_FDCWD, path,
	                 O_WRONLY | O_CLOEXEC | (fl & (O_CREAT | O_TRUNC)), 0666);
	if (fd < 0)
		return mode; /* glibc's open fails the same way */
	close(fd);
	/* only where "r+" can open it as "w" would: a regular file the
	 * program may read (else glibc's own truncate of the empty file is
	 * left to the check after the life) */
	struct stat st;
	if (!(fl & O_TRUNC) || mode[0] != 'w' || lstat(abs, &st) != 0 ||
	    !S_ISREG(st.st_mode) || access(abs, R_OK) != 0)
		return mode;
	snprintf(buf, cap, "r+%s", mode + 1);
	return buf;
}

static FILE *shim_freopen(const char *path, const char *mode, FILE *stream,
                          const char *name)
{
	char mbuf[32];
	FILE *(*real)(const char *, const char *, FILE *) =
		(FILE * (*)(const char *, const char *, FILE *))dlsym(RTLD_NEXT,
		                                                     name);
	cookie *k = stream && active && !in_shim ? cookie_of(stream) : NULL;
	if (k)
		return cookie_reopen(k, path, mode);
	int old = stream && active && !in_shim ? real_fileno(stream) : -1;
	FILE *f = real(path, freopen_prepare(path, mode, mbuf, sizeof mbuf),
	               stream);
	if (active && !in_shim) {
		int err = errno, fd = f ? real_fileno(f) : -1;
		in_shim = 1;
		/* glibc puts the new file on the stream's old number (dup3
		 * inside) when the open succeeds, and closes the old number
		 * inside when it fails: a number the stream no longer holds
		 * is free, and may come back from an open no wrapper sees
		 * (opendir's) */
		if (old != fd)
			fd_forget(old);
		/* the new one may have the old number: what the table says
		 * of it is stale either way */
		if (fd >= 0 && fd < SHIM_FDS) {
			fd_forget(fd);
			fd_adopt(fd);
		}
		in_shim = 0;
		errno = err;
	}
	return f;
}

FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	load_fileno();
	return shim_freopen(path, mode, stream, "freopen");
}

FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	load_fileno();
	return shim_freopen(path, mode, stream, "freopen64");
}

FILE *fdopen(int fd, const char *mode)
{
	static FILE *(*real)(int, const char *);
	if (!real)
		real = (FILE * (*)(int, const char *))dlsym(RTLD_NEXT, "fdopen");
	if (PASS(fd))
		return real(fd, mode);
	return cookie_stream(fd, mode);
}

int fileno(FILE *stream)
{
	load_fileno();
	cookie *k = active ? cookie_of(stream) : NULL;
	if (k && k->fd >= 0)
		return k->fd;
	return real_fileno(stream);
}

int fileno_unlocked(FILE *stream)
{
	return fileno(stream);
}

/* glibc's fclose closes the stream's descriptor inside, where no close
 * wrapper sees.  A stream the shim made closes through the close wrapper
 * (its cookie); any other -- standard output, one fdopen'd on a number a
 * dup2 then put a followed file on -- may hold a followed descriptor,
 * whose number an open no wrapper sees (opendir's) can then reuse. */
int fclose(FILE *stream)
{
	static int (*real)(FILE *);
	if (!real)
		real = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
	load_fileno();
	if (active && !in_shim) {
		int err = errno, fd = real_fileno(stream); /* -1: a cookie */
		fd_closing(fd);
		errno = err;
	}
	return real(stream);
}
