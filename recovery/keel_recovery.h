/*
 * keel_recovery.h -- what recovery and the integrity check report.  Floor 1:
 * recovery (recover.c) and the check (verify.c) fill these; keel.h hands
 * them out through keel_options.report, keel_recovery_info and keel_check.
 * Part of the public interface: keel.h includes it, and it is installed
 * beside it.
 */
#ifndef KEEL_RECOVERY_H
#define KEEL_RECOVERY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what recovery did (keel_open, keel_recovery_info) ------------------ */
typedef enum keel_recovery_status {
	KEEL_RECOVERY_OK = 0,        /* the file ended cleanly at the newest head */
	KEEL_RECOVERY_TRUNCATED = 1, /* a torn tail was cut at 'offset'           */
	KEEL_RECOVERY_CORRUPT = 2,   /* damage at 'offset' (salvage only)         */
} keel_recovery_status;

typedef struct keel_recovery {
	keel_recovery_status status;
	uint64_t offset;     /* where the tail was cut or damage was found       */
	uint64_t head_offset;/* the head recovery settled on                     */
	uint64_t txid;       /* its transaction id                               */
	uint64_t bytes_read; /* bytes recovery read (bounded, see keel.h)        */
	char reason[128];    /* what failed, in words ("" when OK)               */
} keel_recovery;

/* ---- what the integrity check found (keel_check) -------------------------
 * REPORT is called for each of the first KEEL_CHECK_REPORT_MAX problems with
 * its file offset and a description; when there were more, once more at the
 * end with the head's offset and "and N more problems not listed". */
#define KEEL_CHECK_REPORT_MAX 100u
typedef struct keel_check_result {
	uint64_t records;      /* records verified                          */
	uint64_t keys;         /* keys found                                */
	uint64_t bytes;        /* bytes verified                            */
	uint64_t problems;     /* problems found                            */
	uint64_t first_offset; /* offset of the first problem               */
	char first_reason[160];/* the first problem in words                */
} keel_check_result;
typedef void (*keel_check_report_fn)(void *arg, uint64_t offset,
                                     const char *what);

#ifdef __cplusplus
}
#endif
#endif /* KEEL_RECOVERY_H */
