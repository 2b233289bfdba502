/* teststore.h -- stores shared by the cmocka suites that use keel's API
 * (include after cmocka.h and keel.h). */
#ifndef KEEL_TESTSTORE_H
#define KEEL_TESTSTORE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The engine benchmark's store: keys "00000000" to KEYS-1 ("%08d") with
 * 16-byte values, committed as one batch.  About 500 KB live at 10,000. */
static inline void ts_load_numbered(keel_db *db, int keys)
{
	char k[16], v[16];
	keel_batch *load;
	memset(v, 'v', sizeof(v));
	assert_int_equal(keel_batch_new(&load), KEEL_OK);
	for (int i = 0; i < keys; i++) {
		snprintf(k, sizeof(k), "%08d", i);
		assert_int_equal(keel_batch_put(load, k, 8, v, sizeof(v), KEEL_REV_ANY),
		                 KEEL_OK);
	}
	assert_int_equal(keel_commit(db, load, NULL, NULL), KEEL_OK);
	keel_batch_free(load);
}

/* Overwrites one of those keys, picked by the generator *X; the value
 * carries I, so each put changes it. */
static inline void ts_overwrite_numbered(keel_db *db, int keys, uint32_t *x, int i)
{
	char k[16], v[16];
	*x = *x * 1103515245u + 12345u;
	snprintf(k, sizeof(k), "%08u", (*x >> 8) % (uint32_t)keys);
	memset(v, 'v', sizeof(v));
	memcpy(v, &i, sizeof(i));
	assert_int_equal(keel_put(db, k, 8, v, sizeof(v), KEEL_REV_ANY, NULL), KEEL_OK);
}

#endif
