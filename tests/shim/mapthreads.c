/*
 * mapthreads.c -- four threads storing into one shared mapping at once, for
 * tests/shim.sh: several threads fault on the same pages, and one thread's
 * msync meets another's stores half made.  Keys k0..k7 are 1 KiB slots over
 * two pages; thread T owns k(2T) and k(2T+1), so two threads share each
 * page.  A put stores its slot, then msync(MS_SYNC)s the slot's page, then
 * acknowledges.  "mapthreads DIR --check" is the checker.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KEYS 8
#define SLOT 32
#define MSLOT 1024

static unsigned char *map;
static int tfd;
static unsigned next_op;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void say(const char *line)
{
	if (write(tfd, line, strlen(line)) != (ssize_t)strlen(line))
		exit(3);
}

static void *writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg, seed = t + 1;
	char line[128], rec[SLOT];

	for (;;) {
		unsigned op = __atomic_add_fetch(&next_op, 1, __ATOMIC_RELAXED);
		int k = (int)(2 * t + rand_r(&seed) % 2);
		snprintf(line, sizeof line, "intent %u k%d v%u\n", op, k, op);
		say(line);
		memset(rec, ' ', sizeof rec);
		int n = snprintf(rec, sizeof rec, "k%d=v%u", k, op);
		rec[n] = ' ';
		rec[SLOT - 1] = '\n';
		memcpy(map + (size_t)k * MSLOT, rec, SLOT);
		if (msync(map + (size_t)k * MSLOT / 4096 * 4096, 4096,
		          MS_SYNC) != 0)
			die("msync");
		snprintf(line, sizeof line, "ack %u\n", op);
		say(line);
	}
	return NULL;
}

static void check(const char *p)
{
	char rec[SLOT + 1], v[64];
	int fd = open(p, O_RDONLY), k2;

	for (int k = 0; fd >= 0 && k < KEYS; k++) {
		ssize_t n = pread(fd, rec, SLOT, (off_t)k * MSLOT);
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (rec[0] == '\0')
			continue; /* never written */
		if (sscanf(rec, "k%d=%63s", &k2, v) == 2 && k2 == k)
			printf("k%d %s\n", k, v);
		else
			printf("k%d <garbage>\n", k);
	}
}

int main(int argc, char **argv)
{
	char p[4096], d[4096];
	pthread_t th[4];

	if (argc < 2)
		return 2;
	snprintf(p, sizeof p, "%s/mslots", argv[1]);
	if (argc > 2 && !strcmp(argv[2], "--check")) {
		check(p);
		return 0;
	}
	tfd = atoi(getenv("KEEL_TORTURE_FD"));
	int fd = open(p, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, KEYS * MSLOT) != 0 || fsync(fd) != 0)
		die("mslots");
	snprintf(d, sizeof d, "%s", argv[1]);
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) != 0)
		die("dir fsync");
	map = mmap(NULL, KEYS * MSLOT, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	           0);
	if (map == MAP_FAILED)
		die("mmap");
	for (uintptr_t t = 0; t < 4; t++)
		if (pthread_create(&th[t], NULL, writer, (void *)t) != 0)
			die("pthread_create");
	pthread_join(th[0], NULL);
	return 0;
}
