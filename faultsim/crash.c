/*
 * crash.c -- the power cut: turn the files on disk (which hold everything
 * the writer did, as a page cache would) into one state a real device could
 * have been left in, under a device model and a seed.
 *
 * HOW
 *   (a) Decide, in record order, what becomes of every unsynced data record
 *       (kept, lost, torn, garbage); the decisions depend only on the seed
 *       and the records, so a seed reproduces a state.
 *   (b) For each tracked file, where it is now: undo every data record of
 *       the window, newest first (this yields the durable state, invariant
 *       (3) in cache_internal.h), then redo, oldest first, the durable ones
 *       and the unsynced ones the decisions keep.
 *   (c) Undo the namespace operations whose directory was not synced,
 *       newest first.  Each undo checks by inode whether the real call
 *       happened at all (the writer may have died between record and call).
 *       Under the file system model (faultsim.h) an r2 model keeps a
 *       seed-drawn prefix of them instead (decide_names), r3 keeps the
 *       data a persisting rename over a file brings, and r4 keeps appends
 *       a prefix (append_edge); ext4-writeback may grow a size over lost
 *       bytes (stale_size).
 *   (d) Empty the cache for the next writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

enum { FATE_KEEP = 0, FATE_LOSE = 1, FATE_TEAR = 2, FATE_HOLE = 3 };

typedef struct fate {
	uint64_t pos;     /* the record                                        */
	uint8_t what;     /* FATE_*                                            */
	uint8_t garbage;  /* one of its sectors gets random bytes              */
	uint8_t ns_keep;  /* an unsynced namespace record that persists (r2)   */
	uint64_t seed;    /* drives its torn pieces and garbage bytes          */
	uint8_t outcome;  /* what redo made of it: a FAULTSIM_FATE_*, or 0 for
	                   * persisted whole (or not redone: its file gone) */
} fate;

/* splitmix64: small, good enough, and the same everywhere */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int faultsim_write_exact(int fd, const void *buf, uint64_t len, uint64_t off)
{
	const unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int set_size(int fd, uint64_t size)
{
	return ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
}

/* An extension redone: the size grows to SIZE, never shrinks (fallocate
 * never does; the file may hold more than when the extension was made, an
 * append kept where a truncate between them was lost) */
static int grow_to(int fd, uint64_t size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	return (uint64_t)st.st_size < size ? set_size(fd, size) : 0;
}

int faultsim_undo_data(int fd, fs_rec *r)
{
	int rc = 0;
	switch (r->kind) {
	case REC_WRITE:
		rc = faultsim_write_exact(fd, rec_pre(r), r->pre_len, r->off);
		if (rc == 0 && r->off + r->len > r->old_size)
			rc = set_size(fd, r->old_size);
		break;
	case REC_TRUNCATE:
		rc = set_size(fd, r->old_size);
		if (rc == 0)
			rc = faultsim_write_exact(fd, rec_pre(r), r->pre_len,
			                          r->new_size);
		break;
	case REC_EXTEND:
		if (r->new_size > r->old_size)
			rc = set_size(fd, r->old_size);
		break;
	}
	return rc;
}

/* ---- (a) decisions --------------------------------------------------- */

/* r3: the persisting rename R replaced a file: the renamed file's data
 * records before it persist whole (the flush the rename waited for). */
static void rename_flushed(faultsim_cache *c, fate *v, uint64_t n, fs_rec *r)
{
	int file = -1;

	for (uint32_t i = 0; i < c->nfiles && file < 0; i++)
		if (!c->files[i].gone && c->files[i].ino == r->ino)
			file = (int)i;
	for (uint64_t i = 0; i < n && file >= 0; i++) {
		fs_rec *d = rec_at(c, v[i].pos);
		if (d->seq >= r->seq)
			break;
		if (rec_is_data(d) && d->file == file &&
		    rec_state(d) == ST_UNSYNCED) {
			v[i].what = FATE_KEEP;
			v[i].garbage = 0;
		}
	}
}

/*
 * The file system model's part: under r2 a seed-drawn prefix of the
 * unsynced namespace records persists (its own random stream, so the data
 * decisions stay those of the POSIX model for the same seed); under r3
 * each persisting rename over an existing file keeps the data before it.
 */
static void decide_names(faultsim_cache *c, fate *v, uint64_t n,
                         uint64_t seed)
{
	uint32_t fs = __atomic_load_n(&c->fs, __ATOMIC_ACQUIRE);
	uint64_t rng = seed ^ 0x6e616d65736e616dull, count = 0, cut;

	if (fs_ordered_names(fs)) {
		for (uint64_t i = 0; i < n; i++) {
			fs_rec *r = rec_at(c, v[i].pos);
			count += !rec_is_data(r) && rec_state(r) == ST_UNSYNCED;
		}
		cut = mix(&rng) % (count + 1);
		for (uint64_t i = 0; i < n && cut > 0; i++) {
			fs_rec *r = rec_at(c, v[i].pos);
			if (!rec_is_data(r) && rec_state(r) == ST_UNSYNCED) {
				v[i].ns_keep = 1;
				cut--;
			}
		}
	}
	if (!fs_rename_flushes(fs))
		return;
	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		uint8_t st = rec_state(r);
		if (r->kind == REC_RENAME && *rec_path(r, 2) &&
		    (st == ST_SYNCED || (st == ST_UNSYNCED && v[i].ns_keep)))
			rename_flushed(c, v, n, r);
	}
}

/*
 * An explained crash (faultsim_cache_crash_explain): records on X's persist
 * list persist whole whatever the seed and the model decided (a kept
 * rename brings its r3 flush with it), and every record the crash still
 * drops goes on X's dropped list.  Runs after every decision, so that the
 * seed's draws, and with them the other records' fates, do not change.
 */
static void decide_explained(faultsim_cache *c, faultsim_explain *x,
                             fate *v, uint64_t n)
{
	uint32_t fs = __atomic_load_n(&c->fs, __ATOMIC_ACQUIRE);

	if (!x)
		return;
	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_state(r) != ST_UNSYNCED || !faultsim_persists(x, r->seq))
			continue;
		if (rec_is_data(r)) {
			v[i].what = FATE_KEEP;
			v[i].garbage = 0;
		} else {
			v[i].ns_keep = 1;
			if (r->kind == REC_RENAME && *rec_path(r, 2) &&
			    fs_rename_flushes(fs))
				rename_flushed(c, v, n, r);
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_state(r) == ST_UNSYNCED && !rec_is_data(r) &&
		    !v[i].ns_keep)
			faultsim_note_dropped(c, x, r, FAULTSIM_FATE_UNDONE);
	}
}

/* After the redo: every unsynced data record the crash did not keep whole
 * goes on X's dropped list, named by what the redo made of it (a tear
 * whose pieces all fell is lost, one whose pieces all stayed is kept and
 * not listed), so that an explanation and the report's counts agree.  A
 * record whose file was gone was never redone (its outcome stays 0): no
 * replay can keep it either, so it is not listed. */
static void note_data(faultsim_cache *c, faultsim_explain *x, const fate *v,
                      uint64_t n)
{
	for (uint64_t i = 0; x && i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_is_data(r) && rec_state(r) == ST_UNSYNCED &&
		    v[i].outcome && (v[i].what != FATE_KEEP || v[i].garbage))
			faultsim_note_dropped(c, x, r, v[i].outcome);
	}
}

static fate *decide(faultsim_cache *c, const faultsim_crash_options *o,
                    faultsim_explain *xp, uint64_t *count)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t n = 0, unsynced = 0, rng = o->seed, cut;
	fate *v;

	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size)
		n++;
	v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return NULL;
	n = 0;
	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size) {
		fs_rec *r = rec_at(c, pos);
		if (rec_is_data(r) && rec_state(r) == ST_UNSYNCED)
			unsynced++;
		v[n++].pos = pos;
	}
	/* ORDERED: records before the cut persist, the rest are lost */
	cut = mix(&rng) % (unsynced + 1);
	unsynced = 0;
	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (!rec_is_data(r) || rec_state(r) != ST_UNSYNCED)
			continue;
		uint64_t x = mix(&rng);
		v[i].seed = mix(&rng);
		if (o->device == FAULTSIM_DEVICE_ORDERED)
			v[i].what = unsynced < cut ? FATE_KEEP : FATE_LOSE;
		else if (o->device == FAULTSIM_DEVICE_PAYLOAD &&
		         r->kind == REC_WRITE && r->len > 0 &&
		         (r->off + r->len - 1) / o->sector - r->off / o->sector
		         >= 2)
			v[i].what = FATE_HOLE; /* garbage below: 1 in 2 */
		else if (o->device == FAULTSIM_DEVICE_REORDER ||
		         o->device == FAULTSIM_DEVICE_PAYLOAD ||
		         r->kind != REC_WRITE)
			/* (PAYLOAD: a write with no interior sector persists
			 * whole or not at all, never torn) */
			v[i].what = (x & 1) ? FATE_KEEP : FATE_LOSE;
		else
			v[i].what = (uint8_t)(x % 3);
		v[i].garbage = (o->device == FAULTSIM_DEVICE_GARBAGE ||
		                v[i].what == FATE_HOLE) &&
		               r->kind == REC_WRITE && ((x >> 8) & 1);
		unsynced++;
	}
	decide_names(c, v, n, o->seed);
	decide_explained(c, xp, v, n);
	*count = n;
	return v;
}

/* ---- (b) redo ------------------------------------------------------------- */

/* Writes the sector-aligned pieces of R that the fate's seed keeps; returns
 * how many of NPIECES were written, or a negative errno.  Past EDGE (r4:
 * the file's size; UINT64_MAX: no such rule) only a prefix of the pieces
 * persists, none when STOP: a lost piece ends the append there. */
static int redo_torn(int fd, fs_rec *r, const fate *f, unsigned sector,
                     uint64_t edge, int stop, uint64_t *npieces)
{
	uint64_t rng = f->seed, kept = 0, n = 0;
	for (uint64_t at = r->off; at < r->off + r->len; n++) {
		uint64_t end = (at / sector + 1) * sector, to;
		if (end > r->off + r->len)
			end = r->off + r->len;
		int keep = (int)(mix(&rng) & 1);
		to = end;
		if (end > edge && (stop || !keep)) {
			stop = 1;
			to = at < edge ? edge : at;
		}
		if (keep && to > at) {
			int rc = faultsim_write_exact(fd, rec_new(r) + (at - r->off),
			                              to - at, at);
			if (rc < 0)
				return rc;
			kept++;
		}
		at = end;
	}
	*npieces = n;
	return (int)(kept > INT32_MAX ? INT32_MAX : kept);
}

/* Fills the part of one of R's sectors that R covers with random bytes;
 * only below the file's current size, so a lost extension stays lost. */
static int redo_garbage(int fd, fs_rec *r, const fate *f, unsigned sector)
{
	uint64_t rng = f->seed ^ 0x5bd1e995u, first = r->off / sector;
	uint64_t last = (r->off + r->len - 1) / sector;
	uint64_t s = first + mix(&rng) % (last - first + 1);
	uint64_t from = s * sector > r->off ? s * sector : r->off;
	uint64_t to = (s + 1) * sector < r->off + r->len ? (s + 1) * sector
	                                                 : r->off + r->len;
	unsigned char buf[4096];
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (to > (uint64_t)st.st_size)
		to = (uint64_t)st.st_size;
	if (from >= to)
		return 0;
	for (uint64_t i = 0; i < to - from; i++)
		buf[i] = (unsigned char)mix(&rng);
	return faultsim_write_exact(fd, buf, to - from, from);
}

/* PAYLOAD: writes R whole except one interior sector, which keeps its old
 * bytes or (F->garbage) gets random ones; only below the file's size.
 * Past EDGE (r4; UINT64_MAX: no such rule) the part after the hole is
 * dropped, and with STOP everything past EDGE. */
static int redo_hole(int fd, fs_rec *r, const fate *f, unsigned sector,
                     uint64_t edge, int stop)
{
	uint64_t rng = f->seed ^ 0x686f6c65u, first = r->off / sector;
	uint64_t last = (r->off + r->len - 1) / sector;
	uint64_t s = first + 1 + mix(&rng) % (last - first - 1);
	uint64_t from = s * sector, to = (s + 1) * sector;
	uint64_t head = from, tail = r->off + r->len;
	unsigned char buf[4096];
	struct stat st;
	int rc;

	if (stop) {
		head = from < edge ? from : edge > r->off ? edge : r->off;
		tail = tail < edge ? tail : edge > to ? edge : to;
	} else if (to > edge) {
		tail = to; /* the hole is in the append: nothing after it */
	}
	if ((rc = faultsim_write_exact(fd, rec_new(r), head - r->off, r->off)) ||
	    (rc = faultsim_write_exact(fd, rec_new(r) + (to - r->off),
	                               tail - to, to)))
		return rc;
	if (!f->garbage)
		return 0;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (to > (uint64_t)st.st_size)
		to = (uint64_t)st.st_size;
	if (from >= to)
		return 0;
	for (uint64_t i = 0; i < to - from; i++)
		buf[i] = (unsigned char)mix(&rng);
	return faultsim_write_exact(fd, buf, to - from, from);
}

/*
 * r4 and its absence.  EDGE is the file's size before R is redone.  Under
 * r4 an unsynced write that ends past EDGE persists in its part below
 * EDGE per its fate, and past EDGE only as a prefix (redo_torn,
 * redo_hole); none of it past EDGE when EDGE is below R's old size (bytes
 * appended before R were lost: the file's on-disk size never got there).
 * *STOP says so; returns the limit for a kept write.
 */
static uint64_t append_edge(int fd, fs_rec *r, uint8_t st, uint32_t fs,
                            int *stop)
{
	struct stat sb;

	*stop = 0;
	if (!fs_ordered_appends(fs) || st != ST_UNSYNCED ||
	    r->kind != REC_WRITE || fstat(fd, &sb) != 0 ||
	    r->off + r->len <= (uint64_t)sb.st_size)
		return UINT64_MAX;
	*stop = (uint64_t)sb.st_size < r->old_size;
	return (uint64_t)sb.st_size;
}

/* Without r4 (ext4 data=writeback): a lost or torn append may leave the
 * size grown over bytes never written, 1 in 2. */
static int stale_size(int fd, fs_rec *r, const fate *f)
{
	uint64_t rng = f->seed ^ 0x73697a65u, end = r->off + r->len;
	struct stat sb;

	if (!(mix(&rng) & 1) || fstat(fd, &sb) != 0)
		return 0;
	return (uint64_t)sb.st_size < end ? set_size(fd, end) : 0;
}

/* Counts R's outcome OUT (0: kept whole) once in REP, and keeps it in F
 * for the explanation (note_data). */
static void outcome(fate *f, int out, faultsim_crash_report *rep)
{
	f->outcome = (uint8_t)out;
	if (out == FAULTSIM_FATE_LOST)
		rep->lost++;
	else if (out == FAULTSIM_FATE_TORN)
		rep->torn++;
	else
		rep->kept++;
}

/* Redoes R per its fate F.  Every unsynced record is counted once in REP:
 * kept, lost, torn, or garbled (a garbage sector in a record the redo left
 * otherwise whole or lost), so that TORN + GARBLED counts each damaged
 * record once; GARBAGE counts the garbage sectors written. */
static int redo_one(int fd, fs_rec *r, fate *f, unsigned sector,
                    uint32_t fs, faultsim_crash_report *rep)
{
	uint8_t st = rec_state(r);
	uint64_t pieces = 0, edge;
	int rc = 0, kept, stop;

	if (st == ST_LOST) {
		rep->lost_failed++;
		return 0;
	}
	edge = append_edge(fd, r, st, fs, &stop);
	if (st == ST_SYNCED || f->what == FATE_KEEP) {
		if (st == ST_SYNCED)
			rep->durable++;
		else if (stop && r->off >= edge) /* r4: all past a lost append */
			f->outcome = FAULTSIM_FATE_LOST;
		else if (stop)
			f->outcome = FAULTSIM_FATE_TORN;
		if (r->kind == REC_WRITE && stop)
			rc = r->off < edge ? faultsim_write_exact(fd, rec_new(r),
			                                          edge - r->off,
			                                          r->off) : 0;
		else if (r->kind == REC_WRITE)
			rc = faultsim_write_exact(fd, rec_new(r), r->len, r->off);
		else if (r->kind == REC_TRUNCATE)
			rc = set_size(fd, r->new_size);
		else if (r->new_size > r->old_size)
			rc = grow_to(fd, r->new_size);
	} else if (f->what == FATE_HOLE) {
		rc = redo_hole(fd, r, f, sector, edge, stop);
		outcome(f, FAULTSIM_FATE_TORN, rep);
		if (f->garbage)
			rep->garbage++; /* inside the hole */
		return rc;
	} else if (f->what == FATE_TEAR && r->len > 0) {
		kept = redo_torn(fd, r, f, sector, edge, stop, &pieces);
		rc = kept < 0 ? kept : 0;
		f->outcome = kept == 0 ? FAULTSIM_FATE_LOST
		           : (uint64_t)kept == pieces ? 0 : FAULTSIM_FATE_TORN;
	} else {
		f->outcome = FAULTSIM_FATE_LOST;
	}
	if (rc == 0 && fs == FAULTSIM_FS_EXT4_WRITEBACK && st == ST_UNSYNCED &&
	    r->kind == REC_WRITE && r->len > 0 &&
	    (f->what == FATE_LOSE || f->what == FATE_TEAR))
		rc = stale_size(fd, r, f);
	if (st != ST_UNSYNCED)
		return rc;
	if (rc == 0 && f->garbage && r->len > 0) {
		rc = redo_garbage(fd, r, f, sector);
		rep->garbage++;
		if (f->outcome != FAULTSIM_FATE_TORN) {
			f->outcome = FAULTSIM_FATE_GARBAGE;
			rep->garbled++;
			return rc;
		}
	}
	outcome(f, f->outcome, rep);
	return rc;
}

static void note_error(faultsim_crash_report *rep, const char *what,
                       const char *path, int err)
{
	if (rep->errors++ == 0)
		snprintf(rep->first_error, sizeof rep->first_error, "%s %s: %s",
		         what, path, strerror(-err));
}

/* Rewrites file FILE: undo its records newest first, redo the survivors
 * under model FS (faultsim_fs; POSIX where no crash is meant). */
static void crash_file(faultsim_cache *c, int file, fate *v, uint64_t n,
                       unsigned sector, uint32_t fs,
                       faultsim_crash_report *rep)
{
	uint64_t mine = 0;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		mine += rec_is_data(r) && r->file == file &&
		        rec_state(r) != ST_VOID;
	}
	if (!mine)
		return;
	int fd = faultsim_file_open(c, file);
	if (fd < 0) {
		/* a file durably unlinked is gone with its records: fine */
		if (!c->files[file].gone)
			note_error(rep, "cannot find", faultsim_file_path(
			                   &c->files[file]), fd);
		return;
	}
	for (uint64_t i = n; i-- > 0 && rc == 0;) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_is_data(r) && r->file == file && rec_state(r) != ST_VOID)
			rc = faultsim_undo_data(fd, r);
	}
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_is_data(r) && r->file == file && rec_state(r) != ST_VOID)
			rc = redo_one(fd, r, &v[i], sector, fs, rep);
	}
	if (rc < 0)
		note_error(rep, "rewriting", faultsim_file_path(&c->files[file]),
		           rc);
	rep->files++;
	close(fd);
}

/* ---- (c) namespace undo ------------------------------------------------ */

static int exists(const char *path, uint64_t *ino)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	if (ino)
		*ino = (uint64_t)st.st_ino;
	return 1;
}

static int undo_step(int ok, faultsim_crash_report *rep, const char *what,
                     const char *path)
{
	if (!ok)
		note_error(rep, what, path, -errno);
	return ok;
}

/* Undoes one namespace record that its directory sync never covered. */
static void undo_namespace(fs_rec *r, faultsim_crash_report *rep)
{
	const char *a = rec_path(r, 0), *b = rec_path(r, 1);
	const char *stash = rec_path(r, 2);
	uint64_t ino = 0;

	switch (r->kind) {
	case REC_CREATE:
		if (exists(a, NULL))
			undo_step(unlink(a) == 0, rep, "removing", a);
		break;
	case REC_RENAME:
		/* moved at all?  (the writer may have died before the call)
		 * Back to its old name, unless a durable create or rename
		 * has taken that name since: that one keeps it, and the
		 * file, durable under neither name, is gone. */
		if (exists(b, &ino) && ino == r->ino) {
			if (exists(a, NULL))
				undo_step(unlink(b) == 0, rep, "removing", b);
			else
				undo_step(rename(b, a) == 0, rep,
				          "renaming back", b);
		}
		if (*stash && exists(stash, NULL)) {
			if (exists(b, NULL))
				undo_step(unlink(stash) == 0, rep, "removing",
				          stash);
			else
				undo_step(rename(stash, b) == 0, rep,
				          "restoring", b);
		}
		break;
	case REC_UNLINK:
		if (*stash && exists(stash, NULL)) {
			if (exists(a, NULL))
				undo_step(unlink(stash) == 0, rep, "removing",
				          stash);
			else
				undo_step(rename(stash, a) == 0, rep,
				          "restoring", a);
		}
		break;
	}
	rep->ns_undone++;
}

/* r2: an unsynced namespace record in the persisting prefix: what it
 * replaced or unlinked is gone for good (as a directory sync settles it). */
static void keep_namespace(fs_rec *r, faultsim_crash_report *rep)
{
	const char *stash = rec_path(r, 2);

	if (*stash && exists(stash, NULL))
		undo_step(unlink(stash) == 0, rep, "removing", stash);
	rep->ns_kept++;
}

/* ---- the crash --------------------------------------------------------- */

int faultsim_cache_crash(faultsim_cache *c, const faultsim_crash_options *opt,
                         faultsim_crash_report *report)
{
	return faultsim_cache_crash_explain(c, opt, NULL, report);
}

int faultsim_cache_crash_explain(faultsim_cache *c,
                                 const faultsim_crash_options *opt,
                                 faultsim_explain *x,
                                 faultsim_crash_report *report)
{
	faultsim_crash_options o = { FAULTSIM_DEVICE_ORDERED, 512, 0 };
	faultsim_crash_report local;
	faultsim_crash_report *rep = report ? report : &local;
	uint64_t n = 0;
	fate *v;

	if (opt)
		o = *opt;
	if (o.sector == 0)
		o.sector = 512;
	if ((unsigned)o.device > FAULTSIM_DEVICE_PAYLOAD || o.sector > 4096 ||
	    (o.sector & (o.sector - 1)) != 0)
		return -EINVAL;
	memset(rep, 0, sizeof *rep);
	if (x)
		x->ndropped = 0;
	rep->overflowed = faultsim_cache_overflowed(c);
	faultsim_inflight_settle(c); /* a call the writer died in: what it did */
	faultsim_map_settle(c);      /* its stores through a mapping         */
	v = decide(c, &o, x, &n);
	if (!v)
		return -ENOMEM;
	for (uint32_t f = 0; f < c->nfiles; f++)
		crash_file(c, (int)f, v, n, o.sector,
		           __atomic_load_n(&c->fs, __ATOMIC_ACQUIRE), rep);
	note_data(c, x, v, n);
	for (uint64_t i = n; i-- > 0;) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_is_data(r))
			continue;
		if (rec_state(r) == ST_UNSYNCED && v[i].ns_keep)
			keep_namespace(r, rep);
		else if (rec_state(r) == ST_UNSYNCED)
			undo_namespace(r, rep);
		else if (rec_state(r) == ST_SYNCED)
			rep->ns_durable++;
	}
	free(v);
	faultsim_cache_clear(c);
	return rep->errors ? -EIO : 0;
}

int faultsim_cache_device_view(faultsim_cache *c, int file, unsigned char *buf,
                               size_t len, uint64_t off)
{
	uint64_t n = 0, *pos;
	unsigned char *decided;

	pthread_mutex_lock(&c->lock);
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	for (uint64_t p = win_start(w); p < win_tail(w); p += rec_at(c, p)->size)
		n++;
	pos = calloc(n ? n : 1, sizeof *pos);
	decided = calloc(len ? len : 1, 1);
	if (!pos || !decided) {
		pthread_mutex_unlock(&c->lock);
		free(pos);
		free(decided);
		return -ENOMEM;
	}
	n = 0;
	for (uint64_t p = win_start(w); p < win_tail(w); p += rec_at(c, p)->size)
		pos[n++] = p;
	/* Newest first.  A byte's device value is the new bytes of the newest
	 * write to it that is not LOST; LOST writes on the way down leave
	 * their pre-image, which an older LOST write replaces with its own,
	 * older one (what the device held before either). */
	while (n-- > 0) {
		fs_rec *r = rec_at(c, pos[n]);
		if (r->kind != REC_WRITE || r->file != file || r->len == 0)
			continue;
		uint8_t st = rec_state(r);
		if (st == ST_VOID)
			continue;
		int unsealed = rec_unsealed(r); /* its bytes are BUF's own */
		uint64_t lo = r->off > off ? r->off : off;
		uint64_t hi = r->off + r->len < off + len ? r->off + r->len
		                                          : off + len;
		for (uint64_t b = lo; b < hi; b++) {
			size_t i = (size_t)(b - off), k = (size_t)(b - r->off);
			if (decided[i])
				continue;
			if (st == ST_LOST) {
				buf[i] = k < r->pre_len ? rec_pre(r)[k] : 0;
			} else if (unsealed) {
				decided[i] = 1;
			} else {
				buf[i] = rec_new(r)[k];
				decided[i] = 1;
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
	free(pos);
	free(decided);
	return 0;
}

void faultsim_cache_evict_lost(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE), n = 0;
	faultsim_crash_report rep;
	int has_lost[FAULTSIM_MAX_FILES] = { 0 };

	faultsim_cache_writer_died(c);
	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size, n++) {
		fs_rec *r = rec_at(c, pos);
		if (rec_is_data(r) && rec_state(r) == ST_LOST)
			has_lost[r->file] = 1;
	}
	/* every fate zero: each record not LOST is redone whole */
	fate *v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return;
	n = 0;
	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size)
		v[n++].pos = pos;
	memset(&rep, 0, sizeof rep);
	for (uint32_t f = 0; f < c->nfiles; f++)
		if (has_lost[f])
			crash_file(c, (int)f, v, n, 512, FAULTSIM_FS_POSIX,
			           &rep);
	for (uint64_t i = 0; i < n; i++) {
		fs_rec *r = rec_at(c, v[i].pos);
		if (rec_is_data(r) && rec_state(r) == ST_LOST)
			rec_set_state(r, ST_VOID);
	}
	free(v);
	faultsim_rec_reclaim(c);
}

void faultsim_cache_forget(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (!rec_is_data(r) && rec_state(r) == ST_UNSYNCED &&
		    *rec_path(r, 2))
			unlink(rec_path(r, 2));
	}
	faultsim_cache_clear(c);
}

void faultsim_cache_write_back(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);

	faultsim_cache_writer_died(c);
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (rec_is_data(r) && rec_state(r) == ST_UNSYNCED)
			rec_set_state(r, ST_SYNCED);
	}
	faultsim_rec_reclaim(c);
}

int faultsim_cache_file_of(faultsim_cache *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	for (uint32_t i = 0; i < c->nfiles; i++) {
		fs_file *f = &c->files[i];
		if (!f->gone && f->dev == (uint64_t)st.st_dev &&
		    f->ino == (uint64_t)st.st_ino)
			return (int)i;
	}
	return -ENOENT;
}

uint64_t faultsim_cache_lost_records(faultsim_cache *c, int file)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE), n = 0;

	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (rec_is_data(r) && rec_state(r) == ST_LOST &&
		    (file < 0 || r->file == file))
			n++;
	}
	return n;
}

int faultsim_cache_device_copy(faultsim_cache *c, int file, int src, int dst)
{
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = malloc(CHUNK);
	uint64_t off = 0;
	int rc = buf ? 0 : -ENOMEM;

	while (rc == 0) {
		ssize_t n = pread(src, buf, CHUNK, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		rc = faultsim_cache_device_view(c, file, buf, (size_t)n, off);
		if (rc == 0)
			rc = faultsim_write_exact(dst, buf, (uint64_t)n, off);
		off += (uint64_t)n;
	}
	free(buf);
	return rc;
}

/* ---- names ------------------------------------------------------------------ */

static const char *const device_names[] = { "ordered", "reorder", "torn",
	                                    "garbage", "payload" };
static const char *const profile_names[] = { "ext4", "xfs", "btrfs", "keep" };

int faultsim_device_parse(const char *name, faultsim_device *out)
{
	for (int i = 0; i < 5; i++)
		if (name && strcmp(name, device_names[i]) == 0) {
			*out = (faultsim_device)i;
			return 0;
		}
	return -EINVAL;
}

int faultsim_profile_parse(const char *name, faultsim_profile *out)
{
	for (int i = 0; i < 4; i++)
		if (name && strcmp(name, profile_names[i]) == 0) {
			*out = (faultsim_profile)i;
			return 0;
		}
	return -EINVAL;
}

static const char *const fs_names[] = { "posix", "ext4", "ext4-writeback",
	                                "xfs", "btrfs" };

int faultsim_fs_parse(const char *name, faultsim_fs *out)
{
	for (int i = 0; i < 5; i++)
		if (name && strcmp(name, fs_names[i]) == 0) {
			*out = (faultsim_fs)i;
			return 0;
		}
	return -EINVAL;
}

const char *faultsim_fs_name(faultsim_fs fs)
{
	return (unsigned)fs < 5 ? fs_names[fs] : "?";
}

faultsim_profile faultsim_fs_profile(faultsim_fs fs)
{
	switch (fs) {
	case FAULTSIM_FS_XFS:
		return FAULTSIM_PROFILE_XFS;
	case FAULTSIM_FS_BTRFS:
		return FAULTSIM_PROFILE_BTRFS;
	default:
		return FAULTSIM_PROFILE_EXT4;
	}
}

const char *faultsim_device_name(faultsim_device d)
{
	return (unsigned)d < 5 ? device_names[d] : "?";
}

const char *faultsim_profile_name(faultsim_profile p)
{
	return (unsigned)p < 4 ? profile_names[p] : "?";
}
