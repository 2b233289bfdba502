/*
 * exec_explain.c -- why a power cut lost an acknowledged write (contract in
 * exec_explain.h).
 */
#include "exec_explain.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a copy of the watched directory ------------------------------------- */

typedef struct dir_entry {
	char *rel;        /* path relative to the directory                  */
	mode_t mode;      /* type and permissions                            */
	uint64_t ino;     /* the inode it had when saved                     */
	int64_t link_to;  /* a hard link: the entry saved first, or -1       */
} dir_entry;

struct explain_dir {
	char store[PATH_MAX - 64]; /* the temporary directory holding copies */
	dir_entry *e;
	size_t n, cap;
	uint64_t bytes;
	uint64_t *old_ino, *new_ino; /* regular files, after a restore       */
	size_t nino;
};

/* nftw has no argument pointer: the walk's state (the harness is
 * single-threaded when it saves or restores) */
static explain_dir *walk_d;
static size_t walk_root_len;
static uint64_t walk_cap;
static int walk_err;

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, rc = 0;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -1;
			break;
		}
	if (n < 0)
		rc = -1;
	close(in);
	if (close(out) != 0)
		rc = -1;
	return rc;
}

static int save_entry(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
	explain_dir *d = walk_d;
	dir_entry *e;
	char copy[PATH_MAX];

	(void)type;
	if (ftw->level == 0)
		return 0;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) &&
	    !S_ISLNK(st->st_mode))
		return 0; /* sockets, fifos: nothing a crash keeps */
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		dir_entry *g = realloc(d->e, cap * sizeof *g);
		if (!g)
			return walk_err = ENOMEM, 1;
		d->e = g;
		d->cap = cap;
	}
	e = &d->e[d->n];
	e->rel = strdup(path + walk_root_len + 1);
	e->mode = st->st_mode;
	e->ino = (uint64_t)st->st_ino;
	e->link_to = -1;
	if (!e->rel)
		return walk_err = ENOMEM, 1;
	d->n++;
	snprintf(copy, sizeof copy, "%s/%zu", d->store, d->n - 1);
	if (S_ISREG(st->st_mode)) {
		for (size_t i = 0; i + 1 < d->n; i++)
			if (S_ISREG(d->e[i].mode) && d->e[i].ino == e->ino) {
				e->link_to = (int64_t)i;
				return 0;
			}
		d->bytes += (uint64_t)st->st_size;
		if (d->bytes > walk_cap)
			return walk_err = EFBIG, 1;
		if (copy_file(path, copy, st->st_mode) != 0)
			return walk_err = errno ? errno : EIO, 1;
	} else if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n < 0)
			return walk_err = errno, 1;
		target[n] = '\0';
		if (symlink(target, copy) != 0)
			return walk_err = errno, 1;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (ftw->level == 0)
		return 0;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

static int empty_tree(const char *dir)
{
	return nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

int explain_dir_save(const char *dir, uint64_t cap, explain_dir **out,
                     char *why, size_t whylen)
{
	explain_dir *d = calloc(1, sizeof *d);
	const char *tmp = getenv("TMPDIR");

	*out = NULL;
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	snprintf(d->store, sizeof d->store, "%s/keel-why.XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(d->store)) {
		snprintf(why, whylen, "mkdtemp %s: %s", d->store, strerror(errno));
		free(d);
		return -1;
	}
	walk_d = d;
	walk_root_len = strlen(dir);
	walk_cap = cap;
	walk_err = 0;
	if (nftw(dir, save_entry, 32, FTW_PHYS) != 0 || walk_err) {
		int over = walk_err == EFBIG;
		if (over)
			snprintf(why, whylen, "the directory holds more than "
			         "%" PRIu64 " MiB", cap >> 20);
		else
			snprintf(why, whylen, "copying %s: %s", dir,
			         strerror(walk_err ? walk_err : errno));
		explain_dir_free(d);
		return over ? 1 : -1;
	}
	*out = d;
	return 0;
}

/* Puts entry I of D back at DIR/REL. */
static int restore_entry(explain_dir *d, size_t i, const char *dir)
{
	const dir_entry *e = &d->e[i];
	char to[PATH_MAX], copy[PATH_MAX];
	struct stat st;

	snprintf(to, sizeof to, "%s/%s", dir, e->rel);
	snprintf(copy, sizeof copy, "%s/%zu", d->store, i);
	if (S_ISDIR(e->mode))
		return mkdir(to, e->mode & 07777) == 0 || errno == EEXIST ? 0 : -1;
	if (S_ISLNK(e->mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(copy, target, sizeof target - 1);
		if (n < 0)
			return -1;
		target[n] = '\0';
		return symlink(target, to);
	}
	if (e->link_to >= 0) {
		char first[PATH_MAX];
		snprintf(first, sizeof first, "%s/%s", dir,
		         d->e[e->link_to].rel);
		return link(first, to);
	}
	if (copy_file(copy, to, e->mode) != 0 || lstat(to, &st) != 0)
		return -1;
	d->old_ino[d->nino] = e->ino;
	d->new_ino[d->nino++] = (uint64_t)st.st_ino;
	return 0;
}

int explain_dir_restore(explain_dir *d, const char *dir)
{
	if (!d->old_ino) {
		d->old_ino = calloc(d->n ? d->n : 1, sizeof(uint64_t));
		d->new_ino = calloc(d->n ? d->n : 1, sizeof(uint64_t));
		if (!d->old_ino || !d->new_ino)
			return errno = ENOMEM, -1;
	}
	d->nino = 0;
	if (empty_tree(dir) != 0)
		return -1;
	for (size_t i = 0; i < d->n; i++)
		if (restore_entry(d, i, dir) != 0)
			return -1;
	return 0;
}

size_t explain_dir_inodes(const explain_dir *d, const uint64_t **old_ino,
                          const uint64_t **new_ino)
{
	*old_ino = d->old_ino;
	*new_ino = d->new_ino;
	return d->nino;
}

uint64_t explain_dir_bytes(const explain_dir *d)
{
	return d ? d->bytes : 0;
}

void explain_dir_free(explain_dir *d)
{
	if (!d)
		return;
	if (d->store[0]) {
		empty_tree(d->store);
		rmdir(d->store);
	}
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].rel);
	free(d->e);
	free(d->old_ino);
	free(d->new_ino);
	free(d);
}

/* ---- the minimisation ------------------------------------------------------ */

/*
 * The search is hierarchical (Misherghi and Su's HDD): ddmin over groups of
 * the dropped records first -- by directory, then by file, then the file's
 * namespace operations apart from its data -- and over single records only
 * inside the groups that are left.  A record's file is the name it leaves:
 * a rename's target, so that a new file's write and the rename that names
 * it, which a loss often needs both of, stay together.  A power cut that
 * drops thousands of records (git's objects) has a few dozen groups at each
 * level, so a cause among them costs tens of replays where ddmin over the
 * records runs out; and a replay keeps or drops a file's records together,
 * the kind of state a real cut leaves.
 */
enum { LEVEL_DIR, LEVEL_FILE, LEVEL_CLASS, LEVEL_RECORD };

typedef struct mini {
	const faultsim_dropped *d;
	size_t n;
	explain_test_fn test;
	void *arg;
	unsigned tests, max;
	uint64_t *persist;      /* scratch: N seqs                        */
	unsigned char *in;      /* scratch: N flags                       */
	size_t *sub;            /* scratch: N record indexes              */
	size_t *start;          /* scratch: N + 1 group starts            */
} mini;

/* Replays with only the records SET[0..K) dropped (everything else the
 * cut dropped kept whole).  1 fails, 0 passes, -1 error, -2 out of tests. */
static int drop_only(mini *m, const size_t *set, size_t k)
{
	size_t np = 0;

	if (m->tests >= m->max)
		return -2;
	memset(m->in, 0, m->n);
	for (size_t i = 0; i < k; i++)
		m->in[set[i]] = 1;
	for (size_t i = 0; i < m->n; i++)
		if (!m->in[i])
			m->persist[np++] = m->d[i].seq;
	m->tests++;
	return m->test(m->arg, m->persist, np);
}

/* Every proper subset of CUR[0..*NCUR), smallest first: the true minimum
 * for a few records.  0 (found, in CUR), 1 (none: CUR is it), -1, -2. */
static int exhaustive(mini *m, size_t *cur, size_t *ncur)
{
	size_t set[4], c = *ncur;

	for (size_t size = 1; size < c; size++)
		for (unsigned bits = 1; bits < (1u << c); bits++) {
			size_t k = 0;
			if ((size_t)__builtin_popcount(bits) != size)
				continue;
			for (size_t i = 0; i < c; i++)
				if (bits & (1u << i))
					set[k++] = cur[i];
			int rc = drop_only(m, set, k);
			if (rc < 0)
				return rc;
			if (rc == 1) {
				memcpy(cur, set, k * sizeof *set);
				*ncur = k;
				return 0;
			}
		}
	return 1;
}

static int is_ns(const faultsim_dropped *d)
{
	return d->kind >= FAULTSIM_KIND_CREATE;
}

/* The name the record leaves behind: its file, or a rename's target. */
static const char *name_of(const faultsim_dropped *d)
{
	return d->kind == FAULTSIM_KIND_RENAME ? d->path_b : d->path;
}

static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

/* A and B fall in one group at LEVEL (a record is a group of its own). */
static int same_group(const faultsim_dropped *a, const faultsim_dropped *b,
                      int level)
{
	const char *na = name_of(a), *nb = name_of(b);
	size_t la = dir_len(na);

	if (level == LEVEL_RECORD)
		return 0;
	if (level == LEVEL_DIR)
		return la == dir_len(nb) && memcmp(na, nb, la) == 0;
	return strcmp(na, nb) == 0 &&
	       (level == LEVEL_FILE || is_ns(a) == is_ns(b));
}

/* qsort has no argument pointer: the records being sorted (the
 * minimisation runs in torture's one thread) */
static const faultsim_dropped *sort_d;

/* By directory, file, class, then record order: every group contiguous. */
static int by_group(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	const char *na = name_of(&sort_d[i]), *nb = name_of(&sort_d[j]);
	size_t la = dir_len(na), lb = dir_len(nb);
	int c;

	if ((c = memcmp(na, nb, la < lb ? la : lb)) != 0)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	if ((c = strcmp(na, nb)) != 0)
		return c;
	if (is_ns(&sort_d[i]) != is_ns(&sort_d[j]))
		return is_ns(&sort_d[i]) - is_ns(&sort_d[j]);
	return i < j ? -1 : i > j;
}

static int by_index(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	return i < j ? -1 : i > j;
}

/* The groups LEVEL makes of CUR[0..NCUR): their count; group U is
 * CUR[start[U] .. start[U + 1]). */
static size_t groups(mini *m, int level, const size_t *cur, size_t ncur)
{
	size_t g = 0;

	for (size_t i = 0; i < ncur; i++)
		if (i == 0 || !same_group(&m->d[cur[i - 1]], &m->d[cur[i]],
		                          level))
			m->start[g++] = i;
	m->start[g] = ncur;
	return g;
}

/* CUR without (PASS 1) or with only (PASS 0) groups [S, E) of C, in
 * M->SUB: the number of records. */
static size_t pick(mini *m, const size_t *cur, size_t c, size_t s, size_t e,
                   int pass)
{
	size_t k = 0;

	for (size_t u = 0; u < c; u++)
		if ((u >= s && u < e) == (pass == 0))
			for (size_t i = m->start[u]; i < m->start[u + 1]; i++)
				m->sub[k++] = cur[i];
	return k;
}

/* Zeller's ddmin over the groups LEVEL makes of CUR[0..*NCUR), which
 * fails: shrinks it to groups none of which can go.  0, or -1 / -2 (what
 * it has so far still fails). */
static int ddmin(mini *m, int level, size_t *cur, size_t *ncur)
{
	size_t gran = 2, c;

	while ((c = groups(m, level, cur, *ncur)) >= 2) {
		size_t chunk = (c + gran - 1) / gran, k;
		int reduced = 0, rc;

		for (size_t s = 0; s < c && !reduced; s += chunk) {
			size_t e = s + chunk < c ? s + chunk : c;
			/* the chunk alone, then everything but the chunk */
			for (int pass = 0; pass < 2 && !reduced; pass++) {
				if (pass == 1 && gran == 2)
					continue; /* the complement of one half is
					             the other half: tried */
				k = pick(m, cur, c, s, e, pass);
				if ((rc = drop_only(m, m->sub, k)) < 0)
					return rc;
				if (rc == 1) {
					memcpy(cur, m->sub, k * sizeof *cur);
					*ncur = k;
					gran = pass == 0 ? 2 : gran > 2 ? gran - 1 : 2;
					reduced = 1;
				}
			}
		}
		if (reduced)
			continue;
		if (gran >= c)
			break;
		gran = 2 * gran < c ? 2 * gran : c;
	}
	return 0;
}

/* CAUSE[0..*NCAUSE) = every record, which fails: the levels in turn. */
static int hierarchical(mini *m, size_t *cause, size_t *ncause)
{
	int rc = 0;

	sort_d = m->d;
	qsort(cause, *ncause, sizeof *cause, by_group);
	for (int level = LEVEL_DIR; level < LEVEL_RECORD && rc == 0; level++)
		rc = ddmin(m, level, cause, ncause);
	if (rc == 0)
		rc = *ncause <= 4 ? exhaustive(m, cause, ncause)
		                  : ddmin(m, LEVEL_RECORD, cause, ncause);
	qsort(cause, *ncause, sizeof *cause, by_index);
	return rc == 1 ? 0 : rc;
}

enum explain_status explain_minimise(const faultsim_dropped *dropped,
                                     size_t n, explain_test_fn test,
                                     void *arg, unsigned max_tests,
                                     size_t *cause, size_t *ncause,
                                     unsigned *tests)
{
	mini m = { dropped, n, test, arg, 0, max_tests, NULL, NULL, NULL,
	           NULL };
	enum explain_status st = EXPLAIN_ERROR;
	int rc;

	*ncause = 0;
	m.persist = malloc((n ? n : 1) * sizeof *m.persist);
	m.in = malloc(n ? n : 1);
	m.sub = malloc((n ? n : 1) * sizeof *m.sub);
	m.start = malloc((n + 1) * sizeof *m.start);
	if (!m.persist || !m.in || !m.sub || !m.start)
		goto out;
	for (size_t i = 0; i < n; i++)
		cause[i] = i;
	/* the crash as it was must fail, and keeping everything must pass */
	if ((rc = drop_only(&m, cause, n)) != 1) {
		st = rc == 0 ? EXPLAIN_NO_REPRO : EXPLAIN_ERROR;
		goto out;
	}
	if ((rc = drop_only(&m, NULL, 0)) != 0) {
		st = rc == 1 ? EXPLAIN_NOT_DROPS : EXPLAIN_ERROR;
		goto out;
	}
	*ncause = n;
	if (n <= 4) {
		rc = exhaustive(&m, cause, ncause);
		rc = rc == 1 ? 0 : rc;
	} else {
		rc = hierarchical(&m, cause, ncause);
	}
	st = rc == 0 ? EXPLAIN_FOUND : rc == -2 ? EXPLAIN_BUDGET : EXPLAIN_ERROR;
out:
	*tests = m.tests;
	free(m.persist);
	free(m.in);
	free(m.sub);
	free(m.start);
	return st;
}

/* ---- words ------------------------------------------------------------------ */

static const char *rel(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strncmp(path, dir, n) == 0 && path[n] == '/')
		return path + n + 1;
	return path;
}

/* The call site of C as "function (file:line)" via addr2line when its
 * module has debug information, else "module+0xOFFSET". */
static void site_words(const shim_call *c, const shim_shared *ctl, char *buf,
                       size_t cap)
{
	char cmd[PATH_MAX + 96], fn[256] = "", where[PATH_MAX] = "";
	const char *mod;
	FILE *p;

	if (!c->module || c->module > SHIM_MODULES || !ctl ||
	    !ctl->modules[c->module - 1][0]) {
		snprintf(buf, cap, "unknown call site");
		return;
	}
	mod = ctl->modules[c->module - 1];
	/* the return address: the call is the instruction before it */
	if (!strchr(mod, '\'')) {
		snprintf(cmd, sizeof cmd, "addr2line -f -e '%s' 0x%" PRIx64
		         " 2>/dev/null", mod, c->site - 1);
		p = popen(cmd, "r");
		if (p) {
			if (fgets(fn, sizeof fn, p))
				fn[strcspn(fn, "\n")] = '\0';
			if (fgets(where, sizeof where, p))
				where[strcspn(where, "\n")] = '\0';
			pclose(p);
		}
	}
	if (fn[0] && strcmp(fn, "??") != 0 && where[0] && where[0] != '?') {
		const char *base = strrchr(where, '/');
		char *disc = strstr(where, " (discriminator");
		if (disc)
			*disc = '\0';
		snprintf(buf, cap, "%s (%s)", fn, base ? base + 1 : where);
	} else {
		const char *base = strrchr(mod, '/');
		snprintf(buf, cap, "%s+0x%" PRIx64, base ? base + 1 : mod,
		         c->site - 1);
	}
}

/* The ring entry of record SEQ, or -1. */
static int64_t call_of(const shim_call *ring, uint64_t nring, uint64_t seq)
{
	for (uint64_t i = 0; i < nring; i++)
		if (ring[i].rec == seq)
			return (int64_t)i;
	return -1;
}

static int same_file(const shim_call *a, const shim_call *b)
{
	return a->file >= 0 && a->file == b->file;
}

/* The directory part of a label ("" for the watched directory itself). */
static void dir_of(const char *label, char *out, size_t cap)
{
	const char *arrow = strstr(label, " -> ");
	const char *name = arrow ? arrow + 4 : label, *slash = strrchr(name, '/');
	snprintf(out, cap, "%.*s", slash ? (int)(slash - name) : 0, name);
}

/* Where data call I stands against its file's syncs. */
static void data_position(const shim_call *ring, uint64_t nring, uint64_t i,
                          char *buf, size_t cap)
{
	int64_t before = -1, after = -1;

	for (uint64_t j = 0; j < nring; j++) {
		const shim_call *s = &ring[j];
		int sync = s->result >= 0 && !s->inflight &&
		           (s->op == SHIM_OP_SYNC_ALL ||
		            ((s->op == SHIM_OP_FSYNC || s->op == SHIM_OP_FDATASYNC)
		             && same_file(s, &ring[i])));
		if (sync && j < i)
			before = (int64_t)j;
		if (sync && j > i && after < 0)
			after = (int64_t)j;
	}
	if (after >= 0)
		snprintf(buf, cap, "a sync of its file (call #%" PRIu64 ") came "
		         "after it, but began before it was made or failed",
		         ring[after].seq);
	else if (before >= 0)
		snprintf(buf, cap, "made after the last sync of its file (call #%"
		         PRIu64 ") and never synced: no fsync/fdatasync of %s "
		         "followed it", ring[before].seq, ring[i].path);
	else
		snprintf(buf, cap, "never synced: its file %s was never "
		         "fsynced/fdatasynced after it", ring[i].path);
}

/* Where namespace call I stands against its directory's syncs. */
static void ns_position(const shim_call *ring, uint64_t nring, uint64_t i,
                        char *buf, size_t cap)
{
	char dir[SHIM_LABEL];
	int64_t last = -1;

	(void)nring;
	dir_of(ring[i].path, dir, sizeof dir);
	for (uint64_t j = 0; j < i; j++) {
		char d2[SHIM_LABEL];
		if (ring[j].op != SHIM_OP_DIR_FSYNC || ring[j].result < 0)
			continue;
		snprintf(d2, sizeof d2, "%s", ring[j].path);
		if ((!dir[0] && d2[0] == '/') || strcmp(d2, dir) == 0)
			last = (int64_t)j;
	}
	snprintf(buf, cap, "its directory (%s) was never fsynced after it%s",
	         dir[0] ? dir : "the watched directory",
	         last >= 0 ? " (the last directory fsync came before it)" : "");
}

/* The ring entry of the protocol line "ack OP", or -1. */
static int64_t ack_of(const shim_call *ring, uint64_t nring, const char *op)
{
	size_t n = strlen(op);

	for (uint64_t i = 0; op && i < nring; i++) {
		const char *p = ring[i].path;
		if (ring[i].op != SHIM_OP_PROTOCOL)
			continue;
		while ((p = strstr(p, "ack "))) {
			p += 4;
			if (strncmp(p, op, n) == 0 &&
			    (p[n] == '\0' || p[n] == ';' || p[n] == ' '))
				return (int64_t)i;
		}
	}
	return -1;
}

void explain_describe(FILE *out, const faultsim_dropped *d,
                      const shim_call *ring, uint64_t nring,
                      const shim_shared *ctl, const char *dir,
                      const char *acked_op)
{
	int64_t ack = acked_op ? ack_of(ring, nring, acked_op) : -1;
	static const char *const fates[] = { "?", "lost", "torn", "garbled",
	                                     "undone" };
	int64_t i = call_of(ring, nring, d->seq);
	char call[2 * FAULTSIM_PATH_MAX + 100], pos[400], site[PATH_MAX + 300];
	const char *a = rel(d->path, dir);

	switch (d->kind) {
	case FAULTSIM_KIND_WRITE:
		snprintf(call, sizeof call, "write(%s, offset %" PRIu64 ", "
		         "length %" PRIu64 ")", a, d->off, d->len);
		break;
	case FAULTSIM_KIND_TRUNCATE:
		snprintf(call, sizeof call, "ftruncate(%s, %" PRIu64 ")", a,
		         d->off);
		break;
	case FAULTSIM_KIND_EXTEND:
		snprintf(call, sizeof call, "fallocate(%s, to %" PRIu64 ")", a,
		         d->off);
		break;
	case FAULTSIM_KIND_CREATE:
		snprintf(call, sizeof call, "create(%s)", a);
		break;
	case FAULTSIM_KIND_RENAME:
		snprintf(call, sizeof call, "rename(%s, %s)", a,
		         rel(d->path_b, dir));
		break;
	case FAULTSIM_KIND_UNLINK:
		snprintf(call, sizeof call, "unlink(%s)", a);
		break;
	}
	if (i < 0) {
		fprintf(out, "    %s -- %s by the power cut (record %" PRIu64
		        "; its call is no longer in the shim's ring)\n", call,
		        fates[d->fate], d->seq);
		return;
	}
	if (d->kind <= FAULTSIM_KIND_EXTEND)
		data_position(ring, nring, (uint64_t)i, pos, sizeof pos);
	else
		ns_position(ring, nring, (uint64_t)i, pos, sizeof pos);
	site_words(&ring[i], ctl, site, sizeof site);
	fprintf(out, "    %s -- %s\n"
	        "      %s\n", call, fates[d->fate], pos);
	/* by the calls' numbers: the ring is circular, its slots are not
	 * in call order */
	if (ack >= 0 && ring[ack].seq > ring[i].seq)
		fprintf(out, "      op %s was acknowledged after it (#%" PRIu64
		         "), while it was not durable\n", acked_op, ring[ack].seq);
	else if (ack >= 0)
		fprintf(out, "      op %s was acknowledged before it (#%" PRIu64
		         ")\n", acked_op, ring[ack].seq);
	fprintf(out, "      call #%" PRIu64 " of the trace, by the %s (pid %d), "
	        "from %s\n", ring[i].seq, shim_role_name(ring[i].role),
	        ring[i].pid, site);
}

void explain_trace_line(FILE *out, const shim_call *c, const shim_shared *ctl,
                        int killed)
{
	char site[PATH_MAX + 300] = "";

	(void)ctl;
	if (c->module && c->module <= SHIM_MODULES && ctl &&
	    ctl->modules[c->module - 1][0]) {
		const char *m = ctl->modules[c->module - 1], *b = strrchr(m, '/');
		snprintf(site, sizeof site, "  at %s+0x%" PRIx64, b ? b + 1 : m,
		         c->site - 1);
	}
	fprintf(out, "#%-6" PRIu64 " pid %-7d %-16s %-16s %s", c->seq, c->pid,
	        shim_role_name(c->role), shim_op_name(c->op), c->path);
	if (c->op == SHIM_OP_WRITE || c->op == SHIM_OP_ALLOCATE)
		fprintf(out, " off %" PRIu64 " len %" PRIu64, c->off, c->len);
	else if (c->op == SHIM_OP_TRUNCATE)
		fprintf(out, " to %" PRIu64, c->off);
	if (c->inflight)
		fprintf(out, " -> IN FLIGHT%s", killed ? " at the kill" : "");
	else
		fprintf(out, " -> %" PRId64, c->result);
	if (c->rec)
		fprintf(out, "  rec %" PRIu64, c->rec);
	fprintf(out, "%s\n", site);
}
