/*
 * supervisor.h -- keel's second front end beside the LD_PRELOAD shim: a
 * seccomp user-notification supervisor that sees the system calls of a
 * program and of every thread and child it makes, whatever makes them
 * (libc, a Go runtime's own calls, a static binary, a raw syscall
 * instruction, liburing).  Floor 2: it uses faultsim and the shim's control
 * block (shim.h: the call ring, this life's tables, the refusal), nothing
 * of the engine; torture (floor 3) sets it up around each program it starts.
 * No root: the filter is installed in the child between fork and exec with
 * PR_SET_NO_NEW_PRIVS, and its listener handed to the harness.
 *
 * TWO MODES
 *   The guard (every program, beside the shim): io_uring_setup and io_setup
 *   (Linux AIO) come to the harness, which refuses the run naming the call,
 *   the process and its call site, and answers ENOSYS so that nothing
 *   unseen happens before the program is killed.  Every other call stays in
 *   the kernel: one BPF check, tens of nanoseconds.
 *
 *   The recorder (SUP_RECORD: programs the shim cannot see, sup_wants): the
 *   calls that change files come to the harness too.  For a file below the
 *   watched directory the harness records the call in the faultsim cache
 *   exactly as the shim does (the same faultsim calls, the same order:
 *   record, then the real call, then its end), makes the real call itself
 *   on the program's own descriptor (pidfd_getfd: the same open file, the
 *   same offset) with the bytes read from the program's memory
 *   (process_vm_readv), and answers with its result; a create is made by
 *   the harness and its descriptor placed in the program
 *   (SECCOMP_IOCTL_NOTIF_ADDFD).  Every other call continues in the kernel
 *   (SECCOMP_USER_NOTIF_FLAG_CONTINUE).  Calls wait for the harness one at
 *   a time: a round trip of some microseconds per watched call.
 *
 * WHAT THE RECORDER REFUSES (the first refusal's words go to the shim's
 *   control block; the call gets EPERM): writable MAP_SHARED mappings of a
 *   watched file (their stores make no system call), O_TMPFILE opens,
 *   renames across the watched directory's edge, of a directory, or
 *   RENAME_EXCHANGE; symlinks and special files made below it; splice
 *   into a watched file; fallocate modes that move data; Linux AIO; and
 *   of io_uring what uring.c does not make.  A direct write (O_DIRECT) is
 *   recorded as any other: its bytes wait in the device's volatile cache
 *   until a flush.
 *
 * IO_URING (uring.c)
 *   The recorder makes a program's io_uring itself: io_uring_setup is
 *   answered with a ring of the harness's (a memfd the program maps as the
 *   kernel's), and each entry an io_uring_enter submits is made at once,
 *   in order, as the call it stands for (a write recorded, faulted and a
 *   crash point before it, exactly as a pwrite; a sync as an fdatasync),
 *   its completion posted before the enter is answered.  NOP, READ(V),
 *   WRITE(V) and whole-file FSYNC, links, and waits for completions are
 *   made; SQPOLL and the other setup flags, other operations, registered
 *   files and buffers are refused.  Under the guard alone (beside the
 *   shim) io_uring_setup is still refused: the shim cannot make it.
 *
 * CALLING SEQUENCE (in the harness)
 *   sup_guard_prepare(&g, rec)          before fork (rec NULL: the guard)
 *   sup_guard_child(g)                  in the child, before exec
 *   sup_guard_start(g, on_refusal, a)   in the parent, after fork
 *   sup_guard_stop(g)                   after the child's group is reaped
 * A filter that cannot be installed (a kernel before 5.9, a sandbox that
 * forbids seccomp, a supervisor already above us) is reported by
 * sup_guard_start; the program then runs without it -- the harness must
 * not judge a recorder's program then.
 */
#ifndef KEEL_SUPERVISOR_H
#define KEEL_SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>

#include "faultsim.h"
#include "shim.h"

typedef struct sup_guard sup_guard;

/* Called on the guard's thread, once per refused call, with one line. */
typedef void (*sup_refusal_fn)(void *arg, const char *what);

/* What the recorder records into: the harness's own. */
typedef struct sup_record {
	faultsim_cache *cache;
	faultsim_faults *faults;   /* NULL: no fault injected                */
	faultsim_profile profile;  /* what a failed sync does                */
	int kills_only;            /* no crash undoes anything: a full cache
	                              is settled as sync(2) would            */
	const char *dir;           /* the watched directory (resolved)       */
	const char *volatile_pats; /* KEEL_SHIM_VOLATILE's patterns, or NULL  */
	shim_shared *ctl;          /* the ring, this life's tables            */
	uint8_t role;              /* enum shim_role                          */
	int proto_fd;              /* the workload's protocol descriptor
	                              number (its lines go to the ring), -1  */
} sup_record;

/* A guard for one program; with REC, the recorder (REC must outlive
 * it).  0 or a negative errno. */
int sup_guard_prepare(sup_guard **out, const sup_record *rec);

/* In the child, between fork and exec: installs the filter and hands its
 * listener to the parent.  Async-signal-safe.  0 or a negative errno (the
 * parent learns it too). */
int sup_guard_child(sup_guard *g);

/* In the parent after fork: takes the listener and serves it on a thread
 * until the last filtered process is gone or sup_guard_stop.  0, or -1
 * with the reason in WHY (the program runs without the filter). */
int sup_guard_start(sup_guard *g, sup_refusal_fn fn, void *arg, char *why,
                    size_t whylen);

/* Stops the thread and frees G (NULL: nothing).  Every call the thread
 * took has been answered and recorded when it returns. */
void sup_guard_stop(sup_guard *g);

/* Calls the recorder answered, for the summary. */
uint64_t sup_guard_calls(const sup_guard *g);

/*
 * sup_wants - whether CMD (a shell command: its first word is looked up as
 * the shell would, through PATH) runs a program the shim cannot see: a
 * statically linked ELF file, one built by Go (its own system calls), one
 * linked with liburing (its io_uring submissions), or a shell or a script
 * it runs (a builtin's output to a redirected file goes through libc's
 * internal write).
 * 1 with the reason in WHY, 0 when the shim sees it (or it is a script or
 * cannot be read: the shim's exec check still refuses a static program it
 * starts).
 */
int sup_wants(const char *cmd, char *why, size_t whylen);

#endif /* KEEL_SUPERVISOR_H */
