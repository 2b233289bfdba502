/*
 * shim_ctl.c -- the harness's side of the shim (shim.h): the control block
 * and the check that no write bypassed the shim.
 */

#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

int shim_shared_create(int *fd, shim_shared **out)
{
	int m = memfd_create("keel-shim", MFD_CLOEXEC);
	void *p;

	*out = NULL;
	*fd = -1;
	if (m < 0)
		return -errno;
	if (ftruncate(m, sizeof(shim_shared)) != 0)
		goto out_close;
	p = mmap(NULL, sizeof(shim_shared), PROT_READ | PROT_WRITE, MAP_SHARED,
	         m, 0);
	if (p == MAP_FAILED)
		goto out_close;
	((shim_shared *)p)->magic = SHIM_MAGIC;
	*out = p;
	*fd = m;
	return 0;
out_close:
	close(m);
	return -ENOMEM;
}

void shim_shared_destroy(shim_shared *s, int fd)
{
	if (s)
		munmap(s, sizeof(*s));
	if (fd >= 0)
		close(fd);
}

void shim_shared_reset_files(shim_shared *s)
{
	memset(s->files, 0, sizeof(s->files));
	memset(s->ring, 0, sizeof(s->ring));
	__atomic_store_n(&s->ncalls, 0, __ATOMIC_RELEASE);
}

void shim_shared_new_life(shim_shared *s)
{
	memset(s->seen, 0, sizeof(s->seen));
	memset(s->names, 0, sizeof(s->names));
	__atomic_store_n(&s->seen_full, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->names_full, 0, __ATOMIC_RELEASE);
}

void shim_shared_refuse(shim_shared *s, const char *what)
{
	if (__atomic_exchange_n(&s->refused, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(s->refusal, sizeof s->refusal, "%s", what);
}

const char *shim_op_name(uint32_t op)
{
	static const char *const names[SHIM_OP_COUNT] = {
		"?", "open", "create", "write", "truncate", "allocate", "fsync",
		"fdatasync", "sync_file_range", "fsync(dir)", "sync",
		"rename", "unlink", "link", "mkdir", "rmdir", "mapped write",
		"msync", "protocol", "symlink", "set times",
	};
	return op < SHIM_OP_COUNT ? names[op] : "?";
}

const char *shim_role_name(uint32_t role)
{
	switch (role) {
	case SHIM_ROLE_WORKLOAD: return "workload";
	case SHIM_ROLE_CHECKER: return "checker";
	case SHIM_ROLE_WORKLOAD | SHIM_ROLE_CHILD: return "workload's child";
	case SHIM_ROLE_CHECKER | SHIM_ROLE_CHILD: return "checker's child";
	default: return "?";
	}
}

/* nftw has no argument pointer: the walk's state lives here (the harness
 * is single-threaded when it checks). */
static const shim_shared *walk_s;
static char *walk_why;
static size_t walk_whylen;

static int check_one(const char *path, const struct stat *st, int type,
                     struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	for (int i = 0; i < FAULTSIM_MAX_FILES; i++) {
		const shim_file *f = &walk_s->files[i];
		unsigned char buf[SHIM_SAMPLE];
		uint64_t size = (uint64_t)st->st_size;

		if (f->ino != (uint64_t)st->st_ino ||
		    f->dev != (uint64_t)st->st_dev || (!f->dev && !f->ino))
			continue;
		if (size < f->size_lo || size > f->size_hi) {
			snprintf(walk_why, walk_whylen, "%s is %" PRIu64 " bytes, "
			         "but the calls the shim saw leave it %" PRIu64
			         " bytes: something wrote it without going "
			         "through the shim (a raw system call, a "
			         "libc-internal call, io_uring)", path, size,
			         f->size_hi);
			return 1;
		}
		if (f->pending || !f->sample_len)
			return 0;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		ssize_t n = pread(fd, buf, f->sample_len, (off_t)f->sample_off);
		close(fd);
		if (n == (ssize_t)f->sample_len &&
		    memcmp(buf, f->sample, f->sample_len) == 0)
			return 0;
		snprintf(walk_why, walk_whylen, "%s: the bytes at offset %"
		         PRIu64 " are not what its newest recorded write put "
		         "there: something wrote it without going through the "
		         "shim (a raw system call, a libc-internal call, "
		         "io_uring)", path, f->sample_off);
		return 1;
	}
	return 0;
}

int shim_backstop_probe(char *why, size_t whylen)
{
#if defined(__x86_64__) && defined(PR_SET_SYSCALL_USER_DISPATCH)
	/* at ALLOW nothing is ever caught: on and off again, harmlessly */
	static volatile char selector = 0;

	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0ul, 0ul,
	          (unsigned long)&selector) != 0) {
		snprintf(why, whylen, "prctl(PR_SET_SYSCALL_USER_DISPATCH): %s",
		         strerror(errno));
		return -1;
	}
	prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0ul, 0ul, 0ul);
	return 0;
#else
	snprintf(why, whylen, "the backstop is written for x86-64");
	return -1;
#endif
}

int shim_check_files(const shim_shared *s, const char *dir, char *why,
                     size_t whylen)
{
	walk_s = s;
	walk_why = why;
	walk_whylen = whylen;
	why[0] = '\0';
	if (nftw(dir, check_one, 16, FTW_PHYS) != 0 && why[0])
		return -1;
	return 0;
}
