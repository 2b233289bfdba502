/*
 * options.h -- torture's command line: one table of flags, each with its
 * parser; each mode (the fault simulator's --power-loss, --device, --fail,
 * --fsync-profile, --fs, --enumerate; --compact-every; --target http) is a row
 * and a field.
 *
 * options_parse fills a torture_options from argv and never touches the file
 * system; bad input returns -1 after printing a message that names the flag
 * and the problem (the caller exits 2).
 */
#ifndef TORTURE_OPTIONS_H
#define TORTURE_OPTIONS_H

#include <stdint.h>

struct keel_io;
struct torture_faults;

#define TORTURE_THREADS_MAX 64u
#define TORTURE_KEYS_MAX 100000000u /* key numbers have eight digits */

/* --unsafe modes: deliberate bugs that torture must catch. */
#define TORTURE_UNSAFE_ACK_BEFORE_COMMIT 0x1u
#define TORTURE_UNSAFE_NO_SYNC 0x2u     /* KEEL_UNSAFE_NO_SYNC             */
#define TORTURE_UNSAFE_TRUST_HEAD 0x4u  /* KEEL_UNSAFE_TRUST_HEAD, also on
                                           the verifying open             */
#define TORTURE_UNSAFE_RETRY_FSYNC 0x8u /* KEEL_UNSAFE_RETRY_FSYNC         */
#define TORTURE_UNSAFE_CKPT_DROP 0x10u  /* KEEL_UNSAFE_CKPT_DROP           */
/* The writer's checkpoint bound (keel_options.checkpoint_bytes) unless
 * --checkpoint-kib says otherwise: small, so checkpoints come every few
 * dozen commits and kills and power cuts land inside them. */
#define TORTURE_CHECKPOINT_DEFAULT ((uint64_t)64 << 10)

/* --kill-every: the default, and the longest lives --kill-every auto
 * lengthens to (exec_target.c doubles the period from the default). */
#define TORTURE_KILL_EVERY_DEFAULT_NS 50000000ull
#define TORTURE_KILL_EVERY_AUTO_MAX_NS 10000000000ull

#define TORTURE_FAIL_MAX 16u /* --fail specs (FAULTSIM_MAX_SPECS)         */
#define TORTURE_ENUMERATE_OPS 40u /* operations of the --enumerate workload */

typedef struct torture_options {
	uint64_t kill_every_ns;  /* --kill-every: mean time a writer lives     */
	int kill_every_given;    /* --kill-every was on the command line      */
	int kill_every_auto;     /* --kill-every auto (--target exec): lengthen
	                            the lives while cycles acknowledge nothing;
	                            kill_every_ns is the starting period     */
	unsigned jitter_pct;     /* --jitter: +- this percent around it        */
	uint64_t duration_ns;    /* --duration: stop after (0: no time limit)  */
	int duration_given;      /* --duration was on the command line        */
	uint64_t cycles;         /* --cycles: stop after (0: no cycle limit)   */
	const char *dir;         /* --dir; NULL = a fresh temporary directory  */
	uint32_t threads;        /* --threads: writer threads                  */
	uint32_t keys;           /* --keys: key space size                     */
	uint32_t value_min;      /* --value-size MIN-MAX, whole value bytes    */
	uint32_t value_max;
	uint64_t seed;           /* --seed                                     */
	int seed_given;          /* --seed was on the command line             */
	const char *json;        /* --json FILE, or NULL                       */
	int quiet;               /* --quiet: no progress lines                 */
	unsigned unsafe;         /* TORTURE_UNSAFE_* bits                      */
	/* The fault simulator (faults.h): any of these puts the writer on
	 * faultsim's I/O backend. */
	int power_loss;          /* --power-loss: each kill is a power cut    */
	int no_explain;          /* --no-explain: no minimised cause (exec)   */
	int cache_lives;         /* --cache-lives: a failed sync's pages stay
	                            readable for the next writer          */
	int device;              /* --device: a faultsim_device               */
	int device_given;
	unsigned sector;         /* --sector: 512 or 4096                     */
	int sector_given;
	const char *fail[TORTURE_FAIL_MAX]; /* --fail specs, in order        */
	unsigned nfail;
	int profile;             /* --fsync-profile: a faultsim_profile       */
	int profile_given;
	int fs;                  /* --fs: a faultsim_fs, what a power cut may
	                            keep; sets profile unless --fsync-profile
	                            is given too                          */
	int fs_given;
	int enumerate;           /* --enumerate: crash after every I/O step   */
	int mixed;               /* --mixed PCT was given                     */
	unsigned cut_pct;        /* --mixed: percent of kills that also cut
	                            the power (the rest leave the cache)    */
	int bit_rot;             /* --bit-rot: damage a copy's synced bytes  */
	unsigned crash_specs;    /* --fail OP:crash... specs (of nfail): writers
	                            kill themselves at crash points; they
	                            inject no error                        */
	int crash_on_failed_sync;/* --crash-on-failed-sync: a writer dies at
	                            its first failed sync (faultsim.h)      */
	uint32_t readers;        /* --readers N: KEEL_RDONLY reader processes */
	unsigned early_pct;      /* --early-kills PCT: writers that die right
	                            after their open, before any commit     */
	int snapshots;           /* --snapshots: a writer thread holding views
	                            across refreshes                        */
	int threads_given;       /* --threads was on the command line        */
	uint64_t compact_every_ns; /* --compact-every: keel_compact period; 0 off */
	uint64_t grow_step;      /* --grow-step: keel_options.grow_step; 0 = default */
	uint64_t checkpoint_bytes; /* --checkpoint-kib: keel_options.checkpoint_bytes;
	                            0 = TORTURE_CHECKPOINT_DEFAULT             */
	/* Seams for the fault simulator: engine flags and I/O backend the
	 * writer opens the store with (writer_open_store). */
	unsigned engine_flags;   /* extra keel_options.flags                  */
	const struct keel_io *io;/* keel_options.io; NULL = POSIX             */
	struct torture_faults *faults; /* faults_setup; NULL = no simulator   */
	/* --target http (http_target.h): kill keel-serve, write over HTTP. */
	int target_http;        /* --target http                              */
	const char *serve;       /* --serve PATH; NULL = beside this program   */
	int http_tls;            /* --http-tls: over TLS 1.3, cert pinned      */
	int http2;               /* --http2: HTTP/2 (h2 over TLS, else h2c)    */
	int http3;               /* --http3: HTTP/3 over QUIC (implies TLS)   */
	/* --target exec (exec_target.h): any program, under the shim. */
	int target_exec;         /* --target exec                              */
	const char *workload;    /* --workload CMD                             */
	const char *checker;     /* --checker CMD                              */
	const char *volatile_files; /* --volatile PATTERNS: not tracked        */
	const char *setup;          /* --setup CMD: prepares the directory    */
	int syscall_backstop;    /* --syscall-backstop: KEEL_SHIM_BACKSTOP=1   */
	int front_end;           /* --front-end: TORTURE_FRONT_*               */
	const char *user;        /* --user NAME: the programs run as NAME     */
	uint64_t cache_bytes;    /* --cache-mib: the fault simulator's record
	                            space (0: FAULTSIM_CACHE_DEFAULT)       */
	/* --target NAME:CONFIG (adapters.h): --target exec with an engine
	 * adapter's own workload and checker. */
	const struct torture_adapter *adapter; /* NULL: none             */
	const char *adapter_config; /* its configuration                   */
} torture_options;

/* Defaults: --kill-every 50ms --jitter 20 --duration 30s --threads 4
 * --keys 1000 --value-size 64-4096, a seed from the clock.  --cycles alone
 * lifts the time limit; with both, whichever comes first stops the run. */
void options_default(torture_options *o);

/* 0 on success; 1 when --help was printed (exit 0); -1 on bad input (the
 * message is printed; exit 2). */
int options_parse(torture_options *o, int argc, char **argv);

/* Prints the usage text to stdout. */
void options_usage(const char *prog);

/* True when the writer runs on the fault simulator's backend. */
int options_faultsim(const torture_options *o);

/* The --unsafe modes set, comma-separated ("no-sync,trust-head"), or "". */
void options_unsafe_names(const torture_options *o, char *buf, unsigned cap);

/* Writes the flags that reproduce this run's workload (seed included) into
 * BUF, e.g. "--kill-every 50ms --jitter 20 --threads 4 ... --seed 7". */
void options_reproducer(const torture_options *o, char *buf, unsigned cap);

/* --front-end: who records a program's calls (supervisor/supervisor.h) */
enum { TORTURE_FRONT_AUTO = 0, TORTURE_FRONT_SHIM, TORTURE_FRONT_SUPERVISOR };

#endif /* TORTURE_OPTIONS_H */
