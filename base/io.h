/*
 * io.h -- the I/O seam.  Floor 0.
 *
 * Every byte the engine reads or writes, every sync, rename, truncate,
 * allocation, lock and mapping goes through one keel_io table.  The default
 * backend (keel_io_posix) is plain POSIX; faultsim/ provides one that keeps
 * unsynced writes in a simulated volatile cache and injects failures.  A
 * backend is passed to keel_open through keel_options.io.
 *
 * One thing is outside it: the durable marker (engine/marker.c), a 4 KiB
 * file beside the store mapped shared between the writer and reader
 * processes, and a reader's probe of the writer lock (F_OFD_GETLK on the
 * data file's descriptor); and the metadata a compaction copies to its new
 * file (fchown, fchmod) and the path resolution at open (realpath).  They
 * are memory, locks and metadata, not data: nothing about them is synced or
 * recovered, so there is nothing to simulate.
 *
 * CONVENTIONS
 *   Files are plain file descriptors.  Every function returns >= 0 on success
 *   (a byte count for pread/pwrite, 0 otherwise) and a NEGATIVE ERRNO on
 *   failure (-EIO, -ENOSPC, ...).  A short pwrite is reported as the count
 *   written; the caller treats it as a failure.  CTX is the table's ctx field.
 *
 * LIBFIU FAULT POINTS (POSIX backend; see docs/faults.md)
 *   keel/io/open       keel/io/close      keel/io/pread     keel/io/pwrite
 *   keel/io/fdatasync  keel/io/fsync      keel/io/ftruncate keel/io/fallocate
 *   keel/io/fstat      keel/io/rename     keel/io/unlink    keel/io/fsync_dir
 *   keel/io/mmap       keel/io/lock       keel/io/pread_device
 *   When a point is enabled the call fails without touching the file; its
 *   failinfo, when non-zero, is the errno to report (default EIO).  For
 *   keel/io/pwrite a failinfo of -1 makes a short write: half the bytes are
 *   written and the count returned.
 */
#ifndef KEEL_IO_H
#define KEEL_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* flags for keel_io.open */
#define KEEL_IO_RDONLY 0x1 /* read only (else read-write)                    */
#define KEEL_IO_CREATE 0x2 /* create if missing                               */
#define KEEL_IO_EXCL   0x4 /* with CREATE: fail with -EEXIST if it exists     */

typedef struct keel_io {
	void *ctx; /* backend state, passed back to every call */
	int (*open)(void *ctx, const char *path, int flags, unsigned mode);
	int (*close)(void *ctx, int fd);
	ssize_t (*pread)(void *ctx, int fd, void *buf, size_t len, uint64_t off);
	ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t len,
	                  uint64_t off);
	int (*fdatasync)(void *ctx, int fd);
	int (*fsync)(void *ctx, int fd);
	int (*ftruncate)(void *ctx, int fd, uint64_t len);
	/* allocate [off, off+len) so the file size covers it (no KEEP_SIZE) */
	int (*fallocate)(void *ctx, int fd, uint64_t off, uint64_t len);
	/* size in bytes; *is_reg set to 1 for a regular file */
	int (*fstat)(void *ctx, int fd, uint64_t *size, int *is_reg);
	int (*rename)(void *ctx, const char *from, const char *to);
	int (*unlink)(void *ctx, const char *path);
	/* open the directory PATH, fsync it, close it */
	int (*fsync_dir)(void *ctx, const char *path);
	/* map [0, len) of FD read-only and shared; NULL with *err on failure */
	void *(*mmap)(void *ctx, int fd, size_t len, int *err);
	int (*munmap)(void *ctx, void *addr, size_t len);
	/* open-file-description lock on the whole file: EXCLUSIVE or shared;
	 * WAIT_MS 0 = try once (-EAGAIN if held), >0 = wait up to, -1 = forever;
	 * UNLOCK with exclusive = -1 */
	int (*lock)(void *ctx, int fd, int exclusive, int wait_ms);
	/* read [off, off+len) as the DEVICE holds it, not the page cache: dirty
	 * pages are written back first, and pages a failed sync left in the
	 * cache (marked clean, never written) are not believed.  A byte count
	 * (short at the end of the file), -EOPNOTSUPP where the file system
	 * cannot (then the caller trusts the cache), or a negative errno.  May
	 * be NULL: not supported. */
	ssize_t (*pread_device)(void *ctx, int fd, void *buf, size_t len,
	                        uint64_t off);
} keel_io;

/* The default backend: plain POSIX calls with the libfiu points above. */
const keel_io *keel_io_posix(void);

/* Helpers that loop over short transfers; return 0 or a negative errno:
 * -EIO for a short write, -ENODATA when the file ends before LEN bytes were
 * read (so callers can tell a short file from a failing device). */
int keel_io_pwrite_all(const keel_io *io, int fd, const void *buf, size_t len,
                       uint64_t off);
int keel_io_pread_all(const keel_io *io, int fd, void *buf, size_t len,
                      uint64_t off);

#ifdef __cplusplus
}
#endif
#endif /* KEEL_IO_H */
