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
 *   direct        open(O_DIRECT) of a file below the watched directory
 *   io-uring      syscall(SYS_io_uring_setup)
 *   plain         nothing: the control, which must pass
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096], dpath[4096];
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
	if (!strcmp(argv[2], "raw-append")) {
		syscall(SYS_pwrite64, fd, "xyz", 3, 2);
	} else if (!strcmp(argv[2], "raw-overwrite")) {
		syscall(SYS_pwrite64, fd, "zz", 2, 0);
	} else if (!strcmp(argv[2], "mremap")) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		               fd, 0);
		if (p != MAP_FAILED)
			mremap(p, 4096, 8192, MREMAP_MAYMOVE);
	} else if (!strcmp(argv[2], "many-maps")) {
		for (int i = 0; i < 5000; i++)
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else if (!strcmp(argv[2], "direct")) {
		snprintf(dpath, sizeof dpath, "%s/direct", argv[1]);
		open(dpath, O_RDWR | O_CREAT | O_DIRECT, 0644);
	} else if (!strcmp(argv[2], "io-uring")) {
		char params[120] = { 0 };
		syscall(SYS_io_uring_setup, 4, params);
	}
	for (;;)
		pause();
}
