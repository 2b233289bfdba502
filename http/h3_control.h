/*
 * h3_control.h -- what keel-serve checks itself on an HTTP/3 client's
 * control stream, where nghttp3 (0.8) does not: a SETTINGS frame that
 * repeats an identifier is a connection error of type H3_SETTINGS_ERROR
 * (RFC 9114 7.2.4), which nghttp3 accepts.
 *
 * The client's unidirectional streams pass through h3_control_feed before
 * nghttp3 reads them (serve_h3.c, on_stream_data).  The first whose type
 * is the control stream's (0x00) is followed: its first H3_CONTROL_MAX
 * bytes -- the type and the SETTINGS frame that must open it -- are kept
 * and judged once the frame is whole.  What is longer than that, or not a
 * SETTINGS frame first, is left to nghttp3 (which refuses a control
 * stream without SETTINGS first: H3_MISSING_SETTINGS).  Bounded: at most
 * H3_CONTROL_MAX bytes a connection, and O(n^2) over at most
 * H3_CONTROL_MAX / 2 identifiers, once.
 *
 * Nothing here allocates, locks or touches a socket: tests/test_limits.c
 * feeds it bytes.
 */
#ifndef H3_CONTROL_H
#define H3_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define H3_CONTROL_MAX 512 /* bytes of the control stream judged */

struct h3_control {
	int64_t id;                   /* the control stream; -1: not seen yet */
	uint8_t buf[H3_CONTROL_MAX];  /* its first bytes                      */
	uint16_t len;
	uint8_t done;                 /* judged, or left to nghttp3           */
};

enum {
	H3_CONTROL_OK = 0,
	H3_CONTROL_DUPLICATE = 1 /* SETTINGS repeats an identifier        */
};

/* Nothing seen yet. */
void h3_control_init(struct h3_control *s);
/* LEN bytes at OFFSET of the client's unidirectional stream ID, in the
 * order QUIC delivers them.  H3_CONTROL_OK, or H3_CONTROL_DUPLICATE once
 * the control stream's SETTINGS frame is whole and repeats an identifier
 * (the caller closes the connection with H3_SETTINGS_ERROR). */
int h3_control_feed(struct h3_control *s, int64_t id, uint64_t offset,
                    const uint8_t *data, size_t len);

#endif /* H3_CONTROL_H */
