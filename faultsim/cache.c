/*
 * cache.c -- the volatile-cache record, writer side: tracking files,
 * recording writes and namespace operations before they are made, and
 * marking them durable when a sync succeeds.  The crash itself is crash.c.
 * The invariants that keep the record exact across a SIGKILL are numbered
 * in cache_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

#define REC_ALIGN(n) (((n) + 7u) & ~(uint64_t)7u)
#define ARENA_MAX ((uint64_t)0x7fffffffu * 8u) /* what a window can address */

/* Maps LEN bytes of FD (or anonymous memory when FD < 0), shared, and
 * fills in a fresh cache header. */
static int cache_map(size_t capacity, int fd, faultsim_cache **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (capacity == 0)
		capacity = FAULTSIM_CACHE_DEFAULT;
	capacity = REC_ALIGN(capacity);
	if (capacity > ARENA_MAX || capacity < 4096)
		return -EINVAL;
	size_t len = sizeof(faultsim_cache) + 2 * capacity;
	if (fd >= 0 && ftruncate(fd, (off_t)len) != 0)
		return -errno;
	/* Shared: a forked writer and its parent see the same pages, and
	 * they outlive the writer's death. */
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               fd < 0 ? MAP_SHARED | MAP_ANONYMOUS : MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	faultsim_cache *c = m;
	c->magic = FAULTSIM_CACHE_MAGIC;
	c->capacity = capacity;
	c->map_len = len;
	c->next_seq = 1;
	c->fs = FAULTSIM_FS_POSIX;
	faultsim_cache_clear(c);
	*out = c;
	return 0;
}

int faultsim_cache_create(size_t capacity, faultsim_cache **out)
{
	return cache_map(capacity, -1, out);
}

int faultsim_cache_create_fd(size_t capacity, int *fd, faultsim_cache **out)
{
	int rc, m;

	if (!fd || !out)
		return -EINVAL;
	*fd = -1;
	m = memfd_create("faultsim-cache", MFD_CLOEXEC);
	if (m < 0)
		return -errno;
	rc = cache_map(capacity, m, out);
	if (rc < 0) {
		close(m);
		return rc;
	}
	*fd = m;
	return 0;
}

int faultsim_cache_attach(int fd, faultsim_cache **out)
{
	struct stat st;
	void *m;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fstat(fd, &st) != 0)
		return -errno;
	if ((uint64_t)st.st_size < sizeof(faultsim_cache))
		return -EINVAL;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	         fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	faultsim_cache *c = m;
	if (c->magic != FAULTSIM_CACHE_MAGIC ||
	    c->map_len != (uint64_t)st.st_size) {
		munmap(m, (size_t)st.st_size);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

void faultsim_cache_detach(faultsim_cache *c)
{
	if (c)
		munmap(c, c->map_len);
}

void faultsim_cache_destroy(faultsim_cache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	munmap(c, c->map_len);
}

/* A SIGKILLed writer may die holding the lock, so whoever takes over (only
 * ever when no writer is alive) makes a fresh one. */
void faultsim_cache_init_lock(faultsim_cache *c)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&c->lock, &a);
	pthread_mutexattr_destroy(&a);
}

void faultsim_cache_clear(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c->window, win_make(win_half(w), 0, 0),
	                 __ATOMIC_RELEASE);
	c->nfiles = 0;
	c->overflowed = 0;
	c->inflight = SCAN_NONE;
	c->trim_at = 0;
	c->gone_hint = 0;
	faultsim_cache_names_changed(c); /* a crash renamed and removed */
	faultsim_cache_init_lock(c);
}

void faultsim_cache_writer_died(faultsim_cache *c)
{
	faultsim_cache_init_lock(c);
	/* it may have died inside a call: the record says what the call did
	 * before anyone reads it (the next writer's device view, a sync) */
	faultsim_inflight_settle(c);
	faultsim_map_settle(c); /* its stores through a mapping, as they are */
	/* the dead writer may have been between two of these updates: scan
	 * every file from the window's start next time (always correct) */
	for (uint32_t i = 0; i < c->nfiles; i++) {
		file_scan_set(c, &c->files[i], 0);
		c->files[i].size_known = 0; /* (10) */
	}
}

int faultsim_cache_set_fs(faultsim_cache *c, faultsim_fs fs)
{
	if ((unsigned)fs > FAULTSIM_FS_BTRFS)
		return -EINVAL;
	__atomic_store_n(&c->fs, (uint32_t)fs, __ATOMIC_RELEASE);
	return 0;
}

faultsim_fs faultsim_cache_fs(const faultsim_cache *c)
{
	return (faultsim_fs)__atomic_load_n(&c->fs, __ATOMIC_ACQUIRE);
}

int faultsim_cache_overflowed(const faultsim_cache *c)
{
	return __atomic_load_n(&c->overflowed, __ATOMIC_ACQUIRE) != 0;
}

void faultsim_cache_clear_overflow(faultsim_cache *c)
{
	__atomic_store_n(&c->overflowed, 0, __ATOMIC_RELEASE);
}

size_t faultsim_cache_used(const faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	return (size_t)(win_tail(w) - win_start(w));
}

size_t faultsim_cache_peak(const faultsim_cache *c)
{
	return (size_t)c->peak;
}

uint32_t faultsim_cache_nfiles(const faultsim_cache *c)
{
	return __atomic_load_n(&c->nfiles, __ATOMIC_ACQUIRE);
}

/* ---- resolved directories (a memo per process) -------------------------- */

#define MEMO_SLOTS 8

static struct memo {
	uint32_t gen;               /* the cache's names_gen it was made under */
	uint32_t used;
	char dir[PATH_MAX], real[PATH_MAX];
} memo[MEMO_SLOTS];
static unsigned memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

void faultsim_cache_names_changed(faultsim_cache *c)
{
	__atomic_add_fetch(&c->names_gen, 1, __ATOMIC_ACQ_REL);
}

int faultsim_cache_realdir_memo(faultsim_cache *c, const char *dir,
                                char *real)
{
	uint32_t gen;

	if (!c || dir[0] != '/' || strlen(dir) >= PATH_MAX)
		return realpath(dir, real) ? 0 : -errno;
	gen = __atomic_load_n(&c->names_gen, __ATOMIC_ACQUIRE);
	if (pthread_mutex_trylock(&memo_lock) == 0) {
		for (int i = 0; i < MEMO_SLOTS; i++) {
			struct memo *m = &memo[i];
			if (m->used && m->gen == gen && strcmp(m->dir, dir) == 0) {
				memcpy(real, m->real, strlen(m->real) + 1);
				pthread_mutex_unlock(&memo_lock);
				return 0;
			}
		}
		pthread_mutex_unlock(&memo_lock);
	}
	if (!realpath(dir, real))
		return -errno;
	/* made under GEN, read before the lookup: a rename while it ran
	 * leaves a memo no later call takes */
	if (pthread_mutex_trylock(&memo_lock) == 0) {
		struct memo *m = &memo[memo_next++ % MEMO_SLOTS];
		m->gen = gen;
		m->used = 1;
		memcpy(m->dir, dir, strlen(dir) + 1);
		memcpy(m->real, real, strlen(real) + 1);
		pthread_mutex_unlock(&memo_lock);
	}
	return 0;
}

int faultsim_cache_abspath_memo(faultsim_cache *c, const char *path,
                                char *out, size_t outlen)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 1;
	int rc;

	if (!*base)
		return -EISDIR; /* "dir/": not a file name */
	if (dlen >= sizeof dir)
		return -ENAMETOOLONG;
	if (!slash)
		memcpy(dir, ".", 2);
	else if (dlen == 0)
		memcpy(dir, "/", 2);
	else {
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	if ((rc = faultsim_cache_realdir_memo(c, dir, real)) < 0)
		return rc;
	/* "REAL/BASE" ("/BASE" at the root) by hand: every open and unlink
	 * of a followed program comes here */
	size_t rlen = strcmp(real, "/") == 0 ? 0 : strlen(real);
	size_t blen = strlen(base), n = rlen + 1 + blen;
	if (n >= outlen || n >= FAULTSIM_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(out, real, rlen);
	out[rlen] = '/';
	memcpy(out + rlen + 1, base, blen + 1);
	return 0;
}

int faultsim_cache_abspath(const char *path, char *out, size_t outlen)
{
	return faultsim_cache_abspath_memo(NULL, path, out, outlen);
}

/* ---- the file table ------------------------------------------------------ */

fs_file *faultsim_file_at(faultsim_cache *c, int file)
{
	if (file < 0 || (uint32_t)file >= c->nfiles)
		return NULL;
	return &c->files[file];
}

const char *faultsim_file_path(const fs_file *f)
{
	return f->path[f->cur];
}

/* Moves F to NEWPATH: the new path goes into the other slot, then cur flips,
 * so the old path stays readable (invariant 4). */
static void file_move(fs_file *f, const char *newpath)
{
	uint32_t other = f->cur ^ 1u;
	snprintf(f->path[other], FAULTSIM_PATH_MAX, "%s", newpath);
	__atomic_store_n(&f->cur, other, __ATOMIC_RELEASE);
}

/* Moves every live file whose current path is FROM to TO; returns how many. */
int faultsim_files_move(faultsim_cache *c, const char *from, const char *to)
{
	int n = 0;
	for (uint32_t i = 0; i < c->nfiles; i++) {
		fs_file *f = &c->files[i];
		if (!f->gone && strcmp(faultsim_file_path(f), from) == 0) {
			file_move(f, to);
			n++;
		}
	}
	return n;
}

/* Lock held: whether a record in the window names file I (its newest
 * record is not older than the window's oldest). */
static int in_window(faultsim_cache *c, uint32_t i)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	return win_start(w) < win_tail(w) &&
	       c->files[i].last_seq >= rec_at(c, win_start(w))->seq;
}

/* Lock held, invariant (9): the entry settle() last found durably
 * unlinked, when nothing in the window names it; or -1. */
static int gone_slot(faultsim_cache *c)
{
	uint32_t i = c->gone_hint;

	if (i == 0 || --i >= c->nfiles || !c->files[i].gone || in_window(c, i))
		return -1;
	c->gone_hint = 0;
	return (int)i;
}

/* Lock held, invariant (9): an entry no record in the window names, a
 * durably unlinked one first, else the one idle longest; or -1. */
static int reusable_slot(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	unsigned char used[FAULTSIM_MAX_FILES] = { 0 };
	int best = -1;

	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		if (rec_is_data(r) && r->file >= 0 &&
		    r->file < FAULTSIM_MAX_FILES)
			used[r->file] = 1;
		pos += r->size;
	}
	for (uint32_t i = 0; i < c->nfiles; i++) {
		if (used[i])
			continue;
		if (c->files[i].gone)
			return (int)i;
		if (best < 0 || c->files[i].last_seq < c->files[best].last_seq)
			best = (int)i;
	}
	return best;
}

uint32_t faultsim_cache_file_gen(const faultsim_cache *c, int file)
{
	if (file < 0 || file >= FAULTSIM_MAX_FILES)
		return 0;
	return __atomic_load_n(&c->files[file].gen, __ATOMIC_ACQUIRE);
}

int faultsim_cache_track(faultsim_cache *c, int fd, const char *abspath)
{
	struct stat st;

	return faultsim_cache_track_stat(c, fd, abspath, &st);
}

/* The entry for (DEV, INO) at ABSPATH, found or made (lock held): its id,
 * or -ENOBUFS.  Its size is left unknown (10). */
static int track_locked(faultsim_cache *c, uint64_t dev, uint64_t ino,
                        const char *abspath)
{
	for (uint32_t i = 0; i < c->nfiles; i++) {
		fs_file *f = &c->files[i];
		if (!f->gone && f->dev == dev &&
		    f->ino == ino) {
			if (strcmp(faultsim_file_path(f), abspath) != 0)
				file_move(f, abspath);
			f->size_known = 0;
			return (int)i;
		}
	}
	/* (9): a program that creates, syncs and unlinks file after file
	 * (a journal per transaction) reuses the entry of one durably
	 * unlinked as soon as nothing in the window names it, so the table
	 * (and every pass over it) stays as small as the files alive; when
	 * the table is full, any entry nothing in the window names */
	int slot = gone_slot(c);
	if (slot < 0 && c->nfiles >= FAULTSIM_MAX_FILES)
		slot = reusable_slot(c);
	if (slot >= 0 || c->nfiles >= FAULTSIM_MAX_FILES) {
		if (slot >= 0) {
			fs_file *g = &c->files[slot];
			__atomic_add_fetch(&g->gen, 1, __ATOMIC_ACQ_REL);
			g->dev = dev;
			g->ino = ino;
			file_scan_set(c, g, SCAN_NONE);
			g->size_known = 0;
			g->last_seq = c->next_seq;
			snprintf(g->path[g->cur ^ 1u], FAULTSIM_PATH_MAX, "%s",
			         abspath);
			__atomic_store_n(&g->cur, g->cur ^ 1u, __ATOMIC_RELEASE);
			__atomic_store_n(&g->gone, 0, __ATOMIC_RELEASE);
			return slot;
		}
		__atomic_store_n(&c->overflowed, 1, __ATOMIC_RELEASE);
		return -ENOBUFS;
	}
	fs_file *f = &c->files[c->nfiles];
	f->dev = dev;
	f->ino = ino;
	f->cur = 0;
	f->gone = 0;
	file_scan_set(c, f, SCAN_NONE);
	f->size_known = 0;
	f->last_seq = c->next_seq;
	__atomic_add_fetch(&f->gen, 1, __ATOMIC_ACQ_REL);
	snprintf(f->path[0], FAULTSIM_PATH_MAX, "%s", abspath);
	f->path[1][0] = '\0';
	__atomic_store_n(&c->nfiles, c->nfiles + 1, __ATOMIC_RELEASE);
	return (int)c->nfiles - 1;
}

int faultsim_cache_track_stat(faultsim_cache *c, int fd, const char *abspath,
                              struct stat *st)
{
	int rc;

	if (strlen(abspath) >= FAULTSIM_PATH_MAX)
		return -ENAMETOOLONG;
	/* the fstat is made under the lock: every recorded write, truncate
	 * and extension moves the size under it, so what it reads is the
	 * size the entry keeps (10) -- one fstat a new file's first write
	 * fewer */
	pthread_mutex_lock(&c->lock);
	if (fstat(fd, st) != 0) {
		rc = -errno;
	} else if (!S_ISREG(st->st_mode)) {
		rc = -EINVAL;
	} else if ((rc = track_locked(c, (uint64_t)st->st_dev,
	                              (uint64_t)st->st_ino, abspath)) >= 0) {
		c->files[rc].size = (uint64_t)st->st_size;
		c->files[rc].size_known = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Opens file FILE read-write at its current path, or at its previous one if
 * a rename was recorded but never made; checks it is the same inode. */
int faultsim_file_open(faultsim_cache *c, int file)
{
	fs_file *f = faultsim_file_at(c, file);
	struct stat st;

	if (!f || f->gone)
		return -ENOENT;
	for (int k = 0; k < 2; k++) {
		const char *p = f->path[f->cur ^ (uint32_t)k];
		if (!*p)
			continue;
		int fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_dev == f->dev &&
		    (uint64_t)st.st_ino == f->ino)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* ---- appending records (lock held) ------------------------------------- */

/*
 * Invariant (5): copies the records still needed into the other half, then
 * switches to it with one store.  Needed: a data record from its file's
 * oldest record that is not durable on (a crash undoes a file's records
 * newest first down to there), and every unsynced namespace record.
 */
/* Whether compaction keeps R, given first[] (below). */
static int rec_kept(fs_rec *r, const uint64_t *first)
{
	uint8_t st = rec_state(r);
	return rec_is_data(r) ? st != ST_VOID && r->seq >= first[r->file]
	                      : st == ST_UNSYNCED;
}

/* The first seq of each file that a crash may still undo (first[], one per
 * file entry), and the bytes compact() would keep: invariant (5)'s "still
 * needed". */
static uint64_t needed(faultsim_cache *c, uint64_t *first)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE), keep = 0;

	for (int i = 0; i < FAULTSIM_MAX_FILES; i++)
		first[i] = UINT64_MAX;
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		uint8_t st = rec_state(r);
		if (rec_is_data(r) && st != ST_SYNCED && st != ST_VOID &&
		    r->seq < first[r->file])
			first[r->file] = r->seq;
		pos += r->size;
	}
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		if (rec_kept(r, first))
			keep += r->size;
		pos += r->size;
	}
	return keep;
}

/*
 * Invariant (5): copies the records still needed into the other half, then
 * switches to it with one store.  Needed: a data record from its file's
 * oldest record that is not durable on (a crash undoes a file's records
 * newest first down to there), and every unsynced namespace record.
 */
static void compact_with(faultsim_cache *c, const uint64_t *first)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t half = win_half(w) ^ 1u, dst = 0;
	unsigned char *to = c->arena + half * c->capacity;

	file_scan_forget_all(c); /* positions change */
	for (uint64_t pos = win_start(w); pos < win_tail(w);) {
		fs_rec *r = rec_at(c, pos);
		if (rec_kept(r, first)) {
			memcpy(to + dst, r, r->size);
			if (rec_is_data(r) && rec_state(r) == ST_UNSYNCED &&
			    file_scan(c, &c->files[r->file]) == SCAN_NONE)
				file_scan_set(c, &c->files[r->file], dst);
			dst += r->size;
		}
		pos += r->size;
	}
	__atomic_store_n(&c->window, win_make(half, 0, dst), __ATOMIC_RELEASE);
}

static void compact(faultsim_cache *c)
{
	uint64_t first[FAULTSIM_MAX_FILES];

	needed(c, first);
	compact_with(c, first);
}

/* No sync compacts below this tail: a short window is cheap to keep. */
#define TRIM_MIN ((uint64_t)256 << 10)

void faultsim_rec_trim(faultsim_cache *c)
{
	uint64_t first[FAULTSIM_MAX_FILES], tail, keep;

	faultsim_rec_reclaim(c);
	tail = win_tail(__atomic_load_n(&c->window, __ATOMIC_ACQUIRE));
	if (tail < c->trim_at || tail < TRIM_MIN ||
	    __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE) != SCAN_NONE)
		return;
	keep = needed(c, first);
	if (keep <= tail / 2 && tail - keep >= TRIM_MIN / 2) {
		compact_with(c, first);
		c->trim_at = 4 * keep; /* the scans cost O(1) a record */
	} else {
		c->trim_at = 2 * tail; /* nothing much to gain: look later */
	}
}

uint64_t faultsim_file_scan_from(faultsim_cache *c, int file)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t from = file_scan(c, &c->files[file]);
	if (from == SCAN_NONE)
		return win_tail(w);
	return from < win_start(w) ? win_start(w) : from;
}

/* Reserves a record of PAYLOAD bytes at the tail, compacting once when the
 * half is full; the caller fills it and calls faultsim_rec_publish.  NULL,
 * and the sticky overflow flag, when it still does not fit. */
fs_rec *faultsim_rec_reserve(faultsim_cache *c, uint8_t kind,
                             uint64_t payload, uint64_t *pos)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t need = REC_ALIGN(sizeof(fs_rec) + payload);

	if (need <= c->capacity && win_tail(w) + need > c->capacity) {
		compact(c);
		w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	}
	if (need > UINT32_MAX || win_tail(w) + need > c->capacity) {
		__atomic_store_n(&c->overflowed, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	*pos = win_tail(w);
	fs_rec *r = rec_at(c, *pos);
	memset(r, 0, sizeof *r);
	r->size = (uint32_t)need;
	r->kind = kind;
	r->state = ST_UNSYNCED;
	r->seq = c->next_seq++;
	r->file = -1;
	return r;
}

/* Invariant (1): one atomic store makes the filled record part of the log. */
void faultsim_rec_publish(faultsim_cache *c, fs_rec *r, uint64_t pos)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t tail = pos + r->size;
	/* before the publish, so a kill in between leaves it conservative */
	if (rec_is_data(r) && file_scan(c, &c->files[r->file]) == SCAN_NONE)
		file_scan_set(c, &c->files[r->file], pos);
	if (rec_is_data(r))
		c->files[r->file].last_seq = r->seq;
	/* (6): from here until its _end call the real call may be cut short
	 * (before the publish: a kill in between leaves a position past the
	 * tail, which faultsim_inflight_settle ignores) */
	if (rec_is_data(r))
		__atomic_store_n(&c->inflight, pos, __ATOMIC_RELEASE);
	__atomic_store_n(&c->window, win_make(win_half(w), win_start(w), tail),
	                 __ATOMIC_RELEASE);
	if (tail - win_start(w) > c->peak)
		c->peak = tail - win_start(w);
}

/* Moves the window's start past records that are durable or void; empties
 * it when nothing undoable is left, so a writer that syncs every commit
 * never fills the cache. */
void faultsim_rec_reclaim(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t pos = win_start(w), tail = win_tail(w);

	while (pos < tail) {
		uint8_t st = rec_state(rec_at(c, pos));
		if (st != ST_SYNCED && st != ST_VOID)
			break;
		pos += rec_at(c, pos)->size;
	}
	if (pos == tail) {
		pos = tail = 0; /* nothing undoable: every file is clean */
		file_scan_forget_all(c);
	}
	__atomic_store_n(&c->window, win_make(win_half(w), pos, tail),
	                 __ATOMIC_RELEASE);
}

static int read_exact(int fd, void *buf, uint64_t len, uint64_t off);

/* Reads what FD's file holds at OFF through a descriptor of its own,
 * buffered: FD was opened with O_DIRECT, which takes only whole blocks
 * into aligned memory, and the pre-image of a direct write is any range. */
static int read_buffered(int fd, void *buf, uint64_t len, uint64_t off)
{
	char p[64];

	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	int bfd = open(p, O_RDONLY | O_CLOEXEC);
	if (bfd < 0)
		return -errno;
	int rc = read_exact(bfd, buf, len, off);
	close(bfd);
	return rc;
}

static int read_exact(int fd, void *buf, uint64_t len, uint64_t off)
{
	unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL) {
			int fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && (fl & O_DIRECT))
				return read_buffered(fd, p, len, off);
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int file_size(int fd, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

/* FILE's size (lock held): the entry's, else read from FD and kept (10). */
static int entry_size(faultsim_cache *c, int file, int fd, uint64_t *size)
{
	fs_file *f = &c->files[file];
	int rc;

	if (f->size_known) {
		*size = f->size;
		return 0;
	}
	rc = file_size(fd, size);
	if (rc == 0) {
		f->size = *size;
		f->size_known = 1;
	}
	return rc;
}

/* R, a write, returned RESULT (lock held): the file's size moves (10). */
static void entry_size_written(faultsim_cache *c, const fs_rec *r,
                               ssize_t result)
{
	fs_file *f = &c->files[r->file];

	if (result > 0 && r->off + (uint64_t)result > f->size)
		f->size = r->off + (uint64_t)result;
}

/* ---- data records ---------------------------------------------------------- */

int faultsim_ticket_hold(faultsim_cache *c, uint64_t pos, faultsim_ticket *t)
{
	t->cache = c;
	t->rec = pos;
	t->seq = rec_at(c, pos)->seq;
	return 0; /* the lock stays held until the _end call */
}

int faultsim_cache_write_begin(faultsim_cache *c, int file, int fd,
                               const void *buf, size_t len, uint64_t off,
                               faultsim_ticket *t)
{
	return faultsim_cache_write_begin_at(c, file, fd, buf, len, SEEK_SET,
	                                     &off, t);
}

int faultsim_cache_write_begin_at(faultsim_cache *c, int file, int fd,
                                  const void *buf, size_t len, int whence,
                                  uint64_t *offp, faultsim_ticket *t)
{
	uint64_t size, pos, pre, off = *offp;
	int rc;

	t->cache = NULL;
	if (!faultsim_file_at(c, file))
		return -EBADF;
	pthread_mutex_lock(&c->lock);
	rc = entry_size(c, file, fd, &size);
	if (rc < 0)
		goto out_unlock;
	if (whence == SEEK_END) {
		off = size; /* O_APPEND: the lock keeps the end where it is */
	} else if (whence == SEEK_CUR) {
		off_t cur = lseek(fd, 0, SEEK_CUR);
		rc = -errno;
		if (cur < 0)
			goto out_unlock;
		off = (uint64_t)cur;
	}
	*offp = off;
	pre = off < size ? (size - off < len ? size - off : len) : 0;
	fs_rec *r = faultsim_rec_reserve(c, REC_WRITE, pre + len, &pos);
	rc = -ENOBUFS;
	if (!r)
		goto out_unlock;
	r->file = file;
	r->off = off;
	r->len = len;
	r->old_size = size;
	r->pre_len = pre;
	rc = read_exact(fd, rec_pre(r), pre, off);
	if (rc < 0)
		goto out_unlock;
	if (len) /* (a write of nothing may come with a NULL buffer) */
		memcpy(rec_new(r), buf, len);
	faultsim_rec_publish(c, r, pos);
	t->size = size;
	return faultsim_ticket_hold(c, pos, t);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void faultsim_cache_write_end_durable(faultsim_ticket *t, ssize_t result)
{
	faultsim_cache *c = t->cache;
	if (!c)
		return;
	if (result > 0) {
		fs_rec *r = rec_at(c, t->rec);
		if ((uint64_t)result < r->len)
			r->len = (uint64_t)result;
		entry_size_written(c, r, result);
		rec_set_state(r, ST_SYNCED);
		/* settled: before the reclaim, which may reuse its position */
		__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
		t->cache = NULL;
		faultsim_rec_trim(c);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	faultsim_cache_write_end(t, result);
}

void faultsim_cache_write_end(faultsim_ticket *t, ssize_t result)
{
	faultsim_cache *c = t->cache;
	if (!c)
		return;
	fs_rec *r = rec_at(c, t->rec);
	if (result <= 0)
		rec_set_state(r, ST_VOID);
	else if ((uint64_t)result < r->len)
		r->len = (uint64_t)result; /* the new bytes' prefix was written */
	entry_size_written(c, r, result);
	__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
	t->cache = NULL;
	pthread_mutex_unlock(&c->lock);
}

/* Common part of truncate and extend: a size change of FILE from its current
 * size to NEW_SIZE, with the pre-image of any bytes cut off. */
static int size_change_begin(faultsim_cache *c, int file, int fd, uint8_t kind,
                             uint64_t new_size, uint64_t off,
                             faultsim_ticket *t)
{
	uint64_t size, pos, pre;
	int rc;

	t->cache = NULL;
	if (!faultsim_file_at(c, file))
		return -EBADF;
	pthread_mutex_lock(&c->lock);
	rc = entry_size(c, file, fd, &size);
	if (rc < 0)
		goto out_unlock;
	if (kind == REC_EXTEND && new_size < size)
		new_size = size; /* fallocate never shrinks */
	pre = new_size < size ? size - new_size : 0;
	fs_rec *r = faultsim_rec_reserve(c, kind, pre, &pos);
	rc = -ENOBUFS;
	if (!r)
		goto out_unlock;
	r->file = file;
	r->off = off;
	r->old_size = size;
	r->new_size = new_size;
	r->pre_len = pre;
	rc = read_exact(fd, rec_pre(r), pre, new_size);
	if (rc < 0)
		goto out_unlock;
	faultsim_rec_publish(c, r, pos);
	return faultsim_ticket_hold(c, pos, t);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int faultsim_cache_truncate_begin(faultsim_cache *c, int file, int fd,
                                  uint64_t len, faultsim_ticket *t)
{
	return size_change_begin(c, file, fd, REC_TRUNCATE, len, len, t);
}

int faultsim_cache_extend_begin(faultsim_cache *c, int file, int fd,
                                uint64_t off, uint64_t len,
                                faultsim_ticket *t)
{
	return size_change_begin(c, file, fd, REC_EXTEND, off + len, off, t);
}

void faultsim_cache_change_end(faultsim_ticket *t, int result)
{
	faultsim_cache *c = t->cache;
	if (!c)
		return;
	fs_rec *r = rec_at(c, t->rec);
	if (result < 0)
		rec_set_state(r, ST_VOID);
	else
		c->files[r->file].size = r->new_size; /* (10) */
	__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
	t->cache = NULL;
	pthread_mutex_unlock(&c->lock);
}

/* A write cut short: the longest prefix of R's new bytes that the file
 * (of SIZE bytes) holds, since the kernel copies a write's pages in order
 * and a SIGKILL stops it between two.  A byte the call would not have
 * changed counts as made: either way the file is the same. */
static void trim_write(int fd, fs_rec *r, uint64_t size)
{
	unsigned char buf[4096];
	uint64_t end = r->off + r->len < size ? r->off + r->len : size;
	uint64_t done = 0;

	while (r->off + done < end) {
		uint64_t n = end - r->off - done, i = 0;
		if (n > sizeof buf)
			n = sizeof buf;
		if (read_exact(fd, buf, n, r->off + done) < 0)
			return; /* unsure: leave the record as it was */
		while (i < n && buf[i] == rec_new(r)[done + i])
			i++;
		done += i;
		if (i < n)
			break;
	}
	if (done == 0)
		rec_set_state(r, ST_VOID); /* nothing reached the file */
	else
		r->len = done;
}

/*
 * Invariant (6): a writer killed between a record's publish and its _end
 * call may have made none, part or all of the real call.  Called with no
 * writer alive, before anything reads the record: trims it to what the
 * file shows.  A write keeps the prefix of its new bytes the file holds; a
 * truncate (atomic) happened only if the file has its new size; an
 * extension keeps the part of the growth the file has.  A record that did
 * nothing becomes VOID.
 */
void faultsim_inflight_settle(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	uint64_t pos = __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE), size;

	__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
	if (pos == SCAN_NONE || pos < win_start(w) || pos >= win_tail(w))
		return; /* none, or killed before the publish */
	fs_rec *r = rec_at(c, pos);
	uint8_t st = rec_state(r);
	if (!rec_is_data(r) || st == ST_VOID || st == ST_LOST)
		return;
	int fd = faultsim_file_open(c, r->file);
	if (fd < 0)
		return; /* gone with its name: the crash passes it by as well */
	if (file_size(fd, &size) == 0) {
		if (r->kind == REC_WRITE)
			trim_write(fd, r, size);
		else if (r->kind == REC_TRUNCATE && size != r->new_size)
			rec_set_state(r, ST_VOID);
		else if (r->kind == REC_EXTEND && size <= r->old_size)
			rec_set_state(r, ST_VOID);
		else if (r->kind == REC_EXTEND && size < r->new_size)
			r->new_size = size;
	}
	close(fd);
}
