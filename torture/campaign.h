/*
 * campaign.h -- campaigns: many torture runs of the engine adapters
 * (adapters.h), described in one file, cut into shards that run on any
 * number of machines, and merged back into the claims table.
 * docs/campaigns.md is the user's manual; the file format is there and in
 * campaign.c.
 *
 * CALLING SEQUENCE
 *   torture --campaign FILE [--shard I/N] [--out FILE] [--list] [--quiet]
 *       campaign_main (campaign_run.c): reads FILE (campaign_parse,
 *       campaign.c), expands it into its run list, and runs every run k
 *       with k mod N == I (shards are numbered from 0), each as a child
 *       `torture --target NAME:CONFIG --seed S --cycles C --duration D
 *       ...`; after each run it appends one JSON line to --out (or
 *       stdout) with a single write(2).
 *   torture --report [--merge] FILE...
 *       campaign_report_main (campaign_report.c): reads the JSON lines of
 *       every FILE, keeps the last line of each run (a rerun shard
 *       replaces its earlier lines, never doubles them), refuses lines of
 *       another campaign, and prints the claims table (--merge: the merged
 *       lines instead).
 *
 * DETERMINISM
 *   A run is named by (target, config, fault, device, seed) and the
 *   campaign's bounds; its index k in the expanded list depends only on the
 *   file, so shard I of N holds the same runs on every machine.  The
 *   campaign id is a 64-bit FNV-1a hash of the normalized definition (the
 *   bounds and the expanded run list, campaign_normalized): two files that
 *   expand to the same runs in the same order are one campaign.  It guards
 *   against mixing results by mistake, not against forgery.
 *
 * EXIT STATUS
 *   --campaign: 0 every run of the shard was run and recorded (whatever
 *   its verdict: a broken engine is a finding, not a failure of the
 *   shard); 1 some run could not be set up (its line says why, verdict
 *   "setup"); 2 bad input, or a line could not be written.
 *   --report: 0 the table was printed; 2 bad input.
 */
#ifndef TORTURE_CAMPAIGN_H
#define TORTURE_CAMPAIGN_H

#include <stddef.h>
#include <stdint.h>

#include "adapters.h"

/* Bounds on hostile input. */
#define CAMPAIGN_LINE_MAX 1024      /* bytes in a campaign-file line      */
#define CAMPAIGN_LINES_MAX 10000    /* lines in a campaign file           */
#define CAMPAIGN_RUNS_MAX 100000    /* runs in an expanded campaign       */
#define CAMPAIGN_WORDS_MAX 64       /* words in one value                 */
#define CAMPAIGN_SHARDS_MAX 100000  /* N of --shard I/N                   */
#define CAMPAIGN_CYCLES_MAX 1000000000ull
#define CAMPAIGN_SEED_MAX 999999999999999ull
#define CAMPAIGN_JSON_MAX 4096      /* bytes in a result line (report)    */
#define CAMPAIGN_RESULT_LINES_MAX 1000000 /* lines --report reads in all  */
#define CAMPAIGN_FIELDS_MAX 64      /* fields in one JSON object          */
#define CAMPAIGN_VALUE_MAX 1024     /* bytes kept of one JSON value       */
#define CAMPAIGN_KEY_MAX 32         /* bytes of a JSON key, NUL included  */

/* The faults a campaign names, each a set of torture flags. */
typedef enum campaign_fault {
	CAMPAIGN_KILL = 0,      /* kill:      a process kill, no power cut   */
	CAMPAIGN_POWER_CUT = 1, /* power-cut: --power-loss --device DEVICE   */
	CAMPAIGN_EIO = 2,       /* eio:       --power-loss --device DEVICE
	                           --fail fdatasync:EIO:p=0.02 --fail
	                           fsync:EIO:p=0.02 --fsync-profile ext4     */
	CAMPAIGN_FAULTS
} campaign_fault;

/* One run of the expanded list. */
typedef struct campaign_run {
	const torture_adapter *adapter; /* the engine adapter              */
	const char *config;             /* one of adapter->configs         */
	int fault;                      /* a campaign_fault                */
	int device;                     /* a faultsim_device; -1 for kill  */
	uint64_t seed;                  /* --seed                          */
} campaign_run;

typedef struct campaign {
	campaign_run *runs;    /* the expanded run list, in campaign order   */
	size_t nruns;
	uint64_t cycles;       /* per-run cycle bound (--cycles)             */
	uint64_t duration_ns;  /* per-run time bound (--duration)            */
	uint64_t kill_every_ns;/* every run's --kill-every; 0: the adapter's */
	char id[17];           /* 16 lowercase hex digits                    */
} campaign;

/* Reads and expands the campaign file PATH into C.  Returns 0, or -1 after
 * printing "torture: PATH:LINE: what is wrong" on stderr (C is then empty:
 * nothing to free). */
int campaign_parse(const char *path, campaign *c);

/* Frees what campaign_parse allocated. */
void campaign_free(campaign *c);

/* The normalized definition the id hashes: "keel-campaign 1\n", the
 * bounds ("kill_every_ns N" only when the file sets it), then one
 * "NAME:CONFIG FAULT DEVICE SEED\n" per run.  Writes at
 * most CAP bytes (NUL included) and returns the full length. */
size_t campaign_normalized(const campaign *c, char *buf, size_t cap);

/* Parses "I/N" (0 <= I < N <= CAMPAIGN_SHARDS_MAX).  0, or -1 with the
 * reason in WHY. */
int campaign_shard_parse(const char *s, uint64_t *i, uint64_t *n, char *why,
                         size_t cap);

/* Names: "kill", "power-cut", "eio"; a device's, or "none" for -1. */
const char *campaign_fault_name(int fault);
int campaign_fault_parse(const char *s); /* -1 when unknown */
const char *campaign_device_name(int device);

/* torture --campaign ...: the whole mode.  Returns the exit status. */
int campaign_main(int argc, char **argv);

/* torture --report ...: the whole mode (campaign_report.c). */
int campaign_report_main(int argc, char **argv);

/* True when ARGV asks for one of the two modes above. */
int campaign_wanted(int argc, char **argv, int *report);

/* ---- flat JSON objects (campaign_json.c) --------------------------------
 * The result lines and torture's --json summary of an adapter run are one
 * flat object: string, number, true, false and null values, no nesting.
 * The parser works on the caller's buffer and fields; it never allocates. */
typedef enum campaign_json_kind {
	CAMPAIGN_JSON_STRING, CAMPAIGN_JSON_NUMBER, CAMPAIGN_JSON_TRUE,
	CAMPAIGN_JSON_FALSE, CAMPAIGN_JSON_NULL
} campaign_json_kind;

typedef struct campaign_field {
	char key[CAMPAIGN_KEY_MAX];   /* the key, unescaped                 */
	char value[CAMPAIGN_VALUE_MAX]; /* a string unescaped (cut to fit;
	                                   \u escapes above 0x7e become '?'),
	                                   a number's text, or ""            */
	int kind;                     /* a campaign_json_kind               */
} campaign_field;

/* Parses the object in TEXT[0..LEN) (surrounding white space allowed)
 * into at most MAX fields.  Returns the number of fields, or -1 with the
 * reason and its byte offset in WHY: not an object, a nested value, a bad
 * escape, a control byte or NUL in a string, a key longer than
 * CAMPAIGN_KEY_MAX - 1 bytes, a key given twice, more than MAX fields,
 * anything after the closing brace. */
int campaign_json_parse(const char *text, size_t len, campaign_field *fields,
                        int max, char *why, size_t cap);

/* The field named KEY, or NULL. */
const campaign_field *campaign_json_get(const campaign_field *fields, int n,
                                        const char *key);

/* Appends S to BUF as a JSON string (quotes, escapes), at most MAXLEN
 * bytes of S; keeps *N at CAP - 1 once full.  Control bytes become \u00XX. */
void campaign_json_string(char *buf, size_t *n, size_t cap, const char *s,
                          size_t maxlen);

#endif /* TORTURE_CAMPAIGN_H */
