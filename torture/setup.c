/*
 * setup.c -- directory and store before a run (see setup.h).
 */
#include "setup.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keel.h"

static int fail(const char *what, const char *name, const char *why)
{
	fprintf(stderr, "torture: %s %s: %s\n", what, name, why);
	return -1;
}

/* --json FILE must be creatable: its directory writable, not a directory. */
static int check_json(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? fail("--json", path, "is a directory")
		       : access(path, W_OK) < 0 ? fail("--json", path,
		                                      strerror(errno)) : 0;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + 1, path);
	if (access(dir, W_OK | X_OK) < 0)
		return fail("--json", path, errno == ENOENT ?
		            "its directory does not exist" : strerror(errno));
	return 0;
}

/* Entries an existing --dir may hold: the store and the engine's side
 * files (their names start with the store's name). */
static int dir_is_ours(const char *dir, int *has_store)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	*has_store = 0;
	if (!d)
		return fail("--dir", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, SETUP_STORE_NAME)) {
			*has_store = 1;
			continue;
		}
		if (!strncmp(e->d_name, SETUP_STORE_NAME,
		             strlen(SETUP_STORE_NAME)))
			continue;
		fprintf(stderr, "torture: --dir %s holds '%s', which is not "
		        "part of a keel store (want an empty directory or one "
		        "from an earlier torture run)\n", dir, e->d_name);
		rc = -1;
		break;
	}
	closedir(d);
	return rc;
}

static int prepare_dir(const torture_options *o, setup *s, int *has_store)
{
	struct stat st;
	const char *tmp = getenv("TMPDIR");

	*has_store = 0;
	if (!o->dir) {
		snprintf(s->dir, sizeof(s->dir), "%s/keel-torture.XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(s->dir))
			return fail("cannot make a temporary directory in",
			            tmp && *tmp ? tmp : "/tmp", strerror(errno));
		s->made_dir = s->temporary = 1;
		return 0;
	}
	if (strlen(o->dir) + sizeof(SETUP_STORE_NAME) + 2 >= sizeof(s->dir))
		return fail("--dir", o->dir, "path too long");
	snprintf(s->dir, sizeof(s->dir), "%s", o->dir);
	if (stat(s->dir, &st) < 0) {
		if (errno != ENOENT || mkdir(s->dir, 0755) < 0)
			return fail("--dir", s->dir, strerror(errno));
		s->made_dir = 1;
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return fail("--dir", s->dir, "not a directory");
	if (access(s->dir, W_OK | X_OK) < 0)
		return fail("--dir", s->dir, "not writable");
	return dir_is_ours(s->dir, has_store);
}

/* Loads an existing store's entries as the model's start state.  It opens
 * for writing, as the first writer would (recovery cuts a torn tail), so a
 * store another process is writing is refused (KEEL_EBUSY) right here. */
static int adopt_store(const char *path, oracle *model)
{
	keel_options ko = {.flags = KEEL_NOCREATE};
	keel_db *db = NULL;
	keel_snapshot *snap = NULL;
	keel_iter *it = NULL;
	keel_check_result cr;
	const void *key;
	size_t klen;
	keel_view v;
	const char *why = NULL;
	int rc;

	rc = keel_open(path, &ko, &db);
	if (rc != KEEL_OK)
		return fail("--dir: cannot open", path, rc == KEEL_ENOTKEEL ?
		            "not a keel store" : rc == KEEL_EBUSY ?
		            "another process is writing it" : keel_strerror(rc));
	rc = keel_check(db, NULL, NULL, &cr);
	if (rc != KEEL_OK) {
		fprintf(stderr, "torture: --dir: %s fails keel check: %s\n",
		        path, rc == KEEL_ECORRUPT ? cr.first_reason :
		        keel_strerror(rc));
		goto out_close;
	}
	rc = keel_snapshot_open(db, &snap);
	if (rc == KEEL_OK)
		rc = keel_iter_open(snap, NULL, 0, NULL, 0, &it);
	while (rc == KEEL_OK &&
	       (rc = keel_iter_next(it, &key, &klen, &v)) == KEEL_OK)
		if (oracle_adopt(model, key, klen, v.data, v.len, v.rev,
		                 &why) < 0)
			break;
	if (why) {
		fprintf(stderr, "torture: --dir: %s holds %s; torture only "
		        "continues stores it wrote itself, with the same --keys "
		        "or more\n", path, why);
		rc = -1;
	} else if (rc != KEEL_ENOTFOUND) {
		fprintf(stderr, "torture: --dir: reading %s: %s\n", path,
		        keel_strerror(rc));
	} else {
		rc = KEEL_OK;
	}
	if (it)
		keel_iter_close(it);
	if (snap)
		keel_snapshot_close(snap);
out_close:
	keel_close(db);
	return rc == KEEL_OK ? 0 : -1;
}

/* A new, empty store, made here so no writer is killed half-way through
 * creating it (a store that never finished its first write is not one). */
static int create_store(const char *path)
{
	keel_db *db = NULL;
	int rc = keel_open(path, NULL, &db);

	if (rc == KEEL_OK)
		rc = keel_close(db);
	if (rc != KEEL_OK)
		return fail("cannot create the store", path, keel_strerror(rc));
	return 0;
}

int setup_prepare(const torture_options *o, oracle *model, setup *s)
{
	int has_store;

	memset(s, 0, sizeof(*s));
	if (o->json && check_json(o->json) < 0)
		return -1;
	if (prepare_dir(o, s, &has_store) < 0)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s/%s", s->dir, SETUP_STORE_NAME);
	if (has_store ? adopt_store(s->path, model) : create_store(s->path)) {
		if (s->made_dir) { /* leave nothing behind */
			s->temporary = 1;
			setup_remove(s);
		}
		return -1;
	}
	return 0;
}

void setup_remove(const setup *s)
{
	DIR *d;
	struct dirent *e;
	char p[PATH_MAX + 256];

	if (!s->temporary || !(d = opendir(s->dir)))
		return;
	/* Only what a run puts there: the store, the engine's side files and
	 * the sync-latency scratch file; no recursion needed. */
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", s->dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(s->dir);
}
