/*
 * format.h -- the on-disk format of a keel store.  Floor 0.  FROZEN where
 * marked: changing a frozen constant makes every existing store unreadable.
 * docs/format.md is the same text for readers who do not read C.
 *
 * All integers are little-endian.  All records are 8-byte aligned.
 *
 * FILE LAYOUT
 *   offset 0      block 0: superblock (64 bytes used, rest zero)
 *   offset 4096   block 1: hint slot 0 (32 bytes used, rest zero)
 *   offset 8192   block 2: hint slot 1 (32 bytes used, rest zero)
 *   offset 12288  records, appended one after another, 8-byte aligned
 *   ...           zeros (preallocated space) up to the file size
 *
 * SUPERBLOCK (64 bytes at offset 0; written once, when the file is created)
 *   off size  field
 *   0   8     magic       "KEELSTOR"                               FROZEN
 *   8   4     version     KEEL_FORMAT_VERSION (3), or 2            FROZEN
 *   12  4     flags       0
 *   16  4     block_size  4096
 *   20  4     reserved    0
 *   24  8     file_id     random, also stored in every head
 *   32  8     data_start  12288 (first record)
 *   40  8     base_txid   txid of the file's first head (0 for a new store;
 *                         a compacted file starts where the old one was)
 *   48  8     first_head  offset of the file's first head
 *   56  4     reserved    0
 *   60  4     crc         CRC32C of bytes 0..59
 *   The superblock is synced together with the first head and its region
 *   before the file gets its name (creation and compaction both write a
 *   temporary file, sync it, then rename it), so the first head is trusted
 *   without reading its region.
 *   Valid iff magic matches and crc matches.  A version but 2 or 3: refuse
 *   (EVERSION).  Version 3 adds the DELTA record and the head's pending
 *   fields; a version 2 store is written the version 2 way until compacted.
 *
 * HINT SLOT (32 bytes at offset 4096 + 4096 * (txid % 2))
 *   0   8     magic       "KEELHINT"                               FROZEN
 *   8   8     txid        transaction id of the head it names
 *   16  8     head_off    offset of that head record
 *   24  4     reserved    0
 *   28  4     crc         CRC32C of bytes 0..27
 *   A hint is written WITHOUT a sync, only after the head it names is durable
 *   (its sync returned); the next commit's sync makes it durable.  It is only
 *   a starting point: recovery trusts a head, never a hint.  The two slots
 *   alternate so a torn hint write leaves the other slot intact.
 *
 * RECORD HEADER (16 bytes, at every record's start)
 *   0   4     magic       KEEL_REC_MAGIC                           FROZEN
 *   4   1     type        KEEL_REC_VALUE / LEAF / BRANCH / HEAD / PAD
 *   5   1     flags       0
 *   6   2     reserved    0
 *   8   4     len         payload bytes that follow the header
 *   12  4     crc         CRC32C of header bytes 0..11, then the payload
 *   The record occupies KEEL_ALIGN8(16 + len) bytes; padding bytes are zero.
 *   Valid iff magic, type and crc match, and it ends inside the file.
 *
 * VALUE payload: the value's bytes, nothing else (so a GET can writev them
 *   straight from the mapping).  len = value length.
 *
 * NODE payload (LEAF and BRANCH; a copy-on-write B+tree node)
 *   0   2     count       entries (>= 1)
 *   2   1     level       0 for a leaf, height above the leaves otherwise
 *   3   1     reserved    0
 *   4   2     plen        length of the prefix every key of the node shares
 *                         (that of its first and last keys), 0..1024
 *   6   2     reserved    0
 *   8   plen      the shared prefix
 *   8+plen  6*count  slot[i]: u16 offset of entry i from the payload start,
 *                         u32 head: key bytes [plen, plen+4) of entry i as a
 *                         big-endian number, zero-padded past the key's end
 *   ...       entries, in strictly ascending key order
 *   A search compares the prefix once, then binary-searches the slots by
 *   head, reading an entry's key only when heads tie (and for the entry it
 *   lands on): one cache line holds the heads of ten entries, where the
 *   entries themselves would take a line each.  Valid only if every key
 *   starts with the prefix and every head matches its key.
 *   LEAF entry (16 + klen + vpart bytes; format version 2):
 *     0  2  klen   1..1024
 *     2  2  flags  KEEL_LEAF_INLINE (bit 0); every other bit 0
 *     4  4  vlen   value length
 *     8  8  rev    revision (txid of the last write of this key)
 *     16 klen key
 *     then the value part (vpart):
 *       INLINE set:   the value's vlen bytes (covered by the leaf's crc)
 *       INLINE clear: 12 bytes: voff u64 (offset of the VALUE record),
 *                     vcrc u32 (that record's crc field)
 *   Writers inline values of up to KEEL_INLINE_MAX bytes, so a point read
 *   of a small value touches no record beyond its leaf; a reader accepts an
 *   inline value of any length that fits in the node.
 *   BRANCH entry (16 + klen bytes):
 *     0  2  klen
 *     2  2  reserved 0
 *     4  4  ccrc   the child record's crc field (Merkle link)
 *     8  8  coff   offset of the child node record
 *     16 klen key: the smallest key in the child's subtree
 *   Invariants (checked by keel check): keys strictly ascending in a node and
 *   across the tree; a branch entry's key equals the first key of its
 *   child's subtree, and every key of that subtree is below the next
 *   entry's key; a child's level is the parent's level - 1; every offset
 *   points backwards (a child is written before its parent), to a record of
 *   the right type inside the head's range; a record is referenced once in
 *   a tree; no two records overlap; every crc matches.  Readers check levels, backward offsets and
 *   key order as they walk (engine/tree.c), so a crafted file cannot make a
 *   walk loop or repeat.
 *
 * HEAD payload (96 bytes; the commit record)
 *   0   8     txid          greater than the previous head's txid (the
 *                           first head's is the superblock's base_txid)
 *   8   8     prev_head     offset of the previous head record (0 for txid 0)
 *   16  8     region_start  end of the previous head record
 *   24  8     root_off      root node record (0 = empty tree)
 *   32  4     root_crc      the root record's crc field
 *   36  4     chain_crc     CRC32C over [region_start, this head's offset),
 *                           seeded with the previous head's chain_crc
 *   40  8     keys          number of keys in the tree
 *   48  8     live_bytes    bytes of all records reachable from this head,
 *                           itself included
 *   56  8     time_ns       wall clock at commit (informative)
 *   64  8     file_id       the superblock's file_id
 *   72  8     delta_off     version 3: this commit's DELTA record, 0 for none
 *   80  4     delta_crc     that record's crc field (0 when delta_off is 0)
 *   84  4     pending_heads heads whose DELTA entries are not in the tree at
 *                           root_off, this one included (0: the tree is the
 *                           whole state)
 *   88  8     pending_bytes from the region_start of the oldest of those heads
 *                           to this head's offset (0 when pending_heads is 0)
 *   (Bytes 72..95 are zero in a version 2 head: nothing pending.)  In
 *   version 3, KEYS counts the keys of the state at this head (the tree
 *   overlaid with the pending entries) and LIVE_BYTES is the bytes reachable
 *   from root_off + pending_bytes + this head's 112.
 *   A head is VALID iff its record is valid, prev_head/region_start/txid
 *   continue the previous valid head (the first head: prev_head 0,
 *   region_start 12288, txid base_txid, at first_head), file_id matches, and chain_crc matches
 *   the bytes of its region.  Within one sync the device may persist the head
 *   before the region, so the region check is what makes one sync enough.
 *
 * PAD payload: zeros; fills space that must not hold a record (unused now,
 *   reserved so a reader skips it).
 *
 * DELTA payload (version 3; record type 6; what one commit changed)
 *   0   4     count       entries (>= 1)
 *   4   4     reserved    0
 *   8   ...   count entries back to back (not aligned), keys strictly
 *             ascending, each key once
 *   DELTA entry (16 + klen + vpart bytes): the leaf entry's layout with one
 *   more flag:
 *     0  2  klen   1..1024
 *     2  2  flags  KEEL_LEAF_INLINE (bit 0), KEEL_DELTA_DELETE (bit 1), not
 *                  both; every other bit 0
 *     4  4  vlen   value length (0 with DELETE)
 *     8  8  rev    the txid of the head that links this record
 *     16 klen key
 *     then: INLINE: vlen value bytes; DELETE: nothing; neither: voff u64 (a
 *     VALUE record below the head), vcrc u32 (its crc)
 *   A writer keeps a DELTA record at most KEEL_DELTA_MAX bytes; a group that
 *   needs more is written as a checkpoint (nodes).
 *   A version 3 head is valid as above and also: delta_off is 0 or lies in
 *   [region_start, off); pending_heads <= KEEL_CKPT_HEADS; pending_bytes <=
 *   KEEL_CKPT_BYTES + KEEL_DELTA_MAX; pending_heads is 0 exactly when
 *   pending_bytes is; a head with delta_off 0 has pending_heads 0
 *   (keel_head_pending_sane).  docs/engine.md, "the delta log", has the
 *   invariants D1-D7. *
 * THE DURABLE MARKER (PATH.durable: a second, 4096-byte file beside the
 *   store, kept by the writer process and mapped shared by reader
 *   processes; engine/marker.c).  Memory shared between processes of one
 *   machine, not storage: it is never synced, its integers are in the
 *   machine's own byte order, and it means something only while a writer
 *   process holds the data file's lock -- after a crash or a power cut it
 *   is ignored, and the next writer replaces it.
 *   0   8     magic     "KEELDURA"
 *   8   8     seq       even: stable; odd: being rewritten (a seqlock)
 *   16  8     file_id   the data file the head below is in
 *   24  8     txid      the newest head whose sync has returned
 *   32  8     head_off  that head's offset
 *   40  4056  zero
 */
#ifndef KEEL_FORMAT_H
#define KEEL_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KEEL_FORMAT_VERSION 3u                    /* FROZEN meaning          */
#define KEEL_FORMAT_VERSION_V2 2u /* still read, and written by its writer */
/* Version 1 (a pre-release layout whose leaf entries had a fixed 28-byte
 * part and no inline values) is refused with KEEL_EVERSION like any other. */
#define KEEL_SUPER_MAGIC "KEELSTOR"               /* FROZEN, 8 bytes         */
#define KEEL_HINT_MAGIC "KEELHINT"                /* FROZEN, 8 bytes         */
#define KEEL_MARKER_MAGIC "KEELDURA"              /* 8 bytes                 */
#define KEEL_MARKER_SIZE 4096u
#define KEEL_REC_MAGIC 0x6C65656Bu                /* FROZEN, "keel" in LE    */
#define KEEL_BLOCK 4096u
#define KEEL_SUPER_SIZE 64u
#define KEEL_HINT_SIZE 32u
#define KEEL_HINT_OFF(slot) ((uint64_t)KEEL_BLOCK * (1u + (slot)))
#define KEEL_DATA_START ((uint64_t)3 * KEEL_BLOCK)
#define KEEL_REC_HDR 16u
#define KEEL_HEAD_PAYLOAD 96u
#define KEEL_HEAD_SIZE (KEEL_REC_HDR + KEEL_HEAD_PAYLOAD) /* 112, aligned   */
#define KEEL_NODE_HDR 8u
#define KEEL_SLOT 6u          /* a node slot: entry offset, key head      */
#define KEEL_SLOT_HEAD 2u     /* the key head's place in a slot           */
#define KEEL_LEAF_ENTRY 16u   /* fixed part of a leaf entry; key at +16  */
#define KEEL_LEAF_VREF 12u    /* value part of a non-inline leaf entry    */
#define KEEL_LEAF_INLINE 1u   /* leaf entry flag: the value follows the key */
#define KEEL_INLINE_MAX 64u   /* writers inline values up to this length  */
#define KEEL_BRANCH_ENTRY 16u
#define KEEL_FORMAT_KEY_MAX 1024u /* longest key (= KEEL_KEY_MAX, keel.h) */
#define KEEL_LEAF_MAX 1024u   /* a leaf splits above this payload ...       */
#define KEEL_BRANCH_MAX 4096u /* ... a branch above this; both when >= 4
                                 entries.  Small leaves keep the bytes a put
                                 copies low; wide branches keep trees shallow */
#define KEEL_NODE_MAX(level) ((level) ? KEEL_BRANCH_MAX : KEEL_LEAF_MAX)
#define KEEL_ALIGN8(x) (((x) + 7u) & ~(uint64_t)7u)

enum keel_rec_type {
	KEEL_REC_VALUE = 1,
	KEEL_REC_LEAF = 2,
	KEEL_REC_BRANCH = 3,
	KEEL_REC_HEAD = 4,
	KEEL_REC_PAD = 5,
	KEEL_REC_DELTA = 6, /* version 3 */
};

/* ---- version 3: the delta log (docs/engine.md, invariants D1-D7) ---- */
#define KEEL_DELTA_HDR 8u           /* count u32, reserved u32            */
#define KEEL_DELTA_DELETE 2u        /* entry flag: the key is removed     */
#define KEEL_DELTA_MAX ((uint64_t)64 << 10) /* largest DELTA record       */
#define KEEL_CKPT_HEADS 32768u      /* most pending heads (D3)            */
#define KEEL_CKPT_BYTES ((uint64_t)4 << 20) /* most pending bytes a writer
                                       lets pass before a checkpoint (D3) */
#define KEEL_PENDING_BYTES_MAX (KEEL_CKPT_BYTES + KEEL_DELTA_MAX)

/* Decoded forms (host order).  The encode/decode helpers below are the only
 * code that knows the byte offsets. */
typedef struct keel_super {
	uint32_t version, flags, block_size;
	uint64_t file_id, data_start, base_txid, first_head;
} keel_super;

typedef struct keel_hint {
	uint64_t txid, head_off;
} keel_hint;

typedef struct keel_rec_hdr {
	uint32_t magic;
	uint8_t type, flags;
	uint32_t len, crc;
} keel_rec_hdr;

typedef struct keel_head {
	uint64_t txid, prev_head, region_start, root_off;
	uint32_t root_crc, chain_crc;
	uint64_t keys, live_bytes, time_ns, file_id;
	uint64_t delta_off;     /* version 3: this commit's DELTA record, or 0 */
	uint32_t delta_crc;     /* its crc                                      */
	uint32_t pending_heads; /* heads not in the tree, this one included     */
	uint64_t pending_bytes; /* [off - pending_bytes, off): their span        */
	uint64_t off; /* not stored: where this head record sits */
} keel_head;

_Static_assert(KEEL_HEAD_SIZE % 8 == 0, "head record must stay aligned");
_Static_assert(KEEL_DATA_START % KEEL_BLOCK == 0, "data starts on a block");

static inline uint16_t keel_ld16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}
static inline uint32_t keel_ld32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4); /* little-endian hosts only; checked in crc32c.c */
	return v;
}
static inline uint64_t keel_ld64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}
static inline void keel_st16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}
static inline void keel_st32(void *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void keel_st64(void *p, uint64_t v) { memcpy(p, &v, 8); }

/* The key order: unsigned bytes, a shorter key first on a tie.  Compares
 * eight bytes at a time (as big-endian words): keys are short and this runs
 * at every step of every search. */
static inline int keel_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
                               size_t blen)
{
	size_t n = alen < blen ? alen : blen, i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y) {
			x = __builtin_bswap64(x);
			y = __builtin_bswap64(y);
			return x < y ? -1 : 1;
		}
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return alen < blen ? -1 : alen > blen;
}

/* Record size on disk, padding included. */
static inline uint64_t keel_rec_size(uint64_t payload_len)
{
	return KEEL_ALIGN8(KEEL_REC_HDR + payload_len);
}

/* ---- node index: slots, heads, the shared prefix ----------------------- */
static inline uint16_t keel_node_plen(const uint8_t *p) { return keel_ld16(p + 4); }

/* Where the entries of a node with COUNT entries and prefix PLEN begin. */
static inline uint32_t keel_node_entries_at(uint32_t count, uint32_t plen)
{
	return KEEL_NODE_HDR + plen + KEEL_SLOT * count;
}

/* Slot I of node payload P. */
static inline const uint8_t *keel_node_slot(const uint8_t *p, unsigned i)
{
	return p + KEEL_NODE_HDR + keel_ld16(p + 4) + KEEL_SLOT * i;
}

/* The head of KEY in a node whose keys share PLEN bytes. */
static inline uint32_t keel_key_head(const uint8_t *key, size_t klen, size_t plen)
{
	uint32_t h = 0;
	for (size_t i = plen; i < plen + 4; i++)
		h = h << 8 | (i < klen ? key[i] : 0);
	return h;
}

/* Bytes A and B share at their start. */
static inline uint16_t keel_common_prefix(const uint8_t *a, size_t alen,
                                          const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen, i = 0;
	while (i < n && a[i] == b[i])
		i++;
	return (uint16_t)i;
}

/* Writes a node's header and prefix for COUNT entries from FIRST to LAST
 * (its smallest and largest keys); returns where its entries begin.  Each
 * entry's slot is then written with keel_node_set_slot. */
static inline uint32_t keel_node_begin(uint8_t *p, uint8_t level, uint16_t count,
                                       const uint8_t *first, uint16_t flen,
                                       const uint8_t *last, uint16_t llen)
{
	uint16_t plen = keel_common_prefix(first, flen, last, llen);
	memset(p, 0, KEEL_NODE_HDR);
	keel_st16(p, count);
	p[2] = level;
	keel_st16(p + 4, plen);
	memcpy(p + KEEL_NODE_HDR, first, plen);
	return keel_node_entries_at(count, plen);
}

static inline void keel_node_set_slot(uint8_t *p, unsigned i, uint32_t eo,
                                      const uint8_t *key, uint16_t klen)
{
	uint8_t *s = (uint8_t *)keel_node_slot(p, i);
	keel_st16(s, (uint16_t)eo);
	keel_st32(s + KEEL_SLOT_HEAD, keel_key_head(key, klen, keel_node_plen(p)));
}

/* Entry I of node payload P: only where keel_node_ent_check passed is it
 * known to lie inside the node. */
static inline const uint8_t *keel_node_entry(const uint8_t *p, unsigned i)
{
	return p + keel_ld16(keel_node_slot(p, i));
}

/* The key head of the slot at S. */
static inline uint32_t keel_slot_head(const uint8_t *s)
{
	return keel_ld32(s + KEEL_SLOT_HEAD);
}

/* Checks a node's index against its entries: prefix inside the payload,
 * every key starting with the prefix, every head matching.  The entries'
 * own bounds must have been checked (keel_node_ent_check). */
bool keel_node_index_valid(const uint8_t *p, uint32_t len);

/* A leaf entry, decoded.  INL points at the inline value bytes (inside the
 * node) or is NULL when the value lives in its own VALUE record at VOFF. */
typedef struct keel_leaf_ent {
	const uint8_t *key, *inl;
	uint16_t klen;
	uint32_t vlen, vcrc;
	uint64_t voff, rev;
} keel_leaf_ent;

/* Bytes a leaf entry takes in its node (its slot not included). */
static inline uint32_t keel_leaf_ent_size(uint16_t klen, bool inl, uint32_t vlen)
{
	return KEEL_LEAF_ENTRY + klen + (inl ? vlen : KEEL_LEAF_VREF);
}

/* Bounds and flags of the leaf entry at E, AVAIL bytes before the node's
 * end: its size, or 0 when it does not fit or is malformed. */
static inline uint32_t keel_leaf_ent_check(const uint8_t *e, uint32_t avail)
{
	if (avail < KEEL_LEAF_ENTRY)
		return 0;
	uint16_t klen = keel_ld16(e), flags = keel_ld16(e + 2);
	if (klen == 0 || klen > KEEL_FORMAT_KEY_MAX || (flags & ~KEEL_LEAF_INLINE))
		return 0;
	uint64_t size = keel_leaf_ent_size(klen, flags & KEEL_LEAF_INLINE,
	                                   keel_ld32(e + 4));
	return size <= avail ? (uint32_t)size : 0;
}

/* Bounds of the branch entry at E, AVAIL bytes before the node's end: its
 * size, or 0 when it does not fit or its key length is out of range. */
static inline uint32_t keel_branch_ent_check(const uint8_t *e, uint32_t avail)
{
	if (avail < KEEL_BRANCH_ENTRY)
		return 0;
	uint16_t klen = keel_ld16(e);
	if (klen == 0 || klen > KEEL_FORMAT_KEY_MAX ||
	    KEEL_BRANCH_ENTRY + (uint32_t)klen > avail)
		return 0;
	return KEEL_BRANCH_ENTRY + klen;
}

/* Entry I of node payload P (LEN bytes) lies inside it: its size, or 0. */
static inline uint32_t keel_node_ent_check(const uint8_t *p, uint32_t len,
                                           bool leaf, unsigned i)
{
	uint32_t eo = keel_ld16(keel_node_slot(p, i));
	if (eo > len)
		return 0;
	return leaf ? keel_leaf_ent_check(p + eo, len - eo)
	            : keel_branch_ent_check(p + eo, len - eo);
}

/* Decodes a leaf entry that passed keel_leaf_ent_check. */
static inline void keel_leaf_ent_decode(const uint8_t *e, keel_leaf_ent *out)
{
	out->klen = keel_ld16(e);
	out->vlen = keel_ld32(e + 4);
	out->rev = keel_ld64(e + 8);
	out->key = e + KEEL_LEAF_ENTRY;
	const uint8_t *vp = out->key + out->klen;
	if (keel_ld16(e + 2) & KEEL_LEAF_INLINE) {
		out->inl = vp;
		out->voff = 0;
		out->vcrc = 0;
	} else {
		out->inl = NULL;
		out->voff = keel_ld64(vp);
		out->vcrc = keel_ld32(vp + 8);
	}
}

/* Encodes a branch entry at E; returns its size. */
static inline uint32_t keel_branch_ent_encode(uint8_t *e, const uint8_t *key,
                                              uint16_t klen, uint32_t child_crc,
                                              uint64_t child_off)
{
	keel_st16(e, klen);
	keel_st16(e + 2, 0);
	keel_st32(e + 4, child_crc);
	keel_st64(e + 8, child_off);
	memcpy(e + KEEL_BRANCH_ENTRY, key, klen);
	return KEEL_BRANCH_ENTRY + klen;
}

/* Bytes an entry and its slot take in a node: a branch entry (LEAF false)
 * or a leaf entry with an inline or referenced value. */
static inline uint32_t keel_slot_ent_size(bool leaf, uint16_t klen, bool inl,
                                          uint32_t vlen)
{
	return KEEL_SLOT + (leaf ? keel_leaf_ent_size(klen, inl, vlen)
	                         : KEEL_BRANCH_ENTRY + klen);
}

/* Encodes a leaf entry at E; returns its size. */
static inline uint32_t keel_leaf_ent_encode(uint8_t *e, const keel_leaf_ent *in)
{
	keel_st16(e, in->klen);
	keel_st16(e + 2, in->inl ? KEEL_LEAF_INLINE : 0);
	keel_st32(e + 4, in->vlen);
	keel_st64(e + 8, in->rev);
	memcpy(e + KEEL_LEAF_ENTRY, in->key, in->klen);
	uint8_t *vp = e + KEEL_LEAF_ENTRY + in->klen;
	if (in->inl) {
		memcpy(vp, in->inl, in->vlen);
	} else {
		keel_st64(vp, in->voff);
		keel_st32(vp + 8, in->vcrc);
	}
	return keel_leaf_ent_size(in->klen, in->inl != NULL, in->vlen);
}

/* A delta entry, decoded.  DEL: the key is removed (no value). */
typedef struct keel_delta_ent {
	keel_leaf_ent e;   /* key, value (inline or reference), rev */
	bool del;
	uint32_t inl_at;   /* inline value: its offset in the entry */
} keel_delta_ent;

/* Bounds and flags of the delta entry at E, AVAIL bytes before the record's
 * end: its size, or 0 when it does not fit or is malformed. */
static inline uint32_t keel_delta_ent_check(const uint8_t *e, uint64_t avail)
{
	if (avail < KEEL_LEAF_ENTRY)
		return 0;
	uint16_t klen = keel_ld16(e), flags = keel_ld16(e + 2);
	uint32_t vlen = keel_ld32(e + 4);
	if (klen == 0 || klen > KEEL_FORMAT_KEY_MAX ||
	    (flags & ~(KEEL_LEAF_INLINE | KEEL_DELTA_DELETE)) ||
	    flags == (KEEL_LEAF_INLINE | KEEL_DELTA_DELETE) ||
	    ((flags & KEEL_DELTA_DELETE) && vlen != 0))
		return 0;
	uint64_t size = (uint64_t)KEEL_LEAF_ENTRY + klen +
	                ((flags & KEEL_DELTA_DELETE) ? 0
	                 : (flags & KEEL_LEAF_INLINE) ? vlen : KEEL_LEAF_VREF);
	return size <= avail ? (uint32_t)size : 0;
}

/* Decodes a delta entry that passed keel_delta_ent_check. */
static inline void keel_delta_ent_decode(const uint8_t *e, keel_delta_ent *out)
{
	out->del = keel_ld16(e + 2) & KEEL_DELTA_DELETE;
	out->inl_at = KEEL_LEAF_ENTRY + keel_ld16(e);
	if (out->del) {
		out->e = (keel_leaf_ent){.key = e + KEEL_LEAF_ENTRY,
		                         .klen = keel_ld16(e), .rev = keel_ld64(e + 8)};
		return;
	}
	keel_leaf_ent_decode(e, &out->e);
}

/* Bytes a delta entry takes: a delete (DEL), an inline value (INL) or a
 * reference. */
static inline uint32_t keel_delta_ent_size(uint16_t klen, bool del, bool inl,
                                           uint32_t vlen)
{
	return KEEL_LEAF_ENTRY + klen + (del ? 0 : inl ? vlen : KEEL_LEAF_VREF);
}

/* Encodes a delta entry at E: a delete when DEL, otherwise as the leaf
 * entry IN; returns its size. */
static inline uint32_t keel_delta_ent_encode(uint8_t *e, const keel_leaf_ent *in,
                                             bool del)
{
	if (!del)
		return keel_leaf_ent_encode(e, in);
	keel_st16(e, in->klen);
	keel_st16(e + 2, KEEL_DELTA_DELETE);
	keel_st32(e + 4, 0);
	keel_st64(e + 8, in->rev);
	memcpy(e + KEEL_LEAF_ENTRY, in->key, in->klen);
	return KEEL_LEAF_ENTRY + in->klen;
}

/* Checks a DELTA payload P of LEN bytes: count >= 1, reserved 0, every
 * entry inside and well formed, keys strictly ascending, every rev equal to
 * TXID, every value reference below BELOW (the record's own offset) and at
 * or after the data start.  True when valid. */
bool keel_delta_valid(const uint8_t *p, uint32_t len, uint64_t txid,
                      uint64_t below);

/* The version 3 rules a head must follow on its own (format.h, DELTA). */
bool keel_head_pending_sane(const keel_head *h);

/* Encoders write the whole structure, CRC included.  Decoders return 0 when
 * the bytes are a valid structure and a negative keel_err otherwise; for
 * records only the header's own fields are checked (the payload CRC needs
 * the payload: see keel_rec_crc). */
void keel_super_encode(uint8_t out[KEEL_SUPER_SIZE], const keel_super *s);
int keel_super_decode(const uint8_t in[KEEL_SUPER_SIZE], keel_super *s);
void keel_hint_encode(uint8_t out[KEEL_HINT_SIZE], const keel_hint *h);
int keel_hint_decode(const uint8_t in[KEEL_HINT_SIZE], keel_hint *h);
/* Writes a 16-byte header for TYPE and PAYLOAD (crc computed over it). */
void keel_rec_encode(uint8_t hdr[KEEL_REC_HDR], uint8_t type,
                     const void *payload, uint32_t len);
/* Parses a header: magic and type checked, crc not (needs the payload). */
int keel_rec_decode(const uint8_t hdr[KEEL_REC_HDR], keel_rec_hdr *out);
/* CRC of a record whose header and payload are contiguous at REC. */
uint32_t keel_rec_crc(const uint8_t *rec, uint32_t len);
void keel_head_encode(uint8_t out[KEEL_HEAD_SIZE], const keel_head *h);
/* Decodes a whole head record (header + payload), checking its crc. */
int keel_head_decode(const uint8_t in[KEEL_HEAD_SIZE], keel_head *h);

#endif /* KEEL_FORMAT_H */
