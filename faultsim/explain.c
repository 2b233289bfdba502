/*
 * explain.c -- what torture needs to say WHY a crash lost a write: a
 * snapshot of the cache to replay one crash many times, the records a
 * crash must keep whatever its seed says (faultsim_crash_options.persist),
 * and the list of what it dropped.  The crash itself (crash.c) calls
 * faultsim_persists and faultsim_note_dropped; everything else is here so
 * that the device models stay in one file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_internal.h"

struct faultsim_snapshot {
	uint64_t magic, capacity;  /* the cache it was taken of            */
	uint64_t window, next_seq, peak, inflight;
	uint32_t overflowed, nfiles;
	fs_file *files;            /* nfiles entries                       */
	unsigned char *records;    /* the window's bytes [start, tail)     */
	size_t records_len;
};

int faultsim_cache_snapshot(faultsim_cache *c, faultsim_snapshot **out)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	faultsim_snapshot *s = calloc(1, sizeof *s);

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->magic = c->magic;
	s->capacity = c->capacity;
	s->window = w;
	s->next_seq = c->next_seq;
	s->peak = c->peak;
	s->inflight = c->inflight;
	s->overflowed = c->overflowed;
	s->nfiles = c->nfiles;
	s->records_len = (size_t)(win_tail(w) - win_start(w));
	s->files = malloc(s->nfiles ? s->nfiles * sizeof(fs_file) : 1);
	s->records = malloc(s->records_len ? s->records_len : 1);
	if (!s->files || !s->records) {
		faultsim_snapshot_free(s);
		return -ENOMEM;
	}
	memcpy(s->files, c->files, s->nfiles * sizeof(fs_file));
	memcpy(s->records, c->arena + win_half(w) * c->capacity + win_start(w),
	       s->records_len);
	*out = s;
	return 0;
}

int faultsim_cache_restore(faultsim_cache *c, const faultsim_snapshot *s)
{
	if (!s || s->magic != c->magic || s->capacity != c->capacity)
		return -EINVAL;
	memcpy(c->arena + win_half(s->window) * c->capacity +
	       win_start(s->window), s->records, s->records_len);
	memcpy(c->files, s->files, s->nfiles * sizeof(fs_file));
	c->next_seq = s->next_seq;
	c->peak = s->peak;
	c->inflight = s->inflight;
	c->overflowed = s->overflowed;
	c->nfiles = s->nfiles;
	faultsim_cache_init_lock(c);
	__atomic_store_n(&c->window, s->window, __ATOMIC_RELEASE);
	return 0;
}

void faultsim_snapshot_free(faultsim_snapshot *s)
{
	if (!s)
		return;
	free(s->files);
	free(s->records);
	free(s);
}

size_t faultsim_snapshot_size(const faultsim_snapshot *s)
{
	return s ? sizeof *s + s->nfiles * sizeof(fs_file) + s->records_len : 0;
}

static uint64_t remapped(uint64_t ino, const uint64_t *old_ino,
                         const uint64_t *new_ino, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (old_ino[i] == ino)
			return new_ino[i];
	return ino;
}

void faultsim_cache_remap(faultsim_cache *c, const uint64_t *old_ino,
                          const uint64_t *new_ino, size_t n)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < c->nfiles; i++)
		c->files[i].ino = remapped(c->files[i].ino, old_ino, new_ino, n);
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (!rec_is_data(r))
			r->ino = remapped(r->ino, old_ino, new_ino, n);
	}
}

int faultsim_persists(const faultsim_explain *x, uint64_t seq)
{
	for (size_t i = 0; x && x->persist && i < x->npersist; i++)
		if (x->persist[i] == seq)
			return 1;
	return 0;
}

void faultsim_note_dropped(faultsim_cache *c, faultsim_explain *x, fs_rec *r,
                           int fate)
{
	faultsim_dropped *d;

	if (!x)
		return;
	if (!x->dropped || x->ndropped >= x->dropped_cap) {
		x->ndropped++;
		return;
	}
	d = &x->dropped[x->ndropped++];
	memset(d, 0, sizeof *d);
	d->seq = r->seq;
	d->kind = (faultsim_kind)r->kind; /* REC_* and FAULTSIM_KIND_* agree */
	d->fate = (faultsim_fate)fate;
	d->off = r->kind == REC_WRITE ? r->off : r->new_size;
	d->len = r->kind == REC_WRITE ? r->len : r->kind == REC_EXTEND ?
	         r->new_size - r->old_size : 0;
	if (rec_is_data(r)) {
		fs_file *f = faultsim_file_at(c, r->file);
		snprintf(d->path, sizeof d->path, "%s",
		         f ? faultsim_file_path(f) : "?");
	} else {
		snprintf(d->path, sizeof d->path, "%s", rec_path(r, 0));
		if (r->kind == REC_RENAME)
			snprintf(d->path_b, sizeof d->path_b, "%s",
			         rec_path(r, 1));
	}
}
