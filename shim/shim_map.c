/*
 * shim_map.c -- writes through shared mappings of tracked files: mmap,
 * munmap, mprotect, mremap and msync, the SIGSEGV handler that records a
 * page at its first store, read and pread (the kernel's own stores into a
 * mapped buffer), and sigaction and signal (the program's SIGSEGV handler
 * is kept behind the shim's).  How, and the table's rules, below.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- writes through shared mappings ------------------------------------------ */

/*
 * A MAP_SHARED mapping of a tracked file opened for writing is remembered
 * in MAPS and made without PROT_WRITE.  The first store into one of its
 * pages faults; map_fault records the page (faultsim_cache_map_record,
 * pre-image = the page now), marks it dirty and makes it writable, all
 * under the cache's lock, and the store is retried.  Before every flush
 * point of the file (fsync, fdatasync, msync(MS_SYNC), munmap, mprotect, a
 * recorded write, truncate or allocation, sync, fork, exec, exit)
 * map_seal makes its dirty pages read-only again and fills their records'
 * new bytes from the file: the next store faults and makes a new record.
 *
 * The table is read without a lock by the fault handler: a slot is filled,
 * then published by storing its state; slots are added, changed and freed
 * only under the cache's lock, which the handler takes before it trusts
 * what it read.  DIRTY bits and MAP_DIRTY counts change only under it too.
 */
#define MAP_SLOTS 1024            /* shared mappings followed at once     */
enum { SLOT_FREE = 0, SLOT_LIVE = 1 };

typedef struct map_slot {
	int state;                /* SLOT_*: stored last, with release     */
	int file;                 /* faultsim file id                      */
	int fd;                   /* private read-only descriptor on it    */
	int prot;                 /* the protection the program asked for  */
	uintptr_t addr;           /* first byte (page-aligned)             */
	size_t len;               /* bytes, whole pages                    */
	uint64_t off;             /* file offset of ADDR                   */
	unsigned long *dirty;     /* a bit per page: writable, unsealed    */
	size_t dirty_len;         /* bytes mapped for DIRTY                */
	char *path;               /* absolute path, for refusals and the ring */
} map_slot;

static map_slot maps[MAP_SLOTS];
static int maps_high;                          /* slots ever used        */
static int maps_live;                          /* live slots             */
static uint32_t map_dirty[FAULTSIM_MAX_FILES]; /* dirty pages per file   */
static size_t page;                            /* the page size          */
static struct sigaction prog_segv;             /* the program's SIGSEGV  */
static int segv_installed;

void map_init(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
}

#define BITS (8 * sizeof(unsigned long))
static int dirty_test(const map_slot *m, size_t pg)
{
	return (m->dirty[pg / BITS] >> (pg % BITS)) & 1;
}
static void dirty_set(map_slot *m, size_t pg, int on)
{
	if (on)
		m->dirty[pg / BITS] |= 1ul << (pg % BITS);
	else
		m->dirty[pg / BITS] &= ~(1ul << (pg % BITS));
}

/* The live slot holding address A, or -1.  Lock-free (the handler). */
static int map_find(uintptr_t a)
{
	int high = __atomic_load_n(&maps_high, __ATOMIC_ACQUIRE);
	for (int i = 0; i < high; i++) {
		map_slot *m = &maps[i];
		if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == SLOT_LIVE &&
		    a >= m->addr && a - m->addr < m->len)
			return i;
	}
	return -1;
}

/* faultsim_map_stop: a record of ours is being sealed: its page goes back
 * to read-only first, so no store lands between the seal and the flush. */
static void map_stop(void *arg, uint64_t off, uint64_t len, uint32_t tag)
{
	(void)arg;
	(void)len;
	if (tag >= MAP_SLOTS)
		return;
	map_slot *m = &maps[tag];
	if (m->state != SLOT_LIVE || off < m->off ||
	    off - m->off >= m->len)
		return;
	size_t pg = (size_t)(off - m->off) / page;
	if (!dirty_test(m, pg))
		return;
	if (real_mprotect((void *)(m->addr + pg * page), page,
	             m->prot & ~PROT_WRITE) != 0)
		refuse("mprotect of a page of %s back to read-only: %s",
		       relative(m->path), strerror(errno));
	dirty_set(m, pg, 0);
	map_dirty[m->file]--;
}

/* As map_seal, with the cache's lock held (T). */
static void map_seal_locked(faultsim_ticket *t, int file)
{
	const char *path = NULL;
	int fd = -1, rc = 0;

	for (int i = 0; i < maps_high && fd < 0; i++)
		if (maps[i].state == SLOT_LIVE && maps[i].file == file) {
			fd = maps[i].fd;
			path = maps[i].path;
		}
	if (fd >= 0)
		rc = faultsim_cache_map_seal(t, file, fd, (uint32_t)getpid(),
		                             map_stop, NULL);
	if (rc < 0) {
		faultsim_cache_map_unlock(t);
		recording_failed(rc, "sealing the pages written through a "
		                 "mapping of", path);
		refuse("sealing the pages written through a mapping of %s: %s",
		       relative(path), strerror(-rc));
	}
}

/* Seals this process's dirty pages of FILE (see above).  IN_SHIM set. */
void map_seal(int file)
{
	faultsim_ticket t = { 0 };

	if (file < 0 || file >= FAULTSIM_MAX_FILES ||
	    !__atomic_load_n(&map_dirty[file], __ATOMIC_ACQUIRE))
		return;
	faultsim_cache_map_lock(cache, &t);
	map_seal_locked(&t, file);
	faultsim_cache_map_unlock(&t);
}

void map_seal_all(void)
{
	if (!active || !maps_live)
		return;
	int was = in_shim;
	in_shim = 1;
	for (int f = 0; f < FAULTSIM_MAX_FILES; f++)
		map_seal(f);
	in_shim = was;
}

/*
 * Makes the page at A of slot S writable for the program, recording it
 * first.  0 (done, or already done by another thread), 1 (not ours: the
 * slot is gone or not writable), 2 (the page lies past the file's end: a
 * store there is a SIGBUS, as without the shim).  IN_SHIM set.
 */
static int map_make_writable(int s, uintptr_t a, int retried)
{
	faultsim_ticket t = { 0 };
	map_slot *m = &maps[s];
	int rc = 0;

	faultsim_cache_map_lock(cache, &t);
	if (m->state != SLOT_LIVE || a < m->addr || a - m->addr >= m->len ||
	    !(m->prot & PROT_WRITE)) {
		faultsim_cache_map_unlock(&t);
		return 1;
	}
	size_t pg = (a - m->addr) / page;
	uintptr_t at = m->addr + pg * page;
	uint64_t off = m->off + pg * page;
	if (!dirty_test(m, pg)) {
		rc = faultsim_cache_map_record(&t, m->file, m->fd, off, page,
		                               (uint32_t)getpid(), (uint32_t)s);
		if (rc == -ENOBUFS && kills_only && !retried) {
			faultsim_cache_map_unlock(&t);
			make_room();
			return map_make_writable(s, a, 1);
		}
		if (rc < 0) {
			faultsim_cache_map_unlock(&t);
			recording_failed(rc, "a store through a mapping of",
			                 m->path);
			refuse("recording a store through a mapping of %s: %s",
			       relative(m->path), strerror(-rc));
		}
		if (rc == 0) {
			faultsim_cache_map_unlock(&t);
			return 2;
		}
		dirty_set(m, pg, 1);
		map_dirty[m->file]++;
		/* its bytes change without a recorded write: no sample */
		ctl->files[m->file].sample_len = 0;
	}
	/* a dirty page can be read-only again after an mprotect raced with
	 * its fault: its record is unsealed still and covers it */
	if (real_mprotect((void *)at, page, m->prot) != 0)
		refuse("mprotect of a page of %s to writable: %s",
		       relative(m->path), strerror(errno));
	faultsim_cache_map_unlock(&t);
	if (rc == 1) {
		/* begun and completed at once: the entry carries the record */
		remember_begin(SHIM_OP_MAP_WRITE, m->file, m->path, NULL, off,
		               page, t.seq);
		remember(SHIM_OP_MAP_WRITE, m->file, m->path, NULL, off, page,
		         (int64_t)page, 0);
	}
	return 0;
}

/* The program's own SIGSEGV disposition, for a fault that is not ours. */
static void map_chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	if (prog_segv.sa_flags & SA_SIGINFO) {
		if (prog_segv.sa_sigaction) {
			prog_segv.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (prog_segv.sa_handler != SIG_DFL &&
	           prog_segv.sa_handler != SIG_IGN) {
		prog_segv.sa_handler(sig);
		return;
	}
	/* the default action: the faulting instruction runs again and
	 * kills the process as it would have; a sent signal is sent again */
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	real_sigaction(SIGSEGV, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void map_fault(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, s = -1, rc = 1;

	if (si->si_code > 0 && active)
		s = map_find((uintptr_t)si->si_addr);
	if (s >= 0) {
		if (in_shim)
			refuse("a store through the mapping of %s while the shim "
			       "was inside a call of the same thread (a signal "
			       "handler?)", relative(maps[s].path));
		in_shim = 1;
		step();
		rc = map_make_writable(s, (uintptr_t)si->si_addr, 0);
		in_shim = 0;
	}
	errno = saved;
	if (rc == 2)
		raise(SIGBUS);
	else if (rc == 1)
		map_chain(sig, si, uc);
}

static void segv_install(void)
{
	struct sigaction sa, old;

	if (segv_installed)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = map_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(SIGSEGV, &sa, &old) != 0)
		refuse("installing the shim's SIGSEGV handler: %s",
		       strerror(errno));
	if (old.sa_sigaction != map_fault)
		prog_segv = old; /* a handler installed before the shim's */
	segv_installed = 1;
}

/* A free slot for a new mapping, lock held, or refuses. */
static int map_slot_new(const char *path)
{
	for (int i = 0; i < MAP_SLOTS; i++)
		if (maps[i].state == SLOT_FREE) {
			if (i >= maps_high)
				__atomic_store_n(&maps_high, i + 1,
				                 __ATOMIC_RELEASE);
			return i;
		}
	refuse("mmap(MAP_SHARED) of %s: more than %d shared mappings of "
	       "tracked files at once", relative(path), MAP_SLOTS);
}

/* Follows a new shared mapping [P, P+LEN) of FD at OFF (whole pages). */
static void map_follow(void *p, size_t len, int prot, int fd, off_t off)
{
	faultsim_ticket t = { 0 };
	size_t pages = (len + page - 1) / page;
	size_t blen = ((pages + BITS - 1) / BITS) * sizeof(unsigned long);
	/* high, out of the way of a program that dup2()s onto low numbers */
	int dfd = real_fcntl(fd, F_DUPFD_CLOEXEC, 900);
	if (dfd < 0 && errno == EINVAL) /* a descriptor limit below 900 */
		dfd = real_fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (dfd < 0)
		refuse("mmap of %s: cannot keep a descriptor on it: %s",
		       relative(fd_path[fd]), strerror(errno));
	blen = (blen + page - 1) / page * page;
	/* anonymous: zero pages cost nothing until a bit is set */
	void *bits = real_mmap(NULL, blen, PROT_READ | PROT_WRITE,
	                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bits == MAP_FAILED)
		refuse("mmap of %s: no memory for its page bits",
		       relative(fd_path[fd]));
	segv_install();
	faultsim_cache_map_lock(cache, &t);
	map_slot *m = &maps[map_slot_new(fd_path[fd])];
	m->file = fd_file[fd] - 1;
	shim_seen *e = seen_of(m->file);
	if (e)
		__atomic_store_n(&e->mapped, 1, __ATOMIC_RELEASE);
	m->fd = dfd;
	m->prot = prot;
	m->addr = (uintptr_t)p;
	m->len = pages * page;
	m->off = (uint64_t)off;
	m->dirty = bits;
	m->dirty_len = blen;
	m->path = strdup(fd_path[fd]);
	__atomic_store_n(&m->state, SLOT_LIVE, __ATOMIC_RELEASE);
	maps_live++;
	faultsim_cache_map_unlock(&t);
}

/* Stops following slot S (its pages sealed already).  Lock held. */
static void map_slot_free(map_slot *m)
{
	__atomic_store_n(&m->state, SLOT_FREE, __ATOMIC_RELEASE);
	maps_live--;
	real_munmap(m->dirty, m->dirty_len);
	real_close(m->fd);
	free(m->path);
	m->path = NULL;
}

/* [A, A+LEN) is about to be unmapped (munmap, or an mmap MAP_FIXED over
 * it): the slots it meets are sealed, then freed or cut down.  IN_SHIM. */
static void map_forget(uintptr_t a, size_t len)
{
	faultsim_ticket t = { 0 };
	uintptr_t end = a + ((len + page - 1) / page) * page;

	for (int i = 0; i < maps_high; i++) {
		map_slot *m = &maps[i];
		if (m->state != SLOT_LIVE || end <= m->addr ||
		    a >= m->addr + m->len)
			continue;
		/* sealed under the same lock: no store of another thread
		 * can make a page dirty before the slot goes */
		faultsim_cache_map_lock(cache, &t);
		map_seal_locked(&t, m->file);
		if (a <= m->addr && end >= m->addr + m->len) {
			map_slot_free(m);
		} else if (a <= m->addr) { /* the head goes: no page is dirty */
			m->off += end - m->addr;
			m->len -= end - m->addr;
			m->addr = end;
		} else if (end >= m->addr + m->len) { /* the tail goes */
			m->len = a - m->addr;
		} else {
			faultsim_cache_map_unlock(&t);
			refuse("munmap of the middle of a shared mapping of %s "
			       "is not modelled", relative(m->path));
		}
		faultsim_cache_map_unlock(&t);
	}
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int type = flags & MAP_TYPE, follow;

	load_mmap();
	if (!active || in_shim)
		return real_mmap(addr, len, prot, flags, fd, off);
	follow = fd >= 0 && fd < SHIM_FDS && fd_file[fd] &&
	         (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) &&
	         (real_fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
	in_shim = 1;
	if (follow && (flags & MAP_SYNC)) {
		/* the kernel refuses MAP_SYNC where the file is not on DAX
		 * (EOPNOTSUPP): its answer is passed on, and the program
		 * falls back to plain writes (MariaDB's redo log does); only
		 * a mapping the kernel grants is refused */
		void *p = real_mmap(addr, len, prot & ~PROT_WRITE, flags, fd,
		                    off);
		if (p == MAP_FAILED) {
			int err = errno;
			in_shim = 0;
			errno = err;
			return MAP_FAILED;
		}
		real_munmap(p, len);
		refuse("mmap(MAP_SYNC) of %s: stores that reach the device "
		       "without a sync are not modelled", relative(fd_path[fd]));
	}
	if ((flags & MAP_FIXED) && maps_live)
		map_forget((uintptr_t)addr, len);
	void *p = real_mmap(addr, len, follow ? prot & ~PROT_WRITE : prot,
	                    flags, fd, off);
	if (follow && p != MAP_FAILED)
		map_follow(p, len, prot, fd, off);
	in_shim = 0;
	return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	load_munmap();
	if (!active || in_shim || !maps_live)
		return real_munmap(addr, len);
	in_shim = 1;
	map_forget((uintptr_t)addr, len);
	int rc = real_munmap(addr, len);
	in_shim = 0;
	return rc;
}

/* The program changes a followed mapping's protection: it is kept
 * without PROT_WRITE (its pages sealed first, so none is writable) and
 * the wanted protection is what the next fault grants. */
int mprotect(void *addr, size_t len, int prot)
{
	faultsim_ticket t = { 0 };
	uintptr_t a = (uintptr_t)addr;
	int rc, s;

	load_mprotect();
	if (!active || in_shim || !maps_live || (s = map_find(a)) < 0)
		return real_mprotect(addr, len, prot);
	in_shim = 1;
	map_slot *m = &maps[s];
	if (a != m->addr || (len + page - 1) / page * page != m->len)
		refuse("mprotect of part of a shared mapping of %s is not "
		       "modelled", relative(m->path));
	faultsim_cache_map_lock(cache, &t);
	map_seal_locked(&t, m->file);
	rc = real_mprotect(addr, len, prot & ~PROT_WRITE);
	if (rc == 0)
		m->prot = prot;
	faultsim_cache_map_unlock(&t);
	in_shim = 0;
	return rc;
}

/* A read-only followed mapping (it may be made writable later) moved or
 * grew: its slot follows it.  No page of it is dirty. */
static void map_moved(int s, void *p, size_t len)
{
	faultsim_ticket t = { 0 };
	map_slot *m = &maps[s];
	size_t pages = (len + page - 1) / page;
	size_t blen = ((pages + BITS - 1) / BITS) * sizeof(unsigned long);

	blen = (blen + page - 1) / page * page;
	void *bits = blen > m->dirty_len ?
		real_mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		          MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : NULL;
	if (bits == MAP_FAILED)
		refuse("mremap of %s: no memory for its page bits",
		       relative(m->path));
	faultsim_cache_map_lock(cache, &t);
	if (bits) {
		real_munmap(m->dirty, m->dirty_len);
		m->dirty = bits;
		m->dirty_len = blen;
	}
	m->addr = (uintptr_t)p;
	m->len = pages * page;
	faultsim_cache_map_unlock(&t);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	void *want = (flags & MREMAP_FIXED) ? va_arg(ap, void *) : NULL;
	va_end(ap);
	load_mremap();
	int s = active && !in_shim && maps_live ? map_find((uintptr_t)old) : -1;
	if (s < 0)
		return real_mremap(old, old_len, new_len, flags, want);
	in_shim = 1;
	if (maps[s].prot & PROT_WRITE)
		refuse("mremap of a writable shared mapping of %s is not "
		       "modelled", relative(maps[s].path));
	void *p = real_mremap(old, old_len, new_len, flags, want);
	if (p != MAP_FAILED)
		map_moved(s, p, new_len);
	in_shim = 0;
	return p;
}

/* msync(MS_SYNC) is a data sync of the mapped file: its pages are sealed,
 * then synced (the whole file, like fdatasync: the kernel syncs the range,
 * which on ext4 commits the journal).  MS_ASYNC starts writeback only. */
int msync(void *addr, size_t len, int flags)
{
	int s, file, rc;
	uint64_t mark;

	load_msync();
	if (!active || in_shim || !maps_live || !(flags & MS_SYNC) ||
	    (s = map_find((uintptr_t)addr)) < 0)
		return real_msync(addr, len, flags);
	in_shim = 1;
	file = maps[s].file;
	step();
	map_seal(file);
	mark = faultsim_cache_sync_begin(cache);
	if ((rc = inject(FAULTSIM_OP_FDATASYNC)) == 0)
		rc = real_msync(addr, len, flags) == 0 ? 0 : -errno;
	if (faultsim_cache_sync_end(cache, file, mark, rc, profile))
		expect_reverted(file, -1, maps[s].path);
	remember(SHIM_OP_MSYNC, file, maps[s].path, NULL,
	         maps[s].off + ((uintptr_t)addr - maps[s].addr), len, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

/* The kernel's own stores into a read-only page fail with EFAULT instead
 * of faulting: the pages a read is about to fill are made writable (and
 * recorded) first. */
static void map_prefault(const void *buf, size_t len)
{
	uintptr_t a = (uintptr_t)buf, end = a + len;

	if (!active || in_shim || !maps_live || len == 0)
		return;
	in_shim = 1;
	for (uintptr_t p = a & ~(uintptr_t)(page - 1); p < end; p += page) {
		int s = map_find(p < a ? a : p);
		if (s >= 0)
			(void)map_make_writable(s, p < a ? a : p, 0);
	}
	in_shim = 0;
}

ssize_t read(int fd, void *buf, size_t len)
{
	load_read();
	map_prefault(buf, len);
	return real_read(fd, buf, len);
}

ssize_t __read(int fd, void *buf, size_t len) __attribute__((alias("read"), copy(read)));

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	load_pread();
	map_prefault(buf, len);
	return real_pread(fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off);
}

/* glibc's _FORTIFY_SOURCE entry points, with their check kept */
extern void __chk_fail(void) __attribute__((noreturn));

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return pread(fd, buf, len, off);
}

ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off,
                      size_t buflen)
{
	return __pread_chk(fd, buf, len, off, buflen);
}

/* A program that installs its own SIGSEGV handler keeps the shim's: its
 * handler is kept and called for every fault that is not the shim's. */
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	load_sigaction();
	if (sig != SIGSEGV || !segv_installed)
		return real_sigaction(sig, act, old);
	if (old)
		*old = prog_segv;
	if (act)
		prog_segv = *act;
	return 0;
}

sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;

	load_signal();
	if (sig != SIGSEGV || !segv_installed)
		return real_signal(sig, h);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, &old);
	return old.sa_handler;
}
