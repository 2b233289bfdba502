/*
 * sync.c -- what a sync does to the record: a successful fsync/fdatasync
 * makes a file's earlier records durable, a failed one follows the fsync
 * profile (the kernel's behaviour after writeback fails), and a directory
 * sync makes the namespace operations in it durable.  The file system model
 * (faultsim.h) adds namespace records to what a sync makes durable: r1 the
 * names a file's sync depends on (names_of), r2 all earlier ones when the
 * sync commits the journal (names_settle_all).
 *
 * The profiles follow what CuttleFS (Rebello et al., ATC 2020) found Linux
 * does after a failed fsync:
 *   ext4, xfs  the dirty pages are marked clean and the error is reported
 *              once: a retried fsync "succeeds" but the data never reached
 *              the disk.  Here: the records become LOST (reads still see the
 *              bytes; no crash keeps them).
 *   btrfs      the pages are reverted to the on-disk state: here the file's
 *              unsynced bytes are put back to their pre-image at once.
 * The model is kept simple: a LOST write stays lost even if a later write to
 * the same page is synced (the kernel would write the whole page again).
 * That is the harsher choice; a program that stops at the first failed sync,
 * as keel does, sees no difference.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

uint64_t faultsim_cache_sync_begin(faultsim_cache *c)
{
	/* Under the lock: every record below the mark has had its real call
	 * made (the _begin/_end pair holds the lock across it). */
	pthread_mutex_lock(&c->lock);
	uint64_t mark = c->next_seq;
	pthread_mutex_unlock(&c->lock);
	return mark;
}

/* Sets every unsynced data record of FILE below MARK to STATE. */
static void mark_file(faultsim_cache *c, int file, uint64_t mark, uint8_t state)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t next = SCAN_NONE;

	for (uint64_t pos = faultsim_file_scan_from(c, file); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		if (rec_is_data(r) && r->file == file &&
		    rec_state(r) == ST_UNSYNCED) {
			/* (8): stores through a mapping that raced with the
			 * sync stay unsynced until sealed and synced again */
			if (r->seq < mark && !rec_unsealed(r))
				rec_set_state(r, state);
			else if (next == SCAN_NONE)
				next = pos; /* made while the sync ran */
		}
		pos += r->size;
	}
	file_scan_set(c, &c->files[file], next);
}

static int write_zeros(int fd, uint64_t off, uint64_t len)
{
	static const unsigned char zeros[4096];
	while (len > 0) {
		uint64_t n = len < sizeof zeros ? len : sizeof zeros;
		int rc = faultsim_write_exact(fd, zeros, n, off);
		if (rc < 0)
			return rc;
		off += n;
		len -= n;
	}
	return 0;
}

/* the file FD at least SIZE bytes long (zeros past its end) */
static int grow_to(int fd, uint64_t size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	return (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size) != 0
	       ? -errno : 0;
}

/*
 * btrfs: put one unsynced record back.  The file SIZE is never shrunk here,
 * because the writer may have the grown part mapped (a shrink would turn its
 * reads into SIGBUS); bytes past the old size become zeros and the record
 * turns into a size-only EXTEND that stays unsynced.
 */
static void revert_one(int fd, fs_rec *r)
{
	if (r->kind == REC_WRITE) {
		uint64_t end = r->off + r->len;
		if (faultsim_write_exact(fd, rec_pre(r), r->pre_len, r->off) < 0)
			return;
		if (end > r->old_size) {
			uint64_t z = r->off > r->old_size ? r->off : r->old_size;
			if (write_zeros(fd, z, end - z) < 0)
				return;
			r->new_size = end;
			__atomic_store_n(&r->kind, REC_EXTEND, __ATOMIC_RELEASE);
			return;
		}
		rec_set_state(r, ST_VOID);
	} else if (r->kind == REC_TRUNCATE && r->new_size <= r->old_size) {
		if (faultsim_undo_data(fd, r) == 0)
			rec_set_state(r, ST_VOID);
	}
	/* an extension only changed the size: it stays, unsynced */
}

/* 1 when R, a data record of the file, is one a btrfs revert below MARK
 * puts back */
static int reverts(const fs_rec *r, uint64_t mark)
{
	return r->seq < mark && rec_state(r) == ST_UNSYNCED && !rec_unsealed(r);
}

/*
 * btrfs: revert FILE's unsynced records below MARK.  A record the revert
 * keeps may lie over one it puts back (an O_SYNC write, durable at once,
 * over an earlier buffered one; a write made while the sync ran): its
 * bytes must stay, and its pre-image must no longer hold the reverted
 * bytes, or a crash that undoes it brings them back.  So, when every
 * record from the oldest reverted one on is a sealed write or one the
 * revert puts back, the file is undone to before that record, newest
 * first, and then made again in order: a reverted record left as
 * revert_one leaves one, a kept write with its pre-image read anew, then
 * its bytes.
 * Otherwise (a kept truncate, extension or unsealed mapped page among
 * them) the reverted records alone are put back, newest first.  1 when
 * any was written back into the file.
 */
static int revert_file(faultsim_cache *c, int file, uint64_t mark)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t *list = NULL, n = 0, cap = 0;
	int fd = faultsim_file_open(c, file), wrote = 0, redo = 1;

	if (fd < 0)
		return 0; /* nothing to revert on: the records stay unsynced */
	for (uint64_t pos = faultsim_file_scan_from(c, file); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		uint8_t st = rec_state(r);
		pos += r->size;
		if (!rec_is_data(r) || r->file != file ||
		    (n == 0 && !reverts(r, mark)) ||
		    st == ST_VOID || st == ST_LOST)
			continue;
		if (!reverts(r, mark) &&
		    (r->kind != REC_WRITE || rec_unsealed(r)))
			redo = 0;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			uint64_t *l = realloc(list, cap * sizeof *l);
			if (!l)
				goto out_free;
			list = l;
		}
		list[n++] = pos - r->size;
	}
	wrote = n > 0;
	if (n == 0)
		goto out_free;
	if (!redo) {
		while (n > 0) {
			fs_rec *r = rec_at(c, list[--n]);
			if (reverts(r, mark))
				revert_one(fd, r);
		}
		goto out_free;
	}
	for (uint64_t k = n; k > 0; k--) { /* undone to before the first */
		fs_rec *r = rec_at(c, list[k - 1]);
		if (r->kind == REC_WRITE)
			(void)faultsim_write_exact(fd, rec_pre(r), r->pre_len,
			                           r->off);
		else if (r->kind == REC_TRUNCATE && r->new_size <= r->old_size)
			(void)faultsim_undo_data(fd, r);
	}
	/* made again, in order; SIZE: the file's size in the world without
	 * the reverted records (never shrunk: what lies past it reads as
	 * zeros, as revert_one leaves it) */
	uint64_t size = rec_at(c, list[0])->old_size;
	for (uint64_t k = 0; k < n; k++) {
		fs_rec *r = rec_at(c, list[k]);
		uint64_t end = r->off + r->len;
		if (reverts(r, mark) && r->kind == REC_WRITE && end > size) {
			/* the bytes below SIZE are those before it already */
			uint64_t z = r->off > size ? r->off : size;
			if (write_zeros(fd, z, end - z) < 0)
				continue;
			r->old_size = size;
			r->new_size = end;
			size = end;
			__atomic_store_n(&r->kind, REC_EXTEND, __ATOMIC_RELEASE);
		} else if (reverts(r, mark) &&
		           (r->kind == REC_WRITE ||
		            (r->kind == REC_TRUNCATE && r->new_size <= r->old_size))) {
			rec_set_state(r, ST_VOID); /* undone above */
		} else if (reverts(r, mark)) {
			/* a growth only changed the size: it stays, unsynced,
			 * from the size the file has without the records put
			 * back (a crash that undoes it must not cut below
			 * that), and the file has that size again (a truncate
			 * undone beneath it set the size it had before) */
			r->old_size = size;
			if (r->new_size <= size) {
				r->new_size = size;
			} else {
				size = r->new_size;
				(void)grow_to(fd, size);
			}
		} else {
			ssize_t got = pread(fd, rec_pre(r), r->pre_len,
			                    (off_t)r->off);
			if (got < 0)
				got = 0;
			memset(rec_pre(r) + got, 0, r->pre_len - (uint64_t)got);
			r->old_size = size;
			(void)faultsim_write_exact(fd, rec_new(r), r->len, r->off);
			if (end > size)
				size = end;
		}
	}
out_free:
	/* the size the cache keeps for the file (invariant 10) is read
	 * again: a truncate put back grew the file */
	if (wrote)
		c->files[file].size_known = 0;
	free(list);
	close(fd);
	return wrote;
}

/* ---- the file system model: what else a file sync commits ----------------- */

static void settle(faultsim_cache *c, fs_rec *r);

/* The window's record positions, oldest first, in *LIST (freed by the
 * caller); their count, or -ENOMEM. */
static int64_t window_list(faultsim_cache *c, uint64_t **list)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE), n = 0;

	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size)
		n++;
	*list = malloc((n ? n : 1) * sizeof **list);
	if (!*list)
		return -ENOMEM;
	n = 0;
	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size)
		(*list)[n++] = pos;
	return (int64_t)n;
}

static int name_in(char *const *set, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(set[i], name) == 0)
			return 1;
	return 0;
}

/*
 * r1: the namespace records below MARK that FILE's name depends on, found
 * newest first from its current name: a record naming (as path_a, or
 * path_b of a rename) a name in the set joins it, with its own names.  So
 * the rename that brought the file to its name, the create of the name it
 * had before, and an earlier unlink or rename that freed one of those
 * names (btrfs logs such a conflicting name too, or commits everything).
 * With SETTLE_THEM the unsynced ones are settled.  Returns how many were
 * unsynced (a lower bound when out of memory: then nothing is settled).
 */
static uint64_t names_of(faultsim_cache *c, int file, uint64_t mark,
                         int settle_them)
{
	uint64_t *list, unsynced = 0;
	int64_t n = window_list(c, &list);
	char **set = n < 0 ? NULL : malloc((size_t)(2 * n + 1) * sizeof *set);
	size_t nset = 0;

	if (!set)
		goto out_free;
	set[nset++] = (char *)faultsim_file_path(&c->files[file]);
	for (int64_t i = n; i-- > 0;) {
		fs_rec *r = rec_at(c, list[i]);
		uint8_t st = rec_state(r);
		const char *a = rec_path(r, 0), *b = rec_path(r, 1);
		if (rec_is_data(r) || r->seq >= mark || st == ST_VOID ||
		    !(name_in(set, nset, a) || (*b && name_in(set, nset, b))))
			continue;
		if (!name_in(set, nset, a))
			set[nset++] = rec_path(r, 0);
		if (*b && !name_in(set, nset, b))
			set[nset++] = rec_path(r, 1);
		if (st != ST_UNSYNCED)
			continue;
		unsynced++;
		if (settle_them)
			settle(c, r);
	}
out_free:
	free(set);
	free(list);
	return unsynced;
}

/* r2: does FILE's sync have metadata of its own to commit, a size change
 * below MARK?  (Its name is asked by names_of.)  An overwrite in place
 * needs no journal commit on ext4 or xfs, so it forces none. */
static int size_changes(faultsim_cache *c, int file, uint64_t mark)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);

	for (uint64_t pos = faultsim_file_scan_from(c, file); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (!rec_is_data(r) || r->file != file || r->seq >= mark ||
		    rec_state(r) != ST_UNSYNCED)
			continue;
		if ((r->kind == REC_WRITE && r->off + r->len > r->old_size) ||
		    (r->kind != REC_WRITE && r->new_size != r->old_size))
			return 1;
	}
	return 0;
}

/* r2: a journal commit: every unsynced namespace record below MARK. */
static void names_settle_all(faultsim_cache *c, uint64_t mark)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);

	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (!rec_is_data(r) && r->seq < mark &&
		    rec_state(r) == ST_UNSYNCED)
			settle(c, r);
	}
}

/* A file sync succeeded: its records below MARK are durable, and under
 * the model (r1, r2) namespace records with them. */
static void file_synced(faultsim_cache *c, int file, uint64_t mark)
{
	uint32_t fs = __atomic_load_n(&c->fs, __ATOMIC_ACQUIRE);
	int commit = fs_ordered_names(fs) && size_changes(c, file, mark);

	mark_file(c, file, mark, ST_SYNCED);
	if (fs_ordered_names(fs) && (commit || names_of(c, file, mark, 0)))
		names_settle_all(c, mark);
	else if (fs_names_on_fsync(fs) && !fs_ordered_names(fs))
		names_of(c, file, mark, 1);
}

int faultsim_cache_sync_end(faultsim_cache *c, int file, uint64_t mark,
                            int result, faultsim_profile profile)
{
	int wrote = 0;

	if (!faultsim_file_at(c, file))
		return 0;
	pthread_mutex_lock(&c->lock);
	if (result >= 0)
		file_synced(c, file, mark);
	else if (profile == FAULTSIM_PROFILE_EXT4 ||
	         profile == FAULTSIM_PROFILE_XFS)
		mark_file(c, file, mark, ST_LOST);
	else if (profile == FAULTSIM_PROFILE_BTRFS)
		wrote = revert_file(c, file, mark);
	faultsim_rec_trim(c);
	pthread_mutex_unlock(&c->lock);
	return wrote;
}

/* ---- directories ----------------------------------------------------------- */

uint64_t faultsim_cache_dir_sync_begin(faultsim_cache *c)
{
	return faultsim_cache_sync_begin(c);
}

/* Is PATH's directory part exactly DIR? */
static int in_dir(const char *path, const char *dir)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0;
	size_t dlen = (size_t)(slash - path);
	if (dlen == 0)
		return strcmp(dir, "/") == 0;
	return strlen(dir) == dlen && memcmp(path, dir, dlen) == 0;
}

/* A namespace record became durable: its stash (the replaced or unlinked
 * file's last name) is garbage now, and that file is gone for good. */
static void settle(faultsim_cache *c, fs_rec *r)
{
	const char *stash = rec_path(r, 2);
	rec_set_state(r, ST_SYNCED);
	if (!*stash)
		return;
	for (uint32_t i = 0; i < c->nfiles; i++) {
		fs_file *f = &c->files[i];
		if (!f->gone && strcmp(faultsim_file_path(f), stash) == 0) {
			f->gone = 1;
			c->gone_hint = i + 1;
		}
	}
	unlink(stash);
}

void faultsim_cache_dir_sync_end(faultsim_cache *c, const char *absdir,
                                 uint64_t mark, int result)
{
	char dir[PATH_MAX];

	if (result < 0 || faultsim_cache_realdir_memo(c, absdir, dir) < 0)
		return; /* a failed directory sync makes nothing durable */
	pthread_mutex_lock(&c->lock);
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	/* r2: one journal, so a directory's sync commits every earlier
	 * namespace operation, in any directory */
	int all = fs_ordered_names(__atomic_load_n(&c->fs, __ATOMIC_ACQUIRE));
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		pos += r->size;
		if (all && !rec_is_data(r) && r->seq < mark &&
		    rec_state(r) == ST_UNSYNCED)
			settle(c, r);
		if (rec_is_data(r) || r->seq >= mark ||
		    rec_state(r) != ST_UNSYNCED)
			continue;
		if (in_dir(rec_path(r, 0), dir))
			r->dirsync |= DIRSYNC_A;
		if (r->kind == REC_RENAME && in_dir(rec_path(r, 1), dir))
			r->dirsync |= DIRSYNC_B;
		if (r->dirsync == (DIRSYNC_A | DIRSYNC_B))
			settle(c, r);
	}
	faultsim_rec_trim(c);
	pthread_mutex_unlock(&c->lock);
}
