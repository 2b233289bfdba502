/*
 * keel.c -- keel itself as a torture --target keel:CONFIG adapter
 * (adapter.h): the engine on its plain POSIX backend under the shim, each
 * put acknowledged when keel_put returned.
 *
 *   default   keel_open with no flags
 *   no-sync   KEEL_UNSAFE_NO_SYNC: commits without a sync (the control)
 *
 * PATH.durable, the engine's durable marker, is memory shared with readers
 * and never read by recovery: torture runs this adapter with --volatile
 * '*.durable*'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"

#include "adapter.h"

static const char *const configs[] = { "default", "no-sync", NULL };

static const char *version(void)
{
	return KEEL_VERSION_STRING;
}

static int ke_open(const char *dir, int config, void **out)
{
	keel_options o = { 0 };
	char path[4200];
	keel_db *db;
	int rc;

	*out = NULL;
	snprintf(path, sizeof path, "%s/kv.keel", dir);
	if (config == 1)
		o.flags |= KEEL_UNSAFE_NO_SYNC;
	if ((rc = keel_open(path, &o, &db)) != KEEL_OK) {
		fprintf(stderr, "keel: keel_open %s: %s\n", path,
		        keel_strerror(rc));
		return -1;
	}
	*out = db;
	return 0;
}

static int ke_put(void *st, const char *key, const char *val)
{
	int rc = keel_put(st, key, strlen(key), val, strlen(val), KEEL_REV_ANY,
	                  NULL);

	if (rc != KEEL_OK) {
		fprintf(stderr, "keel: keel_put: %s\n", keel_strerror(rc));
		return -1;
	}
	return 0;
}

static int ke_check(void *st)
{
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	int rc;

	if ((rc = keel_snapshot_open(st, &s)) != KEEL_OK ||
	    (rc = keel_iter_open(s, NULL, 0, NULL, 0, &it)) != KEEL_OK) {
		fprintf(stderr, "keel: %s\n", keel_strerror(rc));
		return -1;
	}
	int bad = 0;
	while (!bad && (rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK)
		bad = adapter_emit(k, kl, v.data, v.len) < 0;
	keel_iter_close(it);
	if (bad) {
		keel_snapshot_close(s);
		return -1;
	}
	keel_snapshot_close(s);
	if (rc != KEEL_ENOTFOUND) {
		fprintf(stderr, "keel: iterating: %s\n", keel_strerror(rc));
		return -1;
	}
	return 0;
}

static void ke_close(void *st)
{
	if (st)
		keel_close(st);
}

int main(int argc, char **argv)
{
	static const adapter a = { "keel", configs, version, ke_open, ke_put,
		ke_check, ke_close };

	return adapter_main(&a, argc, argv);
}
