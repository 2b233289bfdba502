/*
 * namespace.c -- recording creates, renames and unlinks so a crash can undo
 * the ones whose directory was not synced.
 *
 * An unlink, or a rename onto an existing name, would destroy the old file's
 * content, which the crash may need to bring back.  So the cache first
 * hard-links the old file to a stash name in the same directory; the stash
 * is removed when the directory sync makes the operation durable (sync.c)
 * and renamed back when a crash undoes it (crash.c).  Order, for invariant
 * (1): publish the record, make the stash link, then the caller's real call.
 * The file table follows each name change before the real call, keeping the
 * old name in the other path slot for a crash that lands in between.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

#define STASH_FMT "%.*s/.faultsim.%" PRIu64 ".stash"

int faultsim_is_stash(const char *name)
{
	const char *base = strrchr(name, '/'), *p;

	base = base ? base + 1 : name;
	if (strncmp(base, ".faultsim.", 10) != 0)
		return 0;
	for (p = base + 10; *p >= '0' && *p <= '9'; p++)
		;
	return p > base + 10 && strcmp(p, ".stash") == 0;
}

/* Lock held.  Reserves a namespace record for A (and B), with room for a
 * stash name next to STASH_NEXT_TO when that is not NULL; publishes it. */
static fs_rec *ns_record(faultsim_cache *c, uint8_t kind, const char *a,
                         const char *b, const char *stash_next_to,
                         uint64_t *pos)
{
	size_t la = strlen(a) + 1, lb = strlen(b) + 1, ls = 1, dlen = 0;

	if (stash_next_to) {
		dlen = (size_t)(strrchr(stash_next_to, '/') - stash_next_to);
		ls = dlen + sizeof "/.faultsim..stash" + 20;
	}
	fs_rec *r = faultsim_rec_reserve(c, kind, la + lb + ls, pos);
	if (!r)
		return NULL;
	r->plen[0] = (uint32_t)la;
	r->plen[1] = (uint32_t)lb;
	r->plen[2] = (uint32_t)ls;
	memcpy(rec_path(r, 0), a, la);
	memcpy(rec_path(r, 1), b, lb);
	char *s = rec_path(r, 2);
	s[0] = '\0';
	if (stash_next_to)
		snprintf(s, ls, STASH_FMT, (int)dlen, stash_next_to, r->seq);
	/* a create or unlink has one directory: only "A" needs syncing */
	if (kind != REC_RENAME)
		r->dirsync = DIRSYNC_B;
	faultsim_rec_publish(c, r, *pos);
	return r;
}

int faultsim_cache_create_begin(faultsim_cache *c, const char *abspath,
                                faultsim_ticket *t)
{
	uint64_t pos;

	t->cache = NULL;
	pthread_mutex_lock(&c->lock);
	if (!ns_record(c, REC_CREATE, abspath, "", NULL, &pos)) {
		pthread_mutex_unlock(&c->lock);
		return -ENOBUFS;
	}
	return faultsim_ticket_hold(c, pos, t);
}

int faultsim_cache_rename_begin(faultsim_cache *c, const char *absfrom,
                                const char *absto, faultsim_ticket *t)
{
	struct stat st, to;
	uint64_t pos;
	int rc;

	t->cache = NULL;
	if (lstat(absfrom, &st) != 0)
		return -errno; /* the real rename would fail the same way */
	if (strcmp(absfrom, absto) == 0)
		return 0; /* a no-op: nothing to record, nothing held */
	pthread_mutex_lock(&c->lock);
	int replaces = lstat(absto, &to) == 0;
	fs_rec *r = ns_record(c, REC_RENAME, absfrom, absto,
	                      replaces ? absto : NULL, &pos);
	rc = -ENOBUFS;
	if (!r)
		goto out_unlock;
	r->ino = (uint64_t)st.st_ino;
	if (replaces) {
		if (link(absto, rec_path(r, 2)) != 0) {
			rc = -errno;
			rec_set_state(r, ST_VOID);
			goto out_unlock;
		}
		faultsim_files_move(c, absto, rec_path(r, 2));
	}
	faultsim_files_move(c, absfrom, absto);
	return faultsim_ticket_hold(c, pos, t);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int faultsim_cache_unlink_begin(faultsim_cache *c, const char *abspath,
                                faultsim_ticket *t)
{
	struct stat st;

	t->cache = NULL;
	if (lstat(abspath, &st) != 0)
		return -errno;
	return faultsim_cache_unlink_begin_ino(c, abspath, (uint64_t)st.st_ino,
	                                       t);
}

int faultsim_cache_unlink_begin_ino(faultsim_cache *c, const char *abspath,
                                    uint64_t ino, faultsim_ticket *t)
{
	uint64_t pos;
	int rc;

	t->cache = NULL;
	pthread_mutex_lock(&c->lock);
	fs_rec *r = ns_record(c, REC_UNLINK, abspath, "", abspath, &pos);
	rc = -ENOBUFS;
	if (!r)
		goto out_unlock;
	r->ino = ino;
	if (link(abspath, rec_path(r, 2)) != 0) {
		rc = -errno;
		rec_set_state(r, ST_VOID);
		goto out_unlock;
	}
	faultsim_files_move(c, abspath, rec_path(r, 2));
	return faultsim_ticket_hold(c, pos, t);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The real call failed: take back the stash link and the table's moves. */
static void ns_void(faultsim_cache *c, fs_rec *r)
{
	const char *a = rec_path(r, 0), *b = rec_path(r, 1);
	const char *stash = rec_path(r, 2);

	rec_set_state(r, ST_VOID);
	if (r->kind == REC_RENAME)
		faultsim_files_move(c, b, a);
	if (*stash) {
		faultsim_files_move(c, stash, r->kind == REC_RENAME ? b : a);
		unlink(stash);
	}
}

void faultsim_cache_namespace_end(faultsim_ticket *t, int result)
{
	faultsim_cache *c = t->cache;
	if (!c)
		return;
	if (result < 0)
		ns_void(c, rec_at(c, t->rec));
	t->cache = NULL;
	pthread_mutex_unlock(&c->lock);
}
