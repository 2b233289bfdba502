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
 * (ftruncate to 4 KiB), Sf (fsync), Df (fdatasync) over files a and b, and
 * of its extended alphabet (gen-ext) Of0, Of1 (a pwrite through a
 * descriptor of its own opened write-only with O_SYNC), Kf1 (a pwrite
 * through a dup), Mf (a store of 4 KiB at 0 through a shared mapping of the
 * file), Xf and Af (msync of that mapping, MS_SYNC and MS_ASYNC); Y and Ef
 * are the driver's only (a syncfs would sync every workload of the batch,
 * a failed fsync needs --fail).  The
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
 *
 *   ops DIR --names LIST                              (the workload)
 *   ops DIR --check-names LIST FS DEVICE BATCH OUT    (its checker)
 *
 * The same for names.py's alphabet (its comment has it): the Jth workload
 * works in DIR/wJ, which starts with a (one sector of 'i') and an empty
 * directory s, durable; the checker appends driver.c --names's lines:
 *
 *   WORKLOAD|FS|DEVICE|BATCH:CYCLE|a=V|b=V|c=V|m=V
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* workload J's shared mapping of its file F (8 KiB), made at first use */
static unsigned char *mapping(int j, int f, int fd)
{
	static unsigned char *map[MAX_WORKLOADS][2];
	if (!map[j][f]) {
		void *p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE,
		               MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap");
		map[j][f] = p;
	}
	return map[j][f];
}

static void run(const char *w, int fd[2], int j)
{
	static unsigned char buf[4096];
	char ops[512];
	int n = 0;

	snprintf(ops, sizeof ops, "%s", w);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int f = op[1] == 'b', rc = 0;
		off_t off = op[2] == '1' ? 2048 : 0;
		memset(buf, 'A' + n, sizeof buf);
		if (op[0] == 'W') {
			rc = pwrite(fd[f], buf, sizeof buf, off) == sizeof buf ? 0
			                                                      : -1;
		} else if (op[0] == 'O' || op[0] == 'K') {
			int d = op[0] == 'K' ? dup(fd[f])
			                     : open(at("ab"[f], j), O_WRONLY | O_SYNC);
			rc = d >= 0 && pwrite(d, buf, sizeof buf, off) == sizeof buf
			     ? 0 : -1;
			if (d >= 0)
				close(d);
		} else if (op[0] == 'M') {
			memset(mapping(j, f, fd[f]), 'A' + n, 4096);
		} else if (op[0] == 'X' || op[0] == 'A') {
			rc = msync(mapping(j, f, fd[f]), FILE_SIZE,
			           op[0] == 'X' ? MS_SYNC : MS_ASYNC);
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
		run(list[j], fd[j], j);
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

/* ---- names (names.py's alphabet) ------------------------------------- */

/* NAME of workload J: a, b in DIR/wJ; c in DIR/wJ/s; s, m the directories */
static char *name_at(int j, char x)
{
	static char p[2][4200];
	static int k;
	k ^= 1;
	snprintf(p[k], sizeof p[k], x == 'c' ? "%s/w%d/s/c" : x ? "%s/w%d/%c"
	         : "%s/w%d", dir, j, x);
	return p[k];
}

static void fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fsync(fd) != 0)
		die(path);
	close(fd);
}

static void create_file(const char *path, int byte)
{
	unsigned char sec[SECTOR];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	memset(sec, byte, sizeof sec);
	if (fd < 0 || write(fd, sec, SECTOR) != SECTOR)
		die(path);
	close(fd);
}

/* the start of each workload: DIR/wJ/a, one sector of 'i', and an empty
 * DIR/wJ/s, durable (what the last cut left is removed first) */
static void names_start(int j)
{
	struct stat st;
	if (stat(name_at(j, 0), &st) != 0 && mkdir(name_at(j, 0), 0755) != 0)
		die("mkdir");
	if (stat(name_at(j, 's'), &st) != 0 && mkdir(name_at(j, 's'), 0755))
		die("mkdir");
	for (const char *x = "abc"; *x; x++)
		if (unlink(name_at(j, *x)) != 0 && errno != ENOENT)
			die("unlink");
	if (rmdir(name_at(j, 'm')) != 0 && errno != ENOENT)
		die("rmdir");
	create_file(name_at(j, 'a'), 'i');
	fsync_path(name_at(j, 'a'));
	fsync_path(name_at(j, 's'));
	fsync_path(name_at(j, 0));
}

static void names_run(int j, const char *w)
{
	char ops[512];
	int n = 0;

	snprintf(ops, sizeof ops, "%s", w);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int rc = 0;
		if (op[0] == 'C')
			create_file(name_at(j, op[1]), 'A' + n);
		else if (op[0] == 'R')
			rc = rename(name_at(j, op[1]), name_at(j, op[2]));
		else if (op[0] == 'U')
			rc = unlink(name_at(j, op[1]));
		else if (op[0] == 'L')
			rc = link(name_at(j, op[1]), name_at(j, op[2]));
		else if (op[0] == 'F')
			fsync_path(name_at(j, op[1]));
		else if (op[0] == 'Y')
			fsync_path(name_at(j, op[1] == 's' ? 's' : 0));
		else if (op[0] == 'M')
			rc = mkdir(name_at(j, 'm'), 0755);
		else
			errno = EINVAL, rc = -1;
		if (rc != 0)
			die(op);
	}
}

static int names_workload(void)
{
	const char *p = getenv("KEEL_TORTURE_FD");
	int proto = p ? atoi(p) : -1;

	if (proto < 0)
		die("KEEL_TORTURE_FD");
	for (int j = 0; j < nlist; j++)
		names_start(j);
	fsync_path(dir);
	say(proto, "intent 0 k v\n");
	say(proto, "ack 0\n");
	for (int j = 0; j < nlist; j++)
		names_run(j, list[j]);
	return 0;
}

/* "x=V" as driver.c prints it (names.py's state) */
static void print_name(FILE *out, int j, char x)
{
	unsigned char buf[SECTOR + 1];
	struct stat st;
	const char *p = name_at(j, x);
	int v = '-';
	if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
		v = 'd';
	} else if (lstat(p, &st) == 0) {
		int fd = open(p, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : 0;
		if (fd >= 0)
			close(fd);
		v = n == 0 ? 'e' : n != SECTOR ? '?' : buf[0] ? buf[0] : '0';
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != buf[0])
				v = '?';
	}
	fprintf(out, "%s%c=%c", x == 'a' ? "" : "|", x, v);
}

static int names_check(const char *fs, const char *dev, const char *batch,
                       const char *out)
{
	const char *cycle = getenv("KEEL_TORTURE_CYCLE");
	printf("k v\n");
	if (!cycle || atoi(cycle) == 0)
		return 0;
	FILE *o = fopen(out, "a");
	if (!o)
		die(out);
	for (int j = 0; j < nlist; j++) {
		fprintf(o, "%s|%s|%s|%s:%s|", list[j], fs, dev, batch, cycle);
		for (const char *x = "abcm"; *x; x++)
			print_name(o, j, *x);
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
	if (argc == 4 && strcmp(argv[2], "--names") == 0) {
		dir = argv[1];
		read_list(argv[3]);
		return names_workload();
	}
	if (argc == 8 && strcmp(argv[2], "--check-names") == 0) {
		dir = argv[1];
		read_list(argv[3]);
		return names_check(argv[4], argv[5], argv[6], argv[7]);
	}
	fprintf(stderr, "usage: ops DIR LIST | ops DIR --check LIST DEVICE "
	        "BATCH OUT\n       ops DIR --names LIST | ops DIR --check-names "
	        "LIST FS DEVICE BATCH OUT\n");
	return 2;
}
