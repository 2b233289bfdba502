/*
 * internal.h -- what the supervisor's files share (supervisor.h is the
 * manual): the guard's state, and the recorder's entry points.
 */
#ifndef KEEL_SUPERVISOR_INTERNAL_H
#define KEEL_SUPERVISOR_INTERNAL_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>

#include "supervisor.h"

#define SUP_FILTER_MAX 160 /* BPF instructions of the largest filter       */
#define SUP_PIDFDS 64      /* the callers' pidfds kept, by thread id        */

struct sup_guard {
	int sock[2];           /* [0] the parent's end, [1] the child's       */
	int listener;          /* the filter's notification descriptor       */
	int stop[2];           /* a pipe: written to stop the thread         */
	pthread_t thread;
	int running;
	int stopping;          /* set by sup_guard_stop (atomic)              */
	int done;              /* set by the thread as it ends (atomic)       */
	sup_refusal_fn fn;
	void *arg;
	const sup_record *rec; /* NULL: the guard alone                      */
	struct sock_filter prog[SUP_FILTER_MAX]; /* built before the fork    */
	unsigned short nprog;
	uint64_t calls;        /* notifications answered                      */
	unsigned char *buf;    /* a write's bytes, read from the program     */
	size_t bufcap;
	int pidfd[SUP_PIDFDS]; /* the recorder's callers' pidfds (-1: none)   */
	int pidfd_tid[SUP_PIDFDS]; /* whose                                   */
};

/* guard.c: answers to a notification (0, or a negative errno when the
 * caller is gone) */
int sup_answer(sup_guard *g, uint64_t id, int error, int64_t val);
int sup_continue(sup_guard *g, uint64_t id);
/* the refusal of REQ's call: one line to the harness, EPERM to the call */
void sup_refuse(sup_guard *g, const struct seccomp_notif *req,
                const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the mapping of PID that holds IP, as FILE+0xOFFSET, in OUT */
void sup_site(int pid, uint64_t ip, char *out, size_t cap);

/* record.c: the recorder's filter (appended to PROG at *N; 0, or -1 when
 * it does not fit) and its answer to one notification */
int sup_record_filter(struct sock_filter *prog, unsigned short *n,
                      unsigned short cap);
void sup_record_serve(sup_guard *g, const struct seccomp_notif *req);

#endif /* KEEL_SUPERVISOR_INTERNAL_H */
