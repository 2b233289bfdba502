/*
 * ops.c -- the differential check's workloads as a program, for the front
 * ends (tests/refmodel.sh runs it under torture --target exec, through the
 * shim and through the supervisor; driver.c makes the same calls through
 * the simulator's I/O table directly):
 *
 *   ops DIR LIST                               (the workload)
 *   ops DIR --check LIST DEVICE BATCH OUT      (its checker)
 *
 * LIST is a file of workloads, one a line, in model.py's alphabet
 * (driver.c's comment has it): Wf0, Wf1 (a 4 KiB pwrite at 0 or 2 KiB), Tf
 * (ftruncate to 4 KiB), Sf (fsync), Df (fdatasync) over files a and b.  The
 * Jth workload of LIST (from 0) works on its own pair of files, aJ and bJ
 * of DIR.  The workload first makes every pair 8 KiB of 'i' and durable
 * (written, fsynced, DIR fsynced), acknowledges one key for torture's
 * protocol, then runs the workloads one after the other, the Nth op of
 * each (from 0) writing the byte 'A' + N, and exits: torture cuts the
 * power after it (--power-loss, a kill period longer than the workload).
 * So one cut crashes every workload of LIST at once: under reorder and
 * torn each write is decided alone, and under ordered the prefix that
 * persists runs over the workloads in LIST's order (model.py judges such a
 * batch as one crash).  The checker prints that key, and appends the
 * files as the cut left them to OUT, outside DIR, in driver.c's format:
 *
 *   WORKLOAD|DEVICE|BATCH:CYCLE|a=SECTORS|b=SECTORS
 *
 * CYCLE is torture's cycle (each has a crash seed of its own); the checker's
 * run before the first cycle (KEEL_TORTURE_CYCLE unset or 0) appends nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE 8192
#define SECTOR 512
#define MAX_WORKLOADS 2048

static const char *dir;
static char *list[MAX_WORKLOADS];
static int nlist;

static void die(const char *what)
{
	fprintf(stderr, "ops: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void read_list(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		if (nlist == MAX_WORKLOADS || !(list[nlist++] = strdup(line)))
			die("too many workloads");
	}
	fclose(f);
}

static char *at(char f, int j)
{
	static char p[4200];
	snprintf(p, sizeof p, "%s/%c%d", dir, f, j);
	return p;
}

static void say(int proto, const char *line)
{
	size_t n = strlen(line);
	if (write(proto, line, n) != (ssize_t)n)
		die("protocol");
}

static void run(const char *w, int fd[2])
{
	static unsigned char buf[4096];
	char ops[512];
	int n = 0;

	snprintf(ops, sizeof ops, "%s", w);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int f = op[1] == 'b', rc = 0;
		if (op[0] == 'W') {
			memset(buf, 'A' + n, sizeof buf);
			rc = pwrite(fd[f], buf, sizeof buf,
			            op[2] == '1' ? 2048 : 0) == sizeof buf ? 0 : -1;
		} else if (op[0] == 'S') {
			rc = fsync(fd[f]);
		} else if (op[0] == 'D') {
			rc = fdatasync(fd[f]);
		} else if (op[0] == 'T') {
			rc = ftruncate(fd[f], 4096);
		} else {
			errno = EINVAL;
			rc = -1;
		}
		if (rc != 0)
			die(op);
	}
}

static int workload(void)
{
	static unsigned char init[FILE_SIZE];
	static int fd[MAX_WORKLOADS][2];
	const char *p = getenv("KEEL_TORTURE_FD");
	int proto = p ? atoi(p) : -1;

	if (proto < 0)
		die("KEEL_TORTURE_FD");
	memset(init, 'i', sizeof init);
	for (int j = 0; j < nlist; j++)
		for (int i = 0; i < 2; i++)
			if ((fd[j][i] = open(at("ab"[i], j), O_RDWR | O_CREAT,
			                     0644)) < 0 ||
			    pwrite(fd[j][i], init, FILE_SIZE, 0) != FILE_SIZE ||
			    fsync(fd[j][i]) != 0)
				die("the durable start");
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	if (d < 0 || fsync(d) != 0)
		die("fsync of the directory");
	close(d);
	say(proto, "intent 0 k v\n");
	say(proto, "ack 0\n");
	for (int j = 0; j < nlist; j++)
		run(list[j], fd[j]);
	return 0;
}

static void print_file(FILE *out, char f, int j)
{
	unsigned char buf[FILE_SIZE + 1];
	int fd = open(at(f, j), O_RDONLY);
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf, 0) : 0;
	if (fd >= 0)
		close(fd);
	fprintf(out, "%c=", f);
	for (ssize_t s = 0; s * SECTOR < n; s++) {
		unsigned char c = buf[s * SECTOR];
		for (ssize_t i = s * SECTOR; i < n && i < (s + 1) * SECTOR; i++)
			if (buf[i] != c)
				c = '?';
		fputc(c, out);
	}
}

static int check(const char *dev, const char *batch, const char *out)
{
	const char *cycle = getenv("KEEL_TORTURE_CYCLE");
	printf("k v\n");
	if (!cycle || atoi(cycle) == 0)
		return 0;
	FILE *o = fopen(out, "a");
	if (!o)
		die(out);
	for (int j = 0; j < nlist; j++) {
		fprintf(o, "%s|%s|%s:%s|", list[j], dev, batch, cycle);
		print_file(o, 'a', j);
		fputc('|', o);
		print_file(o, 'b', j);
		fputc('\n', o);
	}
	if (fclose(o) != 0)
		die(out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3) {
		dir = argv[1];
		read_list(argv[2]);
		return workload();
	}
	if (argc == 7 && strcmp(argv[2], "--check") == 0) {
		dir = argv[1];
		read_list(argv[3]);
		return check(argv[4], argv[5], argv[6]);
	}
	fprintf(stderr, "usage: ops DIR LIST | ops DIR --check LIST DEVICE "
	        "BATCH OUT\n");
	return 2;
}
