/*
 * kv_files.c -- an example workload for torture --target exec
 * (docs/targets.md): a key-value store with one file per key.  A put writes
 * the value to KEY.tmp, fsyncs it, renames it over KEY and fsyncs the
 * directory; only then is it acknowledged.
 *
 *   kv_files DIR [--no-dir-sync] [--ops N]
 *                                    the workload (speaks the protocol on
 *                                    $KEEL_TORTURE_FD; N puts, default
 *                                    100000)
 *   kv_files DIR --check             the checker: prints "KEY VALUE" lines
 *
 * --no-dir-sync leaves the directory fsync out: the rename is then not
 * durable, and a power cut can bring the old value back after the put was
 * acknowledged.  torture --power-loss catches that.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEYS 8

/* One protocol line in one write(2). */
static void say(int fd, const char *line)
{
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		exit(3);
}

static int put(const char *dir, const char *key, const char *val,
               int dir_sync)
{
	char tmp[4096], path[4096];
	int fd, dfd;

	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, key);
	snprintf(path, sizeof path, "%s/%s", dir, key);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val) ||
	    fsync(fd) != 0 || close(fd) != 0)
		return -1;
	if (rename(tmp, path) != 0)
		return -1;
	if (!dir_sync)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) != 0)
		return -1;
	return close(dfd);
}

static int check(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096], val[256];

	if (!d)
		return 1;
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'k' || strchr(e->d_name, '.'))
			continue; /* KEY.tmp, and the simulator's stash files */
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, val, sizeof val - 1);
		if (fd >= 0)
			close(fd);
		if (n < 0)
			return 1;
		val[n] = '\0';
		printf("%s %s\n", e->d_name, n ? val : "<empty>");
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	char line[512], key[32], val[32];
	unsigned ops = 100000;
	int dir_sync = 1, fd;

	if (argc < 2)
		return 2;
	if (argc > 2 && strcmp(argv[2], "--check") == 0)
		return check(argv[1]);
	for (int a = 2; a < argc; a++) {
		if (strcmp(argv[a], "--no-dir-sync") == 0)
			dir_sync = 0;
		else if (strcmp(argv[a], "--ops") == 0 && a + 1 < argc)
			ops = (unsigned)atoi(argv[++a]);
	}
	if (!env)
		return 2;
	fd = atoi(env);
	srand((unsigned)strtoul(getenv("KEEL_TORTURE_SEED") ?
	                        getenv("KEEL_TORTURE_SEED") : "1", NULL, 10));
	for (unsigned i = 1; i <= ops; i++) {
		snprintf(key, sizeof key, "k%d", rand() % KEYS);
		snprintf(val, sizeof val, "v%u.%d", i, rand() % 1000);
		snprintf(line, sizeof line, "intent %u %s %s\n", i, key, val);
		say(fd, line);
		if (put(argv[1], key, val, dir_sync) != 0)
			return 1;
		snprintf(line, sizeof line, "ack %u\n", i);
		say(fd, line);
	}
	return 0;
}
