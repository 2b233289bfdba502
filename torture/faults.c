/*
 * faults.c -- torture on the fault simulator (see faults.h).
 */
#include "faults.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultsim.h"
#include "keel.h"

struct torture_faults {
	faultsim_cache *cache;   /* shared with every writer             */
	faultsim_faults *faults; /* the --fail specs and the step count  */
	faultsim_io *io;         /* the backend the writers open with    */
	torture_options *opt;    /* its io points at IO                  */
	int dirty_left;          /* --mixed: the last writer died without a
	                            cut; its dirty pages are still undoable */
};

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static void disarm(torture_faults *f)
{
	faultsim_io_free(f->io);
	faultsim_faults_destroy(f->faults);
	f->io = NULL;
	f->faults = NULL;
}

void faults_free(torture_faults *f)
{
	if (!f)
		return;
	disarm(f);
	faultsim_cache_destroy(f->cache);
	free(f);
}

/*
 * Fresh fault state and backend for the writer of cycle CYCLE.  A p=
 * decision is a pure function of (seed, spec, call number) and call
 * numbers start again with every writer, so one seed for the whole run
 * would fail the same calls of every writer (or none, for ever); a seed
 * per cycle, drawn from --seed, varies them and still reproduces.
 * 0, or -1 after a message.
 */
static int arm(torture_faults *f, uint64_t cycle)
{
	torture_options *o = f->opt;
	faultsim_io_options io = {0};
	char err[200];

	disarm(f);
	if (faultsim_faults_create(mix(o->seed ^ mix(cycle)), &f->faults) < 0)
		goto out_nomem;
	for (unsigned i = 0; i < o->nfail; i++)
		if (faultsim_faults_add(f->faults, o->fail[i], err,
		                        sizeof(err)) < 0) {
			fprintf(stderr, "torture: --fail %s: %s (see "
			        "docs/faults.md)\n", o->fail[i], err);
			return -1;
		}
	faultsim_faults_crash_on_failed_sync(f->faults, o->crash_on_failed_sync);
	io.cache = f->cache;
	io.faults = f->faults;
	io.profile = (faultsim_profile)o->profile;
	if (faultsim_io_new(&io, &f->io) < 0)
		goto out_nomem;
	o->io = faultsim_io_table(f->io);
	return 0;
out_nomem:
	fprintf(stderr, "torture: no memory for the fault simulator\n");
	return -1;
}

int faults_setup(torture_options *o)
{
	torture_faults *f;

	o->faults = NULL;
	if (!options_faultsim(o))
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f || faultsim_cache_create(0, &f->cache) < 0) {
		fprintf(stderr, "torture: no memory for the fault "
		        "simulator\n");
		free(f);
		return -1;
	}
	f->opt = o;
	faultsim_cache_set_fs(f->cache, (faultsim_fs)o->fs);
	if (arm(f, 0) < 0) {
		o->io = NULL;
		faults_free(f);
		return -1;
	}
	o->faults = f;
	return 0;
}

/* The power cut.  Its seed depends on the cycle, so a reproducer cuts
 * the same way given the same records. */
static int power_cut(torture_faults *f, uint64_t cycle, report *r)
{
	faultsim_crash_options co = {
		.device = (faultsim_device)f->opt->device,
		.sector = f->opt->sector,
		.seed = mix(f->opt->seed ^ mix(cycle ^ 0x706f776572ull)),
	};
	faultsim_crash_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = faultsim_cache_crash(f->cache, &co, &rep);
	if (rc < 0 || rep.overflowed) {
		fprintf(stderr, "torture: the fault simulator could not cut "
		        "the power: %s\n", rep.overflowed ? "its cache filled "
		        "up (raise FAULTSIM_CACHE_DEFAULT)" : rep.first_error[0] ?
		        rep.first_error : strerror(-rc));
		return -1;
	}
	r->power_cuts++;
	r->cut_lost += rep.lost + rep.lost_failed;
	r->cut_torn += rep.torn + rep.garbled;
	r->cut_undone += rep.ns_undone;
	return 0;
}

/*
 * --mixed: does this kill also cut the power?  Drawn from the seed and the
 * cycle.  One exception keeps the verdict honest: when the last writer died
 * without a cut, its dirty pages are still in the cache and the verify that
 * followed was shown the commits they hold (unacknowledged, not yet
 * durable).  The next writer's open syncs them before it reports OPENED; a
 * cut before that may take them, which is allowed (nothing acknowledged is
 * among them) but would take back what the oracle already adopted.  So a
 * cut drawn for a writer that did not report a successful open is deferred
 * (counted); after a successful open, the cut goes ahead, and a writer that
 * did not make those commits durable at open is caught.
 */
static int cut_now(torture_faults *f, uint64_t cycle, int opened, report *r)
{
	const torture_options *o = f->opt;
	int cut;

	if (!o->mixed)
		return o->power_loss || o->enumerate;
	cut = mix(o->seed ^ mix(cycle ^ 0x6d69786564ull)) % 100 < o->cut_pct;
	if (cut && f->dirty_left && !opened) {
		r->cuts_deferred++;
		cut = 0;
	}
	return cut;
}

int faults_after_writer(torture_faults *f, uint64_t cycle, int opened,
                        report *r)
{
	for (int i = 0; i < (int)f->opt->nfail; i++)
		r->faults_fired += faultsim_faults_fired(f->faults, i);
	if (cut_now(f, cycle, opened, r)) {
		if (power_cut(f, cycle, r) < 0)
			return -1;
		f->dirty_left = 0;
	} else if (f->opt->mixed && f->opt->nfail == f->opt->crash_specs) {
		if (faultsim_cache_overflowed(f->cache)) {
			fprintf(stderr, "torture: the fault simulator's cache "
			        "filled up (raise FAULTSIM_CACHE_DEFAULT)\n");
			return -1;
		}
		/* The machine lives on and has not written the dirty pages
		 * back yet: a later cut can still take them (and anything a
		 * later writer built on them without syncing). */
		faultsim_cache_writer_died(f->cache);
		f->dirty_left = 1;
	} else {
		f->dirty_left = 0;
		if (faultsim_cache_overflowed(f->cache)) {
			fprintf(stderr, "torture: the fault simulator's cache "
			        "filled up (raise FAULTSIM_CACHE_DEFAULT)\n");
			return -1;
		}
		/* The machine lives on.  --cache-lives, after every other
		 * writer: the pages a failed sync marked clean stay readable
		 * for the next writer, as Linux keeps them until memory is
		 * short -- a writer that takes its state from them must not be
		 * fooled (docs/faults.md).  Otherwise the kernel drops them
		 * now, and writes the rest back in its own time; taking the
		 * rest as durable keeps the cache from filling over a long
		 * run, and no crash will ever undo it. */
		if (f->opt->cache_lives && cycle % 2 == 0) {
			/* the dirty pages are written back (the verify reads
			 * through the device, as O_DIRECT does, which writes
			 * them back first); what a failed sync LOST stays
			 * readable and is never on the device */
			faultsim_cache_write_back(f->cache);
		} else {
			faultsim_cache_evict_lost(f->cache);
			faultsim_cache_forget(f->cache);
		}
	}
	/* --enumerate repeats one workload: the same faults every time */
	return arm(f, f->opt->enumerate ? 0 : cycle + 1);
}

int faults_device_view(torture_faults *f, const char *path,
                       const char *copy)
{
	int src, dst, file, rc;

	if (!f)
		return 0;
	if ((src = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0; /* the verifying open will say what is wrong */
	file = faultsim_cache_file_of(f->cache, src);
	if (file < 0 || faultsim_cache_lost_records(f->cache, file) == 0) {
		close(src);
		return 0;
	}
	(void)unlink(copy);
	dst = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	rc = dst < 0 ? -errno : faultsim_cache_device_copy(f->cache, file,
	                                                   src, dst);
	if (dst >= 0 && close(dst) < 0 && rc == 0)
		rc = -errno;
	close(src);
	if (rc < 0) {
		fprintf(stderr, "torture: cannot build the device's view of "
		        "%s in %s: %s\n", path, copy, strerror(-rc));
		(void)unlink(copy);
		return -1;
	}
	return 1;
}

void faults_kill_after(torture_faults *f, uint64_t n)
{
	faultsim_faults_kill_after(f->faults, n);
}

uint64_t faults_steps(const torture_faults *f)
{
	return faultsim_faults_steps(f->faults);
}

void faults_forget(torture_faults *f)
{
	faultsim_cache_forget(f->cache);
	faultsim_faults_reset_counts(f->faults);
}

int faults_expected_error(int rc)
{
	switch (rc) {
	case KEEL_EIO:       /* EIO, a short transfer            */
	case KEEL_ENOSPC:    /* ENOSPC, EDQUOT, EFBIG             */
	case KEEL_EACCES:    /* EACCES                            */
	case KEEL_EREADONLY: /* EROFS                             */
	case KEEL_ENOMEM:    /* ENOMEM                            */
	case KEEL_EBUSY:     /* EAGAIN (on the lock)              */
		return 1;
	default:
		return 0;
	}
}
