/*
 * fault.c -- failures on demand: "OP:ERROR[:TRIGGER]" specs, decided per
 * call, deterministically under a seed.  The state lives in MAP_SHARED
 * memory so that the parent of a killed writer can see how many calls were
 * made and how often each spec fired (a fault test checks that the fault
 * really happened).
 *
 * A probability decision is a pure function of (seed, spec, call number):
 * no generator state is shared between threads, so a given sequence of calls
 * fails at the same places in every run.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultsim.h"

enum { TRIG_P = 0, TRIG_NTH = 1, TRIG_FROM = 2 };

typedef struct spec {
	uint32_t ops;    /* bit per faultsim_op it applies to              */
	int err;         /* negative errno, or FAULTSIM_SHORT              */
	int trigger;     /* TRIG_*                                         */
	double p;        /* TRIG_P: probability per call                   */
	uint64_t n;      /* TRIG_NTH / TRIG_FROM: call number              */
	uint64_t calls;  /* calls this spec has seen                       */
	uint64_t fired;  /* times it fired                                 */
} spec;

struct faultsim_faults {
	uint64_t seed;
	int nspecs;
	spec specs[FAULTSIM_MAX_SPECS];
	uint64_t calls[FAULTSIM_OP_COUNT]; /* per operation                 */
	uint64_t steps;                    /* state-changing calls          */
	uint64_t kill_after;               /* 0 = never                     */
	int crash_on_failed_sync;          /* SIGKILL after a failed sync   */
};

static const char *const op_names[FAULTSIM_OP_COUNT] = {
	"open", "pread", "pwrite", "fdatasync", "fsync", "ftruncate",
	"fallocate", "fstat", "rename", "unlink", "fsync_dir", "mmap", "lock",
};

static const struct {
	const char *name;
	int err;
} err_names[] = {
	{ "EIO", -EIO },       { "ENOSPC", -ENOSPC }, { "EDQUOT", -EDQUOT },
	{ "EROFS", -EROFS },   { "EFBIG", -EFBIG },   { "ENOMEM", -ENOMEM },
	{ "EACCES", -EACCES }, { "EAGAIN", -EAGAIN }, { "short", FAULTSIM_SHORT },
	{ "crash", FAULTSIM_CRASH },
};

const char *faultsim_op_name(faultsim_op op)
{
	return (unsigned)op < FAULTSIM_OP_COUNT ? op_names[op] : "?";
}

int faultsim_faults_create(uint64_t seed, faultsim_faults **out)
{
	if (!out)
		return -EINVAL;
	void *m = mmap(NULL, sizeof(faultsim_faults), PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*out = NULL;
	if (m == MAP_FAILED)
		return -ENOMEM;
	faultsim_faults *f = m; /* a fresh anonymous mapping is all zeros */
	f->seed = seed;
	*out = f;
	return 0;
}

int faultsim_faults_create_fd(uint64_t seed, int *fd, faultsim_faults **out)
{
	int m;
	void *p;

	if (!fd || !out)
		return -EINVAL;
	*out = NULL;
	*fd = -1;
	m = memfd_create("faultsim-faults", MFD_CLOEXEC);
	if (m < 0)
		return -errno;
	if (ftruncate(m, sizeof(faultsim_faults)) != 0)
		goto out_close;
	p = mmap(NULL, sizeof(faultsim_faults), PROT_READ | PROT_WRITE,
	         MAP_SHARED, m, 0);
	if (p == MAP_FAILED)
		goto out_close;
	((faultsim_faults *)p)->seed = seed; /* a fresh memfd is all zeros */
	*out = p;
	*fd = m;
	return 0;
out_close:
	close(m);
	return -ENOMEM;
}

int faultsim_faults_attach(int fd, faultsim_faults **out)
{
	struct stat st;
	void *p;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fstat(fd, &st) != 0)
		return -errno;
	if ((size_t)st.st_size != sizeof(faultsim_faults))
		return -EINVAL;
	p = mmap(NULL, sizeof(faultsim_faults), PROT_READ | PROT_WRITE,
	         MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

void faultsim_faults_reseed(faultsim_faults *f, uint64_t seed)
{
	if (f)
		f->seed = seed;
}

void faultsim_faults_destroy(faultsim_faults *f)
{
	if (f)
		munmap(f, sizeof *f);
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int parse_op(const char *s, size_t len, uint32_t *ops)
{
	if (len == 4 && memcmp(s, "sync", 4) == 0) {
		*ops = 1u << FAULTSIM_OP_FDATASYNC | 1u << FAULTSIM_OP_FSYNC;
		return 0;
	}
	for (int i = 0; i < FAULTSIM_OP_COUNT; i++)
		if (strlen(op_names[i]) == len && memcmp(s, op_names[i], len) == 0) {
			*ops = 1u << i;
			return 0;
		}
	return -1;
}

static int parse_err(const char *s, size_t len, int *e)
{
	for (size_t i = 0; i < sizeof err_names / sizeof err_names[0]; i++)
		if (strlen(err_names[i].name) == len &&
		    strncasecmp(s, err_names[i].name, len) == 0) {
			*e = err_names[i].err;
			return 0;
		}
	return -1;
}

/* "p=0.5", "nth=3" or "from=3" into SP */
static int parse_trigger(const char *s, spec *sp, char *err, size_t errlen)
{
	char *end;
	if (strncmp(s, "p=", 2) == 0) {
		errno = 0;
		sp->p = strtod(s + 2, &end);
		if (errno || end == s + 2 || *end || !(sp->p > 0 && sp->p <= 1))
			return bad(err, errlen, "bad probability '%s' (want "
			           "p=PROB with 0 < PROB <= 1)", s);
		sp->trigger = TRIG_P;
		return 0;
	}
	int nth = strncmp(s, "nth=", 4) == 0;
	if (nth || strncmp(s, "from=", 5) == 0) {
		const char *num = s + (nth ? 4 : 5);
		errno = 0;
		unsigned long long v = strtoull(num, &end, 10);
		if (errno || end == num || *end || v == 0 || *num == '-')
			return bad(err, errlen, "bad call number '%s' (want "
			           "%s=N with N >= 1)", s, nth ? "nth" : "from");
		sp->n = v;
		sp->trigger = nth ? TRIG_NTH : TRIG_FROM;
		return 0;
	}
	return bad(err, errlen, "unknown trigger '%s' (want p=PROB, nth=N or "
	           "from=N)", s);
}

int faultsim_faults_add(faultsim_faults *f, const char *text, char *err,
                        size_t errlen)
{
	spec sp = { .trigger = TRIG_P, .p = 0.1 };
	const char *c1, *c2;

	if (!f || !text)
		return bad(err, errlen, "no fault spec");
	if (f->nspecs >= FAULTSIM_MAX_SPECS) {
		bad(err, errlen, "more than %d fault specs", FAULTSIM_MAX_SPECS);
		return -ENOSPC;
	}
	c1 = strchr(text, ':');
	if (!c1)
		return bad(err, errlen, "fault spec '%s' lacks ':ERROR' (want "
		           "OP:ERROR[:p=PROB|:nth=N|:from=N])", text);
	if (parse_op(text, (size_t)(c1 - text), &sp.ops) < 0)
		return bad(err, errlen, "unknown operation '%.*s' in '%s'",
		           (int)(c1 - text), text, text);
	c2 = strchr(c1 + 1, ':');
	size_t elen = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
	if (parse_err(c1 + 1, elen, &sp.err) < 0)
		return bad(err, errlen, "unknown error '%.*s' in '%s' (want EIO, "
		           "ENOSPC, EDQUOT, EROFS, EFBIG, ENOMEM, EACCES, EAGAIN, "
		           "short or crash)", (int)elen, c1 + 1, text);
	if (sp.err == FAULTSIM_CRASH &&
	    (sp.ops & (1u << FAULTSIM_OP_PREAD | 1u << FAULTSIM_OP_FSTAT |
	               1u << FAULTSIM_OP_MMAP | 1u << FAULTSIM_OP_LOCK)))
		return bad(err, errlen, "'crash' applies to calls that change "
		           "state (open, pwrite, fdatasync, fsync, ftruncate, "
		           "fallocate, rename, unlink, fsync_dir), not '%s'", text);
	if (sp.err == FAULTSIM_SHORT &&
	    (sp.ops & ~(1u << FAULTSIM_OP_PREAD | 1u << FAULTSIM_OP_PWRITE)))
		return bad(err, errlen, "'short' applies to pread and pwrite "
		           "only, not '%s'", text);
	if (c2 && parse_trigger(c2 + 1, &sp, err, errlen) < 0)
		return -EINVAL;
	f->specs[f->nspecs++] = sp;
	return 0;
}

/* A uniform number in [0, 1) from (seed, spec, call): splitmix64's finaliser. */
static double chance(uint64_t seed, int index, uint64_t call)
{
	uint64_t z = seed ^ ((uint64_t)index << 56) ^ (call * 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

int faultsim_faults_check(faultsim_faults *f, faultsim_op op)
{
	int err = 0;

	if (!f || (unsigned)op >= FAULTSIM_OP_COUNT)
		return 0;
	__atomic_add_fetch(&f->calls[op], 1, __ATOMIC_RELAXED);
	/* every spec of OP counts the call, even when an earlier one fires,
	 * so "nth=N" always means the Nth call; the first that fires wins */
	for (int i = 0; i < f->nspecs; i++) {
		spec *sp = &f->specs[i];
		if (!(sp->ops & (1u << op)))
			continue;
		uint64_t n = __atomic_add_fetch(&sp->calls, 1, __ATOMIC_RELAXED);
		int fire = sp->trigger == TRIG_NTH ? n == sp->n
		         : sp->trigger == TRIG_FROM ? n >= sp->n
		         : chance(f->seed, i, n) < sp->p;
		if (fire && !err) {
			__atomic_add_fetch(&sp->fired, 1, __ATOMIC_RELAXED);
			err = sp->err;
		}
	}
	return err;
}

uint64_t faultsim_faults_calls(const faultsim_faults *f, faultsim_op op)
{
	if (!f || (unsigned)op >= FAULTSIM_OP_COUNT)
		return 0;
	return __atomic_load_n(&f->calls[op], __ATOMIC_RELAXED);
}

uint64_t faultsim_faults_fired(const faultsim_faults *f, int index)
{
	if (!f || index < 0 || index >= f->nspecs)
		return 0;
	return __atomic_load_n(&f->specs[index].fired, __ATOMIC_RELAXED);
}

void faultsim_faults_reset_counts(faultsim_faults *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nspecs; i++)
		f->specs[i].calls = f->specs[i].fired = 0;
	memset(f->calls, 0, sizeof f->calls);
	f->steps = 0;
}

void faultsim_faults_kill_after(faultsim_faults *f, uint64_t n)
{
	if (f)
		f->kill_after = n;
}

void faultsim_faults_crash_on_failed_sync(faultsim_faults *f, int on)
{
	if (f)
		f->crash_on_failed_sync = on != 0;
}

int faultsim_faults_crashes_on_failed_sync(const faultsim_faults *f)
{
	return f && f->crash_on_failed_sync;
}

uint64_t faultsim_faults_steps(const faultsim_faults *f)
{
	return f ? __atomic_load_n(&f->steps, __ATOMIC_RELAXED) : 0;
}

int faultsim_faults_step_due(faultsim_faults *f)
{
	if (!f)
		return 0;
	uint64_t s = __atomic_add_fetch(&f->steps, 1, __ATOMIC_RELAXED);
	/* the crash point of an enumeration: die before call kill_after+1 */
	return f->kill_after && s > f->kill_after;
}

void faultsim_faults_step(faultsim_faults *f)
{
	if (faultsim_faults_step_due(f))
		kill(getpid(), SIGKILL);
}
