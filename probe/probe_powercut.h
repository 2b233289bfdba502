/*
 * probe_powercut.h -- does a sync that returned survive pulling the plug?
 *
 * The check in the manner of diskchecker.pl, over TCP:
 *
 *   machine B (stays powered):   fsync-probe --listen PORT
 *   machine A (the device):      fsync-probe --power-cut-writer B:PORT FILE
 *   ... cut A's power while it writes; boot it again ...
 *   machine A:                   fsync-probe --verify B:PORT FILE
 *
 * The writer fills FILE with file_size / write_size zeroed slots, syncs it
 * and its directory, then writes numbered blocks to the slots in turn.  It
 * tells the listener "B seq slot" before each write and "A seq slot" only
 * after the write's sync returned.  The listener keeps, per slot, the last
 * acknowledged sequence number, and the one write that was begun and not
 * acknowledged.  The verifier asks for that list and reads every slot:
 *
 *   ok       the slot holds the acknowledged block, or a newer one
 *   LOST     it holds an older block, or zeros: an acknowledged sync lied
 *   DAMAGED  its header or checksum is wrong, or it holds another slot's
 *            block (a misdirected write)
 *   torn     damage in the slot whose write was in flight at the cut is
 *            expected and reported, not counted
 *
 * Block layout (every slot, little-endian, write_size bytes):
 *   offset size  meaning
 *   0      8     magic "KEELPCB1"
 *   8      8     sequence number (1, 2, ...)
 *   16     8     slot number
 *   24     4     block size in bytes
 *   28     4     zero
 *   32     8     FNV-1a 64 of the whole block with this field zeroed
 *   40     ...   bytes of an xorshift64 stream seeded by the sequence number
 * A block is valid iff magic, size and checksum match.
 *
 * Protocol: text lines, one per message.  writer -> listener:
 * "HELLO size slots key", "B seq slot", "A seq slot", "END"; listener answers
 * HELLO with "OK" or "ERR why".  verifier -> listener: "VERIFY key"; answer
 * "NONE", or "S size slots last_acked inflight_seq inflight_slot", then
 * "K slot seq" per acknowledged slot, then "END".  The key is
 * "hostname:/absolute/path/of/FILE".
 *
 * Return values follow probe.h: probe_cut_verify returns PROBE_ELOST when it
 * found a lost or damaged acknowledged block.
 */
#ifndef KEEL_PROBE_POWERCUT_H
#define KEEL_PROBE_POWERCUT_H

#include "probe.h"

/* Serve acknowledgements until killed (or for duration_s > 0 seconds).
 * bind_addr NULL listens on every address; port "0" picks a free one.  It
 * prints "fsync-probe: listening on ADDR:PORT" once bound. */
int probe_cut_listen(const char *bind_addr, const char *port, double duration_s);

/* Write numbered blocks to cfg->path (cfg->mode, cfg->write_size,
 * cfg->file_size, cfg->force; cfg->duration_s 0 = until killed). */
int probe_cut_write(const char *hostport, const struct probe_config *cfg);

/* Compare cfg->path with what the listener says was acknowledged. */
int probe_cut_verify(const char *hostport, const char *path);

/* The block format, exposed for the tests. */
enum probe_cut_block { PROBE_CUT_VALID, PROBE_CUT_ZERO, PROBE_CUT_BAD };
void probe_cut_block_fill(unsigned char *buf, size_t size, uint64_t seq,
			  uint64_t slot);
enum probe_cut_block probe_cut_block_check(const unsigned char *buf, size_t size,
					   uint64_t *seq, uint64_t *slot);

/* Split "host:port" or "[v6addr]:port" into host and port buffers;
 * 0 or -1 when malformed. */
int probe_cut_split_hostport(const char *s, char *host, size_t hostlen,
			     char *port, size_t portlen);

#endif
