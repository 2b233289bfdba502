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
 * and model.py's extended alphabet (gen-ext):
 *
 *   Of0   Of1  a pwrite as on an O_SYNC descriptor (the record ended
 *              durable, as the shim ends it)
 *   Kf1   a pwrite at 2 KiB through a dup of f's descriptor
 *   Mf    a store of 4 KiB at 0 through f's shared mapping: the page
 *         recorded at its first store since the last seal, as the shim's
 *         fault handler records it
 *   Xf    msync(MS_SYNC) of f's mapping (seal, then a data sync)
 *   Af    msync(MS_ASYNC) of it (nothing recorded)
 *   Y     syncfs of the directory: every file's records and the names
 *   Ef    an fsync of f that fails with EIO: the cache's sync_end with
 *         -EIO under PROFILE (--profile; ext4 when absent)
 *
 * and its sizes' alphabet (gen-size), each made as the shim makes it:
 *
 *   Pf    a write(2) of 4 KiB through a descriptor of f's own opened with
 *         O_APPEND: recorded at the end the cache knows (SEEK_END)
 *   Gf    fallocate(0, 0, 10 KiB): an extension, when it grows the file
 *   Hf    fallocate(FALLOC_FL_KEEP_SIZE, 8 KiB, 4 KiB): nothing recorded
 *   Zf    fallocate(PUNCH_HOLE | KEEP_SIZE, 3 KiB, 4 KiB): a write of
 *         zeros over the range, clipped at the file's size
 *   Qf    fallocate(ZERO_RANGE, 6 KiB, 4 KiB): a write of zeros, not
 *         clipped (DIR must be on a file system that has it: not tmpfs)
 *   Bf1   a pwrite at 2 KiB through dup2(f's descriptor, a descriptor
 *         open on the other file): the cache finds its file by inode
 *   Rf1   a pwrite at 2 KiB through f's descriptor sent to the driver
 *         itself over a socketpair (SCM_RIGHTS)
 *
 * Before every recorded change and every sync of f the driver seals f's
 * mapped records, as the shim does at a flush point.
 *
 * The Nth op (from 0) writes the byte 'A' + N.  After the last op the power
 * fails: faultsim_cache_crash under the device models ordered, reorder and
 * torn (512-byte sectors; --devices LIST, comma-separated, names others:
 * garbage, payload) with seeds 0 .. SEEDS-1, and the files as the crash
 * left them are printed, one line each:
 *
 *   WORKLOAD|DEVICE|SEED|a=SECTORS|b=SECTORS[|p=PROFILE]
 *
 * (the profile's field only under --profile).
 * SECTORS: the byte of each 512-byte sector (every write covers whole
 * sectors; a sector of zeros prints '0', one that is not one byte
 * throughout '?').  Exit 0, or 1 with a message when a call fails.
 *
 *   driver DIR SEEDS --names FS < WORKLOADS
 *
 * The same for names.py's alphabet (its comment has it) under the file
 * system model FS: DIR starts with file a (one sector of 'i') and an empty
 * directory s, durable; the calls are the simulator's I/O table's (open
 * with create, rename, unlink, fsync, fsync_dir) and, for what the table
 * has not, the cache's own begin/end pair around the real call, as the shim
 * makes it (link: a create of the new name; mkdir: not recorded).  Lines:
 *
 *   WORKLOAD|FS|DEVICE|SEED|a=V|b=V|c=V|m=V
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultsim.h"

#define FILE_SIZE 8192
#define SECTOR 512
#define MAX_SIZE (64 * 1024)   /* the most a file grows to here (printed) */

static const keel_io *io;
static faultsim_cache *cache;
static char dir[4096];
static const char *profile_name;          /* --profile, or NULL */
static faultsim_profile profile = FAULTSIM_PROFILE_EXT4;
static unsigned char *map[2];             /* a and b, shared, 8 KiB     */
static int writable[2];                   /* page 0 recorded, unsealed  */

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
		    io->ftruncate(io->ctx, fd[i], FILE_SIZE) != 0 ||
		    io->fsync(io->ctx, fd[i]) != 0)
			die("reset");
	if (io->fsync_dir(io->ctx, dir) != 0)
		die("fsync_dir");
}

static void print_file(char f)
{
	char p[4200];
	static unsigned char buf[MAX_SIZE + 1];
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
		putchar(c ? c : '0');
	}
}

static const char *const devnames[] = { "ordered", "reorder", "torn",
	                                 "garbage", "payload" };

static const char *devname(faultsim_device dev)
{
	return devnames[dev];
}

static void unwritable(void *arg, uint64_t off, uint64_t len, uint32_t tag)
{
	(void)arg;
	(void)off;
	(void)len;
	writable[tag] = 0;
}

static int file_of(int fd)
{
	int file = faultsim_cache_file_of(cache, fd);
	if (file < 0)
		die("faultsim_cache_file_of");
	return file;
}

/* a flush point of the file open as FD: its mapped records take its bytes */
static void seal(int fd)
{
	faultsim_ticket t = { 0 };
	faultsim_cache_map_lock(cache, &t);
	int rc = faultsim_cache_map_seal(&t, file_of(fd), fd, (uint32_t)getpid(),
	                                 unwritable, NULL);
	faultsim_cache_map_unlock(&t);
	if (rc < 0)
		die("faultsim_cache_map_seal");
}

/* a pwrite of 4 KiB of BYTE at OFF recorded by hand: through FD, on the
 * file of OF; durable at once when DURABLE; OFF < 0: a write(2) at the
 * end (FD opened O_APPEND), the offset the cache's */
static void write_by_hand(int fd, int of, int byte, off_t off, int durable)
{
	static unsigned char chunk[4096];
	faultsim_ticket t = { 0 };
	uint64_t at = off < 0 ? 0 : (uint64_t)off;
	memset(chunk, byte, sizeof chunk);
	if (faultsim_cache_write_begin_at(cache, file_of(of), fd, chunk,
	                                  sizeof chunk, off < 0 ? SEEK_END
	                                  : SEEK_SET, &at, &t) != 0)
		die("faultsim_cache_write_begin");
	ssize_t n = off < 0 ? write(fd, chunk, sizeof chunk)
	                    : pwrite(fd, chunk, sizeof chunk, off);
	if (durable)
		faultsim_cache_write_end_durable(&t, n);
	else
		faultsim_cache_write_end(&t, n);
	if (n != sizeof chunk)
		die("pwrite");
}

/* a range zeroed in FD with MODE as the shim records it: a write of zeros
 * over [OFF, OFF + LEN), clipped at the file's size under KEEP_SIZE */
static void zero_by_hand(int fd, int mode, off_t off, off_t len)
{
	off_t asked = len;
	static unsigned char zeros[4096];
	faultsim_ticket t = { 0 };
	struct stat st;
	if (fstat(fd, &st) != 0)
		die("fstat");
	if ((mode & FALLOC_FL_KEEP_SIZE) && off + len > st.st_size)
		len = off < st.st_size ? st.st_size - off : 0;
	if (faultsim_cache_write_begin(cache, file_of(fd), fd, zeros,
	                               (size_t)len, (uint64_t)off, &t) != 0)
		die("faultsim_cache_write_begin");
	int rc = fallocate(fd, mode, off, asked);
	faultsim_cache_write_end(&t, rc == 0 ? (ssize_t)len : -errno);
	if (rc != 0)
		die("fallocate(PUNCH_HOLE or ZERO_RANGE)");
}

/* FD sent over a socketpair to the driver itself: the descriptor received */
static int pass_fd(int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	                    .msg_control = u.buf,
	                    .msg_controllen = sizeof u.buf };
	int sv[2], got = -1;

	memset(&u, 0, sizeof u);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sv[0], &m, 0) != 1)
		die("sendmsg");
	memset(&u, 0, sizeof u);
	m.msg_controllen = sizeof u.buf;
	if (recvmsg(sv[1], &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) ||
	    c->cmsg_type != SCM_RIGHTS)
		die("recvmsg");
	memcpy(&got, CMSG_DATA(c), sizeof got);
	close(sv[0]);
	close(sv[1]);
	return got;
}

static void run(const char *workload, faultsim_device dev, uint64_t seed)
{
	static unsigned char chunk[4096];
	char ops[512];
	int fd[2] = { open_file('a'), open_file('b') }, n = 0;

	reset(fd);
	for (int i = 0; i < 2; i++) {
		map[i] = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		              fd[i], 0);
		if (map[i] == MAP_FAILED)
			die("mmap");
		writable[i] = 0;
	}
	snprintf(ops, sizeof ops, "%s", workload);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int f = op[1] == 'b';
		if (op[0] == 'Y') {                 /* flush points */
			seal(fd[0]);
			seal(fd[1]);
		} else if (strchr("WTOKSDXEPGHZQBR", op[0])) {
			seal(fd[f]);
		}
		if (op[0] == 'O' || op[0] == 'K') {
			int d = op[0] == 'K' ? dup(fd[f]) : fd[f];
			if (d < 0)
				die("dup");
			write_by_hand(d, fd[f], 'A' + n, op[2] == '1' ? 2048 : 0,
			              op[0] == 'O');
			if (d != fd[f])
				close(d);
		} else if (op[0] == 'P') {
			char p[4200];
			snprintf(p, sizeof p, "%s/%c", dir, "ab"[f]);
			int d = open(p, O_RDWR | O_APPEND);
			if (d < 0)
				die("open(O_APPEND)");
			write_by_hand(d, fd[f], 'A' + n, -1, 0);
			close(d);
		} else if (op[0] == 'G') {
			if (io->fallocate(io->ctx, fd[f], 0, 10240) != 0)
				die("fallocate");
		} else if (op[0] == 'H') {
			if (fallocate(fd[f], FALLOC_FL_KEEP_SIZE, FILE_SIZE,
			              4096) != 0)
				die("fallocate(KEEP_SIZE)");
		} else if (op[0] == 'Z') {
			zero_by_hand(fd[f], FALLOC_FL_PUNCH_HOLE |
			             FALLOC_FL_KEEP_SIZE, 3072, 4096);
		} else if (op[0] == 'Q') {
			zero_by_hand(fd[f], FALLOC_FL_ZERO_RANGE, 6144, 4096);
		} else if (op[0] == 'B' || op[0] == 'R') {
			char p[4200];
			int d;
			snprintf(p, sizeof p, "%s/%c", dir, "ba"[f]);
			if (op[0] == 'B') {
				/* over a descriptor open on the other file */
				if ((d = open(p, O_RDWR)) < 0 ||
				    dup2(fd[f], d) != d)
					die("dup2");
			} else if ((d = pass_fd(fd[f])) < 0) {
				die("SCM_RIGHTS");
			}
			/* its file found from the descriptor alone */
			write_by_hand(d, d, 'A' + n, 2048, 0);
			close(d);
		} else if (op[0] == 'M') {
			if (!writable[f]) {
				faultsim_ticket t = { 0 };
				faultsim_cache_map_lock(cache, &t);
				int rc = faultsim_cache_map_record(
				        &t, file_of(fd[f]), fd[f], 0, 4096,
				        (uint32_t)getpid(), (uint32_t)f);
				faultsim_cache_map_unlock(&t);
				if (rc != 1)
					die("faultsim_cache_map_record");
				writable[f] = 1;
			}
			memset(map[f], 'A' + n, 4096);
		} else if (op[0] == 'X') {
			uint64_t mark = faultsim_cache_sync_begin(cache);
			int rc = msync(map[f], FILE_SIZE, MS_SYNC);
			(void)faultsim_cache_sync_end(cache, file_of(fd[f]), mark,
			                              rc ? -errno : 0, profile);
			if (rc)
				die("msync");
		} else if (op[0] == 'A') {
			if (msync(map[f], FILE_SIZE, MS_ASYNC) != 0)
				die("msync");
		} else if (op[0] == 'Y') {
			uint64_t mark = faultsim_cache_sync_begin(cache);
			int d = open(dir, O_RDONLY | O_DIRECTORY);
			if (d < 0 || syncfs(d) != 0)
				die("syncfs");
			close(d);
			for (uint32_t i = 0; i < faultsim_cache_nfiles(cache); i++)
				(void)faultsim_cache_sync_end(cache, (int)i, mark, 0,
				                              profile);
			faultsim_cache_dir_sync_end(cache, dir, mark, 0);
		} else if (op[0] == 'E') {
			uint64_t mark = faultsim_cache_sync_begin(cache);
			(void)fsync(fd[f]);
			(void)faultsim_cache_sync_end(cache, file_of(fd[f]), mark,
			                              -EIO, profile);
		} else if (op[0] == 'W') {
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
	/* the crash seals what is unsealed from the file as it stands */
	if (faultsim_cache_crash(cache, &o, &rep) != 0)
		die("crash");
	munmap(map[0], FILE_SIZE);
	munmap(map[1], FILE_SIZE);
	printf("%s|%s|%llu|", workload, devname(dev), (unsigned long long)seed);
	print_file('a');
	putchar('|');
	print_file('b');
	if (profile_name)
		printf("|p=%s", profile_name);
	putchar('\n');
}

/* ---- names (names.py) ------------------------------------------------ */

static char *name_at(char x)
{
	static char p[2][4200];
	static int k;
	k ^= 1;
	if (x == 'c')
		snprintf(p[k], sizeof p[k], "%s/s/c", dir);
	else
		snprintf(p[k], sizeof p[k], "%s/%c", dir, x);
	return p[k];
}

static int rm_entry(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
	(void)st;
	(void)type;
	return ftw->level == 0 ? 0 : remove(path);
}

/* one sector of BYTE to the new file X */
static void create_file(char x, int byte)
{
	static unsigned char sec[SECTOR];
	int fd = io->open(io->ctx, name_at(x), KEEL_IO_CREATE | KEEL_IO_EXCL,
	                  0644);
	memset(sec, byte, sizeof sec);
	if (fd < 0 || io->pwrite(io->ctx, fd, sec, SECTOR, 0) != SECTOR)
		die("create");
	io->close(io->ctx, fd);
}

/* the start: D/a, one sector of 'i', and D/s, both durable */
static void names_reset(void)
{
	if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		die("emptying the directory");
	create_file('a', 'i');
	int fd = io->open(io->ctx, name_at('a'), 0, 0);
	if (fd < 0 || io->fsync(io->ctx, fd) != 0)
		die("fsync of a");
	io->close(io->ctx, fd);
	if (mkdir(name_at('s'), 0755) != 0 ||
	    io->fsync_dir(io->ctx, dir) != 0)
		die("the directory s");
}

/* "x=V" (names.py's state): '-' no such name, 'd' a directory, 'e' an
 * empty file, else the byte of its one sector ('0' zeros, '?' mixed) */
static void print_name(char x)
{
	unsigned char buf[SECTOR + 1];
	struct stat st;
	const char *p = name_at(x);
	int v = '-';
	if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
		v = 'd';
	} else if (lstat(p, &st) == 0) {
		FILE *fp = fopen(p, "rb");
		size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
		if (fp)
			fclose(fp);
		v = n == 0 ? 'e' : n != SECTOR ? '?' : buf[0] ? buf[0] : '0';
		for (size_t i = 0; i < n; i++)
			if (buf[i] != buf[0])
				v = '?';
	}
	printf("%s%c=%c", x == 'a' ? "" : "|", x, v);
}

static void names_run(const char *workload, const char *fs,
                      faultsim_device dev, uint64_t seed)
{
	char ops[512];
	int n = 0;

	names_reset();
	snprintf(ops, sizeof ops, "%s", workload);
	for (char *op = strtok(ops, " "); op; op = strtok(NULL, " "), n++) {
		int rc = 0, fd;
		if (op[0] == 'C') {
			create_file(op[1], 'A' + n);
		} else if (op[0] == 'R') {
			rc = io->rename(io->ctx, name_at(op[1]), name_at(op[2]));
		} else if (op[0] == 'U') {
			rc = io->unlink(io->ctx, name_at(op[1]));
		} else if (op[0] == 'L') {
			/* as the shim makes it: the new name recorded as a
			 * create, then the real link */
			faultsim_ticket t = { 0 };
			const char *to = name_at(op[2]), *from = name_at(op[1]);
			if ((rc = faultsim_cache_create_begin(cache, to, &t)) == 0) {
				rc = link(from, to) == 0 ? 0 : -1;
				faultsim_cache_namespace_end(&t, rc);
			}
		} else if (op[0] == 'F') {
			fd = io->open(io->ctx, name_at(op[1]), 0, 0);
			rc = fd < 0 ? -1 : io->fsync(io->ctx, fd);
			if (fd >= 0)
				io->close(io->ctx, fd);
		} else if (op[0] == 'Y') {
			rc = io->fsync_dir(io->ctx, op[1] == 's' ? name_at('s')
			                                         : dir);
		} else if (op[0] == 'M') {
			rc = mkdir(name_at('m'), 0755);
		} else {
			die("an unknown op");
		}
		if (rc != 0)
			die(op);
	}
	faultsim_crash_options o = { dev, SECTOR, seed };
	faultsim_crash_report rep;
	if (faultsim_cache_crash(cache, &o, &rep) != 0)
		die("crash");
	printf("%s|%s|%s|%llu|", workload, fs, devname(dev),
	       (unsigned long long)seed);
	print_name('a');
	print_name('b');
	print_name('c');
	print_name('m');
	putchar('\n');
}

int main(int argc, char **argv)
{
	faultsim_faults *faults;
	faultsim_io *fio;
	char line[512];

	const char *fs = NULL;
	faultsim_fs fsm = FAULTSIM_FS_POSIX;
	char real[PATH_MAX];
	faultsim_device devs[5] = { FAULTSIM_DEVICE_ORDERED,
	                            FAULTSIM_DEVICE_REORDER,
	                            FAULTSIM_DEVICE_TORN };
	int ndevs = 3;

	/* [--profile P | --names FS] [--devices LIST] */
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 == argc)
			return 2;
		if (strcmp(argv[i], "--profile") == 0 && !fs) {
			profile_name = argv[i + 1];
			if (faultsim_profile_parse(profile_name, &profile) != 0)
				return 2;
		} else if (strcmp(argv[i], "--names") == 0 && !profile_name) {
			fs = argv[i + 1];
			if (faultsim_fs_parse(fs, &fsm) != 0)
				return 2;
		} else if (strcmp(argv[i], "--devices") == 0) {
			char list[64];
			ndevs = 0;
			snprintf(list, sizeof list, "%s", argv[i + 1]);
			for (char *d = strtok(list, ","); d; d = strtok(NULL, ",")) {
				int k = 0;
				while (k < 5 && strcmp(d, devnames[k]) != 0)
					k++;
				if (k == 5 || ndevs == 5)
					return 2;
				devs[ndevs++] = (faultsim_device)k;
			}
		} else {
			return 2;
		}
	}
	if (argc < 3 || !realpath(argv[1], real))
		return 2;
	snprintf(dir, sizeof dir, "%s", real);
	uint64_t seeds = strtoull(argv[2], NULL, 10);
	if (faultsim_cache_create(4u << 20, &cache) != 0 ||
	    faultsim_faults_create(1, &faults) != 0 ||
	    faultsim_cache_set_fs(cache, fsm) != 0)
		die("the cache");
	faultsim_io_options opt = { cache, faults, faultsim_fs_profile(fsm) };
	if (faultsim_io_new(&opt, &fio) != 0)
		die("the I/O table");
	io = faultsim_io_table(fio);
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		for (uint64_t s = 0; s < seeds; s++)
			for (int k = 0; k < ndevs; k++) {
				if (fs)
					names_run(line, fs, devs[k], s);
				else
					run(line, devs[k], s);
			}
	}
	faultsim_io_free(fio);
	faultsim_faults_destroy(faults);
	faultsim_cache_destroy(cache);
	return 0;
}
