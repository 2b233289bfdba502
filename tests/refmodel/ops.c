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
 * a failed fsync needs --fail).  And of its sizes' alphabet (gen-size): Pf
 * (a write(2) of 4 KiB through a descriptor of its own opened write-only
 * with O_APPEND), Gf (fallocate(0, 0, 10 KiB)), Hf (fallocate(KEEP_SIZE,
 * 8 KiB, 4 KiB)), Zf (fallocate(PUNCH_HOLE | KEEP_SIZE, 3 KiB, 4 KiB)),
 * Bf1 (a pwrite at 2 KiB through dup2 of f's descriptor over one opened
 * on the other file), Rf1 (f's descriptor sent over a socketpair with
 * SCM_RIGHTS to a forked child, which makes a pwrite at 2 KiB through the
 * descriptor it received and exits), Qf (fallocate(ZERO_RANGE, 6 KiB,
 * 4 KiB): DIR on a file system that has it, not tmpfs).  The
 * Jth workload of LIST (from 0) works on its own pair of files, aJ and bJ
 * of DIR.  The workload first makes every pair 8 KiB of 'i' and durable
 * (written, cut to 8 KiB where a cut left it longer, one syncfs: few calls,
 * as each is a crash point of --enumerate), acknowledges one key for torture's
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
 *   ops DIR LIST LOG                           (under --enumerate)
 *   ops DIR --check LIST DEVICE BATCH OUT LOG
 *
 * Under torture --enumerate the workload is killed at each of its calls in
 * turn, so the workload appends "J N" to LOG, outside DIR, before the Nth
 * op of workload J.  The checker prints the key only when LOG shows that
 * the start was acknowledged, and appends the workloads before the last J
 * whole, and that one as "OPS [OP]": its ops before N, and op N, which
 * may have been made or not (model.py judges both); the later ones were
 * not begun and are not printed.  Its lines' seeds read eBATCH:CYCLE
 * (one cut per crash point: model.py judges their soundness only).
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
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE 8192
#define SECTOR 512
#define MAX_WORKLOADS 2048
#define MAX_SIZE (64 * 1024)   /* the most a file grows to here (printed) */

static const char *dir;
static int log_fd = -1;                   /* --enumerate's LOG, or -1 */
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

/* Rf1: FD sent with SCM_RIGHTS to a forked child, which writes BUF at OFF
 * through the descriptor it received.  A child killed (a crash point of
 * --enumerate) takes the workload with it. */
static int write_in_child(int fd, const unsigned char *buf, off_t off)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} u;
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	                    .msg_control = u.space,
	                    .msg_controllen = sizeof u.space };
	int sv[2], status;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int got = -1;
		close(sv[0]);
		memset(&u, 0, sizeof u);
		struct cmsghdr *c;
		if (recvmsg(sv[1], &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) ||
		    c->cmsg_type != SCM_RIGHTS)
			_exit(3);
		memcpy(&got, CMSG_DATA(c), sizeof got);
		exit(pwrite(got, buf, 4096, off) == 4096 ? 0 : 4);
	}
	close(sv[1]);
	memset(&u, 0, sizeof u);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	ssize_t sent = sendmsg(sv[0], &m, 0);
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		kill(getpid(), WTERMSIG(status));
	return sent == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0
	       ? 0 : -1;
}

/* --enumerate: "J N" before op N of workload J */
static void note(int j, int n)
{
	char line[32];
	int len = snprintf(line, sizeof line, "%d %d\n", j, n);
	if (log_fd >= 0 && write(log_fd, line, (size_t)len) != len)
		die("the log");
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
		note(j, n);
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
		} else if (op[0] == 'P') {
			int d = open(at("ab"[f], j), O_WRONLY | O_APPEND);
			rc = d >= 0 && write(d, buf, sizeof buf) == sizeof buf
			     ? 0 : -1;
			if (d >= 0)
				close(d);
		} else if (op[0] == 'G') {
			rc = fallocate(fd[f], 0, 0, 10240);
		} else if (op[0] == 'H') {
			rc = fallocate(fd[f], FALLOC_FL_KEEP_SIZE, FILE_SIZE, 4096);
		} else if (op[0] == 'Z') {
			rc = fallocate(fd[f], FALLOC_FL_PUNCH_HOLE |
			               FALLOC_FL_KEEP_SIZE, 3072, 4096);
		} else if (op[0] == 'Q') {
			rc = fallocate(fd[f], FALLOC_FL_ZERO_RANGE, 6144, 4096);
		} else if (op[0] == 'B') {
			/* over a descriptor open on the other file */
			int d = open(at("ba"[f], j), O_RDWR);
			rc = d >= 0 && dup2(fd[f], d) == d &&
			     pwrite(d, buf, sizeof buf, off) == sizeof buf ? 0 : -1;
			if (d >= 0)
				close(d);
		} else if (op[0] == 'R') {
			rc = write_in_child(fd[f], buf, off);
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
		for (int i = 0; i < 2; i++) {
			struct stat st;
			if ((fd[j][i] = open(at("ab"[i], j), O_RDWR | O_CREAT,
			                     0644)) < 0 ||
			    pwrite(fd[j][i], init, FILE_SIZE, 0) != FILE_SIZE ||
			    fstat(fd[j][i], &st) != 0 ||
			    (st.st_size != FILE_SIZE &&
			     ftruncate(fd[j][i], FILE_SIZE) != 0))
				die("the durable start");
		}
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	if (d < 0 || syncfs(d) != 0)
		die("syncfs of the directory");
	close(d);
	say(proto, "intent 0 k v\n");
	say(proto, "ack 0\n");
	for (int j = 0; j < nlist; j++)
		run(list[j], fd[j], j);
	return 0;
}

static void print_file(FILE *out, char f, int j)
{
	static unsigned char buf[MAX_SIZE + 1];
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
		fputc(c ? c : '0', out);
	}
}

/* --enumerate: the last "J N" of LOG (-1 -1: none, the start was cut) */
static void last_note(const char *log, int *j, int *n)
{
	char line[64];
	FILE *f = fopen(log, "r");
	*j = *n = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%d %d", j, n) != 2)
			*j = *n = -1;
	if (f)
		fclose(f);
}

/* workload W cut short before its op N: "OPS [OP]" */
static const char *cut_short(const char *w, int n)
{
	static char out[600];
	char ops[512];
	int k = 0;
	size_t at = 0;

	snprintf(ops, sizeof ops, "%s", w);
	out[0] = '\0';
	for (char *op = strtok(ops, " "); op && k <= n; op = strtok(NULL, " "),
	     k++)
		at += (size_t)snprintf(out + at, sizeof out - at,
		                       k == n ? "%s[%s]" : "%s%s",
		                       at ? " " : "", op);
	return out;
}

static int check(const char *dev, const char *batch, const char *out,
                 const char *log)
{
	const char *cycle = getenv("KEEL_TORTURE_CYCLE");
	int last = nlist - 1, op = -1;
	if (log)
		last_note(log, &last, &op);
	if (last >= 0)
		printf("k v\n");
	if (!cycle || atoi(cycle) == 0 || last < 0)
		return 0;
	FILE *o = fopen(out, "a");
	if (!o)
		die(out);
	for (int j = 0; j <= last; j++) {
		fprintf(o, "%s|%s|%s%s:%s|", op >= 0 && j == last ?
		        cut_short(list[j], op) : list[j], dev, log ? "e" : "",
		        batch, cycle);
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
	if (argc == 3 || (argc == 4 && strcmp(argv[2], "--names") != 0)) {
		dir = argv[1];
		read_list(argv[2]);
		if (argc == 4 && (log_fd = open(argv[3], O_WRONLY | O_CREAT |
		                                O_TRUNC | O_APPEND, 0644)) < 0)
			die(argv[3]);
		return workload();
	}
	if ((argc == 7 || argc == 8) && strcmp(argv[2], "--check") == 0) {
		dir = argv[1];
		read_list(argv[3]);
		return check(argv[4], argv[5], argv[6], argc == 8 ? argv[7]
		                                                   : NULL);
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
	fprintf(stderr, "usage: ops DIR LIST [LOG] | ops DIR --check LIST DEVICE "
	        "BATCH OUT [LOG]\n       ops DIR --names LIST | ops DIR --check-names "
	        "LIST FS DEVICE BATCH OUT\n");
	return 2;
}
