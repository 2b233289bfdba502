/*
 * keel_kv.c -- keel itself as a torture --target exec workload: the engine
 * on its plain POSIX backend, under the LD_PRELOAD shim, so the shim is
 * cross-checked against the model it reuses (docs/targets.md).
 *
 *   keel_kv DIR [--no-sync]   puts and deletes on DIR/kv.keel, each
 *                             acknowledged once keel_put/keel_del returned;
 *                             --no-sync opens with KEEL_UNSAFE_NO_SYNC (the
 *                             positive control: must be caught)
 *   keel_kv DIR --check       opens the store (recovery runs) and prints
 *                             every key and value
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keel.h"

#define KEYS 64

static void say(int fd, const char *line)
{
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		exit(3);
}

static int check(keel_db *db)
{
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	int rc;

	if (keel_snapshot_open(db, &s) != KEEL_OK)
		return 1;
	if (keel_iter_open(s, NULL, 0, NULL, 0, &it) != KEEL_OK)
		return 1;
	while ((rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK)
		printf("%.*s %.*s\n", (int)kl, (const char *)k, (int)v.len,
		       (const char *)v.data);
	keel_iter_close(it);
	keel_snapshot_close(s);
	return rc == KEEL_ENOTFOUND ? 0 : 1;
}

int main(int argc, char **argv)
{
	keel_options o = { 0 };
	char path[4096], key[16], val[48], line[128];
	const char *env = getenv("KEEL_TORTURE_FD");
	keel_db *db;
	int fd, rc;

	if (argc < 2)
		return 2;
	snprintf(path, sizeof path, "%s/kv.keel", argv[1]);
	if (argc > 2 && !strcmp(argv[2], "--no-sync"))
		o.flags |= KEEL_UNSAFE_NO_SYNC;
	rc = keel_open(path, &o, &db);
	if (rc != KEEL_OK) {
		fprintf(stderr, "keel_open %s: %s\n", path, keel_strerror(rc));
		return 1;
	}
	if (argc > 2 && !strcmp(argv[2], "--check")) {
		rc = check(db);
		return keel_close(db) == KEEL_OK ? rc : 1;
	}
	if (!env)
		return 2;
	fd = atoi(env);
	srand((unsigned)strtoul(getenv("KEEL_TORTURE_SEED"), NULL, 10));
	for (unsigned i = 1;; i++) {
		keel_view v;
		int k = rand() % KEYS;
		snprintf(key, sizeof key, "k%d", k);
		int present = keel_get(db, key, strlen(key), &v) == KEEL_OK;
		if (present)
			keel_view_release(&v);
		if (present && rand() % 5 == 0) {
			snprintf(line, sizeof line, "intent %u %s delete\n", i, key);
			say(fd, line);
			rc = keel_del(db, key, strlen(key), KEEL_REV_ANY, NULL);
		} else {
			snprintf(val, sizeof val, "v%u.%d", i, rand());
			snprintf(line, sizeof line, "intent %u %s %s\n", i, key, val);
			say(fd, line);
			rc = keel_put(db, key, strlen(key), val, strlen(val),
			              KEEL_REV_ANY, NULL);
		}
		if (rc != KEEL_OK) {
			fprintf(stderr, "keel: %s\n", keel_strerror(rc));
			return 1;
		}
		snprintf(line, sizeof line, "ack %u\n", i);
		say(fd, line);
	}
}
