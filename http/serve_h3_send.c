/*
 * serve_h3_send.c -- keel-serve's QUIC datagrams out (serve_h3.h,
 * SENDING): one along a path, from the local address the client wrote
 * to (IP_PKTINFO), or a connection's batch of one size in one sendmsg
 * with UDP_SEGMENT (GSO), one a call on a socket whose kernel refused
 * it.  It does not know QUIC: h3_conn_write has ngtcp2 write into the
 * shard's tx buffer and hands each datagram to h3_batch_add.
 */
#include "serve_h3_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/udp.h> /* UDP_SEGMENT */

/* ---- sending ------------------------------------------------------------ */

/* Control data for one send: IP_PKTINFO and UDP_SEGMENT. */
union h3_cmsgs {
	char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

/* MH addressed along PATH: to its remote, from its local address (the
 * socket may be bound to 0.0.0.0) through an IP_PKTINFO in CB. */
static void msg_path(struct msghdr *mh, union h3_cmsgs *cb,
                     const ngtcp2_path *path)
{
	struct in_pktinfo pi = {0};
	struct cmsghdr *cm;

	memset(cb, 0, sizeof *cb);
	mh->msg_name = path->remote.addr;
	mh->msg_namelen = path->remote.addrlen;
	mh->msg_control = cb->buf;
	mh->msg_controllen = sizeof cb->buf; /* for CMSG_FIRSTHDR */
	if (!path->local.addr || path->local.addr->sa_family != AF_INET) {
		mh->msg_controllen = 0;
		return;
	}
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof pi);
	pi.ipi_spec_dst = ((struct sockaddr_in *)path->local.addr)->sin_addr;
	memcpy(CMSG_DATA(cm), &pi, sizeof pi);
	mh->msg_controllen = CMSG_SPACE(sizeof pi);
}

static ssize_t msg_send(int fd, const struct msghdr *mh)
{
	ssize_t r;

	do
		r = sendmsg(fd, mh, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Sends one datagram of LEN bytes along PATH.  A full socket buffer
 * drops it: QUIC takes it for lost and sends again. */
void h3_send_datagram(struct serve_shard *sh, const ngtcp2_path *path,
                      const uint8_t *buf, size_t len)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {0};
	union h3_cmsgs cb;

	msg_path(&mh, &cb, path);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	msg_send(sh->ufd, &mh);
}

/*
 * Sends LEN bytes of datagrams along PATH, each SEG bytes but the last:
 * one sendmsg whose UDP_SEGMENT has the kernel cut them (GSO), so that
 * the stack is walked once per batch rather than per datagram.  A
 * kernel or device that refuses it (EIO: no checksum offload; EINVAL)
 * gets them one a call, from now on for this socket.
 */
static void send_datagrams(struct serve_shard *sh, const ngtcp2_path *path,
                           const uint8_t *buf, size_t len, size_t seg)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {0};
	union h3_cmsgs cb;
	struct cmsghdr *cm;
	uint16_t gso = (uint16_t)seg;
	size_t off, ctl;

	if (len <= seg || sh->h3->no_gso)
		goto one_by_one;
	msg_path(&mh, &cb, path);
	ctl = mh.msg_controllen;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_controllen = ctl + CMSG_SPACE(sizeof gso);
	cm = (struct cmsghdr *)(cb.buf + ctl); /* after IP_PKTINFO, if any */
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof gso);
	memcpy(CMSG_DATA(cm), &gso, sizeof gso);
	if (msg_send(sh->ufd, &mh) >= 0 || (errno != EIO && errno != EINVAL))
		return;
	sh->h3->no_gso = 1;
one_by_one:
	for (off = 0; off < len; off += seg)
		h3_send_datagram(sh, path, buf + off, len - off < seg ? len - off : seg);
}

/* Sends B's datagrams and empties it. */
void h3_batch_send(struct serve_shard *sh, struct h3_batch *b)
{
	if (b->len > 0)
		send_datagrams(sh, &b->ps.path, sh->h3->tx, b->len, b->seg);
	b->len = 0;
	b->n = 0;
}

/* Adds the datagram of N bytes that ngtcp2 wrote at the end of B (in
 * the shard's tx buffer) along PATH, sending what must go first or what
 * cannot grow. */
void h3_batch_add(struct serve_shard *sh, struct h3_batch *b,
                  const ngtcp2_path *path, size_t n)
{
	uint8_t *tx = sh->h3->tx;
	int cap = sh->h3->no_gso ? 1 : H3_GSO_SEGS;

	if (b->n > 0 && (n > b->seg || !ngtcp2_path_eq(path, &b->ps.path))) {
		size_t at = b->len;

		h3_batch_send(sh, b);
		memmove(tx, tx + at, n);
	}
	if (b->n == 0) {
		ngtcp2_path_copy(&b->ps.path, path);
		b->seg = n;
	}
	b->len += n;
	b->n++;
	if (n < b->seg || b->n >= cap)
		h3_batch_send(sh, b);
}
