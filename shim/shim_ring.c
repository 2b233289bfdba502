/*
 * shim_ring.c -- the call ring of libkeel-shim.so: each tracked call is
 * entered in the control block's ring (shim_shared.ring, shim.h) with who
 * made it (pid, role) and from where (the module and offset of its call
 * site) -- a call that changes state before its real call is made, marked
 * in flight, and completed when it returns -- for a violation's report.
 */

#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

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
__thread void *site_ra __attribute__((tls_model("initial-exec")));
/* The ring slot of this thread's call in flight (index + 1; 0: none). */
__thread uint64_t open_slot __attribute__((tls_model("initial-exec")));

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
void calls_init(void)
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
	/* handed to the programs this one execs (execve, shim_exec.c), not
	 * set in this process's environment: a constructor that changes
	 * environ under a shell (bash) keeps the syscall backstop from seeing
	 * its builtins' writes */
	snprintf(role_env[0], sizeof role_env[0], "KEEL_SHIM_ROLE_PID=%s", pid);
	snprintf(role_env[1], sizeof role_env[1], "KEEL_SHIM_ROLE_LEVEL=%d",
	         level);
	snprintf(role_env[2], sizeof role_env[2], "KEEL_SHIM_ROLE_BASE=%d", base);
}

/* ENVP with this process's role variables in place of any it carries:
 * a malloc'ed array (its strings are ENVP's and role_env's), or ENVP
 * itself when the role is unknown or there is no memory. */
char *const *role_envp(char *const envp[])
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

void pid_refresh(void)
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
int in_vfork_child(void)
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
void remember_begin(uint32_t op, int file, const char *path,
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

void remember(uint32_t op, int file, const char *path,
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
