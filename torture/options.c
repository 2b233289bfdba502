/*
 * options.c -- the flag table and its parsers (see options.h).
 */
#include "options.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapters.h"
#include "duration.h"
#include "faultsim.h"
#include "keel.h"
#include "value.h"

typedef int (*flag_fn)(torture_options *o, const char *flag, const char *arg);

typedef struct flag {
	const char *name; /* "--kill-every"                         */
	const char *meta; /* argument's name in --help; NULL: none  */
	flag_fn parse;
	const char *help;
} flag_def;

static int bad(const char *flag, const char *arg, const char *why)
{
	fprintf(stderr, "torture: %s %s: %s (see --help)\n", flag, arg, why);
	return -1;
}

/* A whole decimal number, no sign, no spaces, no overflow. */
static int parse_u64(const char *s, uint64_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (UINT64_MAX - 9) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*v = n;
	return 0;
}

/* "auto" starts from the target's default period (an adapter's own, or
 * 50ms) whichever order --target and --kill-every come in; a duration
 * after it wins. */
static int f_kill_every(torture_options *o, const char *f, const char *a)
{
	if (strcmp(a, "auto") == 0) {
		o->kill_every_auto = 1;
		o->kill_every_given = 0;
		o->kill_every_ns = o->adapter ?
		        o->adapter->kill_every_ms * 1000000ull :
		        TORTURE_KILL_EVERY_DEFAULT_NS;
		return 0;
	}
	if (duration_parse(a, &o->kill_every_ns) < 0)
		return bad(f, a, "not a duration (or auto): " DURATION_RULE);
	o->kill_every_given = 1;
	o->kill_every_auto = 0;
	return 0;
}

static int f_duration(torture_options *o, const char *f, const char *a)
{
	if (duration_parse(a, &o->duration_ns) < 0)
		return bad(f, a, "not a duration: " DURATION_RULE);
	o->duration_given = 1;
	return 0;
}

static int f_jitter(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (parse_u64(a, &v) < 0 || v > 90)
		return bad(f, a, "want a whole percentage from 0 to 90");
	o->jitter_pct = (unsigned)v;
	return 0;
}

static int f_count(const char *f, const char *a, uint64_t max, uint64_t *v)
{
	char why[80];

	if (parse_u64(a, v) < 0 || *v == 0 || *v > max) {
		snprintf(why, sizeof(why), "want a whole number from 1 to %" PRIu64,
		         max);
		return bad(f, a, why);
	}
	return 0;
}

static int f_cycles(torture_options *o, const char *f, const char *a)
{
	return f_count(f, a, UINT64_MAX / 2, &o->cycles);
}

static int f_threads(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, TORTURE_THREADS_MAX, &v) < 0)
		return -1;
	o->threads = (uint32_t)v;
	o->threads_given = 1;
	return 0;
}

static int f_keys(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, TORTURE_KEYS_MAX, &v) < 0)
		return -1;
	o->keys = (uint32_t)v;
	return 0;
}

static int f_grow_step(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, 1024, &v) < 0)
		return -1;
	o->grow_step = v << 20;
	return 0;
}

static int f_checkpoint_kib(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, 4096, &v) < 0)
		return -1;
	o->checkpoint_bytes = v << 10;
	return 0;
}

static int f_seed(torture_options *o, const char *f, const char *a)
{
	if (parse_u64(a, &o->seed) < 0)
		return bad(f, a, "want a whole number");
	o->seed_given = 1;
	return 0;
}

static int f_value_size(torture_options *o, const char *f, const char *a)
{
	char buf[64], why[128];
	const char *dash = strchr(a, '-');
	uint64_t lo, hi;

	if (strlen(a) >= sizeof(buf))
		return bad(f, a, "want MIN-MAX or N, in bytes");
	memcpy(buf, a, strlen(a) + 1);
	if (dash)
		buf[dash - a] = '\0';
	if (parse_u64(buf, &lo) < 0 || parse_u64(dash ? buf + (dash - a) + 1 :
	                                                 buf, &hi) < 0)
		return bad(f, a, "want MIN-MAX or N, in bytes");
	if (lo > hi)
		return bad(f, a, "MIN is larger than MAX");
	if (lo < VALUE_HEADER) {
		snprintf(why, sizeof(why), "values must hold their %u-byte "
		         "self-describing header; MIN must be at least %u",
		         VALUE_HEADER, VALUE_HEADER);
		return bad(f, a, why);
	}
	if (hi > KEEL_VALUE_MAX) {
		snprintf(why, sizeof(why), "larger than the engine allows "
		         "(KEEL_VALUE_MAX is %" PRIu64 " bytes)",
		         (uint64_t)KEEL_VALUE_MAX);
		return bad(f, a, why);
	}
	o->value_min = (uint32_t)lo;
	o->value_max = (uint32_t)hi;
	return 0;
}

static int f_dir(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty directory name");
	o->dir = a;
	return 0;
}

static int f_json(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty file name");
	o->json = a;
	return 0;
}

static int f_quiet(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->quiet = 1;
	return 0;
}

/* --unsafe modes, each a deliberate bug torture must catch. */
static const struct {
	const char *name;
	unsigned bit;
} unsafe_modes[] = {
	{"ack-before-commit", TORTURE_UNSAFE_ACK_BEFORE_COMMIT},
	{"no-sync", TORTURE_UNSAFE_NO_SYNC},
	{"trust-head", TORTURE_UNSAFE_TRUST_HEAD},
	{"retry-fsync", TORTURE_UNSAFE_RETRY_FSYNC},
	{"ckpt-drop", TORTURE_UNSAFE_CKPT_DROP},
};
#define NUNSAFE (sizeof(unsafe_modes) / sizeof(unsafe_modes[0]))

static int f_unsafe(torture_options *o, const char *f, const char *a)
{
	for (size_t i = 0; i < NUNSAFE; i++)
		if (strcmp(a, unsafe_modes[i].name) == 0) {
			o->unsafe |= unsafe_modes[i].bit;
			return 0;
		}
	return bad(f, a, "unknown unsafe mode (known: ack-before-commit, "
	           "no-sync, trust-head, retry-fsync, ckpt-drop)");
}

void options_unsafe_names(const torture_options *o, char *buf, unsigned cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NUNSAFE && n < cap; i++)
		if (o->unsafe & unsafe_modes[i].bit)
			n += (size_t)snprintf(buf + n, cap - n, "%s%s",
			                      n ? "," : "", unsafe_modes[i].name);
}

static int f_power_loss(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->power_loss = 1;
	return 0;
}

static int f_no_explain(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->no_explain = 1;
	return 0;
}

static int f_cache_lives(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->cache_lives = 1;
	return 0;
}

static int f_device(torture_options *o, const char *f, const char *a)
{
	faultsim_device d;

	if (faultsim_device_parse(a, &d) < 0)
		return bad(f, a, "unknown device model (known: ordered, "
		           "reorder, torn, garbage, payload)");
	o->device = (int)d;
	o->device_given = 1;
	return 0;
}

static int f_sector(torture_options *o, const char *f, const char *a)
{
	if (strcmp(a, "512") && strcmp(a, "4096"))
		return bad(f, a, "want 512 or 4096");
	o->sector = (unsigned)atoi(a);
	o->sector_given = 1;
	return 0;
}

/* The spec is only stored here; faults.c parses it with the simulator's
 * own parser (before anything is created) and names what is wrong. */
static int f_fail(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty fault spec (want OP:ERROR[:TRIGGER])");
	if (o->nfail >= TORTURE_FAIL_MAX)
		return bad(f, a, "too many --fail specs (at most 16)");
	o->fail[o->nfail++] = a;
	o->crash_specs += strcasestr(a, ":crash") != NULL;
	return 0;
}

static int f_fsync_profile(torture_options *o, const char *f, const char *a)
{
	faultsim_profile p;

	if (faultsim_profile_parse(a, &p) < 0 || p == FAULTSIM_PROFILE_KEEP)
		return bad(f, a, "unknown fsync profile (known: ext4, xfs, "
		           "btrfs)");
	o->profile = (int)p;
	o->profile_given = 1;
	return 0;
}

static int f_fs(torture_options *o, const char *f, const char *a)
{
	faultsim_fs fs;

	if (faultsim_fs_parse(a, &fs) < 0)
		return bad(f, a, "unknown file system model (known: "
		           FAULTSIM_FS_NAMES ")");
	o->fs = (int)fs;
	o->fs_given = 1;
	return 0;
}

static int f_enumerate(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->enumerate = 1;
	return 0;
}

/* --mixed, --readers, --snapshots, --bit-rot: the modes that make torture
 * catch subtler bugs (docs/torture.md, "What each mode can catch"). */
static int f_mixed(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (parse_u64(a, &v) < 0 || v > 100)
		return bad(f, a, "want a whole percentage from 0 to 100");
	o->mixed = 1;
	o->cut_pct = (unsigned)v;
	return 0;
}

static int f_early_kills(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (parse_u64(a, &v) < 0 || v > 100)
		return bad(f, a, "want a whole percentage from 0 to 100");
	o->early_pct = (unsigned)v;
	return 0;
}

static int f_readers(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, 16, &v) < 0)
		return -1;
	o->readers = (uint32_t)v;
	return 0;
}

static int f_crash_on_failed_sync(torture_options *o, const char *f,
                                  const char *a)
{
	(void)f;
	(void)a;
	o->crash_on_failed_sync = 1;
	return 0;
}

static int f_snapshots(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->snapshots = 1;
	return 0;
}

static int f_bit_rot(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->bit_rot = 1;
	return 0;
}

static int f_compact_every(torture_options *o, const char *f, const char *a)
{
	if (duration_parse(a, &o->compact_every_ns) < 0)
		return bad(f, a, "not a duration: " DURATION_RULE);
	return 0;
}

/* --target: what torture kills.  "embedded" is the default writer process;
 * "http" is keel-serve, written to over HTTP (http_target.h); "exec" any
 * program (exec_target.h); NAME[:CONFIG] an engine adapter (adapters.h). */
static int f_target(torture_options *o, const char *f, const char *a)
{
	const torture_adapter *ad = adapter_find(a);
	const char *config;

	if (ad) {
		if (!adapter_parse(a, &config)) {
			fprintf(stderr, "torture: %s %s: unknown configuration "
			        "of %s; its configurations are:\n", f, a,
			        ad->name);
			adapter_list(stderr, ad);
			return -1;
		}
		o->target_exec = 1;
		o->target_http = 0;
		o->adapter = ad;
		o->adapter_config = config;
		if (!o->kill_every_given)
			o->kill_every_ns = ad->kill_every_ms * 1000000ull;
		return 0;
	}
	if (strcmp(a, "embedded") != 0 && strcmp(a, "http") != 0 &&
	    strcmp(a, "exec") != 0) {
		fprintf(stderr, "torture: %s %s: unknown target (known: embedded, "
		        "http, exec, and the engine adapters NAME:CONFIG):\n",
		        f, a);
		adapter_list(stderr, NULL);
		return -1;
	}
	o->target_http = strcmp(a, "http") == 0;
	o->target_exec = strcmp(a, "exec") == 0;
	o->adapter = NULL;
	return 0;
}

/* --workload, --checker: the commands of --target exec (exec_target.h). */
static int f_workload(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty command");
	o->workload = a;
	return 0;
}

static int f_setup(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty command");
	o->setup = a;
	return 0;
}

static int f_volatile(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty pattern");
	o->volatile_files = a;
	return 0;
}

static int f_syscall_backstop(torture_options *o, const char *f,
                              const char *a)
{
	(void)f;
	(void)a;
	o->syscall_backstop = 1;
	return 0;
}

static int f_front_end(torture_options *o, const char *f, const char *a)
{
	if (!strcmp(a, "auto"))
		o->front_end = TORTURE_FRONT_AUTO;
	else if (!strcmp(a, "shim"))
		o->front_end = TORTURE_FRONT_SHIM;
	else if (!strcmp(a, "supervisor"))
		o->front_end = TORTURE_FRONT_SUPERVISOR;
	else
		return bad(f, a, "want auto, shim or supervisor");
	return 0;
}

static int f_cache_mib(torture_options *o, const char *f, const char *a)
{
	uint64_t v;

	if (f_count(f, a, 16384, &v) < 0)
		return -1;
	o->cache_bytes = v << 20;
	return 0;
}

static int f_user(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty user name");
	o->user = a;
	return 0;
}

static int f_checker(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty command");
	o->checker = a;
	return 0;
}

static int f_serve(torture_options *o, const char *f, const char *a)
{
	if (!*a)
		return bad(f, "''", "empty file name");
	o->serve = a;
	return 0;
}

static int f_http_tls(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->http_tls = 1;
	return 0;
}

static int f_http2(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->http2 = 1;
	return 0;
}

/* HTTP/3 is QUIC, which is TLS 1.3: --http3 makes the certificate as
 * --http-tls does. */
static int f_http3(torture_options *o, const char *f, const char *a)
{
	(void)f;
	(void)a;
	o->http3 = 1;
	o->http_tls = 1;
	return 0;
}

static const flag_def flags[] = {
	{"--kill-every", "DUR", f_kill_every,
	 "SIGKILL each writer after DUR (50ms, 1s, ...); default 50ms;\n"
	 "                        auto (--target exec only): start there and\n"
	 "                        double the lives, up to 10s, while cycles\n"
	 "                        acknowledge nothing (docs/targets.md)"},
	{"--jitter", "PCT", f_jitter,
	 "vary each kill time by up to +-PCT percent; default 20"},
	{"--duration", "DUR", f_duration, "run this long; default 30s"},
	{"--cycles", "N", f_cycles,
	 "run N kill/verify cycles (no time limit unless --duration)"},
	{"--dir", "DIR", f_dir,
	 "store directory; default a fresh temporary one, removed on\n"
	 "                        success and kept on failure"},
	{"--threads", "N", f_threads, "writer threads; default 4"},
	{"--keys", "N", f_keys, "keys in the key space; default 1000"},
	{"--value-size", "MIN-MAX", f_value_size,
	 "value sizes in bytes (at least 44); default 64-4096"},
	{"--seed", "N", f_seed, "workload seed; default from the clock"},
	{"--json", "FILE", f_json, "write the summary as JSON to FILE"},
	{"--quiet", NULL, f_quiet, "no progress lines"},
	{"--compact-every", "DUR", f_compact_every,
	 "the writer also calls keel_compact every DUR"},
	{"--grow-step", "MIB", f_grow_step,
	 "grow the store in steps of MIB MiB (1 to 1024); steps of 1 MiB\n"
	 "                        and more are grown ahead by the engine's grower\n"
	 "                        thread (default: the engine's own steps)"},
	{"--checkpoint-kib", "KIB", f_checkpoint_kib,
	 "the writer checkpoints its delta log past KIB KiB (1 to\n"
	 "                        4096; default 64: a checkpoint every few dozen\n"
	 "                        commits)"},
	{"--power-loss", NULL, f_power_loss,
	 "each kill is also a power cut (fault simulator)"},
	{"--no-explain", NULL, f_no_explain,
	 "exec target: on a violation, do not replay the crash to\n"
	 "                        find the calls whose loss caused it (saves a\n"
	 "                        copy of the directory before each power cut)"},
	{"--cache-lives", NULL, f_cache_lives,
	 "with --fail and no --power-loss: after every other writer the\n"
	 "                        pages a failed sync marked clean stay readable\n"
	 "                        for the next one, as Linux leaves them (they go\n"
	 "                        after it); default: they go at once"},
	{"--device", "MODEL", f_device,
	 "what a power cut leaves of unsynced writes: ordered,\n"
	 "                        reorder, torn (default), garbage, payload\n"
	 "                        (one interior sector lost or garbled)"},
	{"--sector", "N", f_sector, "sector size for torn/garbage: 512 "
	 "(default) or 4096"},
	{"--fail", "SPEC", f_fail,
	 "inject faults, OP:ERROR[:TRIGGER], e.g. fdatasync:EIO:p=0.1,\n"
	 "                        pwrite:ENOSPC:nth=20 (repeatable; "
	 "docs/faults.md)"},
	{"--fsync-profile", "FS", f_fsync_profile,
	 "what a failed sync does to the cache: ext4 (default),\n"
	 "                        xfs, btrfs"},
	{"--fs", "NAME", f_fs,
	 "the file system a power cut and a failed sync follow:\n"
	 "                        posix (default: only a directory sync makes a\n"
	 "                        name durable), ext4, ext4-writeback, xfs, btrfs\n"
	 "                        (docs/faults.md); sets --fsync-profile unless\n"
	 "                        that is given too"},
	{"--crash-on-failed-sync", NULL, f_crash_on_failed_sync,
	 "with --fail on fdatasync or fsync: a writer whose sync\n"
	 "                        fails SIGKILLs itself at once (a program that\n"
	 "                        crashes at a failed fsync); with --cache-lives\n"
	 "                        the next one meets the pages it lost"},
	{"--mixed", "PCT", f_mixed,
	 "PCT % of kills (drawn from the seed) are also power cuts;\n"
	 "                        the others leave the page cache alive, dirty\n"
	 "                        pages and all, for the next writer"},
	{"--early-kills", "PCT", f_early_kills,
	 "PCT % of writers (drawn from the seed) kill themselves\n"
	 "                        right after a successful open, before any\n"
	 "                        commit: a crash loop at start-up"},
	{"--readers", "N", f_readers,
	 "N KEEL_RDONLY reader processes beside the writer (1 to 16);\n"
	 "                        nothing a reader was shown may be lost later"},
	{"--snapshots", NULL, f_snapshots,
	 "one more writer thread holds views while it refreshes\n"
	 "                        snapshots across growths and compactions"},
	{"--bit-rot", NULL, f_bit_rot,
	 "each cycle, flip a bit in a copy of the store, in synced\n"
	 "                        bytes before the newest commit: reads must\n"
	 "                        fail or be right, never wrong"},
	{"--enumerate", NULL, f_enumerate,
	 "run a fixed workload once per I/O step, crashing after\n"
	 "                        that step, and check every crash state"},
	{"--unsafe", "MODE", f_unsafe,
	 "deliberately unsafe writer, to prove torture catches it:\n"
	 "                        ack-before-commit (acknowledge, then commit),"
	 "\n                        no-sync, trust-head, retry-fsync, ckpt-drop\n"
	 "                        (engine flags; ckpt-drop: a checkpoint leaves\n"
	 "                        out the oldest pending change)"},
	{"--target", "WHAT", f_target,
	 "what is killed: embedded (a writer embedding keel; default),\n"
	 "                        http (keel-serve, written to over HTTP) or\n"
	 "                        exec (any program, --workload/--checker) or\n"
	 "                        an engine adapter NAME:CONFIG (sqlite:wal-full,\n"
	 "                        ...; docs/claims.md; an unknown one lists all)"},
	{"--serve", "PATH", f_serve,
	 "keel-serve for --target http; default the one beside torture"},
	{"--http-tls", NULL, f_http_tls,
	 "--target http over TLS 1.3: a throwaway certificate made at\n"
	 "                        set-up, pinned by the client"},
	{"--http2", NULL, f_http2,
	 "--target http over HTTP/2 (h2 by ALPN with --http-tls, else\n"
	 "                        h2c by prior knowledge), 4 writers' streams\n"
	 "                        in flight per connection"},
	{"--http3", NULL, f_http3,
	 "--target http over HTTP/3 (QUIC on keel-serve's\n"
	 "                        UDP port, with --http-tls' certificate),\n"
	 "                        4 writers' streams in flight per connection"},
	{"--workload", "CMD", f_workload,
	 "--target exec: the program to torture (/bin/sh -c; {dir} is\n"
	 "                        the watched directory; docs/targets.md)"},
	{"--checker", "CMD", f_checker,
	 "--target exec: prints the recovered state as KEY VALUE lines"},
	{"--setup", "CMD", f_setup,
	 "--target exec: run once before the first cycle to prepare the\n"
	 "                        directory (a database created and filled), so\n"
	 "                        the program is tested in its steady state; what\n"
	 "                        it leaves counts as durable"},
	{"--volatile", "PATTERNS", f_volatile,
	 "--target exec: file names (shell patterns, ':'-separated) the\n"
	 "                        program never needs after a crash: not tracked"},
	{"--syscall-backstop", NULL, f_syscall_backstop,
	 "--target exec: catch every system call (Syscall User Dispatch)\n"
	 "                        so that writes no wrapper sees (stdio on a\n"
	 "                        redirected stdout, raw syscalls) are recorded\n"
	 "                        instead of refused as bypasses; costs a signal\n"
	 "                        per system call"},
	{"--front-end", "WHICH", f_front_end,
	 "--target exec: who records the program's calls: shim (LD_PRELOAD),\n"
	 "                        supervisor (seccomp: Go and static programs),\n"
	 "                        or auto (default: the supervisor for a program\n"
	 "                        the shim cannot see)"},
	{"--cache-mib", "N", f_cache_mib,
	 "--target exec: the fault simulator's room for unsynced changes, in\n"
	 "                        MiB (default 64; each write costs twice its\n"
	 "                        bytes): a run that fills it is refused"},
	{"--user", "NAME", f_user,
	 "--target exec: run the programs as user NAME (torture must run as\n"
	 "                        root; the directory is given to NAME): for a\n"
	 "                        program that will not run as root (postgres);\n"
	 "                        the supervisor records them"},
	{"--list-targets", NULL, NULL, "the engine adapters' NAME:CONFIG, one a "
	 "line"},
	{"--help", NULL, NULL, "this text"},
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

void options_usage(const char *prog)
{
	printf("usage: %s [flags]\n"
	       "Kills a writer process that embeds keel at random points, "
	       "recovers the store,\nand checks that every acknowledged write "
	       "survived and nothing else appeared.\n"
	       "Exit 0: no violation; 1: a violation (the store is kept); "
	       "2: bad usage or set-up;\n3 (--target exec): the program "
	       "refused to start after a crash (its checker exited 3),\n"
	       "nothing acknowledged was lost.\n\n", prog);
	for (size_t i = 0; i < NFLAGS; i++) {
		char left[40];
		snprintf(left, sizeof(left), "%s%s%s", flags[i].name,
		         flags[i].meta ? " " : "",
		         flags[i].meta ? flags[i].meta : "");
		/* a name as wide as the column gets a line of its own: run
		 * together with its text it would read as another flag */
		if (strlen(left) >= 22)
			printf("  %s\n  %-22s%s\n", left, "", flags[i].help);
		else
			printf("  %-22s%s\n", left, flags[i].help);
	}
	printf("\nDUR is " DURATION_RULE ".\n");
	printf("\nCampaigns (docs/campaigns.md):\n"
	       "  %s --campaign FILE [--shard I/N] [--out FILE] [--list] "
	       "[--quiet]\n"
	       "      run shard I of N (numbered from 0) of the campaign in "
	       "FILE, one JSON\n"
	       "      line per run appended to --out FILE (default stdout); "
	       "--list names\n      the runs instead\n"
	       "  %s --report [--merge] FILE...\n"
	       "      merge result files (a run's last line wins) and print "
	       "the claims table\n"
	       "      (--merge: the merged lines)\n", prog, prog);
}

void options_default(torture_options *o)
{
	struct timespec ts;

	memset(o, 0, sizeof(*o));
	clock_gettime(CLOCK_REALTIME, &ts);
	o->kill_every_ns = TORTURE_KILL_EVERY_DEFAULT_NS;
	o->jitter_pct = 20;
	o->duration_ns = 30000000000ull;
	o->threads = 4;
	o->keys = 1000;
	o->value_min = 64;
	o->value_max = 4096;
	o->device = FAULTSIM_DEVICE_TORN; /* sector-atomic, any order: the
	                                     widest model short of garbage */
	o->sector = 512;
	o->profile = FAULTSIM_PROFILE_EXT4;
	o->seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
	o->seed %= 1000000000ull; /* short enough to retype */
}

static const flag_def *find_flag(const char *arg, size_t len)
{
	for (size_t i = 0; i < NFLAGS; i++)
		if (strlen(flags[i].name) == len &&
		    strncmp(flags[i].name, arg, len) == 0)
			return &flags[i];
	return NULL;
}

static int refuse(const char *why)
{
	fprintf(stderr, "torture: %s (see --help)\n", why);
	return -1;
}

/* The fault simulator's flags: what needs what, and the engine flags the
 * --unsafe modes stand for. */
static int check_faults(torture_options *o)
{
	int cuts = o->power_loss || o->enumerate || o->mixed;

	if ((o->device_given || o->sector_given) && !cuts)
		return refuse("--device and --sector describe a power cut: "
		              "they need --power-loss, --mixed or --enumerate");
	if (o->mixed && (o->power_loss || o->enumerate))
		return refuse("--mixed chooses which kills cut the power: drop "
		              "--power-loss and --enumerate");
	if (o->enumerate && (o->readers || o->snapshots))
		return refuse("--enumerate runs a fixed single-threaded workload: "
		              "drop --readers and --snapshots");
	if (o->cache_lives && (!o->nfail || cuts))
		return refuse("--cache-lives keeps a failed sync's pages between "
		              "writers: it needs a --fail spec and no power cut");
	if (o->profile_given && !o->nfail)
		return refuse("--fsync-profile says what a failed sync does: "
		              "it needs a --fail spec");
	if (o->fs_given && !cuts && !o->nfail)
		return refuse("--fs says what a power cut keeps and what a "
		              "failed sync does: it needs --power-loss, --mixed, "
		              "--enumerate or a --fail spec");
	if (o->fs_given && !o->profile_given)
		o->profile = (int)faultsim_fs_profile((faultsim_fs)o->fs);
	if (o->enumerate && o->compact_every_ns)
		return refuse("--enumerate runs a fixed workload without "
		              "compaction; drop --compact-every");
	if (o->enumerate && o->threads_given && o->threads != 1)
		return refuse("--enumerate runs one writer thread (its I/O "
		              "steps must repeat exactly); drop --threads");
	if (o->target_http && (o->readers || o->snapshots))
		return refuse("--readers and --snapshots run inside the embedded "
		              "writer: not with --target http");
	if (o->target_http && (options_faultsim(o) || o->compact_every_ns ||
	                       o->checkpoint_bytes ||
	                       (o->unsafe & ~TORTURE_UNSAFE_ACK_BEFORE_COMMIT)))
		return refuse("--target http runs keel-serve, which does not "
		              "take the fault simulator, --compact-every, "
		              "--checkpoint-kib or engine --unsafe modes");
	/* A process kill leaves unsynced commits in the page cache, so a
	 * writer that skips its sync cannot fail there: only a power cut
	 * loses them.  A control that cannot fail would mislead. */
	if (o->target_exec && (o->readers || o->snapshots || o->mixed ||
	                       o->bit_rot || o->early_pct))
		return refuse("--readers, --snapshots, --mixed, --bit-rot and "
		              "--early-kills drive keel's embedded writer: not "
		              "with --target exec");
	if (o->crash_on_failed_sync) {
		int syncs = 0;
		for (unsigned i = 0; i < o->nfail; i++)
			syncs |= !strncmp(o->fail[i], "fdatasync:", 10) ||
			         !strncmp(o->fail[i], "fsync:", 6);
		if (!syncs)
			return refuse("--crash-on-failed-sync needs a --fail spec "
			              "on fdatasync or fsync");
		if (o->target_http || o->target_exec || o->enumerate)
			return refuse("--crash-on-failed-sync drives keel's "
			              "embedded writer: not with --target or "
			              "--enumerate");
	}
	if (o->early_pct && (o->target_http || o->enumerate))
		return refuse("--early-kills drives keel's embedded writer: not "
		              "with --target http or --enumerate");
	if ((o->unsafe & TORTURE_UNSAFE_NO_SYNC) && !cuts && !o->target_exec)
		return refuse("--unsafe no-sync loses acknowledged writes only "
		              "when the power goes: it needs --power-loss or "
		              "--enumerate");
	if (o->enumerate)
		o->threads = 1;
	if (o->unsafe & TORTURE_UNSAFE_NO_SYNC)
		o->engine_flags |= KEEL_UNSAFE_NO_SYNC;
	if (o->unsafe & TORTURE_UNSAFE_TRUST_HEAD)
		o->engine_flags |= KEEL_UNSAFE_TRUST_HEAD;
	if (o->unsafe & TORTURE_UNSAFE_RETRY_FSYNC)
		o->engine_flags |= KEEL_UNSAFE_RETRY_FSYNC;
	if (o->unsafe & TORTURE_UNSAFE_CKPT_DROP)
		o->engine_flags |= KEEL_UNSAFE_CKPT_DROP;
	if (o->enumerate) /* compaction would make the steps vary */
		o->engine_flags |= KEEL_NOCOMPACT;
	return 0;
}

int options_faultsim(const torture_options *o)
{
	return o->power_loss || o->enumerate || o->nfail || o->mixed;
}

/* Flags that only make sense together are checked once all are read. */
static int check_together(torture_options *o)
{
	if (o->keys < o->threads) {
		fprintf(stderr, "torture: --keys %u is fewer than --threads %u: "
		        "every thread needs a key of its own\n", o->keys,
		        o->threads);
		return -1;
	}
	if (o->cycles && !o->duration_given)
		o->duration_ns = 0; /* --cycles alone: no time limit */
	if ((o->workload || o->checker || o->volatile_files || o->setup ||
	     o->syscall_backstop || o->front_end || o->user ||
	     o->cache_bytes) && !o->target_exec) {
		fprintf(stderr, "torture: --workload, --checker, --setup, "
		        "--volatile, --syscall-backstop, --front-end, --user and "
		        "--cache-mib are for --target exec, which is not "
		        "given\n");
		return -1;
	}
	if (o->kill_every_auto && (!o->target_exec || o->enumerate)) {
		fprintf(stderr, "torture: --kill-every auto lengthens a "
		        "program's lives until its cycles acknowledge: it is "
		        "for --target exec without --enumerate (keel's own "
		        "writers acknowledge within milliseconds; --enumerate "
		        "crashes after each call, not on a timer); give a "
		        "duration\n");
		return -1;
	}
	if ((o->http_tls || o->http2) && !o->target_http) {
		fprintf(stderr, "torture: --http-tls, --http2 and --http3 say "
		        "how to speak to keel-serve: they need --target http, "
		        "which is not given\n");
		return -1;
	}
	if (o->http2 && o->http3) {
		fprintf(stderr, "torture: --http2 and --http3 are two ways to "
		        "speak to keel-serve: give one\n");
		return -1;
	}
	if (o->serve && !o->target_http) {
		fprintf(stderr, "torture: --serve names keel-serve for "
		        "--target http, which is not given\n");
		return -1;
	}
	return check_faults(o);
}

int options_parse(torture_options *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		const flag_def *f = strncmp(arg, "--", 2) == 0 ?
		                find_flag(arg, len) : NULL;
		const char *val = NULL;

		if (!f) {
			fprintf(stderr, "torture: unknown argument '%s' (see "
			        "--help)\n", arg);
			return -1;
		}
		if (!f->parse && strcmp(f->name, "--list-targets") == 0) {
			adapter_list(stdout, NULL);
			return 1;
		}
		if (!f->parse) { /* --help */
			options_usage(argv[0]);
			return 1;
		}
		if (f->meta && eq) {
			val = eq + 1;
		} else if (f->meta) {
			if (i + 1 >= argc) {
				fprintf(stderr, "torture: %s needs %s (see "
				        "--help)\n", f->name, f->meta);
				return -1;
			}
			val = argv[++i];
		} else if (eq) {
			fprintf(stderr, "torture: %s takes no value\n", f->name);
			return -1;
		}
		if (f->parse(o, f->name, val ? val : "") < 0)
			return -1;
	}
	return check_together(o);
}

/* The shortest exact spelling of a duration. */
static void show_duration(uint64_t ns, char *buf, size_t cap)
{
	if (ns % 1000000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "s", (uint64_t)(ns / 1000000000u));
	else if (ns % 1000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "ms", (uint64_t)(ns / 1000000u));
	else if (ns % 1000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "us", (uint64_t)(ns / 1000u));
	else
		snprintf(buf, cap, "%" PRIu64 "ns", ns);
}

/* Appends to BUF (N bytes used of CAP); keeps N at CAP once full. */
static size_t append(char *buf, size_t n, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t n, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (n >= cap)
		return cap;
	va_start(ap, fmt);
	k = vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
	return k < 0 || (size_t)k >= cap - n ? cap : n + (size_t)k;
}

/* The fault simulator's part of a reproducer. */
static size_t reproduce_faults(const torture_options *o, char *buf,
                               size_t n, size_t cap)
{
	char d[32];

	if (o->compact_every_ns) {
		show_duration(o->compact_every_ns, d, sizeof(d));
		n = append(buf, n, cap, " --compact-every %s", d);
	}
	if (o->grow_step)
		n = append(buf, n, cap, " --grow-step %" PRIu64, o->grow_step >> 20);
	if (o->checkpoint_bytes)
		n = append(buf, n, cap, " --checkpoint-kib %" PRIu64,
		           o->checkpoint_bytes >> 10);
	if (o->power_loss)
		n = append(buf, n, cap, " --power-loss");
	if (o->mixed)
		n = append(buf, n, cap, " --mixed %u", o->cut_pct);
	if (o->cache_lives)
		n = append(buf, n, cap, " --cache-lives");
	if (o->crash_on_failed_sync)
		n = append(buf, n, cap, " --crash-on-failed-sync");
	if (o->enumerate)
		n = append(buf, n, cap, " --enumerate");
	if (o->power_loss || o->enumerate || o->mixed)
		n = append(buf, n, cap, " --device %s --sector %u",
		           faultsim_device_name((faultsim_device)o->device),
		           o->sector);
	if (o->fs != FAULTSIM_FS_POSIX)
		n = append(buf, n, cap, " --fs %s",
		           faultsim_fs_name((faultsim_fs)o->fs));
	for (unsigned i = 0; i < o->nfail; i++)
		n = append(buf, n, cap, " --fail %s", o->fail[i]);
	if (o->nfail)
		n = append(buf, n, cap, " --fsync-profile %s",
		           faultsim_profile_name((faultsim_profile)o->profile));
	return n;
}

void options_reproducer(const torture_options *o, char *buf, unsigned cap)
{
	char kill[32], dur[32] = "";
	size_t n;

	show_duration(o->kill_every_ns, kill, sizeof(kill));
	if (o->duration_ns) {
		memcpy(dur, " --duration ", 13);
		show_duration(o->duration_ns, dur + 12, sizeof(dur) - 12);
	}
	n = append(buf, 0, cap, "--kill-every %s --jitter %u%s --threads %u "
	           "--keys %u --value-size %u-%u --seed %" PRIu64, kill,
	           o->jitter_pct, dur, o->threads, o->keys, o->value_min,
	           o->value_max, o->seed);
	if (o->cycles)
		n = append(buf, n, cap, " --cycles %" PRIu64, o->cycles);
	n = reproduce_faults(o, buf, n, cap);
	if (o->readers)
		n = append(buf, n, cap, " --readers %u", o->readers);
	if (o->snapshots)
		n = append(buf, n, cap, " --snapshots");
	if (o->bit_rot)
		n = append(buf, n, cap, " --bit-rot");
	if (o->target_http)
		n = append(buf, n, cap, " --target http%s%s%s%s%s",
		           o->serve ? " --serve " : "", o->serve ? o->serve : "",
		           o->http_tls && !o->http3 ? " --http-tls" : "",
		           o->http2 ? " --http2" : "",
		           o->http3 ? " --http3" : "");
	for (size_t i = 0; i < NUNSAFE; i++)
		if (o->unsafe & unsafe_modes[i].bit)
			n = append(buf, n, cap, " --unsafe %s",
			           unsafe_modes[i].name);
}
