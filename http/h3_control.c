/*
 * h3_control.c -- the client's HTTP/3 control stream, checked where
 * nghttp3 does not (h3_control.h is the manual).
 */
#include "h3_control.h"

#include <string.h>

/* A QUIC variable-length integer (RFC 9000 16) at *POS of BUF[LEN]: 1 and
 * *V, *POS past it; 0 when it is not all there. */
static int varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	size_t n;

	if (*pos >= len)
		return 0;
	n = (size_t)1 << (buf[*pos] >> 6);
	if (len - *pos < n)
		return 0;
	*v = buf[*pos] & 0x3f;
	for (size_t i = 1; i < n; i++)
		*v = *v << 8 | buf[*pos + i];
	*pos += n;
	return 1;
}

void h3_control_init(struct h3_control *s)
{
	memset(s, 0, sizeof *s);
	s->id = -1;
}

/* The kept bytes: a whole SETTINGS frame after the stream type?  Judges it
 * then (done).  H3_CONTROL_OK or H3_CONTROL_DUPLICATE. */
static int judge(struct h3_control *s)
{
	uint64_t type, ftype, flen, ids[H3_CONTROL_MAX / 2], v;
	size_t pos = 0, n = 0;

	if (!varint(s->buf, s->len, &pos, &type) ||
	    !varint(s->buf, s->len, &pos, &ftype) ||
	    !varint(s->buf, s->len, &pos, &flen))
		goto more;
	if (ftype != 0x04) { /* not SETTINGS first: nghttp3's to refuse */
		s->done = 1;
		return H3_CONTROL_OK;
	}
	if (flen > s->len - pos)
		goto more;
	size_t end = pos + (size_t)flen;
	while (pos < end) {
		if (!varint(s->buf, end, &pos, &ids[n]) ||
		    !varint(s->buf, end, &pos, &v))
			break; /* a frame cut in a pair: nghttp3's to refuse */
		for (size_t i = 0; i < n; i++)
			if (ids[i] == ids[n])
				return s->done = 1, H3_CONTROL_DUPLICATE;
		n++;
	}
	s->done = 1;
	return H3_CONTROL_OK;
more:
	if (s->len == H3_CONTROL_MAX)
		s->done = 1; /* longer than we judge */
	return H3_CONTROL_OK;
}

int h3_control_feed(struct h3_control *s, int64_t id, uint64_t offset,
                    const uint8_t *data, size_t len)
{
	if (s->done || len == 0)
		return H3_CONTROL_OK;
	if (s->id < 0) {
		size_t pos = 0;
		uint64_t type;
		/* a stream's type opens it; the control stream's is 0x00 */
		if (offset != 0 || !varint(data, len, &pos, &type) || type != 0)
			return H3_CONTROL_OK;
		s->id = id;
	}
	if (id != s->id)
		return H3_CONTROL_OK;
	if (offset != s->len) { /* QUIC delivers in order: never, but safe */
		s->done = 1;
		return H3_CONTROL_OK;
	}
	size_t room = H3_CONTROL_MAX - s->len, n = len < room ? len : room;
	memcpy(s->buf + s->len, data, n);
	s->len = (uint16_t)(s->len + n);
	return judge(s);
}
