/*
 * driver.c -- the fault simulator's side of the differential check
 * (tests/refmodel.sh; model.py is the other side, written apart).
 *
 *   driver DIR SEEDS < WORKLOADS
 *
 * Each line of WORKLOADS is a workload: ops separated by spaces over two
 * files a and b, each 8 KiB of 'i' made durable first (written, synced,
 * the directory synced):
 *
 *   Wf0   pwrite of 4 KiB at 0 to file f      (f: a or b)
 *   Wf1   pwrite of 4 KiB at 2 KiB to file f  (it overlaps Wf0's half)
 *   Sf    fsync of f
 *   Df    fdatasync of f
 *   Tf    ftruncate of f to 4 KiB
 *
 * The Nth op (from 0) writes the byte 'A' + N.  After the last op the power
 * fails: faultsim_cache_crash under the device models ordered, reorder and
 * torn (512-byte sectors) with seeds 0 .. SEEDS-1, and the files as the
 * crash left them are printed, one line each:
 *
 *   WORKLOAD|DEVICE|SEED|a=SECTORS|b=SECTORS
 *
 * SECTORS: the byte of each 512-byte sector (every write covers whole
 * sectors; a sector that is not one byte throughout prints '?').  Exit 0,
 * or 1 with a message when a call fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faultsim.h"

#define FILE_SIZE 8192
#define SECTOR 512

static const keel_io *io;
static faultsim_cache *cache;
static char dir[4096];

static void die(const char *what)
{
	fprintf(stderr, "driver: %s failed\n", what);
	exit(1);
}

static int open_file(char f)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/%c", dir, f);
	int fd = io->open(io->ctx, p, KEEL_IO_CREATE, 0644);
	if (fd < 0)
		die("open");
	return fd;
}

/* a and b: 8 KiB of 'i', durable (the records settle) */
static void reset(int fd[2])
{
	static unsigned char init[FILE_SIZE];
	memset(init, 'i', sizeof init);
	for (int i = 0; i < 2; i++)
		if (io->pwrite(io->ctx, fd[i], init, FILE_SIZE, 0) != FILE_SIZE ||
		    io->fsync(io->ctx, fd[i]) != 0)
			die("reset");
	if (io->fsync_dir(io->ctx, dir) != 0)
		die("fsync_dir");
}

static void print_file(char f)
{
	char p[4200];
	unsigned char buf[FILE_SIZE + 1];
	snprintf(p, sizeof p, "%s/%c", dir, f);
	FILE *fp = fopen(p, "rb");
	size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
	if (fp)
		fclose(fp);
	printf("%c=", f);
	for (size_t s = 0; s * SECTOR < n; s++) {
		unsigned char c = buf[s * SECTOR];
		for (size_t i = s * SECTOR; i < n && i < (s + 1) * SECTOR; i++)
			if (buf[i] != c)
				c = '?';
		putchar(c);
	}
}

static void run(const char *workload, faultsim_device dev, uint64_t seed)
{
	static unsigned char chunk[4096];
	char ops[512];
	int fd[2] = { open_file('a'), open_file('b') }, n = 0;

	reset(fd);
	snprintf(ops, sizeof ops, "%s", workload);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int f = op[1] == 'b';
		if (op[0] == 'W') {
			memset(chunk, 'A' + n, sizeof chunk);
			if (io->pwrite(io->ctx, fd[f], chunk, sizeof chunk,
			               op[2] == '1' ? 2048 : 0) != sizeof chunk)
				die("pwrite");
		} else if (op[0] == 'S') {
			if (io->fsync(io->ctx, fd[f]) != 0)
				die("fsync");
		} else if (op[0] == 'D') {
			if (io->fdatasync(io->ctx, fd[f]) != 0)
				die("fdatasync");
		} else if (op[0] == 'T') {
			if (io->ftruncate(io->ctx, fd[f], 4096) != 0)
				die("ftruncate");
		} else {
			die("an unknown op");
		}
	}
	io->close(io->ctx, fd[0]);
	io->close(io->ctx, fd[1]);
	faultsim_crash_options o = { dev, SECTOR, seed };
	faultsim_crash_report rep;
	if (faultsim_cache_crash(cache, &o, &rep) != 0)
		die("crash");
	printf("%s|%s|%llu|", workload,
	       dev == FAULTSIM_DEVICE_ORDERED ? "ordered" :
	       dev == FAULTSIM_DEVICE_REORDER ? "reorder" : "torn",
	       (unsigned long long)seed);
	print_file('a');
	putchar('|');
	print_file('b');
	putchar('\n');
}

int main(int argc, char **argv)
{
	faultsim_faults *faults;
	faultsim_io *fio;
	char line[512];

	if (argc != 3)
		return 2;
	snprintf(dir, sizeof dir, "%s", argv[1]);
	uint64_t seeds = strtoull(argv[2], NULL, 10);
	if (faultsim_cache_create(4u << 20, &cache) != 0 ||
	    faultsim_faults_create(1, &faults) != 0)
		die("the cache");
	faultsim_io_options opt = { cache, faults, FAULTSIM_PROFILE_EXT4 };
	if (faultsim_io_new(&opt, &fio) != 0)
		die("the I/O table");
	io = faultsim_io_table(fio);
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		for (uint64_t s = 0; s < seeds; s++) {
			run(line, FAULTSIM_DEVICE_ORDERED, s);
			run(line, FAULTSIM_DEVICE_REORDER, s);
			run(line, FAULTSIM_DEVICE_TORN, s);
		}
	}
	faultsim_io_free(fio);
	faultsim_faults_destroy(faults);
	faultsim_cache_destroy(cache);
	return 0;
}
