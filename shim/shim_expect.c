/*
 * shim_expect.c -- what the record implies about the files, kept in the
 * control block for the harness's checks of what the shim did not see:
 * per tracked file its size and a sample of the newest write's bytes
 * (shim_check_files: bypass detection), and this life's changes, the
 * files and names recorded calls changed and when (shim_tree_check: the
 * soundness floor).  shim.h says what each check compares.
 */

#include <string.h>
#include <sys/stat.h>

#include "shim.h"
#include "shim_internal.h"

/* What the record implies about FILE: set on first sight from the file. */
void expect_init(int file, const struct stat *stp)
{
	const struct stat st = *stp;
	shim_file *f = &ctl->files[file];

	if (f->dev == (uint64_t)st.st_dev && f->ino == (uint64_t)st.st_ino)
		return;
	for (uint32_t i = 0; i < faultsim_cache_nfiles(cache); i++)
		if (ctl->files[i].ino == (uint64_t)st.st_ino &&
		    ctl->files[i].dev == (uint64_t)st.st_dev)
			memset(&ctl->files[i], 0, sizeof(shim_file)); /* reused */
	f->size_lo = f->size_hi = (uint64_t)st.st_size;
	f->sample_len = 0;
	f->pending = 0;
	f->dev = (uint64_t)st.st_dev;
	f->ino = (uint64_t)st.st_ino;
}

/* The file ST describes is about to lose its name (unlink, rename over
 * it): its inode may be reused by a new file, which must not be checked
 * against the old one's expectations. */
void expect_forget(const struct stat *st)
{
	for (uint32_t i = 0; i < faultsim_cache_nfiles(cache); i++)
		if (ctl->files[i].ino == (uint64_t)st->st_ino &&
		    ctl->files[i].dev == (uint64_t)st->st_dev)
			memset(&ctl->files[i], 0, sizeof(shim_file));
}

/* The same for the file at ABS, if there is one. */
void expect_forget_path(const char *abs)
{
	struct stat st;

	if (lstat(abs, &st) == 0)
		expect_forget(&st);
}

/* ---- this life's changes (shim.h, the soundness floor) -------------------- */

/* A recorded namespace call is about to change the name ABS (below the
 * watched directory): entered before the real call, so a kill between
 * the two leaves the change explained. */
void name_touch(const char *abs)
{
	const char *rel = relative(abs);

	if (rel != abs)
		shim_name_enter(ctl, rel, strlen(rel));
	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
}

shim_seen *seen_of(int file)
{
	const shim_file *f = &ctl->files[file];

	return shim_seen_slot(ctl, shim_seen_key(f->dev, f->ino));
}

/* A recorded open made the file on FD: its slot starts again
 * (shim_seen_created). */
void seen_created(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0)
		shim_seen_created(ctl, &st);
}

/* A recorded change of FILE's bytes or size begins (before the real call
 * on FD) and ends (after it returned, with the clock the kernel stamps
 * mtime from).  With no other change in flight, the file as it stands is
 * looked at first (shim.h, "this life's changes"): its mtime must be the
 * one the last recorded change left, or the one the life began with. */
void seen_begin(int file, int fd)
{
	shim_seen *e = seen_of(file);
	struct stat st;

	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
	if (!e)
		return;
	if (__atomic_fetch_add(&e->inflight, 1, __ATOMIC_ACQ_REL) != 0 ||
	    __atomic_load_n(&e->mapped, __ATOMIC_ACQUIRE) || fstat(fd, &st) != 0)
		return;
	uint64_t last = __atomic_load_n(&e->last_ns, __ATOMIC_ACQUIRE);
	if (last == 0) {
		uint64_t zero = 0;
		__atomic_compare_exchange_n(&e->first_mtime, &zero, shim_mtime_ns(&st),
		                            0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	} else if (shim_mtime_ns(&st) > last) {
		__atomic_store_n(&e->unseen, 1, __ATOMIC_RELEASE);
	}
}

void seen_end(int file)
{
	shim_seen *e = seen_of(file);

	if (!e)
		return;
	shim_seen_stamp(e, shim_now_ns());
	if (__atomic_load_n(&e->inflight, __ATOMIC_ACQUIRE))
		__atomic_sub_fetch(&e->inflight, 1, __ATOMIC_ACQ_REL);
}

void expect_reverted(int file, int fd, const char *path)
{
	shim_file *f = &ctl->files[file];
	shim_seen *e = seen_of(file);
	struct stat st;

	/* its size is the one the revert left; the newest write's bytes
	 * may be gone, so no sample is held until the next write */
	if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) == 0)
		f->size_lo = f->size_hi = (uint64_t)st.st_size;
	f->sample_len = 0;
	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
	if (e)
		shim_seen_stamp(e, shim_now_ns());
}

/* ---- the size and sample a write leaves (bypass detection) ---------------- */

void expect_begin(int file, int fd, uint64_t new_end, int truncate)
{
	shim_file *f = &ctl->files[file];
	f->pending = 1;
	seen_begin(file, fd);
	if (truncate) {
		if (new_end < f->size_lo)
			f->size_lo = new_end;
		if (new_end > f->size_hi)
			f->size_hi = new_end;
	} else if (new_end > f->size_hi) {
		f->size_hi = new_end;
	}
}

/* The call on FILE ended: its size is SIZE (UINT64_MAX: not known, looked
 * up on FD), its last bytes written BUF[N] at OFF. */
void expect_end(int file, int fd, uint64_t size, const void *buf,
                       uint64_t off, ssize_t n)
{
	shim_file *f = &ctl->files[file];
	struct stat st;

	if (size == UINT64_MAX && fstat(fd, &st) == 0)
		size = (uint64_t)st.st_size;
	if (size != UINT64_MAX)
		f->size_lo = f->size_hi = size;
	if (buf && n > 0) {
		f->sample_len = (uint32_t)(n < SHIM_SAMPLE ? n : SHIM_SAMPLE);
		f->sample_off = off;
		memcpy(f->sample, buf, f->sample_len);
	} else if (f->sample_len && f->sample_off + f->sample_len > f->size_lo) {
		f->sample_len = 0; /* cut off by a truncate */
	}
	seen_end(file);
	f->pending = 0;
}
