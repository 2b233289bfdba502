/*
 * shim_tree.c -- the soundness floor (shim.h): the watched directory before
 * a life, and after it every difference explained by what the shim
 * recorded, or the run refused.  The shim's own check (shim_check_files)
 * looks only at files it tracked; this one looks at every entry, so a
 * write made where no wrapper sees it (a Go program's own system calls,
 * io_uring, a raw syscall instruction, a descriptor that reached the
 * program unseen) cannot turn into a verdict.
 *
 * Work and memory are bounded by the directory: one entry per name, one
 * sort, one binary search per name.
 */

#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct tree_entry {
	char *rel;             /* relative to the directory                   */
	uint32_t mode;         /* st_mode                                     */
	uint64_t dev, ino;
	uint64_t size;
	uint64_t mtime_ns;
} tree_entry;

struct shim_tree {
	tree_entry *e;         /* sorted by name                              */
	tree_entry **by_ino;   /* the same, sorted by device and inode        */
	size_t n, cap;
	int failed;            /* out of memory while scanning                */
};

/* nftw has no argument pointer: the walk's state lives here (the harness
 * is single-threaded when it scans). */
static shim_tree *scan_t;
static const char *scan_pats;
static size_t scan_root_len;

static int scan_one(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
	tree_entry *e;

	(void)type;
	if (ftw->level == 0)
		return 0; /* the directory itself */
	if (shim_volatile_match(scan_pats, path) || faultsim_is_stash(path))
		return 0; /* the program's claim; the simulator's own links */
	if (scan_t->n == scan_t->cap) {
		size_t cap = scan_t->cap ? scan_t->cap * 2 : 256;
		tree_entry *ne = realloc(scan_t->e, cap * sizeof *ne);
		if (!ne)
			goto out_nomem;
		scan_t->e = ne;
		scan_t->cap = cap;
	}
	e = &scan_t->e[scan_t->n];
	e->rel = strdup(path + scan_root_len + 1);
	if (!e->rel)
		goto out_nomem;
	e->mode = st->st_mode;
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mtime_ns = shim_mtime_ns(st);
	scan_t->n++;
	return 0;
out_nomem:
	scan_t->failed = 1;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const tree_entry *)a)->rel, ((const tree_entry *)b)->rel);
}

static int by_ino(const void *a, const void *b)
{
	const tree_entry *x = *(tree_entry *const *)a, *y = *(tree_entry *const *)b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The entry of T for file (DEV, INO), under any of its names; NULL. */
static const tree_entry *find_ino(const shim_tree *t, uint64_t dev,
                                  uint64_t ino)
{
	tree_entry key = { .dev = dev, .ino = ino }, *k = &key;
	tree_entry **hit;

	if (t->n == 0)
		return NULL; /* (bsearch's base may not be NULL) */
	hit = bsearch(&k, t->by_ino, t->n, sizeof *t->by_ino, by_ino);

	return hit ? *hit : NULL;
}

void shim_tree_free(shim_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].rel);
	free(t->e);
	free(t->by_ino);
	free(t);
}

shim_tree *shim_tree_scan(const char *dir, const char *volatile_pats,
                          char *why, size_t whylen)
{
	shim_tree *t = calloc(1, sizeof *t);

	if (!t) {
		snprintf(why, whylen, "no memory to note %s", dir);
		return NULL;
	}
	scan_t = t;
	scan_pats = volatile_pats;
	scan_root_len = strlen(dir);
	while (scan_root_len > 1 && dir[scan_root_len - 1] == '/')
		scan_root_len--;
	if (nftw(dir, scan_one, 16, FTW_PHYS) != 0 || t->failed) {
		snprintf(why, whylen, "cannot note what %s holds: %s", dir,
		         t->failed ? "out of memory" : strerror(errno));
		shim_tree_free(t);
		return NULL;
	}
	if (t->n) /* (qsort's base may not be NULL: an empty directory) */
		qsort(t->e, t->n, sizeof *t->e, by_name);
	t->by_ino = malloc((t->n ? t->n : 1) * sizeof *t->by_ino);
	if (!t->by_ino) {
		snprintf(why, whylen, "no memory to note %s", dir);
		shim_tree_free(t);
		return NULL;
	}
	for (size_t i = 0; i < t->n; i++)
		t->by_ino[i] = &t->e[i];
	if (t->n)
		qsort(t->by_ino, t->n, sizeof *t->by_ino, by_ino);
	return t;
}

static int name_recorded(const shim_shared *s, const char *rel)
{
	uint64_t key = shim_name_hash(rel, strlen(rel));

	for (uint32_t i = 0; i < SHIM_NAMES; i++) {
		uint64_t k = s->names[(key + i) % SHIM_NAMES];
		if (k == key)
			return 1;
		if (k == 0)
			return 0;
	}
	return 0;
}

static const shim_seen *seen_find(const shim_shared *s, uint64_t dev,
                                  uint64_t ino)
{
	uint64_t key = shim_seen_key(dev, ino);

	for (uint32_t i = 0; i < SHIM_SEEN; i++) {
		const shim_seen *e = &s->seen[(key + i) % SHIM_SEEN];
		if (e->key == key)
			return e;
		if (e->key == 0)
			return NULL;
	}
	return NULL;
}

static const char *kind(uint32_t mode)
{
	return S_ISDIR(mode) ? "directory" : S_ISREG(mode) ? "file" :
	       S_ISLNK(mode) ? "symbolic link" : "special file";
}

/* Sockets and FIFOs hold no bytes a crash could lose. */
static int judged(uint32_t mode)
{
	return !S_ISSOCK(mode) && !S_ISFIFO(mode);
}

#define UNSEEN " -- made by a call the kit did not see (a program's own " \
	"system calls, as Go makes them; io_uring; a raw syscall " \
	"instruction; a descriptor that reached it unseen)"

/* A name that appeared, vanished or changed inode: 0 when explained. */
static int check_name(const shim_shared *s, const tree_entry *was,
                      const tree_entry *now, char *why, size_t whylen)
{
	const tree_entry *e = now ? now : was;

	if (!judged(e->mode) || name_recorded(s, e->rel))
		return 0;
	if (!was)
		snprintf(why, whylen, "%s %s appeared, but no recorded call "
		         "created it%s", kind(now->mode), now->rel, UNSEEN);
	else if (!now)
		snprintf(why, whylen, "%s %s vanished, but no recorded call "
		         "removed or renamed it%s", kind(was->mode), was->rel,
		         UNSEEN);
	else
		snprintf(why, whylen, "%s names another file (inode %" PRIu64
		         ", was %" PRIu64 "), but no recorded call renamed or "
		         "created it%s", now->rel, now->ino, was->ino, UNSEEN);
	return -1;
}

/* A regular file that is new or changed: 0 when a recorded change
 * explains its bytes.  BEFORE is the whole note (the file may have had
 * another name: a rename or a link of a file this life did not write). */
static int check_bytes(const shim_shared *s, const shim_tree *before,
                       const tree_entry *now, char *why, size_t whylen)
{
	const tree_entry *was = find_ino(before, now->dev, now->ino);
	const shim_seen *e;

	if (!S_ISREG(now->mode))
		return 0;
	if (was && was->size == now->size && was->mtime_ns == now->mtime_ns)
		return 0; /* untouched, under whatever name */
	/* empty, under a name a recorded call made: a create (a kill may
	 * fall between the real open and the shim's note of the new file,
	 * whose inode number an earlier file of this life may have had) */
	if (now->size == 0 && (!was || name_recorded(s, now->rel)))
		return 0;
	e = seen_find(s, now->dev, now->ino);
	if (e && e->unseen) {
		snprintf(why, whylen, "%s was changed between two changes the kit "
		         "recorded on it (its mtime was later than the first one's "
		         "end when the second began)%s", now->rel, UNSEEN);
		return -1;
	}
	if (e && was && e->first_mtime && e->first_mtime != UINT64_MAX &&
	    e->first_mtime != was->mtime_ns) {
		snprintf(why, whylen, "%s was changed before the first change the "
		         "kit recorded on it in this life%s", now->rel, UNSEEN);
		return -1;
	}
	if (e && (e->inflight || e->mapped))
		return 0; /* a kill mid-call, or the kernel's own stamps */
	if (e && e->last_ns && now->mtime_ns <= e->last_ns)
		return 0;
	if (!e || !e->last_ns)
		snprintf(why, whylen, "%s was changed (%" PRIu64 " bytes, was %"
		         PRIu64 "), but no recorded call wrote it%s", now->rel,
		         now->size, was ? was->size : 0, UNSEEN);
	else
		snprintf(why, whylen, "%s was changed %" PRIu64 " us after the "
		         "last write the kit recorded on it%s", now->rel,
		         (now->mtime_ns - e->last_ns) / 1000, UNSEEN);
	return -1;
}

int shim_tree_check(const shim_shared *s, const shim_tree *before,
                    const char *dir, const char *volatile_pats, char *why,
                    size_t whylen)
{
	shim_tree *after;
	int rc = 0;

	if (__atomic_load_n(&s->seen_full, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&s->names_full, __ATOMIC_ACQUIRE)) {
		snprintf(why, whylen, "more than %d files or %d names changed "
		         "in one life: the kit cannot tell them from unseen "
		         "changes (a shorter --kill-every makes lives shorter)",
		         SHIM_SEEN, SHIM_NAMES);
		return -1;
	}
	after = shim_tree_scan(dir, volatile_pats, why, whylen);
	if (!after)
		return -1;
	/* both lists are sorted by name: one merge */
	size_t i = 0, j = 0;
	while (rc == 0 && (i < before->n || j < after->n)) {
		const tree_entry *a = i < before->n ? &before->e[i] : NULL;
		const tree_entry *b = j < after->n ? &after->e[j] : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->rel, b->rel);

		if (c < 0) {
			rc = check_name(s, a, NULL, why, whylen);
			i++;
		} else if (c > 0) {
			rc = check_name(s, NULL, b, why, whylen);
			if (rc == 0)
				rc = check_bytes(s, before, b, why, whylen);
			j++;
		} else {
			if (a->ino != b->ino || a->dev != b->dev ||
			    (a->mode & S_IFMT) != (b->mode & S_IFMT))
				rc = check_name(s, a, b, why, whylen);
			if (rc == 0)
				rc = check_bytes(s, before, b, why, whylen);
			i++;
			j++;
		}
	}
	shim_tree_free(after);
	return rc;
}
