/*
 * proto.c -- writer-to-harness records over a pipe (see proto.h).
 */
#include "proto.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int proto_send(int fd, const proto_rec *rec)
{
	ssize_t n;

	do
		n = write(fd, rec, sizeof(*rec));
	while (n < 0 && errno == EINTR);
	/* A pipe write of less than PIPE_BUF is all or nothing. */
	return n == (ssize_t)sizeof(*rec) ? 0 : -1;
}

long proto_read(proto_reader *r, int fd)
{
	ssize_t n;

	if (r->used) { /* slide the partial record to the front */
		memmove(r->buf, r->buf + r->used, r->have - r->used);
		r->have -= r->used;
		r->used = 0;
	}
	do
		n = read(fd, r->buf + r->have, sizeof(r->buf) - r->have);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		r->have += (size_t)n;
	return (long)n;
}

int proto_next(proto_reader *r, proto_rec *rec)
{
	if (r->have - r->used < sizeof(*rec))
		return 0;
	memcpy(rec, r->buf + r->used, sizeof(*rec));
	r->used += sizeof(*rec);
	return 1;
}

size_t proto_pending(const proto_reader *r)
{
	return r->have - r->used;
}
