/*
 * marker.c -- the durable marker: how far a reader process may read.  Floor
 * 2, beside commit.c and compact.c.
 *
 * A reader process reads the data file as the writer appends it.  Without
 * help it would see a commit from the moment its head is written, up to one
 * sync before the commit is durable, and a power cut in that window would
 * take back what it saw.  So the writer process keeps, in a small file
 * beside the store (PATH.durable, layout in format.h), the newest head whose
 * sync has returned, and a reader process accepts no head past it while a
 * writer holds the data file's lock.
 *
 *     writer open: recover --> fdatasync --> PATH.durable.new: header, map,
 *                  rename over PATH.durable
 *     each publish (commit.c, compact.c; under mu): seq odd --> file_id,
 *                  txid, head_off --> seq even
 *     reader, when the file has grown: map the marker (again, if the path
 *                  names a new one) --> read it (seqlock) --> accept heads
 *                  up to its txid; no marker: every head
 *
 * WHY OUTSIDE THE I/O SEAM.  The marker is memory shared between processes
 * of one machine, not storage: nothing about it is ever synced or recovered,
 * so the fault simulator has nothing to model in it (it would only have to
 * track, forever, a file that is never synced).  It uses plain system calls,
 * and its writer maps it read-write, which keel_io.mmap does not offer.  The
 * probe of the writer lock (F_OFD_GETLK) is a plain fcntl on the data file's
 * descriptor, which is a real descriptor under every backend (io.h).
 *
 * INVARIANTS
 *  (1) The marker names only heads whose sync has returned: the writer
 *      publishes it where it publishes db->head (after the sync), and at open
 *      only after an fdatasync of what recovery found (a killed writer may
 *      have left heads that were written but never synced).
 *  (2) A writer that cannot keep a marker leaves none: it removes a stale
 *      one, or fails to open.  A stale marker trusted while this writer holds
 *      the lock would hide every later commit from reader processes.
 *  (3) A reader honours the marker whether or not a writer holds the lock.
 *      A writer that closes cleanly has synced every head it wrote and
 *      removes its marker; a writer that was killed (or failed, keel_close)
 *      leaves it, and the heads it wrote past it were never synced: with no
 *      process left to sync them, a power cut can still take them, so a
 *      reader stays at the marker until the next writer's open has synced
 *      what recovery found and published a new one.  (Readers that trusted
 *      the whole file once the lock was free were shown, in the window
 *      between a writer's death and the cut, commits the cut took back.)
 *      A marker that names another data file (a compaction replaced ours,
 *      or is replacing it) limits nothing: every head of a replaced file
 *      was synced before the switch, and a new file has only its synced
 *      first head until the writer publishes the marker for it, which it
 *      does before any commit.
 *  (4) When in doubt (the marker cannot be mapped, or never reads stable), a
 *      reader stays where it is: it may fall behind, never ahead.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* The marker's words (format.h): 8-byte fields, so word i is at 8 * i. */
enum { W_MAGIC, W_SEQ, W_FILE_ID, W_TXID, W_HEAD_OFF };

/* ---- the writer ------------------------------------------------------------ */

void marker_publish(keel_db *db)
{
	_Atomic uint64_t *m = db->marker;
	if (!m || (db->flags & KEEL_RDONLY)) /* a reader's map is read-only */
		return;
	uint64_t seq = atomic_load_explicit(&m[W_SEQ], memory_order_relaxed);
	atomic_store_explicit(&m[W_SEQ], seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release); /* odd before the fields */
	atomic_store_explicit(&m[W_FILE_ID], db->file_id, memory_order_relaxed);
	atomic_store_explicit(&m[W_TXID], db->head.txid, memory_order_relaxed);
	atomic_store_explicit(&m[W_HEAD_OFF], db->head.off, memory_order_relaxed);
	atomic_store_explicit(&m[W_SEQ], seq + 2, memory_order_release);
}

/* Makes PATH.durable.new with the header and the current head, maps it, and
 * renames it into place.  Returns 0 or a negative errno. */
static int marker_make(keel_db *db, const char *tmp, mode_t mode)
{
	uint8_t page[KEEL_MARKER_SIZE] = {0};
	int e = 0;

	(void)unlink(tmp); /* a leftover of a writer that died here */
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	memcpy(page, KEEL_MARKER_MAGIC, 8);
	/* Written, not just sized: the blocks exist, so a store into the
	 * mapping can never fault for want of space. */
	ssize_t n = pwrite(fd, page, sizeof(page), 0);
	void *p = MAP_FAILED;
	if (n != (ssize_t)sizeof(page))
		e = n < 0 ? -errno : -EIO;
	else if ((p = mmap(NULL, KEEL_MARKER_SIZE, PROT_READ | PROT_WRITE,
	                   MAP_SHARED, fd, 0)) == MAP_FAILED)
		e = -errno;
	close(fd);
	if (e)
		return e;
	db->marker = p;
	marker_publish(db);
	if (rename(tmp, db->marker_path) != 0) {
		e = -errno;
		munmap(p, KEEL_MARKER_SIZE);
		db->marker = NULL;
	}
	return e;
}

int marker_create(keel_db *db)
{
	struct stat st;
	char *tmp = NULL;
	mode_t mode = 0644;

	if (fstat(db->fd, &st) == 0)
		mode = st.st_mode & 0666; /* whoever may read the store */
	if (asprintf(&tmp, "%s.new", db->marker_path) < 0)
		return KEEL_ENOMEM;
	int e = marker_make(db, tmp, mode);
	if (e) {
		(void)unlink(tmp);
		/* (2): no marker rather than a stale one */
		if (unlink(db->marker_path) == 0 || errno == ENOENT)
			e = 0;
		else
			e = -errno;
	}
	free(tmp);
	return keel_err_from_errno(e);
}

void marker_remove(keel_db *db, int keep)
{
	if (!db->marker)
		return;
	/* Before the lock goes with the data file's descriptor: no later
	 * writer's marker can be the one removed.  A failed writer keeps it:
	 * past it may lie heads that never became durable (3). */
	if (!keep)
		(void)unlink(db->marker_path);
	munmap((void *)db->marker, KEEL_MARKER_SIZE);
	db->marker = NULL;
}

/* ---- a reader process ---------------------------------------------------- */

/* Does another open file description hold the data file's writer lock?
 * 1 yes, 0 no; -1 when it cannot tell. */
static int writer_present(int fd)
{
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
		return -1;
	return fl.l_type != F_UNLCK;
}

static void reader_unmap(keel_db *db)
{
	if (db->marker)
		munmap((void *)db->marker, KEEL_MARKER_SIZE);
	db->marker = NULL;
}

/* Maps the marker the path names now, unless it is the one mapped.  Returns
 * 1 (mapped), 0 (there is none) or -1 (there is one it cannot map). */
static int reader_map(keel_db *db)
{
	struct stat st;
	if (stat(db->marker_path, &st) != 0) {
		reader_unmap(db);
		return errno == ENOENT ? 0 : -1;
	}
	if (db->marker && st.st_ino == db->marker_ino &&
	    st.st_dev == db->marker_dev)
		return 1;
	reader_unmap(db);
	int fd = open(db->marker_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)KEEL_MARKER_SIZE)
		p = mmap(NULL, KEEL_MARKER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	db->marker = p;
	db->marker_ino = st.st_ino;
	db->marker_dev = st.st_dev;
	return 1;
}

uint64_t marker_limit(keel_db *db, int fd, uint64_t file_id)
{
	if (db->flags & KEEL_RDONLY_UNSYNCED)
		return UINT64_MAX; /* a checker's choice (keel.h) */
	int mapped = reader_map(db);
	if (mapped == 0) /* a writer that closed cleanly, or keeps none (2) */
		return UINT64_MAX;
	if (mapped < 0)
		return 0; /* (4) */
	_Atomic uint64_t *m = db->marker;
	uint64_t magic;
	memcpy(&magic, KEEL_MARKER_MAGIC, 8);
	if (atomic_load_explicit(&m[W_MAGIC], memory_order_relaxed) != magic)
		return 0; /* not a marker: (4) */
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = atomic_load_explicit(&m[W_SEQ], memory_order_acquire);
		if (s1 % 2 == 0) {
			uint64_t fid = atomic_load_explicit(&m[W_FILE_ID],
			                                    memory_order_relaxed);
			uint64_t txid = atomic_load_explicit(&m[W_TXID],
			                                     memory_order_relaxed);
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&m[W_SEQ], memory_order_relaxed) == s1)
				return fid == file_id ? txid : UINT64_MAX; /* (3) */
		}
		/* The writer is between its two stores -- or died there, and
		 * the fields may be half old, half new: (4). */
		if (writer_present(fd) == 0)
			return 0;
		sched_yield();
	}
	return 0; /* (4) */
}

void marker_close_reader(keel_db *db)
{
	reader_unmap(db);
}
