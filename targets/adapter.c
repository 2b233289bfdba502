/*
 * adapter.c -- the command line and workload loop every adapter shares
 * (adapter.h).
 */
#include "adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One protocol line in one write(2), so concurrent writers never mix. */
static void say(int fd, const char *line)
{
	size_t n = strlen(line);

	if (write(fd, line, n) != (ssize_t)n) {
		perror("adapter: writing a protocol line");
		exit(3);
	}
}

static void usage(const adapter *a)
{
	fprintf(stderr, "usage: %s DIR CONFIG [--check] | --configs | "
	        "--version\nconfigurations of %s:", a->name, a->name);
	for (int i = 0; a->configs[i]; i++)
		fprintf(stderr, " %s", a->configs[i]);
	fprintf(stderr, "\n");
}

static int find_config(const adapter *a, const char *name)
{
	for (int i = 0; a->configs[i]; i++)
		if (strcmp(a->configs[i], name) == 0)
			return i;
	return -1;
}

/* Intent, put, ack, ADAPTER_OPS_PER_LIFE times (0), or until a put fails (3). */
static int workload(const adapter *a, void *store, int fd)
{
	const char *seed = getenv("KEEL_TORTURE_SEED");
	char line[160], key[16], val[48];

	srand((unsigned)strtoul(seed ? seed : "1", NULL, 10));
	for (unsigned long op = 1;; op++) {
		/* a bounded life: the shim tracks at most 256 new files per
		 * crash window, and recipes that create a file per put
		 * (KEY.tmp, SQLite's rollback journal) would pass that in a
		 * long one.  It waits for the kill rather than exit: closing
		 * the store would flush it (redis-server syncs its AOF on
		 * SHUTDOWN) and hide what the configuration leaves unsynced */
		if (op > ADAPTER_OPS_PER_LIFE)
			for (;;)
				pause();
		snprintf(key, sizeof key, "k%d", rand() % ADAPTER_KEYS);
		snprintf(val, sizeof val, "v%lu.%d", op, rand() % 1000);
		snprintf(line, sizeof line, "intent %lu %s %s\n", op, key, val);
		say(fd, line);
		if (a->put(store, key, val) != 0) {
			fprintf(stderr, "%s: put %s failed: stopping\n",
			        a->name, key);
			return 3;
		}
		snprintf(line, sizeof line, "ack %lu\n", op);
		say(fd, line);
	}
}

static int printable(const unsigned char *p, size_t n)
{
	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] <= ' ' || p[i] > '~')
			return 0;
	return 1;
}

int adapter_emit(const void *key, size_t klen, const void *val, size_t vlen)
{
	if (!key || !val || !printable(key, klen) || !printable(val, vlen)) {
		fprintf(stderr, "damaged store: the engine returned an entry "
		        "no put wrote (a %zu-byte key, a %zu-byte value, not "
		        "1-255 printable bytes)\n", key ? klen : 0,
		        val ? vlen : 0);
		return -1;
	}
	printf("%.*s %.*s\n", (int)klen, (const char *)key, (int)vlen,
	       (const char *)val);
	return 0;
}

int adapter_main(const adapter *a, int argc, char **argv)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	void *store = NULL;
	int config, rc;

	if (argc == 2 && strcmp(argv[1], "--configs") == 0) {
		for (int i = 0; a->configs[i]; i++)
			printf("%s\n", a->configs[i]);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("%s\n", a->version());
		return 0;
	}
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--check"))) {
		usage(a);
		return 2;
	}
	if ((config = find_config(a, argv[2])) < 0) {
		fprintf(stderr, "%s: unknown configuration '%s'\n", a->name,
		        argv[2]);
		usage(a);
		return 2;
	}
	if (argc == 3 && !env) {
		fprintf(stderr, "%s: the workload runs under torture --target "
		        "%s:%s (KEEL_TORTURE_FD is not set)\n", a->name, a->name,
		        argv[2]);
		return 2;
	}
	if (a->open(argv[1], config, &store) != 0) {
		if (store) /* what the open had set up (a server it started) */
			a->close(store);
		return argc == 4 ? 1 : 3;
	}
	if (argc == 4) {
		rc = a->check(store) == 0 ? 0 : 1;
		if (fflush(stdout) != 0)
			rc = 1;
	} else {
		rc = workload(a, store, atoi(env));
	}
	a->close(store);
	return rc;
}
