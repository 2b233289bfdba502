/*
 * shim.c -- libkeel-shim.so: LD_PRELOAD wrappers that record a program's
 * I/O on files below the watched directory in the harness's faultsim cache
 * (the contract is shim.h; the call list and its limits docs/targets.md).
 *
 * Order inside one tracked call, as in faultsim's own keel_io backend:
 * (1) count the step (an --enumerate run may kill the process here), (2)
 * check the injected faults (a fault fails the call without touching the
 * file), (3) record, (4) make the real call, (5) end the record with its
 * result, (6) remember the call in the ring for a violation's report.
 *
 * Re-entry: faultsim itself calls open, pread, link, unlink, ... and those
 * resolve to the wrappers below.  IN_SHIM (per thread) is set while a
 * wrapper works; every wrapper passes straight through while it is set.
 */

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <limits.h>
#include <execinfo.h>
#include <link.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

#define SHIM_FDS 65536        /* descriptors the shim can follow        */
#define FD_APPEND 1u          /* O_APPEND                               */
#define FD_SYNC 2u            /* O_SYNC / O_DSYNC                       */
#define FD_DIR 4u             /* a directory below the watched one      */
#define FD_ADOPTED 8u         /* opened where no wrapper saw (fd_adopt)  */
#define ZERO_MAX (64u << 20)  /* largest hole punched (recorded as zeros) */

static __thread int in_shim __attribute__((tls_model("initial-exec")));

static int active;                /* set up by the harness               */
static char watched[PATH_MAX];    /* the watched directory               */
static size_t watched_len;
static faultsim_cache *cache;
static faultsim_faults *faults;   /* NULL: no injected faults            */
static faultsim_profile profile;
static shim_shared *ctl;

/* Per descriptor, in this process (inherited across fork, rebuilt from
 * /proc/self/fd after exec). */
static int32_t fd_file[SHIM_FDS];   /* faultsim file id + 1; 0 untracked */
static uint8_t fd_flags[SHIM_FDS];  /* FD_*                              */
static int32_t fd_err[SHIM_FDS];    /* sync error not yet reported (errseq) */
static char *fd_path[SHIM_FDS];     /* absolute path (tracked files, dirs) */
static uint32_t fd_gen[SHIM_FDS];   /* the file entry's gen when tracked   */
/* 1: the descriptor was looked at and names nothing below the watched
 * directory.  0: not looked at since the shim last saw it opened, closed
 * or duplicated -- it may have come from a call no wrapper sees (glibc's
 * opendir, a descriptor received over a socket), so its first write or
 * sync looks up what it names (fd_adopt). */
static uint8_t fd_seen[SHIM_FDS];

/* ---- the real functions ---------------------------------------------- */

/* Not static: the syscall backstop marks the calls made through them as
 * the shim's own (shim_internal.h). */
#define REAL(ret, name, args)                                              \
	__attribute__((visibility("hidden"))) ret(*real_##name) args;      \
	static void load_##name(void)                                      \
	{                                                                  \
		if (!real_##name)                                          \
			real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name); \
	}

REAL(int, openat, (int, const char *, int, ...))
REAL(ssize_t, write, (int, const void *, size_t))
REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
REAL(int, close, (int))
REAL(int, fsync, (int))
REAL(int, fdatasync, (int))
REAL(int, ftruncate, (int, off_t))
REAL(int, fallocate, (int, int, off_t, off_t))
REAL(int, posix_fallocate, (int, off_t, off_t))
REAL(int, renameat2, (int, const char *, int, const char *, unsigned))
REAL(int, unlinkat, (int, const char *, int))
REAL(int, linkat, (int, const char *, int, const char *, int))
REAL(int, mkdirat, (int, const char *, mode_t))
REAL(int, dup, (int))
REAL(int, dup3, (int, int, int))
REAL(int, dup2, (int, int))
REAL(int, fcntl, (int, int, ...))
REAL(void *, mmap, (void *, size_t, int, int, int, off_t))
REAL(int, munmap, (void *, size_t))
REAL(int, mprotect, (void *, size_t, int))
REAL(void *, mremap, (void *, size_t, size_t, int, ...))
REAL(int, msync, (void *, size_t, int))
REAL(ssize_t, read, (int, void *, size_t))
REAL(ssize_t, pread, (int, void *, size_t, off_t))
REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *))
REAL(sighandler_t, signal, (int, sighandler_t))
REAL(void, sync, (void))
REAL(int, syncfs, (int))
REAL(int, sync_file_range, (int, off_t, off_t, unsigned))
REAL(int, execve, (const char *, char *const[], char *const[]))
REAL(long, syscall, (long, ...))
REAL(int, fileno, (FILE *))

static void load_all(void)
{
	load_openat(); load_write(); load_pwrite(); load_close();
	load_fsync(); load_fdatasync(); load_ftruncate(); load_fallocate();
	load_posix_fallocate(); load_renameat2(); load_unlinkat();
	load_linkat(); load_mkdirat(); load_dup(); load_dup3(); load_dup2();
	load_fcntl(); load_mmap(); load_sync(); load_syncfs();
	load_sync_file_range(); load_execve(); load_syscall(); load_fileno();
	load_munmap(); load_mprotect(); load_mremap(); load_msync();
	load_read(); load_pread(); load_sigaction(); load_signal();
}

/* ---- refusing, remembering ----------------------------------------------- */

static void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                        noreturn));
static void refuse(const char *fmt, ...)
{
	char msg[SHIM_REFUSAL], line[SHIM_REFUSAL + 40];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctl && __atomic_exchange_n(&ctl->refused, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(ctl->refusal, sizeof ctl->refusal, "%s", msg);
	n = snprintf(line, sizeof line, "keel-shim: %s (set-up error)\n", msg);
	if (real_write && n > 0)
		(void)!real_write(2, line, (size_t)n);
	_exit(2);
}

static const char *relative(const char *abs)
{
	if (strncmp(abs, watched, watched_len) == 0 && abs[watched_len] == '/')
		return abs + watched_len + 1;
	return abs;
}

/* ---- the call ring: who called, from where, still in flight or not ---- */

static uint8_t my_role;                  /* enum shim_role                */
static char role_env[3][64];             /* KEEL_SHIM_ROLE_* for an exec  */
static uintptr_t skip_lo[2], skip_hi[2]; /* the shim's and libc's text    */
/* Per process: modules call sites were found in (bias, range, slot); an
 * entry is claimed, filled, then marked ready (threads share the table). */
static struct {
	uintptr_t lo, hi, bias;
	uint32_t slot;
	int ready;
} site_mods[16];
static int nsite_mods;
/* The return address of the wrapper the program called, while it works
 * (NULL otherwise): a call site without unwinding (call_site). */
static __thread void *site_ra __attribute__((tls_model("initial-exec")));
/* Returns EXPR (of TYPE) made with the wrapper's own return address as
 * the call site: a program's direct call needs no unwinding (call_site).
 * A wrapper the shim itself enters inside another (the cache's link of a
 * stash) keeps the outer one's. */
#define WITH_SITE(type, expr)                                               \
	do {                                                                \
		void *site_outer_ = site_ra;                                \
		if (!site_outer_)                                           \
			site_ra = __builtin_return_address(0);              \
		type site_r_ = (expr);                                      \
		site_ra = site_outer_;                                      \
		return site_r_;                                             \
	} while (0)
/* The ring slot of this thread's call in flight (index + 1; 0: none). */
static __thread uint64_t open_slot __attribute__((tls_model("initial-exec")));

/* A module's slot in the control block (+ 1), added when new; 0 when full. */
static uint32_t module_slot(const char *path)
{
	uint32_t n = __atomic_load_n(&ctl->nmodules, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n && i < SHIM_MODULES; i++)
		if (strncmp(ctl->modules[i], path, SHIM_MODULE_PATH - 1) == 0)
			return i + 1;
	n = __atomic_fetch_add(&ctl->nmodules, 1, __ATOMIC_ACQ_REL);
	if (n >= SHIM_MODULES)
		return 0;
	snprintf(ctl->modules[n] + 1, SHIM_MODULE_PATH - 1, "%s", path + 1);
	__atomic_store_n(&ctl->modules[n][0], path[0], __ATOMIC_RELEASE);
	return n + 1;
}

struct find_mod { uintptr_t addr, lo, hi, bias; const char *name; int found; };

static int find_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_mod *f = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || f->addr < lo ||
		    f->addr >= lo + ph->p_memsz)
			continue;
		f->lo = lo;
		f->hi = lo + ph->p_memsz;
		f->bias = info->dlpi_addr;
		f->name = info->dlpi_name;
		f->found = 1;
		return 1;
	}
	return 0;
}

/* The text segment holding ADDR: [*LO, *HI), its load bias, its file. */
static int module_of(uintptr_t addr, struct find_mod *f)
{
	memset(f, 0, sizeof *f);
	f->addr = addr;
	dl_iterate_phdr(find_mod_cb, f);
	return f->found;
}

/* Return address A as module and offset into C: 1, or 0 when A lies in
 * the shim or libc (look further up). */
static int site_resolve(uintptr_t a, shim_call *c)
{
	struct find_mod f;
	char exe[PATH_MAX];
	const char *name;

	if ((a >= skip_lo[0] && a < skip_hi[0]) ||
	    (a >= skip_lo[1] && a < skip_hi[1]))
		return 0;
	int known = __atomic_load_n(&nsite_mods, __ATOMIC_ACQUIRE);
	for (int k = 0; k < known && k < 16; k++)
		if (__atomic_load_n(&site_mods[k].ready, __ATOMIC_ACQUIRE) &&
		    a >= site_mods[k].lo && a < site_mods[k].hi) {
			c->module = site_mods[k].slot;
			c->site = a - site_mods[k].bias;
			return 1;
		}
	if (!module_of(a, &f))
		return 1; /* nowhere: unknown */
	name = f.name;
	if (!name || !name[0]) { /* the main program */
		ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[len > 0 ? len : 0] = '\0';
		name = exe;
	}
	c->module = name[0] ? module_slot(name) : 0;
	c->site = a - f.bias;
	if (known < 16)
		known = __atomic_fetch_add(&nsite_mods, 1, __ATOMIC_ACQ_REL);
	if (known < 16) {
		site_mods[known].lo = f.lo;
		site_mods[known].hi = f.hi;
		site_mods[known].bias = f.bias;
		site_mods[known].slot = c->module;
		__atomic_store_n(&site_mods[known].ready, 1, __ATOMIC_RELEASE);
	}
	return 1;
}

/* The first return address outside the shim and libc: module and offset.
 * The hot wrappers (write, pwrite, fsync, fdatasync) hand their own return
 * address down in SITE_RA, which is that address when the program called
 * them directly; otherwise backtrace() unwinds a few frames (its first
 * call loads libgcc_s, which shim_init does).  Modules are cached per
 * process. */
static void call_site(shim_call *c)
{
	void *frames[10];
	int n;

	c->module = 0;
	c->site = 0;
	if (site_ra && site_resolve((uintptr_t)site_ra, c))
		return;
	n = backtrace(frames, 10);
	for (int i = 1; i < n; i++)
		if (site_resolve((uintptr_t)frames[i], c))
			return;
}

/* Set up once per process (in_shim held): the ranges to skip, the role. */
static void calls_init(void)
{
	struct find_mod f;
	void *frames[2];
	const char *role = getenv("KEEL_SHIM_ROLE"), *root;
	char pid[32];
	int level, base;

	backtrace(frames, 2); /* loads libgcc_s now, not inside a wrapper */
	if (module_of((uintptr_t)&calls_init, &f)) {
		skip_lo[0] = f.lo;
		skip_hi[0] = f.hi;
	}
	if (real_write && module_of((uintptr_t)real_write, &f)) {
		skip_lo[1] = f.lo;
		skip_hi[1] = f.hi;
	}
	my_role = role && !strcmp(role, "workload") ? SHIM_ROLE_WORKLOAD :
	          role && !strcmp(role, "checker") ? SHIM_ROLE_CHECKER : 0;
	/* How deep below the process the harness started this one is: the
	 * harness starts "/bin/sh -c CMD", which runs the program (one level
	 * down, or in its own place by exec); a process below the program is
	 * its child (a recovery tool the checker runs).  Each process passes
	 * its pid and level down; an exec keeps the pid, and the level. */
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	root = getenv("KEEL_SHIM_ROLE_PID");
	level = getenv("KEEL_SHIM_ROLE_LEVEL") ?
	        atoi(getenv("KEEL_SHIM_ROLE_LEVEL")) : 0;
	if (root && strcmp(root, pid) != 0)
		level++;
	base = getenv("KEEL_SHIM_ROLE_BASE") ?
	       atoi(getenv("KEEL_SHIM_ROLE_BASE")) : 0;
	if (level == 0) { /* the process the harness started: the shell? */
		char exe[PATH_MAX], sh[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = '\0';
		base = realpath("/bin/sh", sh) && !strcmp(exe, sh);
	}
	if (my_role && level > base)
		my_role |= SHIM_ROLE_CHILD;
	/* handed to the programs this one execs (execve below), not set in
	 * this process's environment: a constructor that changes environ
	 * under a shell (bash) keeps the syscall backstop from seeing its
	 * builtins' writes */
	snprintf(role_env[0], sizeof role_env[0], "KEEL_SHIM_ROLE_PID=%s", pid);
	snprintf(role_env[1], sizeof role_env[1], "KEEL_SHIM_ROLE_LEVEL=%d",
	         level);
	snprintf(role_env[2], sizeof role_env[2], "KEEL_SHIM_ROLE_BASE=%d", base);
}

/* ENVP with this process's role variables in place of any it carries:
 * a malloc'ed array (its strings are ENVP's and role_env's), or ENVP
 * itself when the role is unknown or there is no memory. */
static char *const *role_envp(char *const envp[])
{
	size_t n = 0, k = 0;
	char **out;

	if (!role_env[0][0] || !envp)
		return envp;
	while (envp[n])
		n++;
	out = malloc((n + 4) * sizeof *out);
	if (!out)
		return envp;
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], "KEEL_SHIM_ROLE_PID=", 19) != 0 &&
		    strncmp(envp[i], "KEEL_SHIM_ROLE_LEVEL=", 21) != 0 &&
		    strncmp(envp[i], "KEEL_SHIM_ROLE_BASE=", 20) != 0)
			out[k++] = envp[i];
	for (int i = 0; i < 3; i++)
		out[k++] = role_env[i];
	out[k] = NULL;
	return out;
}

/* This process's id, for the call ring (a report's "pid" column): read
 * once, and again in a forked child (pthread_atfork), not a system call
 * per call recorded. */
static pid_t my_pid;

static void pid_refresh(void)
{
	my_pid = getpid();
}

/* Whether this is a vfork child (CPython's subprocess, before its exec):
 * it runs in the parent's memory, so its dup2, close_range or close must
 * not change the tables -- they are the parent's, whose descriptors it does
 * not touch.  No atfork handler runs after vfork: my_pid is still the
 * parent's.  A process made by a raw clone() runs none either and is taken
 * for one too: its tables are left as they were (fork, vfork and
 * posix_spawn are how programs make processes).  A system call: asked only
 * where a table would change. */
static int in_vfork_child(void)
{
	return getpid() != my_pid;
}

static void call_fill(shim_call *c, uint32_t op, int file, const char *path,
                      const char *path2, uint64_t off, uint64_t len)
{
	c->op = op;
	c->file = file;
	c->pid = (int32_t)my_pid;
	c->role = my_role;
	c->off = off;
	c->len = len;
	if (path2) {
		snprintf(c->path, sizeof c->path, "%s -> %s",
		         path ? relative(path) : "?", relative(path2));
	} else {
		/* every write comes here: a bounded copy, not a printf */
		const char *p = path ? relative(path) : "?";
		size_t n = strnlen(p, sizeof c->path - 1);
		memcpy(c->path, p, n);
		c->path[n] = '\0';
	}
}

/* Enters a call about to be made (record REC, 0: none) in the ring,
 * marked in flight; remember() completes it when it returns. */
static void remember_begin(uint32_t op, int file, const char *path,
                           const char *path2, uint64_t off, uint64_t len,
                           uint64_t rec)
{
	uint64_t i = __atomic_fetch_add(&ctl->ncalls, 1, __ATOMIC_ACQ_REL);
	shim_call *c = &ctl->ring[i % SHIM_RING];

	__atomic_store_n(&c->seq, 0, __ATOMIC_RELEASE);
	call_fill(c, op, file, path, path2, off, len);
	c->durable = 0;
	c->result = 0;
	c->rec = rec;
	call_site(c);
	__atomic_store_n(&c->inflight, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&c->seq, i + 1, __ATOMIC_RELEASE);
	open_slot = i + 1;
}

static void remember(uint32_t op, int file, const char *path,
                     const char *path2, uint64_t off, uint64_t len,
                     int64_t result, int durable)
{
	uint64_t slot = open_slot, i = slot ? slot - 1 : 0;
	shim_call *c = &ctl->ring[i % SHIM_RING];

	open_slot = 0;
	if (slot && __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) == slot &&
	    c->op == op) {
		/* the entry remember_begin made: complete it in place (its
		 * words are the same; a create learns its file id now) */
		c->file = file;
		c->off = off;
		c->len = len;
		c->durable = (uint32_t)durable;
		c->result = result;
		__atomic_store_n(&c->inflight, 0, __ATOMIC_RELEASE);
		return;
	}
	i = __atomic_fetch_add(&ctl->ncalls, 1, __ATOMIC_ACQ_REL);
	c = &ctl->ring[i % SHIM_RING];
	__atomic_store_n(&c->seq, 0, __ATOMIC_RELEASE);
	call_fill(c, op, file, path, path2, off, len);
	c->durable = (uint32_t)durable;
	c->result = result;
	c->rec = 0;
	call_site(c);
	__atomic_store_n(&c->inflight, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->seq, i + 1, __ATOMIC_RELEASE);
}

/* KEEL_SHIM_KILLS_ONLY=1: the harness cuts no power and injects no fault in
 * this run, so a kill leaves every write in the page cache and nothing
 * recorded can ever be undone.  A full cache is then settled as a sync(2)
 * would settle it, and the call recorded after all, instead of refused: a
 * program that writes and renames without ever syncing runs as long as the
 * harness likes.  With power cuts a full cache stays a refusal. */
static int kills_only;

static int sync_everything(int rc, int said);
static uint64_t all_mark;
/* writes through shared mappings: seal before a flush point (below) */
static void map_seal(int file);
static void map_seal_all(void);

static int make_room(void)
{
	if (!kills_only)
		return 0;
	map_seal_all(); /* an unsealed page stays unsynced (invariant 7) */
	all_mark = faultsim_cache_sync_begin(cache);
	sync_everything(0, 0);
	faultsim_cache_clear_overflow(cache);
	return 1;
}

/* Records with CALL, a faultsim_cache_*_begin or _track call returning a
 * negative errno; a full cache gets one make_room and a second try. */
#define RECORD(call) ({ int rec_rc_ = (call);                              \
	if (rec_rc_ == -ENOBUFS && make_room())                             \
		rec_rc_ = (call);                                             \
	rec_rc_; })

/* A recording call failed: the cache is full, or the file table is. */
static void recording_failed(int rc, const char *what, const char *path)
{
	if (rc == -ENOBUFS)
		refuse("%s %s: the fault simulator's cache is full: %s; cut "
		       "power more often (a shorter --kill-every)%s", what,
		       path ? relative(path) : "?",
		       faultsim_cache_nfiles(cache) >= FAULTSIM_MAX_FILES ?
		       "all of its file entries (FAULTSIM_MAX_FILES, "
		       "faultsim/faultsim.h) name files with changes a power "
		       "cut could still undo" :
		       "more unsynced bytes than its records hold",
		       faultsim_cache_nfiles(cache) >= FAULTSIM_MAX_FILES ? "" :
		       ", or give it more room (torture --cache-mib)");
}

/* ---- paths ------------------------------------------------------------------ */

/* What descriptor FD names now (/proc/self/fd), in OUT (PATH_MAX bytes):
 * 0, or -1 when it cannot be read. */
static int fd_names(int fd, char *out)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/* The absolute, resolved form of PATH (relative to DIRFD): the directory
 * part through realpath, then the last component.  0, or -1. */
static int resolve(int dirfd, const char *path, char *out)
{
	char tmp[PATH_MAX + 8], base[PATH_MAX];
	size_t len;

	if (!path || !*path)
		return -1;
	if (path[0] == '/') {
		len = strlen(path);
		if (len >= PATH_MAX)
			return -1;
		memcpy(tmp, path, len + 1); /* every open: no printf */
	} else if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base) ||
		    snprintf(tmp, sizeof tmp, "%.*s/%s", PATH_MAX / 2, base,
		             path) >= PATH_MAX)
			return -1;
	} else {
		if (fd_names(dirfd, base) < 0)
			return -1;
		if (snprintf(tmp, sizeof tmp, "%.*s/%s", PATH_MAX / 2, base,
		             path) >= PATH_MAX)
			return -1;
	}
	len = strlen(tmp);
	while (len > 1 && tmp[len - 1] == '/')
		tmp[--len] = '\0';
	const char *slash = strrchr(tmp, '/');
	const char *last = slash + 1;
	if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
		return realpath(tmp, out) ? 0 : -1;
	return faultsim_cache_abspath_memo(cache, tmp, out, FAULTSIM_PATH_MAX) == 0 ?
	       0 : -1;
}

/* KEEL_SHIM_VOLATILE: ':'-separated shell patterns of file names whose
 * content the program never needs after a crash (shared-memory files such
 * as SQLite's -shm or keel's .durable marker): they pass through. */
static char volatile_pats[1024];

static int is_volatile(const char *abs)
{
	return shim_volatile_match(volatile_pats, abs);
}

static int is_watched(const char *abs)
{
	return strncmp(abs, watched, watched_len) == 0 &&
	       (abs[watched_len] == '/' || abs[watched_len] == '\0') &&
	       !is_volatile(abs);
}

/* Resolves and says whether the result is below the watched directory. */
static int watched_path(int dirfd, const char *path, char *abs)
{
	return resolve(dirfd, path, abs) == 0 && is_watched(abs);
}

/* ---- descriptors ------------------------------------------------------------ */

static int fd_tracked(int fd)
{
	return fd >= 0 && fd < SHIM_FDS &&
	       (__atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE) ||
	        (fd_flags[fd] & FD_DIR));
}

static void fd_forget(int fd)
{
	if (fd < 0 || fd >= SHIM_FDS)
		return;
	__atomic_store_n(&fd_file[fd], 0, __ATOMIC_RELEASE);
	fd_flags[fd] = 0;
	fd_err[fd] = 0;
	fd_seen[fd] = 0;
	free(fd_path[fd]);
	fd_path[fd] = NULL;
}

static void fd_copy(int from, int to)
{
	if (to < 0 || to >= SHIM_FDS || to == from)
		return;
	fd_forget(to);
	if (from < 0 || from >= SHIM_FDS)
		return;
	fd_flags[to] = fd_flags[from];
	fd_gen[to] = fd_gen[from];
	fd_seen[to] = fd_seen[from];
	fd_path[to] = fd_path[from] ? strdup(fd_path[from]) : NULL;
	__atomic_store_n(&fd_file[to], fd_file[from], __ATOMIC_RELEASE);
}

/* What the record implies about FILE: set on first sight from the file. */
static void expect_init(int file, const struct stat *stp)
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

/* Starts following FD, opened on ABS (below the watched directory). */
static int fd_track(int fd, const char *abs, int flags)
{
	struct stat st;
	int file;

	if (fd >= SHIM_FDS)
		refuse("%s: descriptor %d is above the %d the shim follows",
		       relative(abs), fd, SHIM_FDS);
	fd_forget(fd);
	/* one fstat, under the cache's lock: the file's kind, its identity,
	 * and the size its first write's pre-image needs (invariant 10 of
	 * faultsim/cache_internal.h) */
	st.st_mode = 0;
	file = RECORD(faultsim_cache_track_stat(cache, fd, abs, &st));
	if (S_ISDIR(st.st_mode)) {
		fd_flags[fd] = FD_DIR;
		fd_path[fd] = strdup(abs);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	if (file < 0) {
		recording_failed(file, "open", abs);
		return file;
	}
	expect_init(file, &st);
	fd_gen[fd] = faultsim_cache_file_gen(cache, file);
	fd_flags[fd] = (uint8_t)(((flags & O_APPEND) ? FD_APPEND : 0) |
	                         ((flags & (O_SYNC | O_DSYNC)) ? FD_SYNC : 0));
	fd_path[fd] = strdup(abs);
	__atomic_store_n(&fd_file[fd], file + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Invariant (9) of faultsim/cache_internal.h: the cache may have given
 * FD's file entry to another file since FD was tracked (the table was full
 * and nothing in the window named it).  Tracks FD's file again then, at
 * the name it has now.  IN_SHIM is set. */
static void fd_revalidate(int fd)
{
	int file = fd_file[fd] - 1;
	char abs[PATH_MAX];

	if (file < 0 || faultsim_cache_file_gen(cache, file) == fd_gen[fd])
		return;
	if (fd_names(fd, abs) < 0) {
		snprintf(abs, sizeof abs, "%s", fd_path[fd]);
	} else {
		free(fd_path[fd]);
		fd_path[fd] = strdup(abs);
	}
	struct stat st;
	st.st_mode = 0;
	file = RECORD(faultsim_cache_track_stat(cache, fd, abs, &st));
	if (!S_ISREG(st.st_mode))
		refuse("%s: cannot track its file again: %s", relative(abs),
		       file < 0 ? strerror(-file) : "not a regular file");
	if (file < 0) {
		recording_failed(file, "write", abs); /* refuses when full */
		refuse("%s: cannot track its file again: %s", relative(abs),
		       strerror(-file));
	}
	expect_init(file, &st);
	fd_gen[fd] = faultsim_cache_file_gen(cache, file);
	__atomic_store_n(&fd_file[fd], file + 1, __ATOMIC_RELEASE);
}

/* FD reached the program without a wrapper seeing it opened (glibc's
 * opendir opens its directory internally; a descriptor received with
 * SCM_RIGHTS; a number an internal open reused): looks up what it names
 * and follows it when that is below the watched directory.  Returns 1
 * when FD is followed now.  IN_SHIM is set. */
static int fd_adopt(int fd)
{
	char abs[PATH_MAX];
	int fl;

	if (fd < 0 || fd >= SHIM_FDS)
		return 0;
	fd_seen[fd] = 1;
	if (fd_names(fd, abs) < 0 || abs[0] != '/' || !is_watched(abs) ||
	    (fl = real_fcntl(fd, F_GETFL)) < 0)
		return 0;
	fd_track(fd, abs, fl);
	fd_seen[fd] = 1; /* fd_track began by forgetting FD */
	if (fd_tracked(fd))
		fd_flags[fd] |= FD_ADOPTED; /* its closer may be unseen too */
	return fd_tracked(fd);
}

/* The fast test of every wrapper on a descriptor: 1 when the call passes
 * straight through (the shim is off, or re-entered, or FD names nothing
 * below the watched directory). */
static int fd_passes(int fd)
{
	if (!active || in_shim || fd < 0 || fd >= SHIM_FDS)
		return 1;
	if (__atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE))
		return 0;
	if (fd_seen[fd] || (fd_flags[fd] & FD_DIR))
		return 1;
	in_shim = 1;
	int followed = fd_adopt(fd);
	in_shim = 0;
	return !followed || !fd_file[fd];
}

/* The file ST describes is about to lose its name (unlink, rename over
 * it): its inode may be reused by a new file, which must not be checked
 * against the old one's expectations. */
static void expect_forget(const struct stat *st)
{
	for (uint32_t i = 0; i < faultsim_cache_nfiles(cache); i++)
		if (ctl->files[i].ino == (uint64_t)st->st_ino &&
		    ctl->files[i].dev == (uint64_t)st->st_dev)
			memset(&ctl->files[i], 0, sizeof(shim_file));
}

/* The same for the file at ABS, if there is one. */
static void expect_forget_path(const char *abs)
{
	struct stat st;

	if (lstat(abs, &st) == 0)
		expect_forget(&st);
}

/* ---- this life's changes (shim.h, the soundness floor) -------------------- */

/* A recorded namespace call is about to change the name ABS (below the
 * watched directory): entered before the real call, so a kill between
 * the two leaves the change explained. */
static void name_touch(const char *abs)
{
	const char *rel = relative(abs);

	if (rel != abs)
		shim_name_enter(ctl, rel, strlen(rel));
	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
}

static shim_seen *seen_of(int file)
{
	const shim_file *f = &ctl->files[file];

	return shim_seen_slot(ctl, shim_seen_key(f->dev, f->ino));
}

/* A recorded open made the file on FD: its slot starts again
 * (shim_seen_created). */
static void seen_created(int fd)
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
static void seen_begin(int file, int fd)
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

static void seen_end(int file)
{
	shim_seen *e = seen_of(file);

	if (!e)
		return;
	shim_seen_stamp(e, shim_now_ns());
	if (__atomic_load_n(&e->inflight, __ATOMIC_ACQUIRE))
		__atomic_sub_fetch(&e->inflight, 1, __ATOMIC_ACQ_REL);
}

/* ---- faults ---------------------------------------------------------------- */

static int inject(faultsim_op op)
{
	int e = faults ? faultsim_faults_check(faults, op) : 0;
	if (e == FAULTSIM_SHORT && op != FAULTSIM_OP_PWRITE)
		e = -EIO;
	return e;
}

static void step(void)
{
	faultsim_faults_step(faults);
}

/* ---- the size and sample a write leaves (bypass detection) ---------------- */

static void expect_begin(int file, int fd, uint64_t new_end, int truncate)
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
static void expect_end(int file, int fd, uint64_t size, const void *buf,
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

/* ---- writes ---------------------------------------------------------------- */

/* One tracked write of BUF: WHENCE SEEK_SET at OFF, SEEK_CUR (write),
 * SEEK_END (O_APPEND).  Returns as write(2). */
static ssize_t tracked_write(int fd, const void *buf, size_t len, int whence,
                             uint64_t off, int durable)
{
	int file, e, rc, err;
	faultsim_ticket t = { 0 };
	ssize_t n;

	in_shim = 1;
	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	e = inject(FAULTSIM_OP_PWRITE);
	if (e == FAULTSIM_SHORT) {
		len = shim_short_len(fd, len);
	} else if (e) {
		in_shim = 0;
		errno = -e;
		return -1;
	}
	if (fd_flags[fd] & FD_APPEND)
		whence = SEEK_END; /* Linux: pwrite on O_APPEND appends too */
	durable |= (fd_flags[fd] & FD_SYNC) != 0;
	rc = RECORD(faultsim_cache_write_begin_at(cache, file, fd, buf, len, whence,
	                                   &off, &t));
	if (rc < 0) {
		recording_failed(rc, "write", fd_path[fd]);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	expect_begin(file, fd, off + len, 0);
	remember_begin(SHIM_OP_WRITE, file, fd_path[fd], NULL, off, len, t.seq);
	n = whence == SEEK_SET ? real_pwrite(fd, buf, len, (off_t)off)
	                       : real_write(fd, buf, len);
	err = errno;
	/* the size the recorder read under its lock, and what this call
	 * added: one fstat a write fewer */
	expect_end(file, fd, n > 0 && off + (uint64_t)n > t.size ?
	           off + (uint64_t)n : t.size, buf, off, n);
	if (durable)
		faultsim_cache_write_end_durable(&t, n < 0 ? -err : n);
	else
		faultsim_cache_write_end(&t, n < 0 ? -err : n);
	if (n > 0)
		__atomic_add_fetch(&ctl->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	remember(SHIM_OP_WRITE, file, fd_path[fd], NULL, off, len,
	         n < 0 ? -err : n, durable);
	in_shim = 0;
	errno = err;
	return n;
}

/* A vector write is recorded and made as one write of its gathered bytes
 * (the same bytes at the same place; POSIX makes writev atomic as one). */
static ssize_t tracked_writev(int fd, const struct iovec *iov, int cnt,
                              int whence, uint64_t off, int durable)
{
	size_t len = 0, at = 0;
	unsigned char *buf;
	ssize_t n;

	if (cnt < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	in_shim = 1;
	/* block-aligned memory for a descriptor opened with O_DIRECT, whose
	 * own segments the kernel checks first (shim_dio_check) */
	int dio = shim_dio_check(fd, iov, cnt);
	if (dio < 0) {
		in_shim = 0;
		errno = -dio;
		return -1;
	}
	if (dio == 0 || posix_memalign((void **)&buf, SHIM_DIO_ALIGN,
	                               len ? len : 1) != 0)
		buf = dio ? NULL : malloc(len ? len : 1);
	in_shim = 0;
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	n = tracked_write(fd, buf, len, whence, off, durable);
	int err = errno;
	free(buf);
	errno = err;
	return n;
}

#define PASS(fd) fd_passes(fd)

/* The workload's protocol descriptor (KEEL_TORTURE_FD), or -1. */
static int proto_fd = -1;

/* A protocol line goes into the ring too (SHIM_OP_PROTOCOL); the
 * newlines between lines written at once are shown as ';'. */
static ssize_t protocol_write(int fd, const void *buf, size_t len)
{
	char text[SHIM_LABEL];
	size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
	ssize_t rc = real_write(fd, buf, len);
	int err = errno;

	memcpy(text, buf, n);
	while (n > 0 && text[n - 1] == '\n')
		n--;
	text[n] = '\0';
	for (char *p = text; (p = strchr(p, '\n'));)
		*p = ';';
	in_shim = 1;
	remember(SHIM_OP_PROTOCOL, -1, text, NULL, 0, len, rc < 0 ? -err : rc,
	         0);
	in_shim = 0;
	errno = err;
	return rc;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	load_write();
	if (PASS(fd)) /* the protocol pipe is never a tracked file */
		return fd == proto_fd && active && !in_shim ?
		       protocol_write(fd, buf, len) : real_write(fd, buf, len);
	site_ra = __builtin_return_address(0);
	ssize_t n = tracked_write(fd, buf, len, SEEK_CUR, 0, 0);
	site_ra = NULL;
	return n;
}

/* glibc exports internal names of some calls beside the public ones
 * (__write, __read, __open, __open64, __close, __dup2, __fcntl): a
 * program or library that calls those must meet the same wrappers, or a
 * close would leave a stale entry and a write would bypass the record.
 * Each is the public wrapper under a second name (the same code, so the
 * caller's address a report names is the caller's). */
ssize_t __write(int fd, const void *buf, size_t len) __attribute__((alias("write"), copy(write)));

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	load_pwrite();
	if (PASS(fd))
		return real_pwrite(fd, buf, len, off);
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	site_ra = __builtin_return_address(0);
	ssize_t n = tracked_write(fd, buf, len, SEEK_SET, (uint64_t)off, 0);
	site_ra = NULL;
	return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int))
			dlsym(RTLD_NEXT, "writev");
	if (PASS(fd))
		return real(fd, iov, cnt);
	return tracked_writev(fd, iov, cnt, SEEK_CUR, 0, 0);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int, off_t))
			dlsym(RTLD_NEXT, "pwritev");
	if (PASS(fd))
		return real(fd, iov, cnt, off);
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	return tracked_writev(fd, iov, cnt, SEEK_SET, (uint64_t)off, 0);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pwritev(fd, iov, cnt, off);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
                 int flags)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t, int);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int, off_t, int))
			dlsym(RTLD_NEXT, "pwritev2");
	if (PASS(fd))
		return real(fd, iov, cnt, off, flags);
	int durable = (flags & (RWF_DSYNC | RWF_SYNC)) != 0;
	if (flags & RWF_APPEND)
		return tracked_writev(fd, iov, cnt, SEEK_END, 0, durable);
	if (off == -1)
		return tracked_writev(fd, iov, cnt, SEEK_CUR, 0, durable);
	return tracked_writev(fd, iov, cnt, SEEK_SET, (uint64_t)off, durable);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off,
                    int flags)
{
	return pwritev2(fd, iov, cnt, off, flags);
}

/* ---- size changes ------------------------------------------------------------ */

static int tracked_truncate(int fd, uint64_t len)
{
	int file, rc;
	faultsim_ticket t = { 0 };

	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	if ((rc = inject(FAULTSIM_OP_FTRUNCATE)) != 0)
		return rc;
	rc = RECORD(faultsim_cache_truncate_begin(cache, file, fd, len, &t));
	if (rc < 0) {
		recording_failed(rc, "ftruncate", fd_path[fd]);
		return rc;
	}
	expect_begin(file, fd, len, 1);
	remember_begin(SHIM_OP_TRUNCATE, file, fd_path[fd], NULL, len, 0, t.seq);
	rc = real_ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
	expect_end(file, fd, UINT64_MAX, NULL, 0, 0);
	faultsim_cache_change_end(&t, rc);
	remember(SHIM_OP_TRUNCATE, file, fd_path[fd], NULL, len, 0, rc, 0);
	return rc;
}

int ftruncate(int fd, off_t len)
{
	load_ftruncate();
	if (PASS(fd))
		return real_ftruncate(fd, len);
	if (len < 0) {
		errno = EINVAL;
		return -1;
	}
	in_shim = 1;
	int rc = tracked_truncate(fd, (uint64_t)len);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int ftruncate64(int fd, off_t len)
{
	return ftruncate(fd, len);
}

int truncate(const char *path, off_t len)
{
	static int (*real)(const char *, off_t);
	char abs[PATH_MAX];
	int fd, rc;

	if (!real)
		real = (int (*)(const char *, off_t))dlsym(RTLD_NEXT, "truncate");
	if (!active || in_shim || !watched_path(AT_FDCWD, path, abs))
		return real(path, len);
	fd = open(abs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = ftruncate(fd, len);
	int err = errno;
	close(fd);
	errno = err;
	return rc;
}

int truncate64(const char *path, off_t len)
{
	return truncate(path, len);
}

/* Zeroing modes are recorded as a write of zeros over the range. */
static int tracked_zero(int fd, int mode, uint64_t off, uint64_t len)
{
	int file = fd_file[fd] - 1, rc;
	faultsim_ticket t = { 0 };
	struct stat st;
	unsigned char *zeros;

	if (fstat(fd, &st) != 0)
		return -errno;
	if ((mode & FALLOC_FL_KEEP_SIZE) && off + len > (uint64_t)st.st_size)
		len = off < (uint64_t)st.st_size ? (uint64_t)st.st_size - off : 0;
	if (len > ZERO_MAX)
		refuse("fallocate(%#x) of %llu bytes on %s: the shim records "
		       "a zeroed range as a write of zeros, at most %u bytes",
		       (unsigned)mode, (unsigned long long)len,
		       relative(fd_path[fd]), ZERO_MAX);
	zeros = calloc(1, len ? len : 1);
	if (!zeros)
		return -ENOMEM;
	rc = RECORD(faultsim_cache_write_begin(cache, file, fd, zeros, len, off, &t));
	if (rc < 0) {
		recording_failed(rc, "fallocate", fd_path[fd]);
		free(zeros);
		return rc;
	}
	expect_begin(file, fd, off + len, 0);
	remember_begin(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off, len,
	               t.seq);
	rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
	expect_end(file, fd, UINT64_MAX, len ? zeros : NULL, off,
	           rc == 0 ? (ssize_t)len : 0);
	faultsim_cache_write_end(&t, rc == 0 ? (ssize_t)len : rc);
	free(zeros);
	return rc;
}

static int tracked_allocate(int fd, int mode, uint64_t off, uint64_t len,
                            int posix)
{
	int file, rc;
	faultsim_ticket t = { 0 };

	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	if ((rc = inject(FAULTSIM_OP_FALLOCATE)) != 0)
		return rc;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
	             FALLOC_FL_ZERO_RANGE))
		refuse("fallocate(%#x) on %s: collapsing or inserting ranges "
		       "is not modelled", (unsigned)mode, relative(fd_path[fd]));
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		rc = tracked_zero(fd, mode, off, len);
	} else if (mode & FALLOC_FL_KEEP_SIZE) {
		/* blocks only: nothing a reader or a crash can tell apart;
		 * the file system may stamp its mtime all the same */
		seen_begin(file, fd);
		rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0 ? 0
		                                                        : -errno;
		seen_end(file);
	} else {
		rc = RECORD(faultsim_cache_extend_begin(cache, file, fd, off, len, &t));
		if (rc < 0) {
			recording_failed(rc, "fallocate", fd_path[fd]);
			return rc;
		}
		expect_begin(file, fd, off + len, 0);
		remember_begin(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off,
		               len, t.seq);
		if (posix)
			rc = -real_posix_fallocate(fd, (off_t)off, (off_t)len);
		else
			rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0
			             ? 0 : -errno;
		expect_end(file, fd, UINT64_MAX, NULL, 0, 0);
		faultsim_cache_change_end(&t, rc);
	}
	remember(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off, len, rc, 0);
	return rc;
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	load_fallocate();
	if (PASS(fd))
		return real_fallocate(fd, mode, off, len);
	if (off < 0 || len <= 0) {
		errno = EINVAL;
		return -1;
	}
	in_shim = 1;
	int rc = tracked_allocate(fd, mode, (uint64_t)off, (uint64_t)len, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
	return fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len)
{
	load_posix_fallocate();
	if (PASS(fd))
		return real_posix_fallocate(fd, off, len);
	if (off < 0 || len <= 0)
		return EINVAL;
	in_shim = 1;
	int rc = tracked_allocate(fd, 0, (uint64_t)off, (uint64_t)len, 1);
	in_shim = 0;
	return -rc;
}

int posix_fallocate64(int fd, off_t off, off_t len)
{
	return posix_fallocate(fd, off, len);
}

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
	faultsim_cache_sync_end(cache, file, mark, rc, profile);
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
static int sync_everything(int rc, int said)
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

/* ---- opens ------------------------------------------------------------------ */

static int shim_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	char abs[PATH_MAX];
	faultsim_ticket t = { 0 };
	struct stat st;
	int fd, rc, err, writable, exists;

	load_openat();
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real_openat(dirfd, path, flags, mode);
	in_shim = 1;
	writable = (flags & O_ACCMODE) != O_RDONLY;
	if ((flags & O_TMPFILE) == O_TMPFILE)
		refuse("open(%s, O_TMPFILE): unnamed files are not modelled",
		       relative(abs));
	/* without O_CREAT an open that succeeds found the file: only a
	 * create needs to know beforehand */
	exists = !(flags & O_CREAT) || lstat(abs, &st) == 0;
	if (writable || (flags & O_CREAT)) {
		step();
		if ((rc = inject(FAULTSIM_OP_OPEN)) != 0) {
			in_shim = 0;
			errno = -rc;
			return -1;
		}
	}
	if ((flags & O_CREAT) && !exists &&
	    (rc = RECORD(faultsim_cache_create_begin(cache, abs, &t))) < 0) {
		recording_failed(rc, "open", abs);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	/* O_TRUNC is made a recorded ftruncate below, so its bytes can come
	 * back at a crash */
	/* the cache reads pre-images through the descriptor: a write-only
	 * open is made read-write (falling back when reading is not allowed,
	 * which the first overwrite then reports) */
	fd = -1;
	if ((flags & O_CREAT) && !exists) {
		name_touch(abs);
		remember_begin(SHIM_OP_CREATE, -1, abs, NULL, 0, 0, t.seq);
	}
	if ((flags & O_ACCMODE) == O_WRONLY)
		fd = real_openat(dirfd, path, ((exists ? flags & ~O_TRUNC : flags) &
		                               ~O_ACCMODE) | O_RDWR, mode);
	if (fd < 0)
		fd = real_openat(dirfd, path, exists ? flags & ~O_TRUNC : flags,
		                 mode);
	err = errno;
	faultsim_cache_namespace_end(&t, fd < 0 ? -err : 0);
	if (open_slot && (fd < 0 || fd >= SHIM_FDS))
		remember(SHIM_OP_CREATE, -1, abs, NULL, 0, 0, -err, 0);
	if (fd < 0) {
		in_shim = 0;
		errno = err;
		return -1;
	}
	if ((flags & O_CREAT) && !exists)
		seen_created(fd);
	fd_track(fd, abs, flags);
	if ((fd_file[fd] && (writable || (flags & O_CREAT))) || open_slot)
		remember(exists ? SHIM_OP_OPEN : SHIM_OP_CREATE, fd_file[fd] - 1,
		         abs, NULL, 0, 0, fd, 0);
	if (exists && (flags & O_TRUNC) && writable && !fd_file[fd] &&
	    real_ftruncate(fd, 0) != 0) {
		err = errno;
		real_close(fd);
		in_shim = 0;
		errno = err;
		return -1;
	}
	if (exists && (flags & O_TRUNC) && writable && fd_file[fd] &&
	    (rc = tracked_truncate(fd, 0)) < 0) {
		real_close(fd);
		fd_forget(fd);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	in_shim = 0;
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(AT_FDCWD, path, flags, mode));
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(AT_FDCWD, path, flags, mode));
}

int __open(const char *path, int flags, ...) __attribute__((alias("open"), copy(open)));
int __open64(const char *path, int flags, ...) __attribute__((alias("open64"), copy(open64)));

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(dirfd, path, flags, mode));
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(dirfd, path, flags, mode));
}

/* glibc's _FORTIFY_SOURCE entry points */
int __open_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags, 0);
}

int __open64_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags, 0);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags, 0);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags, 0);
}

int creat(const char *path, mode_t mode)
{
	return shim_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode)
{
	return creat(path, mode);
}

/* The program is closing FD (before the real call). */
static void fd_closing(int fd)
{
	if (active && !in_shim && fd >= 0 && fd < SHIM_FDS &&
	    (fd_file[fd] || fd_flags[fd])) {
		if (in_vfork_child())
			return;
		in_shim = 1;
		fd_forget(fd);
		in_shim = 0;
	} else if (fd >= 0 && fd < SHIM_FDS) {
		fd_seen[fd] = 0;
	}
}

/* The same for FIRST..LAST (those the shim can follow). */
static void fd_closing_range(unsigned long first, unsigned long last)
{
	for (unsigned long fd = first; fd <= last && fd < SHIM_FDS; fd++)
		fd_closing((int)fd);
}

int close(int fd)
{
	load_close();
	fd_closing(fd);
	return real_close(fd);
}

int __close(int fd) __attribute__((alias("close"), copy(close)));

/* glibc closes these descriptors inside, where no close wrapper sees */
int closedir(DIR *d)
{
	static int (*real)(DIR *);
	if (!real)
		real = (int (*)(DIR *))dlsym(RTLD_NEXT, "closedir");
	/* glibc answers closedir(NULL) with EINVAL; dirfd(NULL) would crash.
	 * The barrier keeps the test: <dirent.h> declares D nonnull, and the
	 * compiler would drop it */
	DIR *p = d;
	__asm__("" : "+r"(p));
	if (p != NULL)
		fd_closing(dirfd(p));
	return real(d);
}

/* glibc's daemon() puts /dev/null on 0, 1 and 2 with dup2s of its own,
 * where no wrapper sees (in the process it returns in: the caller's
 * grandchild).  What the table says of the three is stale after it; a
 * daemon writing to its standard output would otherwise have its writes
 * to /dev/null taken for the file that was there. */
int daemon(int nochdir, int noclose)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "daemon");
	int rc = real(nochdir, noclose);
	if (rc == 0 && !noclose) /* on -1 the descriptors are untouched */
		fd_closing_range(0, 2);
	return rc;
}

int close_range(unsigned first, unsigned last, int flags)
{
	static int (*real)(unsigned, unsigned, int);
	if (!real)
		real = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT,
		                                               "close_range");
	/* forgotten first, as close does: one left open by a failed call
	 * is looked up again at its next write or sync (fd_adopt) */
	if (!(flags & ~(CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)) &&
	    !(flags & CLOSE_RANGE_CLOEXEC)) /* unknown flags: EINVAL */
		fd_closing_range(first, last);
	return real(first, last, flags);
}

void closefrom(int lowfd)
{
	static void (*real)(int);
	if (!real)
		real = (void (*)(int))dlsym(RTLD_NEXT, "closefrom");
	fd_closing_range(lowfd < 0 ? 0 : (unsigned long)lowfd, SHIM_FDS - 1);
	real(lowfd);
}

int dup(int fd)
{
	load_dup();
	int n = real_dup(fd);
	if (n >= 0 && n < SHIM_FDS && !fd_tracked(fd))
		fd_seen[n] = 0;
	if (active && !in_shim && n >= 0 && fd_tracked(fd) &&
	    !in_vfork_child()) {
		if (n >= SHIM_FDS)
			refuse("dup of %s gave descriptor %d, above the %d the "
			       "shim follows", relative(fd_path[fd]), n, SHIM_FDS);
		in_shim = 1;
		fd_copy(fd, n);
		in_shim = 0;
	}
	return n;
}

static int after_dup2(int fd, int n)
{
	if (!active || in_shim || n < 0 || n == fd || in_vfork_child())
		return n;
	in_shim = 1;
	if (fd_tracked(fd) && n >= SHIM_FDS)
		refuse("dup2 of %s to descriptor %d, above the %d the shim "
		       "follows", relative(fd_path[fd]), n, SHIM_FDS);
	fd_copy(fd, n);
	/* a number a followed file was put on is most often a stream's
	 * (0, 1, 2), which glibc closes or replaces inside (fclose,
	 * freopen, daemon): its syncs look again at what it names */
	if (n < SHIM_FDS && fd_tracked(n))
		fd_flags[n] |= FD_ADOPTED;
	in_shim = 0;
	return n;
}

int dup2(int fd, int to)
{
	load_dup2();
	return after_dup2(fd, real_dup2(fd, to));
}

int __dup2(int fd, int to) __attribute__((alias("dup2"), copy(dup2)));

int dup3(int fd, int to, int flags)
{
	load_dup3();
	return after_dup2(fd, real_dup3(fd, to, flags));
}

static int shim_fcntl(int fd, int cmd, void *arg)
{
	load_fcntl();
	if (!active || in_shim || !fd_tracked(fd))
		return real_fcntl(fd, cmd, arg);
	int n = real_fcntl(fd, cmd, arg);
	if (n < 0)
		return n;
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !in_vfork_child()) {
		if (n >= SHIM_FDS)
			refuse("fcntl(F_DUPFD) of %s gave descriptor %d, above "
			       "the %d the shim follows", relative(fd_path[fd]),
			       n, SHIM_FDS);
		in_shim = 1;
		fd_copy(fd, n);
		in_shim = 0;
	} else if (cmd == F_SETFL) {
		/* the flags belong to the open file description: every
		 * descriptor on it sees the change */
		fd_flags[fd] = (uint8_t)((fd_flags[fd] & ~FD_APPEND) |
		                         (((long)arg & O_APPEND) ? FD_APPEND : 0));
	}
	return n;
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int __fcntl(int fd, int cmd, ...) __attribute__((alias("fcntl"), copy(fcntl)));

/* ---- descriptors passed over sockets -------------------------------------- */

/* SCM_RIGHTS: a descriptor another process opened arrives without any open
 * here; each one below the watched directory is followed from now on. */
static void adopt_received(const struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c;
	     c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *p = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, p + i * sizeof fd, sizeof fd);
			if (fd < 0)
				continue;
			if (fd >= SHIM_FDS) {
				char abs[PATH_MAX];
				if (fd_names(fd, abs) == 0 && is_watched(abs))
					refuse("%s received as descriptor %d, "
					       "above the %d the shim follows",
					       relative(abs), fd, SHIM_FDS);
				continue;
			}
			fd_forget(fd);
			fd_adopt(fd);
		}
	}
}

ssize_t recvmsg(int sock, struct msghdr *msg, int flags)
{
	static ssize_t (*real)(int, struct msghdr *, int);
	if (!real)
		real = (ssize_t(*)(int, struct msghdr *, int))
			dlsym(RTLD_NEXT, "recvmsg");
	ssize_t n = real(sock, msg, flags);
	if (n >= 0 && active && !in_shim && msg && msg->msg_controllen) {
		int err = errno;
		in_shim = 1;
		adopt_received(msg);
		in_shim = 0;
		errno = err;
	}
	return n;
}


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
static void map_seal(int file)
{
	faultsim_ticket t = { 0 };

	if (file < 0 || file >= FAULTSIM_MAX_FILES ||
	    !__atomic_load_n(&map_dirty[file], __ATOMIC_ACQUIRE))
		return;
	faultsim_cache_map_lock(cache, &t);
	map_seal_locked(&t, file);
	faultsim_cache_map_unlock(&t);
}

static void map_seal_all(void)
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
	faultsim_cache_sync_end(cache, file, mark, rc, profile);
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

/* ---- raw system calls, exec ---------------------------------------------------- */

#ifdef SYS_dup2
#define IS_SYS_DUP2(nr) ((nr) == SYS_dup2)
#else
#define IS_SYS_DUP2(nr) 0 /* arm64 has only dup3 */
#endif

long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	load_syscall();
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (active && nr == SYS_io_uring_setup)
		refuse("io_uring_setup: I/O through io_uring is not seen by "
		       "the shim");
	/* a descriptor closed through syscall() is forgotten as close()
	 * forgets it: a sync through a number that came back names what it
	 * names now (sync_followed looks again only at adopted ones); the
	 * kernel takes descriptors and flags as unsigned int */
	if (nr == SYS_close)
		fd_closing((int)(unsigned)a[0]);
	else if ((nr == SYS_dup3 || IS_SYS_DUP2(nr)) &&
	         (unsigned)a[0] != (unsigned)a[1])
		fd_closing((int)(unsigned)a[1]); /* the number it lands on */
	else if (nr == SYS_close_range &&
	         !((unsigned)a[2] & ~(unsigned)CLOSE_RANGE_UNSHARE))
		fd_closing_range((unsigned)a[0], (unsigned)a[1]);
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* 1 when PATH is an ELF executable without an interpreter: static. */
static int is_static_elf(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = real_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof eh, 0) != sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		real_close(fd);
		return 0;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof ph,
		          (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    sizeof ph)
			break;
		if (ph.p_type == PT_INTERP)
			found = 1;
	}
	real_close(fd);
	return !found;
}

static int env_has(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return 1;
	return 0;
}

void shim_exec_check(const char *path, char *const envp[])
{
	if (!active || in_shim)
		return;
	map_seal_all(); /* the mappings go with the process image */
	in_shim = 1;
	if (is_static_elf(path))
		refuse("exec %s: a statically linked program cannot load the "
		       "shim", path);
	if (!env_has(envp, "LD_PRELOAD") || !env_has(envp, "KEEL_SHIM_DIR"))
		refuse("exec %s with LD_PRELOAD or KEEL_SHIM_DIR removed from "
		       "its environment: its writes would not be seen", path);
	in_shim = 0;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
	load_execve();
	shim_exec_check(path, envp);
	char *const *env = active ? role_envp(envp) : envp;
	int rc = real_execve(path, argv, env);
	int err = errno;
	if (env != envp)
		free((void *)env); /* the exec failed */
	errno = err;
	return rc;
}

/* ---- namespace ------------------------------------------------------------- */

static int shim_rename(int odir, const char *from, int ndir, const char *to,
                       unsigned flags)
{
	char afrom[PATH_MAX], ato[PATH_MAX];
	faultsim_ticket t = { 0 };
	int wf, wt, rc;

	load_renameat2();
	if (!active || in_shim)
		return real_renameat2(odir, from, ndir, to, flags);
	faultsim_cache_names_changed(cache); /* before: resolve's memo */
	wf = watched_path(odir, from, afrom);
	wt = watched_path(ndir, to, ato);
	if (!wf && !wt)
		return real_renameat2(odir, from, ndir, to, flags);
	in_shim = 1;
	if (wf != wt)
		refuse("rename %s -> %s crosses the watched directory's edge",
		       wf ? relative(afrom) : from, wt ? relative(ato) : to);
	if (flags & RENAME_EXCHANGE)
		refuse("renameat2(RENAME_EXCHANGE) %s, %s is not modelled",
		       relative(afrom), relative(ato));
	struct stat st;
	if (lstat(afrom, &st) == 0 && S_ISDIR(st.st_mode))
		refuse("rename of directory %s is not modelled",
		       relative(afrom));
	step();
	name_touch(afrom);
	name_touch(ato);
	expect_forget_path(ato);
	if ((rc = inject(FAULTSIM_OP_RENAME)) == 0 &&
	    (rc = RECORD(faultsim_cache_rename_begin(cache, afrom, ato, &t))) < 0)
		recording_failed(rc, "rename", afrom);
	if (rc == 0) {
		remember_begin(SHIM_OP_RENAME, -1, afrom, ato, 0, 0, t.seq);
		rc = real_renameat2(odir, from, ndir, to, flags) == 0 ? 0 : -errno;
		faultsim_cache_namespace_end(&t, rc);
	}
	remember(SHIM_OP_RENAME, -1, afrom, ato, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int rename(const char *from, const char *to)
{
	WITH_SITE(int, shim_rename(AT_FDCWD, from, AT_FDCWD, to, 0));
}

int renameat(int odir, const char *from, int ndir, const char *to)
{
	WITH_SITE(int, shim_rename(odir, from, ndir, to, 0));
}

int renameat2(int odir, const char *from, int ndir, const char *to,
              unsigned flags)
{
	WITH_SITE(int, shim_rename(odir, from, ndir, to, flags));
}

static int shim_unlink(int dirfd, const char *path, int flags)
{
	char abs[PATH_MAX];
	faultsim_ticket t = { 0 };
	struct stat st;
	int rc;

	load_unlinkat();
	if (!active || in_shim)
		return real_unlinkat(dirfd, path, flags);
	if (!watched_path(dirfd, path, abs)) {
		faultsim_cache_names_changed(cache); /* resolve's memo */
		return real_unlinkat(dirfd, path, flags);
	}
	in_shim = 1;
	/* only a directory or a link can be a part of a directory's path:
	 * removing anything else leaves resolve's memo true */
	int seen = !(flags & AT_REMOVEDIR) && lstat(abs, &st) == 0;
	if (!seen || !S_ISREG(st.st_mode))
		faultsim_cache_names_changed(cache);
	name_touch(abs);
	if ((flags & AT_REMOVEDIR) || (seen && S_ISDIR(st.st_mode))) {
		rc = real_unlinkat(dirfd, path, flags) == 0 ? 0 : -errno;
		remember(SHIM_OP_RMDIR, -1, abs, NULL, 0, 0, rc, 0);
	} else {
		step();
		if (seen)
			expect_forget(&st); /* what lstat found above */
		if ((rc = inject(FAULTSIM_OP_UNLINK)) == 0 &&
		    (rc = RECORD(seen ? faultsim_cache_unlink_begin_ino(cache,
		                     abs, (uint64_t)st.st_ino, &t)
		                      : faultsim_cache_unlink_begin(cache, abs,
		                                                    &t))) < 0)
			recording_failed(rc, "unlink", abs);
		if (rc == 0) {
			remember_begin(SHIM_OP_UNLINK, -1, abs, NULL, 0, 0, t.seq);
			rc = real_unlinkat(dirfd, path, flags) == 0 ? 0 : -errno;
			faultsim_cache_namespace_end(&t, rc);
		}
		remember(SHIM_OP_UNLINK, -1, abs, NULL, 0, 0, rc, 0);
	}
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int unlink(const char *path)
{
	WITH_SITE(int, shim_unlink(AT_FDCWD, path, 0));
}

int unlinkat(int dirfd, const char *path, int flags)
{
	WITH_SITE(int, shim_unlink(dirfd, path, flags));
}

int rmdir(const char *path)
{
	return shim_unlink(AT_FDCWD, path, AT_REMOVEDIR);
}

/* glibc's remove() calls its own unlink and rmdir, which no wrapper sees:
 * it is made here as glibc makes it (unlink; a directory: rmdir), through
 * the wrappers, so that a program that deletes with remove() is modelled
 * like one that calls unlink. */
static int shim_remove(const char *path)
{
	if (shim_unlink(AT_FDCWD, path, 0) == 0)
		return 0;
	if (errno != EISDIR)
		return -1;
	return shim_unlink(AT_FDCWD, path, AT_REMOVEDIR);
}

int remove(const char *path)
{
	WITH_SITE(int, shim_remove(path));
}

/* A new name for an existing file: recorded as a create of the new name,
 * which a crash removes unless its directory was synced. */
static int shim_link(int odir, const char *from, int ndir, const char *to,
                     int flags)
{
	char ato[PATH_MAX];
	faultsim_ticket t = { 0 };
	int rc;

	load_linkat();
	if (!active || in_shim || !watched_path(ndir, to, ato))
		return real_linkat(odir, from, ndir, to, flags);
	in_shim = 1;
	step();
	name_touch(ato);
	if ((rc = RECORD(faultsim_cache_create_begin(cache, ato, &t))) < 0)
		recording_failed(rc, "link", ato);
	if (rc == 0) {
		rc = real_linkat(odir, from, ndir, to, flags) == 0 ? 0 : -errno;
		faultsim_cache_namespace_end(&t, rc);
	}
	remember(SHIM_OP_LINK, -1, ato, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int link(const char *from, const char *to)
{
	WITH_SITE(int, shim_link(AT_FDCWD, from, AT_FDCWD, to, 0));
}

int linkat(int odir, const char *from, int ndir, const char *to, int flags)
{
	WITH_SITE(int, shim_link(odir, from, ndir, to, flags));
}

static int shim_mkdir(int dirfd, const char *path, mode_t mode)
{
	char abs[PATH_MAX];

	load_mkdirat();
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real_mkdirat(dirfd, path, mode);
	in_shim = 1;
	name_touch(abs);
	int rc = real_mkdirat(dirfd, path, mode) == 0 ? 0 : -errno;
	remember(SHIM_OP_MKDIR, -1, abs, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int mkdir(const char *path, mode_t mode)
{
	return shim_mkdir(AT_FDCWD, path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	return shim_mkdir(dirfd, path, mode);
}

/* A symbolic link below the directory: passed through and listed, as a
 * directory is (a crash never undoes it); its name is entered first. */
static int shim_symlink(const char *target, int dirfd, const char *path)
{
	static int (*real)(const char *, int, const char *);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(const char *, int, const char *))dlsym(RTLD_NEXT,
		                                                      "symlinkat");
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real(target, dirfd, path);
	in_shim = 1;
	name_touch(abs);
	int rc = real(target, dirfd, path) == 0 ? 0 : -errno;
	remember(SHIM_OP_SYMLINK, -1, abs, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int symlink(const char *target, const char *path)
{
	return shim_symlink(target, AT_FDCWD, path);
}

int symlinkat(const char *target, int dirfd, const char *path)
{
	return shim_symlink(target, dirfd, path);
}

/* Times set on a file below the directory (touch, tar, rsync): a change
 * of its mtime that no write explains, entered as one when it returned
 * (at the later of now and the time set). */
static void times_set(int fd, const char *abs)
{
	struct stat st;

	if ((fd >= 0 ? fstat(fd, &st) : lstat(abs, &st)) != 0 ||
	    !S_ISREG(st.st_mode))
		return;
	shim_seen *e = shim_seen_slot(ctl, shim_seen_key((uint64_t)st.st_dev,
	                                                 (uint64_t)st.st_ino));
	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
	if (!e)
		return;
	uint64_t ns = shim_now_ns();
	shim_seen_stamp(e, shim_mtime_ns(&st) > ns ? shim_mtime_ns(&st) : ns);
	/* a time set before the life's first recorded change: the start
	 * cannot be compared with the harness's note any more */
	uint64_t zero = 0;
	__atomic_compare_exchange_n(&e->first_mtime, &zero, UINT64_MAX, 0,
	                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	remember(SHIM_OP_TIMES, -1, abs, NULL, 0, 0, 0, 0);
}

int utimensat(int dirfd, const char *path, const struct timespec t[2],
              int flags)
{
	static int (*real)(int, const char *, const struct timespec *, int);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(int, const char *, const struct timespec *,
		                int))dlsym(RTLD_NEXT, "utimensat");
	/* the kernel takes a NULL path (DIRFD itself) though glibc's
	 * declaration says nonnull: the barrier keeps the test */
	const char *p = path;
	__asm__("" : "+r"(p));
	if (!active || in_shim || !p || !watched_path(dirfd, path, abs))
		return real(dirfd, path, t, flags);
	int rc = real(dirfd, path, t, flags);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(-1, abs);
	in_shim = 0;
	errno = err;
	return rc;
}

int futimens(int fd, const struct timespec t[2])
{
	static int (*real)(int, const struct timespec *);

	if (!real)
		real = (int (*)(int, const struct timespec *))dlsym(RTLD_NEXT,
		                                                    "futimens");
	if (PASS(fd))
		return real(fd, t);
	int rc = real(fd, t);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(fd, fd_path[fd]);
	in_shim = 0;
	errno = err;
	return rc;
}

int utimes(const char *path, const struct timeval tv[2])
{
	static int (*real)(const char *, const struct timeval *);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(const char *, const struct timeval *))dlsym(
		        RTLD_NEXT, "utimes");
	if (!active || in_shim || !watched_path(AT_FDCWD, path, abs))
		return real(path, tv);
	int rc = real(path, tv);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(-1, abs);
	in_shim = 0;
	errno = err;
	return rc;
}

/* ---- stdio on tracked files -------------------------------------------------- */

/*
 * glibc's stdio writes through its internal write, not the exported one, so
 * a stream on a tracked file is made a fopencookie stream whose write goes
 * through the wrappers above.  fileno() on it answers the descriptor.
 */
typedef struct cookie {
	int fd;
	int acc; /* O_RDONLY, O_WRONLY or O_RDWR: what its mode allows */
	FILE *stream;
	struct cookie *next;
} cookie;

static cookie *cookies;
static pthread_mutex_t cookies_lock = PTHREAD_MUTEX_INITIALIZER;

static ssize_t ck_read(void *c, char *buf, size_t n)
{
	return read(((cookie *)c)->fd, buf, n);
}

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(((cookie *)c)->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int ck_seek(void *c, off64_t *off, int whence)
{
	off_t r = lseek(((cookie *)c)->fd, (off_t)*off, whence);
	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int ck_close(void *c)
{
	cookie *k = c, **p;
	int rc = close(k->fd);

	pthread_mutex_lock(&cookies_lock);
	for (p = &cookies; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	pthread_mutex_unlock(&cookies_lock);
	free(k);
	return rc;
}

/* The cookie of STREAM when the shim made it, else NULL. */
static cookie *cookie_of(FILE *stream)
{
	cookie *k = NULL;

	pthread_mutex_lock(&cookies_lock);
	for (cookie *c = cookies; c && !k; c = c->next)
		if (c->stream == stream)
			k = c;
	pthread_mutex_unlock(&cookies_lock);
	return k;
}

static int mode_flags(const char *mode);

static FILE *cookie_stream(int fd, const char *mode)
{
	cookie_io_functions_t io = { ck_read, ck_write, ck_seek, ck_close };
	cookie *k = calloc(1, sizeof *k);

	if (!k)
		return NULL;
	int flags = mode_flags(mode);

	k->fd = fd;
	k->acc = flags < 0 ? O_RDWR : flags & O_ACCMODE;
	k->stream = fopencookie(k, mode, io);
	if (!k->stream) {
		free(k);
		return NULL;
	}
	pthread_mutex_lock(&cookies_lock);
	k->next = cookies;
	cookies = k;
	pthread_mutex_unlock(&cookies_lock);
	return k->stream;
}

static int mode_flags(const char *mode)
{
	int f = 0;
	switch (mode[0]) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -1;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++) {
		if (*m == '+')
			f = (f & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'x')
			f |= O_EXCL;
		else if (*m == 'e')
			f |= O_CLOEXEC;
	}
	return f;
}

static FILE *shim_fopen(const char *path, const char *mode, const char *name)
{
	FILE *(*real)(const char *, const char *) =
		(FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, name);
	char abs[PATH_MAX];
	int flags = mode ? mode_flags(mode) : -1, fd;
	FILE *f;

	if (!active || in_shim || flags < 0 ||
	    (flags & O_ACCMODE) == O_RDONLY || !watched_path(AT_FDCWD, path, abs))
		return real(path, mode);
	fd = shim_openat(AT_FDCWD, path, flags, 0666);
	if (fd < 0)
		return NULL;
	f = cookie_stream(fd, mode);
	if (!f) {
		close(fd);
		errno = ENOMEM;
	}
	return f;
}

FILE *fopen(const char *path, const char *mode)
{
	return shim_fopen(path, mode, "fopen");
}

FILE *fopen64(const char *path, const char *mode)
{
	return shim_fopen(path, mode, "fopen64");
}

/* freopen of a stream the shim made (fopen or fdopen of a followed file
 * for writing): glibc's own freopen cannot reopen a fopencookie stream (it
 * crashes inside, as it does without the shim), so the same FILE gets the
 * new descriptor here, opened through the wrappers.  As freopen: the old
 * descriptor is closed whether or not the open succeeds; a failure leaves
 * the stream closed (NULL; its cookie answers EBADF until fclose).  A mode
 * that reads where the first one only wrote, or the other way round, is
 * refused (EINVAL, the stream left as it was): fopencookie fixed what the
 * stream may do. */
static FILE *cookie_reopen(cookie *k, const char *path, const char *mode)
{
	char self[64];
	int flags = mode ? mode_flags(mode) : -1, fd, err;

	if (flags < 0 || ((flags & O_ACCMODE) != k->acc && k->acc != O_RDWR)) {
		errno = EINVAL;
		return NULL;
	}
	fflush(k->stream);
	if (!path) { /* the same file again, as glibc does */
		snprintf(self, sizeof self, "/proc/self/fd/%d", k->fd);
		path = self;
	}
	fd = open(path, flags, 0666);
	err = errno;
	close(k->fd);
	k->fd = fd;
	if (fd < 0) {
		errno = err;
		return NULL;
	}
	clearerr(k->stream);
	/* glibc's idea of the position: the new file's (a pipe has none) */
	fseeko(k->stream, 0, (flags & O_APPEND) ? SEEK_END : SEEK_SET);
	clearerr(k->stream);
	return k->stream;
}

/* freopen opens its file inside glibc, where no wrapper sees it: the new
 * descriptor is looked up and followed, so that the check of what the
 * shim saw covers the file (stdio writes through glibc's internal write:
 * without --syscall-backstop they are a bypass, refused, never a verdict). */
/* glibc's freopen opens through its own open, which no wrapper sees: a
 * create or a truncate it would make is made here first, through the
 * wrappers, so that it is recorded.  Returns the mode to hand glibc: "w"
 * becomes "r+" (the file is empty already, and a second truncate would
 * stamp it again where no one sees).  An exclusive create ("x") is left
 * to glibc, and the check after the life refuses what it made. */
static const char *freopen_prepare(const char *path, const char *mode,
                                   char *buf, size_t cap)
{
	char abs[PATH_MAX];
	int fl, fd;

	if (!path || !mode || !active || in_shim || strchr(mode, 'x'))
		return mode;
	fl = mode_flags(mode);
	if (!(fl & (O_CREAT | O_TRUNC)) || !watched_path(AT_FDCWD, path, abs))
		return mode;
	fd = shim_openat(AT_FDCWD, path,
	                 O_WRONLY | O_CLOEXEC | (fl & (O_CREAT | O_TRUNC)), 0666);
	if (fd < 0)
		return mode; /* glibc's open fails the same way */
	close(fd);
	/* only where "r+" can open it as "w" would: a regular file the
	 * program may read (else glibc's own truncate of the empty file is
	 * left to the check after the life) */
	struct stat st;
	if (!(fl & O_TRUNC) || mode[0] != 'w' || lstat(abs, &st) != 0 ||
	    !S_ISREG(st.st_mode) || access(abs, R_OK) != 0)
		return mode;
	snprintf(buf, cap, "r+%s", mode + 1);
	return buf;
}

static FILE *shim_freopen(const char *path, const char *mode, FILE *stream,
                          const char *name)
{
	char mbuf[32];
	FILE *(*real)(const char *, const char *, FILE *) =
		(FILE * (*)(const char *, const char *, FILE *))dlsym(RTLD_NEXT,
		                                                     name);
	cookie *k = stream && active && !in_shim ? cookie_of(stream) : NULL;
	if (k)
		return cookie_reopen(k, path, mode);
	int old = stream && active && !in_shim ? real_fileno(stream) : -1;
	FILE *f = real(path, freopen_prepare(path, mode, mbuf, sizeof mbuf),
	               stream);
	if (active && !in_shim) {
		int err = errno, fd = f ? real_fileno(f) : -1;
		in_shim = 1;
		/* glibc puts the new file on the stream's old number (dup3
		 * inside) when the open succeeds, and closes the old number
		 * inside when it fails: a number the stream no longer holds
		 * is free, and may come back from an open no wrapper sees
		 * (opendir's) */
		if (old != fd)
			fd_forget(old);
		/* the new one may have the old number: what the table says
		 * of it is stale either way */
		if (fd >= 0 && fd < SHIM_FDS) {
			fd_forget(fd);
			fd_adopt(fd);
		}
		in_shim = 0;
		errno = err;
	}
	return f;
}

FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	load_fileno();
	return shim_freopen(path, mode, stream, "freopen");
}

FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	load_fileno();
	return shim_freopen(path, mode, stream, "freopen64");
}

FILE *fdopen(int fd, const char *mode)
{
	static FILE *(*real)(int, const char *);
	if (!real)
		real = (FILE * (*)(int, const char *))dlsym(RTLD_NEXT, "fdopen");
	if (PASS(fd))
		return real(fd, mode);
	return cookie_stream(fd, mode);
}

int fileno(FILE *stream)
{
	load_fileno();
	cookie *k = active ? cookie_of(stream) : NULL;
	if (k && k->fd >= 0)
		return k->fd;
	return real_fileno(stream);
}

int fileno_unlocked(FILE *stream)
{
	return fileno(stream);
}

/* glibc's fclose closes the stream's descriptor inside, where no close
 * wrapper sees.  A stream the shim made closes through the close wrapper
 * (its cookie); any other -- standard output, one fdopen'd on a number a
 * dup2 then put a followed file on -- may hold a followed descriptor,
 * whose number an open no wrapper sees (opendir's) can then reuse. */
int fclose(FILE *stream)
{
	static int (*real)(FILE *);
	if (!real)
		real = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
	load_fileno();
	if (active && !in_shim) {
		int err = errno, fd = real_fileno(stream); /* -1: a cookie */
		fd_closing(fd);
		errno = err;
	}
	return real(stream);
}

/* ---- set-up ------------------------------------------------------------------ */

static int attach_path(const char *var, int (*attach)(int, void **),
                       void **out)
{
	const char *p = getenv(var);
	int fd, rc;

	if (!p)
		return -ENOENT;
	fd = real_openat(AT_FDCWD, p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = attach(fd, out);
	real_close(fd);
	return rc;
}

static int attach_cache(int fd, void **out)
{
	return faultsim_cache_attach(fd, (faultsim_cache **)out);
}

static int attach_faults(int fd, void **out)
{
	return faultsim_faults_attach(fd, (faultsim_faults **)out);
}

static int attach_ctl(int fd, void **out)
{
	void *p = real_mmap(NULL, sizeof(shim_shared), PROT_READ | PROT_WRITE,
	                    MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (((shim_shared *)p)->magic != SHIM_MAGIC) {
		munmap(p, sizeof(shim_shared));
		return -EINVAL;
	}
	*out = p;
	return 0;
}

/* After exec: descriptors inherited on files below the watched directory
 * (a shell's redirection, a parent's open file) are followed again. */
static void adopt_inherited(void)
{
	char abs[PATH_MAX];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		if (fd < SHIM_FDS)
			fd_adopt(fd); /* opened before this image */
		else if (fd_names(fd, abs) == 0 && is_watched(abs))
			refuse("%s: descriptor %d is above the %d the shim "
			       "follows", relative(abs), fd, SHIM_FDS);
	}
	if (d)
		closedir(d);
}

static void __attribute__((constructor)) shim_init(void)
{
	const char *dir = getenv("KEEL_SHIM_DIR"), *prof;
	void *p;
	int rc;

	load_all();
	if (!dir)
		return;
	in_shim = 1;
	if (!realpath(dir, watched))
		refuse("KEEL_SHIM_DIR %s: %s", dir, strerror(errno));
	watched_len = strlen(watched);
	if ((rc = attach_path("KEEL_SHIM_CTL", attach_ctl, &p)) < 0)
		refuse("cannot map the harness's control block "
		       "(KEEL_SHIM_CTL): %s", strerror(-rc));
	ctl = p;
	if ((rc = attach_path("KEEL_SHIM_CACHE", attach_cache, &p)) < 0)
		refuse("cannot map the fault simulator's cache "
		       "(KEEL_SHIM_CACHE): %s", strerror(-rc));
	cache = p;
	rc = attach_path("KEEL_SHIM_FAULTS", attach_faults, &p);
	if (rc < 0 && rc != -ENOENT)
		refuse("cannot map the fault state (KEEL_SHIM_FAULTS): %s",
		       strerror(-rc));
	faults = rc < 0 ? NULL : p;
	if (getenv("KEEL_SHIM_VOLATILE"))
		snprintf(volatile_pats, sizeof volatile_pats, "%s",
		         getenv("KEEL_SHIM_VOLATILE"));
	kills_only = getenv("KEEL_SHIM_KILLS_ONLY") &&
	             !strcmp(getenv("KEEL_SHIM_KILLS_ONLY"), "1");
	prof = getenv("KEEL_SHIM_PROFILE");
	profile = FAULTSIM_PROFILE_EXT4;
	if (prof && faultsim_profile_parse(prof, &profile) < 0)
		refuse("KEEL_SHIM_PROFILE %s: not ext4, xfs or btrfs", prof);
	calls_init();
	if (getenv("KEEL_TORTURE_FD"))
		proto_fd = atoi(getenv("KEEL_TORTURE_FD"));
	__atomic_add_fetch(&ctl->loaded, 1, __ATOMIC_ACQ_REL);
	page = (size_t)sysconf(_SC_PAGESIZE);
	/* a forked child starts with no dirty page: each process then makes
	 * and seals its own records */
	pthread_atfork(map_seal_all, NULL, pid_refresh);
	pid_refresh();
	active = 1;
	adopt_inherited();
	in_shim = 0;
	shim_backstop_init();
}

/* ---- lent to the system-call backstop (shim_internal.h) ----------------- */

int shim_fd_followed(int fd)
{
	return active && fd_tracked(fd);
}

int shim_in_call(void)
{
	return in_shim;
}

const char *shim_watched(size_t *len)
{
	*len = watched_len;
	return watched;
}

void shim_refuse_msg(const char *msg)
{
	refuse("%s", msg);
}

/* exit(): the pages still dirty are sealed, so a later process's sync of
 * the file finds sealed records (_exit and a kill leave them to the
 * harness, which seals them from the file) */
static void __attribute__((destructor)) shim_fini(void)
{
	map_seal_all();
}
