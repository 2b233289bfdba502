/*
 * setup.h -- the store's directory before and after a run.
 *
 * Without --dir: a fresh directory from mkdtemp under $TMPDIR (else /tmp),
 * removed after a passing run, kept after a failing one.
 * With --dir DIR: DIR is created if missing; if it exists it must be empty
 * or hold a store from an earlier torture run (torture.keel and files the
 * engine keeps beside it), which is opened as a writer would (a store in use
 * is refused), checked and adopted as the starting state.  Anything else is refused before anything is touched.  DIR is
 * never removed.
 */
#ifndef TORTURE_SETUP_H
#define TORTURE_SETUP_H

#include <limits.h>

#include "options.h"
#include "oracle.h"

#define SETUP_STORE_NAME "torture.keel"

typedef struct setup {
	char dir[PATH_MAX];  /* the directory                        */
	char path[PATH_MAX + 32]; /* the store file inside it        */
	int made_dir;        /* this run created the directory       */
	int temporary;       /* it is a temporary one (no --dir)     */
} setup;

/* Checks the flags that name files (--dir, --json), makes or checks the
 * directory and the store, and loads an existing store into MODEL.  0, or
 * -1 after printing what is wrong (then nothing this run made is left). */
int setup_prepare(const torture_options *o, oracle *model, setup *s);

/* Removes the directory and everything in it, if it is temporary. */
void setup_remove(const setup *s);

#endif /* TORTURE_SETUP_H */
