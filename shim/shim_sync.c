/*
 * shim_sync.c -- the wrappers that make records durable: fsync and
 * fdatasync of a tracked file or of a directory below the watched one,
 * sync and syncfs (everything below it); sync_file_range, which is no
 * sync, is only remembered.  A failed sync's error reaches every other
 * descriptor on the file once (Linux's errseq).
 */

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- syncs ------------------------------------------------------------------ */

/* A sync of FILE failed with RC on FD: every other descriptor on the file
 * hears of it once, at its next sync (Linux's errseq). */
static void errseq_spread(int file, int fd, int rc)
{
	for (int i = 0; i < SHIM_FDS; i++)
		if (i != fd && fd_file[i] == file + 1 && !fd_err[i])
			fd_err[i] = rc;
}

static int dir_sync(int fd, faultsim_op op)
{
	uint64_t mark;
	int rc;

	step();
	mark = faultsim_cache_dir_sync_begin(cache);
	remember_begin(SHIM_OP_DIR_FSYNC, -1, fd_path[fd], NULL, 0, 0, 0);
	if ((rc = inject(FAULTSIM_OP_FSYNC_DIR)) == 0)
		rc = (op == FAULTSIM_OP_FSYNC ? real_fsync(fd)
		                              : real_fdatasync(fd)) == 0 ? 0
		                                                      : -errno;
	faultsim_cache_dir_sync_end(cache, fd_path[fd], mark, rc);
	remember(SHIM_OP_DIR_FSYNC, -1, fd_path[fd], NULL, 0, 0, rc, 0);
	return rc;
}

static int file_sync(int fd, faultsim_op op)
{
	int file, rc, pending;
	uint64_t mark;

	if (fd_flags[fd] & FD_DIR)
		return dir_sync(fd, op);
	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file); /* the sync makes exactly the sealed bytes durable */
	mark = faultsim_cache_sync_begin(cache);
	remember_begin(op == FAULTSIM_OP_FSYNC ? SHIM_OP_FSYNC :
	               SHIM_OP_FDATASYNC, file, fd_path[fd], NULL, 0, 0, 0);
	if ((rc = inject(op)) == 0)
		rc = (op == FAULTSIM_OP_FSYNC ? real_fsync(fd)
		                              : real_fdatasync(fd)) == 0 ? 0
		                                                      : -errno;
	if (faultsim_cache_sync_end(cache, file, mark, rc, profile))
		expect_reverted(file, fd, NULL);
	if (rc < 0)
		errseq_spread(file, fd, rc);
	pending = fd_err[fd];
	fd_err[fd] = 0;
	remember(op == FAULTSIM_OP_FSYNC ? SHIM_OP_FSYNC : SHIM_OP_FDATASYNC,
	         file, fd_path[fd], NULL, 0, 0, rc < 0 ? rc : pending, 0);
	return rc < 0 ? rc : pending;
}

/* Whether followed descriptor FD still names what the shim thinks: a
 * descriptor the shim did not see opened (opendir's, fopen's for reading,
 * one received or inherited) may be closed where no wrapper sees too (inside
 * fclose), and the number come back from another internal open.  A sync
 * must never be credited to the wrong file or directory. */
static int fd_still_names(int fd)
{
	struct stat now, then;

	if (fstat(fd, &now) != 0)
		return 0;
	if (fd_flags[fd] & FD_DIR)
		return fd_path[fd] && stat(fd_path[fd], &then) == 0 &&
		       then.st_dev == now.st_dev && then.st_ino == now.st_ino;
	const shim_file *f = &ctl->files[fd_file[fd] - 1];
	return f->dev == (uint64_t)now.st_dev && f->ino == (uint64_t)now.st_ino;
}

/* Whether a sync of FD is modelled: FD is followed, or names a file or
 * directory below the watched one though no wrapper saw it opened (dpkg
 * syncs a directory with fsync(dirfd(opendir(...))): passing that through
 * unmodelled would report its renames as never synced).  An adopted
 * descriptor is looked at every time, not once: this is where a false
 * alarm would come from.  One the shim saw opened is not: every call that
 * closes a descriptor the program holds goes through a wrapper (close,
 * dup2, dup3, closedir, close_range, closefrom, fclose of the streams
 * fopen and fdopen make here; with --syscall-backstop, a raw close too),
 * so it names what it was opened on -- one fstat a sync fewer. */
static int sync_followed(int fd)
{
	if (fd < 0 || fd >= SHIM_FDS)
		return 0;
	in_shim = 1;
	if (fd_tracked(fd) && (fd_flags[fd] & FD_ADOPTED) &&
	    !fd_still_names(fd))
		fd_forget(fd); /* closed by a call no wrapper saw, then reused */
	int followed = fd_tracked(fd) || fd_adopt(fd);
	in_shim = 0;
	return followed;
}

int fsync(int fd)
{
	load_fsync();
	load_fdatasync();
	if (!active || in_shim || !sync_followed(fd))
		return real_fsync(fd);
	in_shim = 1;
	site_ra = __builtin_return_address(0);
	int rc = file_sync(fd, FAULTSIM_OP_FSYNC);
	site_ra = NULL;
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int fdatasync(int fd)
{
	load_fsync();
	load_fdatasync();
	if (!active || in_shim || !sync_followed(fd))
		return real_fdatasync(fd);
	in_shim = 1;
	site_ra = __builtin_return_address(0);
	int rc = file_sync(fd, FAULTSIM_OP_FDATASYNC);
	site_ra = NULL;
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int sync_file_range(int fd, off_t off, off_t len, unsigned flags)
{
	load_sync_file_range();
	if (PASS(fd))
		return real_sync_file_range(fd, off, len, flags);
	/* starts writeback, waits for none of the metadata: not a sync */
	int rc = real_sync_file_range(fd, off, len, flags);
	in_shim = 1;
	remember(SHIM_OP_SYNC_RANGE, fd_file[fd] - 1, fd_path[fd], NULL,
	         (uint64_t)off, (uint64_t)len, rc == 0 ? 0 : -errno, 0);
	in_shim = 0;
	return rc;
}

/* The cache's mark at the start of a sync(2) or syncfs(2), or of
 * make_room's settling (shim.c): what sync_everything makes durable. */
uint64_t all_mark;

static int dir_settle(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		faultsim_cache_dir_sync_end(cache, path, all_mark, 0);
	return 0;
}

/* sync(2), syncfs(2): every file and directory below the watched one;
 * SAID: the program called it (it goes into the call ring). */
int sync_everything(int rc, int said)
{
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < faultsim_cache_nfiles(cache); i++)
		faultsim_cache_sync_end(cache, (int)i, all_mark, 0, profile);
	nftw(watched, dir_settle, 16, FTW_PHYS);
	if (said)
		remember(SHIM_OP_SYNC_ALL, -1, watched, NULL, 0, 0, 0, 0);
	return 0;
}

void sync(void)
{
	load_sync();
	if (!active || in_shim) {
		real_sync();
		return;
	}
	in_shim = 1;
	step();
	map_seal_all();
	all_mark = faultsim_cache_sync_begin(cache);
	real_sync();
	sync_everything(0, 1);
	in_shim = 0;
}

int syncfs(int fd)
{
	load_syncfs();
	if (!active || in_shim)
		return real_syncfs(fd);
	in_shim = 1;
	step();
	map_seal_all();
	all_mark = faultsim_cache_sync_begin(cache);
	int rc = real_syncfs(fd) == 0 ? 0 : -errno;
	rc = sync_everything(rc, 1);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}
