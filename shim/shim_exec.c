/*
 * shim_exec.c -- raw system calls and exec: syscall() (io_uring_setup
 * refused; a close, dup2, dup3 or close_range made through it updates the
 * descriptor table) and execve (the dirty pages sealed, a static program
 * or an environment without the shim refused, the role handed down).
 */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- raw system calls, exec ---------------------------------------------------- */

#ifdef SYS_dup2
#define IS_SYS_DUP2(nr) ((nr) == SYS_dup2)
#else
#define IS_SYS_DUP2(nr) 0 /* arm64 has only dup3 */
#endif

long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	load_syscall();
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (active && nr == SYS_io_uring_setup)
		refuse("io_uring_setup: I/O through io_uring is not seen by "
		       "the shim");
	/* a descriptor closed through syscall() is forgotten as close()
	 * forgets it: a sync through a number that came back names what it
	 * names now (sync_followed looks again only at adopted ones); the
	 * kernel takes descriptors and flags as unsigned int */
	if (nr == SYS_close)
		fd_closing((int)(unsigned)a[0]);
	else if ((nr == SYS_dup3 || IS_SYS_DUP2(nr)) &&
	         (unsigned)a[0] != (unsigned)a[1])
		fd_closing((int)(unsigned)a[1]); /* the number it lands on */
	else if (nr == SYS_close_range &&
	         !((unsigned)a[2] & ~(unsigned)CLOSE_RANGE_UNSHARE))
		fd_closing_range((unsigned)a[0], (unsigned)a[1]);
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* 1 when PATH is an ELF executable without an interpreter: static. */
static int is_static_elf(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = real_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof eh, 0) != sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		real_close(fd);
		return 0;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof ph,
		          (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    sizeof ph)
			break;
		if (ph.p_type == PT_INTERP)
			found = 1;
	}
	real_close(fd);
	return !found;
}

static int env_has(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return 1;
	return 0;
}

void shim_exec_check(const char *path, char *const envp[])
{
	if (!active || in_shim)
		return;
	map_seal_all(); /* the mappings go with the process image */
	in_shim = 1;
	if (is_static_elf(path))
		refuse("exec %s: a statically linked program cannot load the "
		       "shim", path);
	if (!env_has(envp, "LD_PRELOAD") || !env_has(envp, "KEEL_SHIM_DIR"))
		refuse("exec %s with LD_PRELOAD or KEEL_SHIM_DIR removed from "
		       "its environment: its writes would not be seen", path);
	in_shim = 0;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
	load_execve();
	shim_exec_check(path, envp);
	char *const *env = active ? role_envp(envp) : envp;
	int rc = real_execve(path, argv, env);
	int err = errno;
	if (env != envp)
		free((void *)env); /* the exec failed */
	errno = err;
	return rc;
}
