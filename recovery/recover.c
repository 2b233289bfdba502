/*
 * recover.c -- finding the newest valid head (invariants in recover.h).
 *
 *   superblock --> newer valid hint (or the first head) --> check its region
 *      --> walk forward, accepting each head whose chain checks out
 *      --> at the stop: zeros = clean end; otherwise look past it for a later
 *          valid head: none = torn tail (TRUNCATED), one = damage (CORRUPT)
 */
#include "recover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

#define RBUF_SIZE ((size_t)1 << 20)

/* A read-ahead buffer over the file so the walk makes few syscalls. */
typedef struct rbuf {
	const keel_io *io;
	int fd;
	uint64_t file_size;
	uint8_t *buf;
	uint64_t at;   /* file offset of buf[0]  */
	size_t len;    /* valid bytes in buf     */
	size_t ahead;  /* bytes the next refill reads: 64 KiB, doubling up to
	                  RBUF_SIZE, so a walk that finds one small commit (a
	                  reader's refresh, a clean open) reads little */
	uint64_t *bytes_read;
	bool device;   /* read the device, not the page cache (pread_device) */
} rbuf;

/* keel_io_pread_all through pread_device: 0, -ENODATA short of LEN (the
 * file's end), -EOPNOTSUPP, or a negative errno. */
static int pread_device_all(const keel_io *io, int fd, uint8_t *buf,
                            size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = io->pread_device(io->ctx, fd, buf, len, off);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ENODATA;
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Makes [off, off+len) available (len <= RBUF_SIZE); returns a pointer to it,
 * or NULL with *err (0 when the range is past the end of the file). */
static const uint8_t *rbuf_get(rbuf *r, uint64_t off, size_t len, int *err)
{
	*err = 0;
	if (off + len > r->file_size)
		return NULL;
	if (off >= r->at && off + len <= r->at + r->len)
		return r->buf + (off - r->at);
	size_t want = len > r->ahead ? len : r->ahead;
	if (r->ahead < RBUF_SIZE)
		r->ahead *= 2;
	if (off + want > r->file_size)
		want = (size_t)(r->file_size - off);
	int e = r->device ? pread_device_all(r->io, r->fd, r->buf, want, off)
	                  : -EOPNOTSUPP;
	if (e == -EOPNOTSUPP) { /* no device reads here: trust the cache */
		r->device = false;
		e = keel_io_pread_all(r->io, r->fd, r->buf, want, off);
	}
	if (e) {
		*err = e == -ENODATA ? 0 : KEEL_EIO; /* shrank under us: the end */
		r->len = 0;
		return NULL;
	}
	*r->bytes_read += want;
	r->at = off;
	r->len = want;
	return r->buf;
}

/* Reads [off, off+len) into BUF without moving the window, so a scan that
 * looks aside keeps its place: re-reading a 1 MiB window for each of a
 * crafted file's many look-asides would make the scan's reads grow with
 * the square of the file's size.  0, -ENODATA past the end, or a negative
 * errno. */
static int rbuf_read_aside(rbuf *r, uint64_t off, uint8_t *buf, size_t len)
{
	if (off + len > r->file_size)
		return -ENODATA;
	int e = r->device ? pread_device_all(r->io, r->fd, buf, len, off)
	                  : -EOPNOTSUPP;
	if (e == -EOPNOTSUPP)
		e = keel_io_pread_all(r->io, r->fd, buf, len, off);
	if (e == 0)
		*r->bytes_read += len;
	return e;
}

/* CRC of [off, off+len) extended from CRC. */
static int rbuf_crc(rbuf *r, uint64_t off, uint64_t len, uint32_t *crc)
{
	int err;
	while (len > 0) {
		size_t n = len < RBUF_SIZE ? (size_t)len : RBUF_SIZE;
		const uint8_t *p = rbuf_get(r, off, n, &err);
		if (!p)
			return err ? err : KEEL_ECORRUPT;
		*crc = keel_crc32c(*crc, p, n);
		off += n;
		len -= n;
	}
	return KEEL_OK;
}

static int rbuf_init(rbuf *r, const keel_io *io, int fd, uint64_t file_size,
                     uint64_t *bytes_read)
{
	r->io = io;
	r->fd = fd;
	r->file_size = file_size;
	r->at = 0;
	r->len = 0;
	r->ahead = (size_t)64 << 10;
	r->bytes_read = bytes_read;
	r->device = false;  /* walk() sets it for RECOVERY_READ_DEVICE */
	r->buf = malloc(RBUF_SIZE);
	return r->buf ? KEEL_OK : KEEL_ENOMEM;
}

int recovery_read_head(const keel_io *io, int fd, uint64_t off, keel_head *out)
{
	uint8_t buf[KEEL_HEAD_SIZE];
	if (off % 8 || off < KEEL_DATA_START)
		return KEEL_ECORRUPT;
	int e = keel_io_pread_all(io, fd, buf, sizeof(buf), off);
	if (e)
		return e == -ENODATA ? KEEL_ECORRUPT : KEEL_EIO; /* past the end */
	int rc = keel_head_decode(buf, out);
	out->off = off;
	return rc;
}

/* Does H continue PREV (everything but the region's CRC)? */
static bool head_follows(const keel_head *h, const keel_head *prev)
{
	return h->txid > prev->txid && h->prev_head == prev->off &&
	       h->region_start == prev->off + KEEL_HEAD_SIZE &&
	       h->file_id == prev->file_id && h->off >= h->region_start &&
	       (h->root_off == 0 || h->root_off < h->off) &&
	       keel_head_pending_sane(h); /* D3: a bounded pending span */
}

int recovery_check_region(const keel_io *io, int fd, const keel_head *head,
                          uint32_t prev_chain, uint64_t *bytes_read)
{
	rbuf r;
	uint64_t dummy = 0;
	int rc = rbuf_init(&r, io, fd, head->off, bytes_read ? bytes_read : &dummy);
	if (rc)
		return rc;
	uint32_t crc = prev_chain;
	rc = rbuf_crc(&r, head->region_start, head->off - head->region_start, &crc);
	if (rc == KEEL_OK && crc != head->chain_crc)
		rc = KEEL_ECORRUPT;
	free(r.buf);
	return rc;
}

/* Was the commit whose region starts at FROM, the one the walk failed in,
 * durable?  Commit groups append only after the previous group's sync
 * returned (engine/commit.c, invariant (3)), so a valid head H2 whose
 * predecessor H1 lies at or beyond FROM proves that H1's commit -- the one
 * holding the damage, or a later one -- had been durable: that is damage
 * behind a durable head.  H1 must read back: a head whose predecessor is
 * AFTER, or one naming an unreadable predecessor, proves nothing: under
 * power loss a commit's own head may reach the disk while part of its
 * region does not (a torn tail).  The search starts at FROM, not where the
 * walk stopped (STOP): a damaged record length can carry the walk past the
 * later heads.  It ends at the written data's end, a zero 4 KiB block at
 * or past STOP (one before STOP may be a value's bytes).  Returns 1
 * (damage behind a durable head), 0 (a torn tail) or KEEL_EIO: a failed
 * read never leads to a cut. */
static int later_head_exists(rbuf *r, uint64_t from, uint64_t stop,
                             const keel_head *after)
{
	int err = 0;
	for (uint64_t off = KEEL_ALIGN8(from); off + KEEL_HEAD_SIZE <= r->file_size;
	     off += 8) {
		if (off % KEEL_BLOCK == 0 && off >= stop) {
			const uint8_t *blk = rbuf_get(r, off, KEEL_BLOCK, &err);
			if (err)
				return err; /* unsure: never cut on a failed read */
			bool zero = blk != NULL;
			for (unsigned i = 0; blk && i < KEEL_BLOCK; i += 8)
				if (keel_ld64(blk + i)) {
					zero = false;
					break;
				}
			if (zero)
				return 0;
		}
		const uint8_t *p = rbuf_get(r, off, KEEL_HEAD_SIZE, &err);
		if (!p)
			return err;
		keel_head h2, h1;
		if (keel_ld32(p) != KEEL_REC_MAGIC || p[4] != KEEL_REC_HEAD ||
		    keel_head_decode(p, &h2) != KEEL_OK || h2.txid <= after->txid ||
		    h2.file_id != after->file_id || h2.prev_head < from ||
		    h2.prev_head >= off)
			continue;
		uint8_t prev[KEEL_HEAD_SIZE];
		int e = rbuf_read_aside(r, h2.prev_head, prev, sizeof(prev));
		if (e && e != -ENODATA)
			return KEEL_EIO; /* unsure: never cut on a failed read */
		if (!e && keel_head_decode(prev, &h1) == KEEL_OK && h1.txid < h2.txid &&
		    h1.txid > after->txid && h1.file_id == after->file_id)
			return 1;
	}
	return 0;
}

/* Under RECOVERY_TRUST_HEAD: finds the next head after CUR anywhere
 * ahead and takes it without looking at its region (deliberately wrong). */
static bool trusted_next_head(rbuf *r, uint64_t from, const keel_head *cur,
                              keel_head *out)
{
	int err;
	for (uint64_t off = KEEL_ALIGN8(from); off + KEEL_HEAD_SIZE <= r->file_size;
	     off += 8) {
		const uint8_t *p = rbuf_get(r, off, KEEL_HEAD_SIZE, &err);
		if (!p)
			return false;
		if (keel_ld32(p) != KEEL_REC_MAGIC || p[4] != KEEL_REC_HEAD ||
		    keel_head_decode(p, out) != KEEL_OK)
			continue;
		out->off = off;
		if (head_follows(out, cur))
			return true;
	}
	return false;
}

int recovery_walk(const keel_io *io, int fd, uint64_t file_size,
                  const keel_head *from, uint64_t max_txid, unsigned flags,
                  keel_head *newest,
                  uint64_t *stop, const char **why, uint64_t *bytes_read)
{
	rbuf r;
	int rc = rbuf_init(&r, io, fd, file_size, bytes_read), err;
	if (rc)
		return rc;
	r.device = (flags & RECOVERY_READ_DEVICE) && io->pread_device;
	keel_head cur = *from;
	uint64_t pos = cur.off + KEEL_HEAD_SIZE;
	uint32_t crc = cur.chain_crc;
	*why = NULL;
	for (;;) {
		const uint8_t *p = rbuf_get(&r, pos, KEEL_REC_HDR, &err);
		keel_rec_hdr h;
		keel_head nh;
		if (!p) {
			if (err) {
				rc = err;
				break;
			}
			if (pos != cur.off + KEEL_HEAD_SIZE)
				*why = "records run to the end of the file";
			else if (pos < file_size)
				*why = "partial record header at the end of the file";
			break;
		}
		if (keel_ld64(p) == 0 && keel_ld64(p + 8) == 0) {
			if (pos != cur.off + KEEL_HEAD_SIZE)
				*why = "commit without a head";
			break;
		}
		if (keel_rec_decode(p, &h) != KEEL_OK) {
			*why = "bad record header";
			break;
		}
		uint64_t size = keel_rec_size(h.len);
		if (size > file_size - pos) {
			*why = "record runs past the end of the file";
			break;
		}
		if (h.type != KEEL_REC_HEAD) {
			if ((rc = rbuf_crc(&r, pos, size, &crc)) != KEEL_OK) {
				if (rc == KEEL_ECORRUPT)
					rc = KEEL_OK;
				*why = "short record";
				break;
			}
			pos += size;
			continue;
		}
		p = rbuf_get(&r, pos, KEEL_HEAD_SIZE, &err);
		if (!p || keel_head_decode(p, &nh) != KEEL_OK) {
			*why = "head record checksum mismatch";
			break;
		}
		nh.off = pos;
		if (nh.txid > max_txid)
			break; /* as far as the caller may look: a clean stop */
		if (!head_follows(&nh, &cur)) {
			*why = "head does not continue the chain";
			break;
		}
		if (nh.chain_crc != crc && !(flags & RECOVERY_TRUST_HEAD)) {
			*why = "region checksum mismatch";
			break;
		}
		cur = nh;
		crc = cur.chain_crc;
		pos = cur.off + KEEL_HEAD_SIZE;
	}
	if ((flags & RECOVERY_TRUST_HEAD) && rc == KEEL_OK) {
		keel_head nh;
		/* The positive control: believe any head that claims to follow. */
		while (trusted_next_head(&r, cur.off + KEEL_HEAD_SIZE, &cur, &nh) &&
		       nh.txid <= max_txid)
			cur = nh;
		pos = cur.off + KEEL_HEAD_SIZE;
		*why = NULL;
	}
	if (rc == KEEL_OK && *why) {
		int later = later_head_exists(&r, cur.off + KEEL_HEAD_SIZE, pos,
		                              &cur);
		if (later < 0)
			rc = later;
		else if (later)
			rc = KEEL_ECORRUPT; /* damage behind a durable head */
	}
	*newest = cur;
	*stop = pos;
	free(r.buf);
	return rc;
}

/* The newer of the two hints whose head and region check out: KEEL_OK,
 * KEEL_ENOTFOUND (no usable hint), or KEEL_EIO -- a failing read is never
 * mistaken for a bad hint. */
static int start_from_hint(const keel_io *io, int fd, uint64_t file_id,
                           keel_head *out, uint64_t *bytes_read)
{
	keel_head best = {0};
	bool found = false;

	for (unsigned slot = 0; slot < 2; slot++) {
		uint8_t buf[KEEL_HINT_SIZE];
		keel_hint hint;
		keel_head h, prev;
		int e = keel_io_pread_all(io, fd, buf, sizeof(buf), KEEL_HINT_OFF(slot));
		if (e && e != -ENODATA)
			return KEEL_EIO;
		if (e)
			continue;
		*bytes_read += sizeof(buf);
		if (keel_hint_decode(buf, &hint) != KEEL_OK ||
		    (found && hint.txid <= best.txid) || hint.txid == 0)
			continue;
		int rc = recovery_read_head(io, fd, hint.head_off, &h);
		if (rc == KEEL_OK && h.txid == hint.txid && h.file_id == file_id)
			rc = recovery_read_head(io, fd, h.prev_head, &prev);
		else if (rc == KEEL_OK)
			rc = KEEL_ECORRUPT;
		if (rc == KEEL_OK)
			rc = head_follows(&h, &prev)
			             ? recovery_check_region(io, fd, &h, prev.chain_crc,
			                                     bytes_read)
			             : KEEL_ECORRUPT;
		if (rc == KEEL_EIO || rc == KEEL_ENOMEM)
			return rc;
		if (rc)
			continue;
		*bytes_read += 2 * KEEL_HEAD_SIZE;
		best = h;
		found = true;
	}
	*out = best;
	return found ? KEEL_OK : KEEL_ENOTFOUND;
}

/* After a walk that read the device and ended cleanly at AT: does the page
 * cache show a record there all the same?  Then it holds pages a failed
 * sync left, and the caller cuts them (a truncate drops them from the
 * cache too, so no reader process takes them either).  1, 0, KEEL_EIO. */
static int cache_holds_more(const keel_io *io, int fd, uint64_t file_size,
                            uint64_t at)
{
	uint8_t hdr[KEEL_REC_HDR];
	if (at + sizeof(hdr) > file_size)
		return 0;
	int e = keel_io_pread_all(io, fd, hdr, sizeof(hdr), at);
	if (e)
		return e == -ENODATA ? 0 : KEEL_EIO;
	return keel_ld32(hdr) == KEEL_REC_MAGIC;
}

/* A region's chain CRC says only that something in [FROM, TO) changed.
 * Each record carries its own CRC: finds the first record there that fails
 * it (or whose header is bad), so damage is reported where it is.
 * *BAD = its offset; TO when every record checks out (the head at TO is
 * then the one that does not match).  KEEL_OK, KEEL_EIO or KEEL_ENOMEM. */
static int region_first_bad_record(const keel_io *io, int fd, uint64_t from,
                                   uint64_t to, uint64_t *bad)
{
	size_t cap = (size_t)1 << 20;
	uint8_t *buf = malloc(cap);
	int rc = KEEL_OK;

	if (!buf)
		return KEEL_ENOMEM;
	*bad = to;
	for (uint64_t off = from; off < to;) {
		keel_rec_hdr h;
		int e = keel_io_pread_all(io, fd, buf, KEEL_REC_HDR, off);
		if (e) {
			rc = e == -ENODATA ? KEEL_OK : KEEL_EIO;
			if (e == -ENODATA)
				*bad = off;
			break;
		}
		if (keel_rec_decode(buf, &h) != KEEL_OK ||
		    keel_rec_size(h.len) > to - off) {
			*bad = off;
			break;
		}
		uint32_t crc = keel_crc32c(0, buf, 12);
		for (uint64_t done = 0; done < h.len;) {
			size_t n = h.len - done < cap ? (size_t)(h.len - done) : cap;
			e = keel_io_pread_all(io, fd, buf, n, off + KEEL_REC_HDR + done);
			if (e) {
				rc = KEEL_EIO;
				goto out_free;
			}
			crc = keel_crc32c(crc, buf, n);
			done += n;
		}
		if (crc != h.crc) {
			*bad = off;
			break;
		}
		off += keel_rec_size(h.len);
	}
out_free:
	free(buf);
	return rc;
}

/* Checks the DELTA record at OFF inside BUF (the span read from SPAN_AT)
 * against HEAD: its crc and its entries.  NULL when fine, else why. */
static const char *delta_check(const uint8_t *buf, uint64_t span_at,
                               uint64_t len, const keel_head *head,
                               uint64_t delta_off, uint32_t delta_len)
{
	if (delta_off < span_at || delta_off - span_at + KEEL_REC_HDR > len)
		return "DELTA record outside the pending span";
	const uint8_t *rec = buf + (delta_off - span_at);
	keel_rec_hdr h;
	if (keel_rec_decode(rec, &h) != KEEL_OK || h.type != KEEL_REC_DELTA ||
	    h.len != delta_len || keel_rec_crc(rec, h.len) != h.crc ||
	    h.crc != head->delta_crc)
		return "DELTA record fails its checksum or its head's delta_crc";
	if (!keel_delta_valid(rec + KEEL_REC_HDR, h.len, head->txid, delta_off))
		return "DELTA record entries malformed";
	return NULL;
}

int recovery_pending(const keel_io *io, int fd, const keel_head *head,
                     const keel_head *from, recovery_delta **out, size_t *n,
                     keel_head *good, uint64_t *bad, const char **why,
                     uint64_t *bytes_read)
{
	*out = NULL;
	*n = 0;
	*why = NULL;
	*good = *head;
	if (head->pending_heads == 0)
		return KEEL_OK;
	if (!keel_head_pending_sane(head) ||
	    head->pending_bytes + KEEL_HEAD_SIZE + KEEL_DATA_START > head->off) {
		*bad = head->off;
		*why = "head claims a pending span past the bounds";
		return KEEL_ECORRUPT;
	}
	uint64_t span = head->off - head->pending_bytes;
	keel_head prev = {.off = span - KEEL_HEAD_SIZE, .root_off = head->root_off,
	                  .root_crc = head->root_crc, .file_id = head->file_id};
	if (from) {
		uint64_t from_span = from->pending_heads
		                     ? from->off - from->pending_bytes
		                     : from->off + KEEL_HEAD_SIZE;
		if (from_span != span || from->root_off != head->root_off ||
		    from->root_crc != head->root_crc || from->off >= head->off)
			from = NULL; /* not the same span: walk all of it */
		else
			prev = *from;
	}
	uint64_t at = prev.off + KEEL_HEAD_SIZE, end = head->off + KEEL_HEAD_SIZE;
	uint64_t len = end - at; /* <= KEEL_PENDING_BYTES_MAX + a head */
	uint8_t *buf = malloc(len);
	recovery_delta *list = calloc(head->pending_heads, sizeof(*list));
	int rc = KEEL_OK;
	if (!buf || !list) {
		rc = KEEL_ENOMEM;
		goto out_free;
	}
	int e = keel_io_pread_all(io, fd, buf, len, at);
	if (e) {
		rc = e == -ENODATA ? KEEL_ECORRUPT : KEEL_EIO;
		*bad = at;
		*why = "pending span runs past the end of the file";
		goto out_free;
	}
	*bytes_read += len;
	size_t count = 0;
	uint64_t pos = at, delta_off = 0;
	uint32_t delta_len = 0;
	bool have_prev = from != NULL; /* is PREV a head with a txid? */
	while (pos < end && !*why) {
		keel_rec_hdr h;
		const uint8_t *p = buf + (pos - at);
		if (end - pos < KEEL_REC_HDR || keel_rec_decode(p, &h) != KEEL_OK ||
		    keel_rec_size(h.len) > end - pos) {
			*why = "bad record in the pending span";
			break;
		}
		uint64_t size = keel_rec_size(h.len);
		if (h.type == KEEL_REC_DELTA) {
			if (delta_off) {
				*why = "two DELTA records in one commit";
				break;
			}
			delta_off = pos;
			delta_len = h.len;
		} else if (h.type == KEEL_REC_HEAD) {
			keel_head nh;
			if (h.len != KEEL_HEAD_PAYLOAD ||
			    keel_head_decode(p, &nh) != KEEL_OK) {
				*why = "pending head fails its checksum";
				break;
			}
			nh.off = pos;
			if (nh.prev_head != prev.off ||
			    nh.region_start != prev.off + KEEL_HEAD_SIZE ||
			    nh.file_id != head->file_id ||
			    (have_prev && nh.txid <= prev.txid) ||
			    nh.root_off != head->root_off ||
			    nh.root_crc != head->root_crc ||
			    nh.pending_heads != prev.pending_heads + 1 ||
			    nh.off - nh.pending_bytes != span ||
			    nh.delta_off != delta_off || !delta_off ||
			    count >= head->pending_heads ||
			    !keel_head_pending_sane(&nh)) {
				*why = "pending head does not continue the span";
				break;
			}
			if ((*why = delta_check(buf, at, len, &nh, delta_off,
			                        delta_len))) {
				pos = delta_off;
				break;
			}
			list[count++] = (recovery_delta){.off = delta_off,
			                                 .txid = nh.txid,
			                                 .crc = nh.delta_crc};
			prev = nh;
			have_prev = true;
			*good = nh;
			delta_off = 0;
		} else if (h.type != KEEL_REC_VALUE && h.type != KEEL_REC_PAD) {
			*why = "tree node in the pending span";
			break;
		}
		pos += size;
	}
	if (!*why && (prev.off != head->off || prev.txid != head->txid))
		*why = "pending span does not end at its head";
	if (*why) {
		rc = KEEL_ECORRUPT;
		*bad = pos;
		if (count == 0 && !from) { /* settle on the head before the span */
			keel_head c;
			int hr = recovery_read_head(io, fd, span - KEEL_HEAD_SIZE, &c);
			if (hr == KEEL_EIO) {
				rc = hr;
				goto out_free;
			}
			if (hr || c.pending_heads || c.root_off != head->root_off ||
			    c.file_id != head->file_id)
				*good = (keel_head){0}; /* nothing to settle on */
			else
				*good = c;
		} else if (count == 0) {
			*good = *from;
		}
	}
	*out = list;
	*n = count;
	list = NULL;
out_free:
	free(buf);
	free(list);
	return rc;
}

/* Step 5 for the head recovery settled on: its pending DELTA records.
 * Damage there is behind a durable head: KEEL_ECORRUPT, or under
 * RECOVERY_SALVAGE the newest head before it whose own span checks out. */
static int find_pending(const keel_io *io, int fd, unsigned flags,
                        recovery_result *out)
{
	keel_head good;
	uint64_t bad = 0;
	const char *why;
	int rc = recovery_pending(io, fd, &out->head, NULL, &out->deltas,
	                          &out->ndeltas, &good, &bad, &why,
	                          &out->bytes_read);
	if (rc != KEEL_ECORRUPT)
		return rc;
	out->status = KEEL_RECOVERY_CORRUPT;
	out->offset = bad;
	snprintf(out->reason, sizeof(out->reason), "%s (behind the durable "
	         "head at %llu)", why, (unsigned long long)out->head.off);
	if (!(flags & RECOVERY_SALVAGE) || good.off == 0) {
		free(out->deltas);
		out->deltas = NULL;
		out->ndeltas = 0;
		return KEEL_ECORRUPT;
	}
	out->head = good;
	return KEEL_OK;
}

static int find_newest(const keel_io *io, int fd, unsigned flags,
                       uint64_t max_txid, recovery_result *out);

int recovery_find(const keel_io *io, int fd, unsigned flags,
                  uint64_t max_txid, recovery_result *out)
{
	int rc = find_newest(io, fd, flags, max_txid, out);
	if (rc != KEEL_OK) { /* the pending list belongs to a success only */
		free(out->deltas);
		out->deltas = NULL;
		out->ndeltas = 0;
	}
	return rc;
}

static int find_newest(const keel_io *io, int fd, unsigned flags,
                       uint64_t max_txid, recovery_result *out)
{
	uint8_t sb[KEEL_SUPER_SIZE];
	int is_reg, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = io->fstat(io->ctx, fd, &out->file_size, &is_reg)))
		return KEEL_EIO;
	if (!is_reg)
		return KEEL_EISDIR;
	if (out->file_size < KEEL_SUPER_SIZE)
		return KEEL_ENOTKEEL;
	if (keel_io_pread_all(io, fd, sb, sizeof(sb), 0))
		return KEEL_EIO;
	out->bytes_read += sizeof(sb);
	if ((rc = keel_super_decode(sb, &out->super))) {
		/* Say what is wrong with a superblock that is ours. */
		if (rc == KEEL_ECORRUPT) {
			out->status = KEEL_RECOVERY_CORRUPT;
			snprintf(out->reason, sizeof(out->reason), "%s",
			         keel_ld32(sb + 60) != keel_crc32c(0, sb, 60)
			                 ? "superblock checksum mismatch"
			                 : "superblock fields out of range");
		}
		return rc;
	}
	if (out->file_size < KEEL_DATA_START + KEEL_HEAD_SIZE) {
		/* A valid superblock, and the file ends before its first head
		 * does: a store whose creation never completed.  Not a store
		 * one can open, but not a foreign file either. */
		out->status = KEEL_RECOVERY_TRUNCATED;
		out->offset = out->file_size;
		snprintf(out->reason, sizeof(out->reason),
		         "a keel store whose first commit is torn: the file "
		         "ends at %llu, inside its first head",
		         (unsigned long long)out->file_size);
		return KEEL_ENOTKEEL;
	}

	keel_head start;
	rc = start_from_hint(io, fd, out->super.file_id, &start, &out->bytes_read);
	if (rc == KEEL_EIO || rc == KEEL_ENOMEM)
		return rc;
	if (rc != KEEL_OK) {
		/* No usable hint: a young store, or both hints damaged.  Start
		 * from the first head, trusted as the superblock says. */
		const keel_super *super = &out->super;
		rc = recovery_read_head(io, fd, super->first_head, &start);
		if (rc == KEEL_EIO)
			return rc;
		if (rc || start.txid != super->base_txid || start.prev_head != 0 ||
		    start.region_start != KEEL_DATA_START ||
		    start.file_id != super->file_id) {
			out->status = KEEL_RECOVERY_CORRUPT;
			out->offset = super->first_head;
			snprintf(out->reason, sizeof(out->reason),
			         "first head unreadable and no valid hint");
			return KEEL_ECORRUPT;
		}
		out->bytes_read += KEEL_HEAD_SIZE;
	}

	const char *why;
	uint64_t stop;
	rc = recovery_walk(io, fd, out->file_size, &start, max_txid, flags,
	                   &out->head, &stop, &why, &out->bytes_read);
	if (rc == KEEL_EIO || rc == KEEL_ENOMEM)
		return rc;
	if (rc == KEEL_ECORRUPT) {
		uint64_t from = out->head.off + KEEL_HEAD_SIZE, bad = stop;
		out->status = KEEL_RECOVERY_CORRUPT;
		/* The walk stops at the head whose region failed; the damage
		 * is in a record before it: report that record. */
		if (why && !strcmp(why, "region checksum mismatch") &&
		    (rc = region_first_bad_record(io, fd, from, stop, &bad)))
			return rc;
		out->offset = bad;
		if (bad != stop)
			snprintf(out->reason, sizeof(out->reason),
			         "record fails its checksum (in the commit "
			         "%llu..%llu), with a valid later head beyond it",
			         (unsigned long long)from, (unsigned long long)stop);
		else
			snprintf(out->reason, sizeof(out->reason),
			         "%s, with a valid later head beyond it", why);
		if (!(flags & RECOVERY_SALVAGE))
			return KEEL_ECORRUPT;
		/* salvage: the head it settles on needs its pending span too */
		recovery_result keep = *out;
		rc = find_pending(io, fd, flags, out);
		if (rc == KEEL_OK && out->head.off == keep.head.off) {
			out->status = keep.status; /* report the first damage */
			out->offset = keep.offset;
			memcpy(out->reason, keep.reason, sizeof(out->reason));
		}
		return rc;
	}
	if ((rc = find_pending(io, fd, flags, out)))
		return rc;
	if (out->status == KEEL_RECOVERY_CORRUPT)
		return KEEL_OK; /* salvaged inside the pending span */
	if (!why && (flags & RECOVERY_READ_DEVICE) &&
	    (rc = cache_holds_more(io, fd, out->file_size, stop)) != 0) {
		if (rc < 0)
			return rc;
		why = "the page cache holds records the device does not (a "
		      "failed sync's pages)";
	}
	if (why) {
		out->status = KEEL_RECOVERY_TRUNCATED;
		out->offset = out->head.off + KEEL_HEAD_SIZE;
		snprintf(out->reason, sizeof(out->reason), "torn tail at %llu: %s",
		         (unsigned long long)stop, why);
	}
	return KEEL_OK;
}

int recovery_cut(const keel_io *io, int fd, uint64_t at)
{
	int e = io->ftruncate(io->ctx, fd, at);
	if (e == 0)
		e = io->fsync(io->ctx, fd);
	return e ? (e == -ENOSPC ? KEEL_ENOSPC : KEEL_EIO) : KEEL_OK;
}
