/*
 * choose.c -- which front end sees a program (supervisor.h, sup_wants):
 * the shim where it sees everything (a dynamically linked program that
 * makes its calls through libc), the supervisor where it cannot (a static
 * program cannot load it; a Go program makes its own system calls).
 * Work is bounded by the ELF file's headers: its program headers and its
 * section names, nothing else is read.
 */

#include "supervisor.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHSTR_MAX (1u << 20) /* section names read, at most */

/* The first word of CMD that is not a VAR=value assignment, in OUT. */
static int first_word(const char *cmd, char *out, size_t cap)
{
	for (;;) {
		cmd += strspn(cmd, " \t\n");
		size_t n = strcspn(cmd, " \t\n;&|<>()");
		if (n == 0 || n >= cap)
			return -1;
		memcpy(out, cmd, n);
		out[n] = '\0';
		if (!strchr(out, '=') || out[0] == '=')
			break;
		cmd += n;
	}
	/* "exec PROG" is PROG */
	if (strcmp(out, "exec") == 0)
		return first_word(cmd + strspn(cmd, " \t") + 4, out, cap);
	return out[0] == '\'' || out[0] == '"' || out[0] == '$' ? -1 : 0;
}

/* WORD looked up as the shell would: a path, or through PATH. */
static int lookup(const char *word, char *out, size_t cap)
{
	if (strchr(word, '/')) {
		snprintf(out, cap, "%s", word);
		return access(out, X_OK);
	}
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		if (n && snprintf(out, cap, "%.*s/%s", (int)n, p, word) < (int)cap &&
		    access(out, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* 1 when the ELF file on FD has a section named NAME (its header in
 * *OUT when OUT is not NULL) */
static int find_section(int fd, const Elf64_Ehdr *eh, const char *name,
                        Elf64_Shdr *out)
{
	Elf64_Shdr sh, strsh;
	int found = 0;

	if (eh->e_shentsize != sizeof sh || eh->e_shstrndx >= eh->e_shnum ||
	    read_at(fd, &strsh, sizeof strsh,
	            eh->e_shoff + (uint64_t)eh->e_shstrndx * sizeof sh) < 0 ||
	    strsh.sh_size == 0 || strsh.sh_size > SHSTR_MAX)
		return 0;
	char *names = malloc(strsh.sh_size + 1);
	if (!names || read_at(fd, names, strsh.sh_size, strsh.sh_offset) < 0) {
		free(names);
		return 0;
	}
	names[strsh.sh_size] = '\0';
	for (unsigned i = 0; i < eh->e_shnum && !found; i++)
		if (read_at(fd, &sh, sizeof sh,
		            eh->e_shoff + (uint64_t)i * sizeof sh) == 0 &&
		    sh.sh_name < strsh.sh_size &&
		    strcmp(names + sh.sh_name, name) == 0) {
			found = 1;
			if (out)
				*out = sh;
		}
	free(names);
	return found;
}

static int has_section(int fd, const Elf64_Ehdr *eh, const char *name)
{
	return find_section(fd, eh, name, NULL);
}

/* 1 when the program on FD names liburing among the libraries it needs
 * (its dynamic string table holds "liburing.so"): it submits I/O through
 * io_uring, which no wrapper sees and the supervisor makes itself. */
static int needs_liburing(int fd, const Elf64_Ehdr *eh)
{
	Elf64_Shdr sh;
	int found = 0;

	if (!find_section(fd, eh, ".dynstr", &sh) || sh.sh_size == 0 ||
	    sh.sh_size > SHSTR_MAX)
		return 0;
	char *names = malloc(sh.sh_size);
	if (names && read_at(fd, names, sh.sh_size, sh.sh_offset) == 0)
		found = memmem(names, sh.sh_size, "liburing.so", 11) != NULL;
	free(names);
	return found;
}

/* Shells write through libc's internal calls (a builtin's output to a
 * redirected file): no wrapper of the shim sees those writes. */
static int is_shell(const char *path)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh",
	                                      "mksh", "busybox", NULL };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (int i = 0; shells[i]; i++)
		if (strcmp(base, shells[i]) == 0)
			return 1;
	return 0;
}

/* A script's interpreter ("#!/bin/sh -e" -> /bin/sh) in OUT, from FD. */
static int interpreter(int fd, char *out, size_t cap)
{
	char line[256];
	ssize_t n = pread(fd, line, sizeof line - 1, 0);

	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -1;
	line[n] = '\0';
	char *p = line + 2;
	p += strspn(p, " \t");
	size_t len = strcspn(p, " \t\n");
	if (len == 0 || len >= cap)
		return -1;
	memcpy(out, p, len);
	out[len] = '\0';
	/* "#!/usr/bin/env bash": the word after env */
	if (strcmp(out, "/usr/bin/env") == 0 || strcmp(out, "/bin/env") == 0) {
		p += len;
		p += strspn(p, " \t");
		len = strcspn(p, " \t\n");
		if (len == 0 || len >= cap)
			return -1;
		memcpy(out, p, len);
		out[len] = '\0';
	}
	return 0;
}

int sup_wants(const char *cmd, char *why, size_t whylen)
{
	char word[PATH_MAX], path[PATH_MAX], interp_path[PATH_MAX];
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd, interp = 0, go, uring;

	if (first_word(cmd, word, sizeof word) < 0 ||
	    lookup(word, path, sizeof path) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (is_shell(path) ||
	    (interpreter(fd, interp_path, sizeof interp_path) == 0 &&
	     is_shell(interp_path))) {
		close(fd);
		snprintf(why, whylen, "%s %s a shell (its builtins write through "
		         "libc's internal calls, which no wrapper sees)", path,
		         is_shell(path) ? "is" : "runs in");
		return 1;
	}
	if (read_at(fd, &eh, sizeof eh, 0) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof ph) {
		close(fd);
		return 0; /* a script, or not a 64-bit ELF file */
	}
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (read_at(fd, &ph, sizeof ph,
		            eh.e_phoff + (uint64_t)i * sizeof ph) == 0 &&
		    ph.p_type == PT_INTERP)
			interp = 1;
	go = has_section(fd, &eh, ".go.buildinfo") ||
	     has_section(fd, &eh, ".note.go.buildid");
	uring = interp && !go && needs_liburing(fd, &eh);
	close(fd);
	if (uring)
		snprintf(why, whylen, "%s is linked with liburing (its "
		         "io_uring submissions pass no call a wrapper sees; "
		         "the supervisor makes them itself)", path);
	else if (go)
		snprintf(why, whylen, "%s is a Go program (its own system calls: "
		         "no libc wrapper sees them)", path);
	else if (!interp)
		snprintf(why, whylen, "%s is statically linked (it cannot load "
		         "the shim)", path);
	return go || !interp || uring;
}
