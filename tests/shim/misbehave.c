/*
 * misbehave.c -- workloads the shim must refuse or catch, for tests/shim.sh.
 * Each puts one acknowledged value through the shim, then does one thing
 * the cache cannot model, then waits to be killed:
 *
 *   raw-append    syscall(SYS_pwrite64) past the end of a tracked file
 *   raw-overwrite syscall(SYS_pwrite64) over the newest write's bytes
 *   mremap        mremap of a writable MAP_SHARED mapping of a tracked file
 *   many-maps     more shared mappings of a tracked file than the shim
 *                 follows at once
 *   tmpfile       open(O_TMPFILE) in the watched directory (an unnamed
 *                 file: not modelled)
 *   io-uring      syscall(SYS_io_uring_setup)
 *   mapsync       mmap(MAP_SHARED_VALIDATE | MAP_SYNC) of the tracked file:
 *                 off DAX the kernel answers EOPNOTSUPP, and the shim must
 *                 pass that answer on (exit 1 on any other), not refuse
 *   raw-create    unlink(new) through the shim (the name is recorded,
 *                 though there was no such file), then syscall(SYS_openat)
 *                 creates new and syscall(SYS_write) puts 3 bytes in it:
 *                 a new file under a recorded name, written unseen
 *   many-files    creates more files than one life's table of changed
 *                 files holds (shim.h, SHIM_SEEN), then reserves blocks in
 *                 one more (fallocate KEEP_SIZE: a change with no record):
 *                 refused as too many files, the shim carrying on past the
 *                 full table; then exits 0 (the life ends with it)
 *   mprotect      maps the tracked file read-only and shared, makes the
 *                 mapping writable with mprotect, stores the same value
 *                 through it and msyncs (exit 1 on a failure): must pass
 *   plain         nothing: the control, which must pass
 *   refuse-after N  the first N starts exit 0 after their value (cycles
 *                 that pass); later ones open O_TMPFILE: a refusal
 *                 that comes only after cycles that passed
 *
 * The checker (DIR --check) prints "k VALUE"; with "--check refuse-after N"
 * its first N runs (the first is before cycle 1) do only that, later ones
 * open O_TMPFILE too: a refusal in the checker.  Starts are counted in the
 * file DIR/starts (DIR/checks for the checker), written and synced through
 * the shim like any other file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Adds one to the count in DIR/NAME and returns it (0 on an error). */
static long count_start(const char *dir, const char *name)
{
	char path[4096], buf[32] = "";
	long n;
	int fd, len;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || pread(fd, buf, sizeof buf - 1, 0) < 0)
		return 0;
	n = atol(buf) + 1;
	len = snprintf(buf, sizeof buf, "%ld\n", n);
	if (pwrite(fd, buf, (size_t)len, 0) != len || fsync(fd) != 0)
		n = 0;
	close(fd);
	return n;
}

static void open_tmpfile(const char *dir)
{
	open(dir, O_RDWR | O_TMPFILE, 0644);
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *env = getenv("KEEL_TORTURE_FD");
	int tfd, fd, dfd;

	if (argc < 3)
		return 2;
	if (!strcmp(argv[2], "--check")) {
		snprintf(path, sizeof path, "%s/data", argv[1]);
		fd = open(path, O_RDONLY);
		char v[8] = { 0 };
		if (fd >= 0 && read(fd, v, 2) == 2)
			printf("k %.2s\n", v);
		fflush(stdout);
		if (argc > 4 && !strcmp(argv[3], "refuse-after") &&
		    count_start(argv[1], "checks") > atol(argv[4]))
			open_tmpfile(argv[1]);
		return 0;
	}
	if (!env)
		return 2;
	tfd = atoi(env);
	snprintf(path, sizeof path, "%s/data", argv[1]);
	if (write(tfd, "intent 1 k v1\n", 14) != 14)
		return 3;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "v1", 2) != 2 || fsync(fd) != 0)
		return 1;
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) != 0)
		return 1;
	if (write(tfd, "ack 1\n", 6) != 6)
		return 3;
	if (!strcmp(argv[2], "refuse-after") && argc > 3) {
		if (count_start(argv[1], "starts") <= atol(argv[3]))
			return 0;
		open_tmpfile(argv[1]);
	} else if (!strcmp(argv[2], "raw-append")) {
		syscall(SYS_pwrite64, fd, "xyz", 3, 2);
	} else if (!strcmp(argv[2], "raw-overwrite")) {
		syscall(SYS_pwrite64, fd, "zz", 2, 0);
	} else if (!strcmp(argv[2], "raw-create")) {
		snprintf(path, sizeof path, "%s/new", argv[1]);
		unlink(path);
		long nfd = syscall(SYS_openat, AT_FDCWD, path,
		                   O_WRONLY | O_CREAT, 0644);
		if (nfd < 0 || syscall(SYS_write, nfd, "abc", 3) != 3)
			return 1;
	} else if (!strcmp(argv[2], "mremap")) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		               fd, 0);
		if (p != MAP_FAILED)
			mremap(p, 4096, 8192, MREMAP_MAYMOVE);
	} else if (!strcmp(argv[2], "many-maps")) {
		for (int i = 0; i < 5000; i++)
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else if (!strcmp(argv[2], "tmpfile")) {
		open_tmpfile(argv[1]);
	} else if (!strcmp(argv[2], "mapsync")) {
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		               MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
		if (p != MAP_FAILED || errno != EOPNOTSUPP)
			return 1;
	} else if (!strcmp(argv[2], "many-files")) {
		for (int i = 0; i <= 8192; i++) {
			snprintf(path, sizeof path, "%s/f%d", argv[1], i);
			int f = open(path, O_WRONLY | O_CREAT, 0644);
			if (f < 0)
				return 1;
			if (i == 8192 && fallocate(f, FALLOC_FL_KEEP_SIZE, 0,
			                           4096) != 0)
				return 1;
			close(f);
		}
		return 0; /* the life ends here, however long it took */
	} else if (!strcmp(argv[2], "mprotect")) {
		char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED ||
		    mprotect(p, 4096, PROT_READ | PROT_WRITE) != 0)
			return 1;
		memcpy(p, "v1", 2);
		if (msync(p, 4096, MS_SYNC) != 0)
			return 1;
	} else if (!strcmp(argv[2], "io-uring")) {
		char params[120] = { 0 };
		syscall(SYS_io_uring_setup, 4, params);
	}
	for (;;)
		pause();
}
