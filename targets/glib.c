/*
 * glib.c -- GLib's g_file_set_contents, the way GNOME programs save a
 * settings or state file, as a torture --target glib:CONFIG adapter
 * (adapter.h).  One file per key, its content the value.
 *
 *   defaults   g_file_set_contents (GLib documents it as
 *              g_file_set_contents_full with CONSISTENT | ONLY_EXISTING
 *              : atomic replacement, no durability promise for a new file)
 *   durable    g_file_set_contents_full with G_FILE_SET_CONTENTS_CONSISTENT
 *              | G_FILE_SET_CONTENTS_DURABLE ("the file is guaranteed to
 *              be on disk once the call returns", glib/gfileutils.c)
 *
 * The put is acknowledged when the call returned TRUE.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "adapter.h"

enum { DEFAULTS, DURABLE };

static const char *const configs[] = { "defaults", "durable", NULL };

typedef struct store {
	char dir[4096];
	int config;
} store;

static const char *version(void)
{
	static char v[32];
	snprintf(v, sizeof v, "%u.%u.%u", glib_major_version,
	         glib_minor_version, glib_micro_version);
	return v;
}

static int open_store(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	if (!s)
		return -1;
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	s->config = config;
	*out = s;
	return 0;
}

static int put(void *p, const char *key, const char *val)
{
	store *s = p;
	char path[4200];
	GError *err = NULL;
	gboolean ok;

	snprintf(path, sizeof path, "%s/%s", s->dir, key);
	if (s->config == DURABLE)
		ok = g_file_set_contents_full(path, val, (gssize)strlen(val),
		                              G_FILE_SET_CONTENTS_CONSISTENT |
		                              G_FILE_SET_CONTENTS_DURABLE,
		                              0644, &err);
	else
		ok = g_file_set_contents(path, val, (gssize)strlen(val), &err);
	if (!ok) {
		fprintf(stderr, "glib: %s: %s\n", path, err->message);
		g_error_free(err);
		return -1;
	}
	return 0;
}

static int is_token(const char *s, gsize n)
{
	if (n == 0 || n > 255)
		return 0;
	for (gsize i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

static int check(void *p)
{
	store *s = p;
	DIR *d = opendir(s->dir);
	struct dirent *e;
	int rc = 0;

	while (d && (e = readdir(d))) {
		char path[4400], *text = NULL;
		gsize len = 0;
		/* keys only: GLib's temporary files are "KEY.XXXXXX" */
		if (e->d_name[0] == '.' || strchr(e->d_name, '.'))
			continue;
		snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
		if (!g_file_get_contents(path, &text, &len, NULL))
			continue;
		if (len == 0) {
			printf("%s <empty>\n", e->d_name);
		} else if (!is_token(text, len)) {
			/* torn or zero-filled content: what was found, in the
			 * protocol's hex: spelling, judged as a value */
			printf("%s hex:", e->d_name);
			for (gsize i = 0; i < len && i < 1024; i++)
				printf("%02x", (unsigned char)text[i]);
			printf("\n");
		} else if (adapter_emit(e->d_name, strlen(e->d_name), text,
		                        len) < 0) {
			rc = -1;
		}
		g_free(text);
	}
	if (d)
		closedir(d);
	return rc;
}

static void close_store(void *p)
{
	free(p);
}

int main(int argc, char **argv)
{
	static const adapter a = { "glib", configs, version, open_store, put,
	                           check, close_store };
	return adapter_main(&a, argc, argv);
}
