/*
 * adapter.h -- what every engine adapter of targets/ shares: the command
 * line, the protocol of docs/targets.md on $KEEL_TORTURE_FD, and the
 * workload loop.  An adapter is one small program per engine:
 *
 *   NAME DIR CONFIG            the workload: up to ADAPTER_OPS_PER_LIFE
 *                              puts on ADAPTER_KEYS keys (then it waits
 *                              for torture's kill); each put is announced
 *                              with "intent", done through the engine's
 *                              API, and acknowledged with "ack" once the
 *                              API returned success
 *   NAME DIR CONFIG --check    the checker: opens DIR with the engine
 *                              (its recovery runs) and prints one
 *                              "KEY VALUE" line per key present
 *   NAME --configs             the configurations, one per line
 *   NAME --version             the engine's version
 *
 * A put the engine refuses (a failed fsync reported as an error) ends the
 * workload with status 3 and one line on stderr naming the error: "reported
 * the error and stopped".  Values are "vOP.RAND", seeded from
 * $KEEL_TORTURE_SEED, so that torture --seed replays the choices.
 */
#ifndef TARGETS_ADAPTER_H
#define TARGETS_ADAPTER_H

#include <stddef.h>

#define ADAPTER_KEYS 16 /* few keys: each is overwritten often, so a lost
                           acknowledged put shows quickly */
#define ADAPTER_OPS_PER_LIFE 200 /* puts before the workload idles */

typedef struct adapter {
	const char *name;            /* "sqlite"                             */
	const char *const *configs;  /* NULL-terminated                      */
	/* The engine's version, e.g. sqlite3_libversion(). */
	const char *(*version)(void);
	/* Opens (creating) the store in DIR under configuration CONFIG (an
	 * index into configs); 0, or -1 after a message on stderr. */
	int (*open)(const char *dir, int config, void **store);
	/* One durable put as the configuration promises it; 0 once the API
	 * returned success, -1 after a message on stderr. */
	int (*put)(void *store, const char *key, const char *val);
	/* Prints "KEY VALUE" for every key present; 0, or -1 after a message
	 * on stderr.  The store is opened the same way as for the workload. */
	int (*check)(void *store);
	void (*close)(void *store);
} adapter;

/* For a checker: prints "KEY VALUE" for one entry the engine returned, or,
 * when either is not what a put of this adapter writes (1 to 255
 * printable bytes, no space), says on stderr that the store is damaged and
 * returns -1 (the checker then fails: torture reports a structure
 * violation, not a harness error).  0 when printed. */
int adapter_emit(const void *key, size_t klen, const void *val, size_t vlen);

/* The whole program: parses argv as above and runs the workload or the
 * checker.  Exit 0 (checker done), 2 (bad usage: lists the configurations),
 * 3 (the engine failed a put or the open), 1 (the checker failed). */
int adapter_main(const adapter *a, int argc, char **argv);

#endif /* TARGETS_ADAPTER_H */
