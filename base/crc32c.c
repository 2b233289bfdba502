/* crc32c.c -- CRC32C, hardware where available (see crc32c.h). */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "keel's on-disk format code assumes a little-endian host");

#define POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^
			              table[0][table[t - 1][i] & 0xff];
}

/* Slicing-by-8: eight table lookups per 8 bytes. */
uint32_t keel_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_build);
	crc = ~crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		      table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		      table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}

static int have_hw(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	return cached;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __crc32cd(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __crc32cb(c, *p++);
	return ~c;
}
static int have_hw(void) { return 1; }
#else
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return keel_crc32c_sw(crc, buf, len);
}
static int have_hw(void) { return 0; }
#endif

uint32_t keel_crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (have_hw())
		return crc32c_hw(crc, buf, len);
	return keel_crc32c_sw(crc, buf, len);
}
