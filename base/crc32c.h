/*
 * crc32c.h -- CRC32C (Castagnoli), the checksum of every keel record.  Floor 0.
 * Hardware instructions on x86-64 (SSE4.2) and ARMv8 (CRC extension) when the
 * CPU has them, a table-driven fallback otherwise; all give the same result.
 *
 * keel_crc32c(crc, buf, len) extends CRC over BUF: start with 0, and feed the
 * previous result to continue a running checksum across several buffers
 * (crc32c(crc32c(0, a), b) == crc32c(0, a||b)).  Check value: "123456789"
 * gives 0xE3069283.
 */
#ifndef KEEL_CRC32C_H
#define KEEL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t keel_crc32c(uint32_t crc, const void *buf, size_t len);
/* The portable implementation, exposed so tests can compare the two. */
uint32_t keel_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif /* KEEL_CRC32C_H */
