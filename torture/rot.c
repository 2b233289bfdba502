/*
 * rot.c -- --bit-rot (see rot.h).
 */
#include "rot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "keel.h"
#include "value.h"

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	struct stat st;

	if (in >= 0 && fstat(in, &st) == 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out >= 0) {
		off_t left = st.st_size;
		while (left > 0) {
			ssize_t n = copy_file_range(in, NULL, out, NULL,
			                            (size_t)left, 0);
			if (n <= 0)
				break;
			left -= n;
		}
		rc = left == 0 ? 0 : -1;
	}
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0)
		rc = -1;
	return rc;
}

/* The head at OFF in FD into *H (its off set): 0, or -1. */
static int read_head(int fd, uint64_t off, keel_head *h)
{
	uint8_t buf[KEEL_HEAD_SIZE];

	if (pread(fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf) ||
	    keel_head_decode(buf, h) != KEEL_OK)
		return -1;
	h->off = off;
	return 0;
}

/* The region start of the head at OFF in FD, or 0. */
static uint64_t head_region(int fd, uint64_t off)
{
	keel_head h;
	return read_head(fd, off, &h) == 0 ? h.region_start : 0;
}

/*
 * Where the damage may go in PATH.  Two zones, both synced bytes before the
 * newest commit's region (its own bytes may be a torn tail, which recovery
 * may cut):
 *  - BELOW: below the region of the newest hinted head when there is one,
 *    else below the newest commit's region.  Recovery does not read there;
 *    only the reads' own checks stand between the damage and the reader, so
 *    reads must fail or be right.
 *  - HINTED: the hinted commit's region and head, when a later commit
 *    follows it.  Recovery starts from that hint and checks its region, so
 *    damage there must make the open refuse the store (KEEL_ECORRUPT): from
 *    any other starting point the walk crosses that region, finds its
 *    chained CRC broken, and a valid head beyond it.  Empty (from == to)
 *    when there is no such hint.
 *  - PENDING: one DELTA record (format 3) of a pending head whose region
 *    lies below BELOW's end, picked by SEED among all of them.  Recovery
 *    reads the whole pending span and checks every DELTA record's CRC and
 *    its head's delta_crc, wherever the hint points, so damage there must
 *    make the open refuse the store too -- below the hinted commit, where
 *    no chained CRC is checked at open, that check is the only one.  Empty
 *    when nothing is pending there.
 * All 0 when unknown.
 */
typedef struct rot_zones {
	uint64_t below_end;
	uint64_t hinted_from, hinted_to;
	uint64_t pending_from, pending_to;
} rot_zones;

/* PENDING (above): the newest head is NEWEST; BELOW is BELOW's end. */
static void find_pending(int fd, const keel_head *newest, uint64_t below,
                         uint64_t seed, rot_zones *z)
{
	keel_head h;
	uint64_t span, at, seen = 0;

	if (newest->pending_heads < 2 || newest->pending_heads > KEEL_CKPT_HEADS ||
	    newest->pending_bytes > newest->off)
		return;
	span = newest->off - newest->pending_bytes;
	/* one step per pending head: bounded by KEEL_CKPT_HEADS (D3) */
	for (at = newest->prev_head, h = *newest; h.pending_heads > 1;
	     at = h.prev_head) {
		uint8_t rh[KEEL_REC_HDR];
		keel_rec_hdr r;
		if (at < span || at >= h.off || read_head(fd, at, &h) < 0)
			return; /* not the span recovery took: leave it */
		if (h.delta_off < span || h.delta_off >= h.off || h.off >= below ||
		    pread(fd, rh, sizeof(rh), (off_t)h.delta_off) !=
		    (ssize_t)sizeof(rh) || keel_rec_decode(rh, &r) != KEEL_OK ||
		    r.type != KEEL_REC_DELTA)
			continue;
		/* reservoir: each DELTA record picked with chance 1/seen */
		seen++;
		if (mix(seed ^ (2 + seen)) % seen == 0) {
			z->pending_from = h.delta_off;
			/* the payload's end: the alignment bytes after it
			 * are in no CRC but the region's, which open does
			 * not check below the hint */
			z->pending_to = h.delta_off + KEEL_REC_HDR + r.len;
		}
	}
}

static void find_zones(const char *path, uint64_t seed, rot_zones *z)
{
	keel_options ko = {.flags = KEEL_RDONLY | KEEL_RDONLY_UNSYNCED |
	                   KEEL_NOCREATE};
	keel_recovery rec;
	keel_db *db;
	int fd;

	memset(z, 0, sizeof(*z));
	if (keel_open(path, &ko, &db) != KEEL_OK)
		return;
	if (keel_recovery_info(db, &rec) == KEEL_OK &&
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		keel_hint best = {0, 0}, hint;
		keel_head newest;
		uint64_t start = 0;
		if (read_head(fd, rec.head_offset, &newest) == 0)
			start = newest.region_start;
		for (unsigned slot = 0; slot < 2; slot++) {
			uint8_t hb[KEEL_HINT_SIZE];
			if (pread(fd, hb, sizeof(hb), (off_t)KEEL_HINT_OFF(slot)) ==
			    (ssize_t)sizeof(hb) &&
			    keel_hint_decode(hb, &hint) == KEEL_OK &&
			    hint.txid > best.txid && hint.txid <= rec.txid)
				best = hint;
		}
		uint64_t below = best.txid ? head_region(fd, best.head_off) : 0;
		z->below_end = below > KEEL_DATA_START && below < start ? below
		                                                        : start;
		if (best.txid && best.txid < rec.txid && below > KEEL_DATA_START &&
		    best.head_off > below) {
			z->hinted_from = below;
			z->hinted_to = best.head_off + KEEL_HEAD_SIZE;
		}
		if (start)
			find_pending(fd, &newest, z->below_end, seed, z);
		close(fd);
	}
	keel_close(db);
}

static int flip(const char *path, uint64_t off, unsigned bit)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), rc = -1;
	uint8_t b;

	if (fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1) {
		b ^= (uint8_t)(1u << bit);
		rc = pwrite(fd, &b, 1, (off_t)off) == 1 ? 0 : -1;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

static int wrong(report *r, uint64_t off, const char *fmt, uint32_t k)
{
	char what[300], detail[160];

	snprintf(detail, sizeof(detail), fmt, k);
	snprintf(what, sizeof(what), "bit rot at offset %" PRIu64 ": %s "
	         "(reads must fail or be right)", off, detail);
	r->violations[ORACLE_PHANTOM]++;
	report_violation(r, "phantom", what);
	return 1;
}

/* Reads the damaged copy: 1 when it answered with an error somewhere, 0
 * when it showed exactly MODEL's state; violations go to *BAD. */
static int read_copy(const char *copy, uint64_t off, const oracle *model,
                     report *r, int *bad)
{
	keel_options ko = {.flags = KEEL_RDONLY | KEEL_NOCREATE};
	uint32_t keys = oracle_keys(model), k, listed = 0, present = 0;
	keel_snapshot *snap = NULL;
	keel_iter *it = NULL;
	keel_check_result cr;
	const void *key;
	size_t klen;
	keel_view v;
	keel_db *db;
	int rc, err = 0;

	if (keel_open(copy, &ko, &db) != KEEL_OK)
		return 1;
	rc = keel_snapshot_open(db, &snap);
	if (rc == KEEL_OK)
		rc = keel_iter_open(snap, NULL, 0, NULL, 0, &it);
	while (rc == KEEL_OK &&
	       (rc = keel_iter_next(it, &key, &klen, &v)) == KEEL_OK) {
		const oracle_key_state *s;
		if (value_key_parse(key, klen, &k) < 0 || k >= keys) {
			*bad += wrong(r, off, "a key never written (%u keys)",
			              keys);
			continue;
		}
		s = oracle_key(model, k);
		listed++;
		if (!s->present || s->rev != v.rev ||
		    value_equal(&s->id, v.data, v.len) < 0)
			*bad += wrong(r, off, "key %u came back with wrong "
			              "bytes or revision", k);
	}
	err = rc != KEEL_ENOTFOUND;
	if (it)
		keel_iter_close(it);
	if (snap)
		keel_snapshot_close(snap);
	for (k = 0; k < keys; k++)
		present += oracle_key(model, k)->present != 0;
	if (!err && listed != present) {
		keel_recovery rec;
		char why[200];
		memset(&rec, 0, sizeof(rec));
		(void)keel_recovery_info(db, &rec);
		snprintf(why, sizeof(why), "%%u keys silently missing; the "
		         "copy's recovery settled on txid %" PRIu64 " (status "
		         "%d: %.80s)", rec.txid, (int)rec.status, rec.reason);
		*bad += wrong(r, off, why, present - listed);
	}
	memset(&cr, 0, sizeof(cr));
	if (keel_check(db, NULL, NULL, &cr) != KEEL_OK)
		err = 1;
	keel_close(db);
	return err;
}

int rot_check(const char *path, uint64_t seed, const oracle *model,
              report *r)
{
	char copy[4200];
	enum { BELOW, HINTED, PENDING } zone[3];
	rot_zones z;
	uint64_t off, from = 0, to = 0;
	unsigned nzones = 0, pick;
	int bad = 0;

	find_zones(path, seed, &z);
	/* the zones there are, each as likely */
	if (z.below_end > KEEL_DATA_START)
		zone[nzones++] = BELOW;
	if (z.hinted_to > z.hinted_from)
		zone[nzones++] = HINTED;
	if (z.pending_to > z.pending_from)
		zone[nzones++] = PENDING;
	if (nzones == 0)
		return 0; /* nothing synced before the newest region yet */
	pick = zone[mix(seed ^ 2) % nzones];
	if (pick == BELOW) {
		from = KEEL_DATA_START;
		to = z.below_end;
	} else if (pick == HINTED) {
		from = z.hinted_from;
		to = z.hinted_to;
	} else {
		from = z.pending_from;
		to = z.pending_to;
	}
	snprintf(copy, sizeof(copy), "%s.rot", path);
	if (copy_file(path, copy) < 0) {
		fprintf(stderr, "torture: --bit-rot: cannot copy %s to %s: %s\n",
		        path, copy, strerror(errno));
		(void)unlink(copy);
		return -1;
	}
	off = from + mix(seed) % (to - from);
	if (flip(copy, off, (unsigned)(mix(seed ^ 1) % 8)) < 0) {
		fprintf(stderr, "torture: --bit-rot: cannot damage %s: %s\n",
		        copy, strerror(errno));
		(void)unlink(copy);
		return -1;
	}
	r->rot_checks++;
	if (pick != BELOW) {
		keel_recovery rep;
		keel_options ko = {.flags = KEEL_RDONLY | KEEL_NOCREATE,
		                   .report = &rep};
		keel_db *db = NULL;
		const char *where = pick == HINTED
		                    ? "the region of the commit a hint names"
		                    : "a pending DELTA record";
		memset(&rep, 0, sizeof(rep));
		int rc = keel_open(copy, &ko, &db);
		if (pick == HINTED)
			r->rot_hinted++;
		else
			r->rot_pending++;
		r->rot_errors += rc != KEEL_OK;
		if (rc == KEEL_OK) {
			char what[300];
			snprintf(what, sizeof(what), "bit rot at offset %" PRIu64
			         ", in %s (%" PRIu64 "-%" PRIu64 "), which "
			         "recovery checks: the open must refuse the "
			         "store, and it opened", off, where, from, to);
			r->structure++;
			report_violation(r, "structure", what);
			bad = 1;
			keel_close(db);
		} else if (rc == KEEL_ECORRUPT &&
		           rep.status != KEEL_RECOVERY_CORRUPT) {
			/* refused, but not by recovery: the report, which
			 * keel check and salvage go by, must name the damage
			 * (docs/engine.md, claim 5) */
			char what[300];
			snprintf(what, sizeof(what), "bit rot at offset %" PRIu64
			         ", in %s (%" PRIu64 "-%" PRIu64 "): the open "
			         "refused the store, but its recovery report says "
			         "status %d, not damage", off, where, from, to,
			         (int)rep.status);
			r->structure++;
			report_violation(r, "structure", what);
			bad = 1;
		}
	} else {
		r->rot_errors += (uint64_t)read_copy(copy, off, model, r, &bad);
	}
	if (!bad)
		(void)unlink(copy);
	return bad;
}
