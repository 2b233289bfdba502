/*
 * value.h -- the keys torture writes and its self-describing values.
 *
 * KEYS
 *   Key number K (0 <= K < --keys) is owned by writer thread K % threads, so
 *   each thread's changes to its keys happen in its program order and the
 *   oracle can replay them exactly.  The key's bytes are "t/" followed by K
 *   in eight decimal digits and a filler of 0..23 bytes (from K), so keys of
 *   several lengths share the tree.
 *
 * VALUES (every value torture writes; little-endian)
 *   off size field
 *   0   4    magic     "TVAL"
 *   4   4    key       key number the value was written under
 *   8   4    thread    writer thread that wrote it
 *   12  4    index     position of the change inside its batch (0 if alone)
 *   16  8    seq       the thread's operation number (1, 2, ...)
 *   24  8    nonce     the torture run's nonce (a value from another run is
 *                      not ours)
 *   32  4    len       whole value length in bytes (header included)
 *   36  4    pcrc      CRC32C of the payload (bytes 44..len)
 *   40  4    hcrc      CRC32C of bytes 0..39
 *   44  ...  payload   bytes drawn from a generator seeded by
 *                      (nonce, key, thread, seq, index): regenerable, so a
 *                      value can be compared byte for byte
 *   A value decodes iff magic, hcrc, len and pcrc all match.  Anything else
 *   found in the store is a phantom or a torn value.
 */
#ifndef TORTURE_VALUE_H
#define TORTURE_VALUE_H

#include <stddef.h>
#include <stdint.h>

#define VALUE_HEADER 44u  /* the smallest value torture can write       */
#define VALUE_KEY_MAX 40u /* longest key value_key() produces, plus NUL */

typedef struct value_id {
	uint32_t key;    /* key number                               */
	uint32_t thread; /* writer thread                            */
	uint32_t index;  /* change within its batch                  */
	uint64_t seq;    /* the thread's operation number             */
	uint64_t nonce;  /* the run's nonce                           */
	uint32_t len;    /* whole value length                        */
} value_id;

/* Writes key number K's bytes into OUT (VALUE_KEY_MAX bytes); returns the
 * length. */
size_t value_key(uint32_t k, char out[VALUE_KEY_MAX]);

/* Parses key bytes made by value_key; returns 0 and *k, or -1 when the bytes
 * are not a torture key (or not the canonical spelling of one). */
int value_key_parse(const void *key, size_t klen, uint32_t *k);

/* Fills BUF (id->len bytes, id->len >= VALUE_HEADER) with the value ID
 * describes. */
void value_encode(const value_id *id, void *buf);

/* Checks a value read back: 0 and *id when it decodes, -1 otherwise (WHY,
 * when not NULL, gets a static reason). */
int value_decode(const void *buf, size_t len, value_id *id, const char **why);

/* 0 when BUF (LEN bytes) is exactly the value ID describes, byte for byte;
 * -1 otherwise. */
int value_equal(const value_id *id, const void *buf, size_t len);

#endif /* TORTURE_VALUE_H */
