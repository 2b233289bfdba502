/*
 * serve_h3_closing.c -- how keel-serve's QUIC connections end, and what
 * answers for connections it does not have (any more).  h3_conn_fail
 * sends one CONNECTION_CLOSE (none for idle, a handshake timeout or
 * draining) and leaves a closing record that sends it again to packets
 * still coming for the connection's IDs (serve_h3.h, CLOSING).  An
 * unknown short-header packet gets a stateless reset, a long-header one
 * in another version a Version Negotiation (serve_h3.h, UNKNOWN
 * PACKETS), both at most H3_RESETS_MAX a sweep per shard.
 */
#include "serve_h3_internal.h"

#include <stdlib.h>
#include <string.h>

#define H3_RESETS_MAX 64  /* stateless resets a shard sends per sweep     */
#define H3_CLOSING_MAX 4096 /* connections a shard holds closing          */
/* the least closing period: 3 PTO are a few ms on a LAN, under the
 * sweep's own 250 ms, and a reordered or delayed packet deserves the
 * close as much as a prompt one */
#define H3_CLOSING_MIN_MS 1000

/*
 * A connection we closed with a CONNECTION_CLOSE, in its closing period
 * (RFC 9000 10.2.1): the datagram that carried the close, sent again
 * to packets that still come for its connection IDs, until UNTIL_MS
 * (3 PTO, 1 s at least: then the sweep frees it, and such a packet gets
 * a stateless reset).  Its own copy of the IDs, in the shard's table.
 */
struct h3_closing {
	struct h3_closing *next;        /* the shard's                      */
	int64_t until_ms;               /* the closing period's end         */
	uint32_t packets;               /* packets that came for it since   */
	uint16_t len;                   /* of the datagram                  */
	struct h3_cid cids[H3_CIDS_MAX];
	uint8_t pkt[];                  /* the CONNECTION_CLOSE datagram    */
};

/* ---- the closing period ------------------------------------------------ */

/*
 * HC was just closed with the CONNECTION_CLOSE datagram PKT of LEN
 * bytes: its connection IDs go to a closing record that answers for
 * them for 3 PTO (RFC 9000 10.2.1: "at least three times the current
 * PTO"), H3_CLOSING_MIN_MS at least, so that a client whose copy of the
 * close was lost learns of it rather than taking a stateless reset.
 * Without memory, or with H3_CLOSING_MAX closing already, there is none
 * (a stateless reset then, as for any ID we do not know).
 */
static void closing_begin(struct h3_conn *hc, const uint8_t *pkt, size_t len)
{
	struct serve_shard *sh = hc->c->shard;
	struct h3_shard *hs = sh->h3;
	ngtcp2_duration pto = ngtcp2_conn_get_pto(hc->quic);
	struct h3_closing *cl;
	int i, n = 0;

	if (hs->nclosing >= H3_CLOSING_MAX || len > UINT16_MAX)
		return;
	cl = calloc(1, sizeof *cl + len);
	if (cl == NULL)
		return;
	cl->until_ms = (int64_t)((3 * pto + NGTCP2_MILLISECONDS - 1) /
	                         NGTCP2_MILLISECONDS);
	if (cl->until_ms < H3_CLOSING_MIN_MS)
		cl->until_ms = H3_CLOSING_MIN_MS;
	cl->until_ms += sh->now_ms;
	cl->len = (uint16_t)len;
	memcpy(cl->pkt, pkt, len);
	for (i = 0; i < H3_CIDS_MAX; i++) {
		struct h3_cid *e = &hc->cids[i];

		if (!e->used)
			continue;
		h3_cid_unlink(hs, e);
		cl->cids[n] = *e;
		cl->cids[n].conn = NULL;
		cl->cids[n].closing = cl;
		h3_cid_link(hs, &cl->cids[n++]);
	}
	cl->next = hs->closing;
	hs->closing = cl;
	hs->nclosing++;
}

/* A packet of LEN bytes from PATH for CL's connection: its close again,
 * to the 1st, 2nd, 4th, 8th... such packet (the rate limit RFC 9000
 * 10.2.1 asks for), and only when it is at most 3 times what came (the
 * client's address may be unproven: RFC 9000 8). */
void h3_closing_answer(struct serve_shard *sh, const ngtcp2_path *path,
                       struct h3_closing *cl, size_t len)
{
	uint32_t k = ++cl->packets;

	if ((k & (k - 1)) == 0 && cl->len <= 3 * len)
		h3_send_datagram(sh, path, cl->pkt, cl->len);
}

/* Frees HS's closing records whose period is over at NOW_MS; all of
 * them when ALL (the shard closes). */
void h3_closing_expire(struct h3_shard *hs, int64_t now_ms, int all)
{
	struct h3_closing **pp = &hs->closing, *cl;
	int i;

	while ((cl = *pp) != NULL) {
		if (!all && cl->until_ms > now_ms) {
			pp = &cl->next;
			continue;
		}
		*pp = cl->next;
		for (i = 0; i < H3_CIDS_MAX; i++)
			if (cl->cids[i].used)
				h3_cid_unlink(hs, &cl->cids[i]);
		hs->nclosing--;
		free(cl);
	}
}

/* The connection ends: one CONNECTION_CLOSE unless SILENT (idle,
 * draining, a handshake that never finished), then its state goes, but
 * for its closing period's (closing_begin). */
void h3_conn_fail(struct h3_conn *hc, int rv)
{
	struct serve_conn *c = hc->c;
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	uint8_t buf[H3_PKT_MAX];
	ngtcp2_ssize n;

	if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_DROP_CONN ||
	    rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT ||
	    ngtcp2_conn_is_in_closing_period(hc->quic) ||
	    ngtcp2_conn_is_in_draining_period(hc->quic))
		goto out_close;
	if (!hc->ccerr_set && rv == NGTCP2_ERR_CRYPTO)
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
		    &hc->ccerr, ngtcp2_conn_get_tls_alert(hc->quic), NULL, 0);
	else if (!hc->ccerr_set)
		ngtcp2_connection_close_error_set_transport_error_liberr(
		    &hc->ccerr, rv, NULL, 0);
	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_write_connection_close(hc->quic, &ps.path, &pi, buf,
	                                       sizeof buf, &hc->ccerr, h3_now_ns());
	if (n > 0) {
		h3_send_datagram(c->shard, &ps.path, buf, (size_t)n);
		closing_begin(hc, buf, (size_t)n);
	}
out_close:
	serve_conn_close(c); /* h3_free */
}

/* ---- packets for no connection of ours --------------------------------- */

/*
 * A short-header packet of PKTLEN bytes for DCID, which no connection of
 * ours has: a stateless reset (RFC 9000 10.3), with the token that DCID
 * was given if it was ours (the same secret and HKDF), so that a client
 * whose connection we forgot (a restart, a lost close) stops at once.
 * Smaller than the packet, never for one under 22 bytes (so no two
 * endpoints can bounce resets forever), and at most H3_RESETS_MAX a
 * sweep per shard (no amplification source for a spoofed flood).
 */
void h3_stateless_reset(struct serve_shard *sh, const ngtcp2_path *path,
                        const uint8_t *dcid, size_t pktlen)
{
	uint8_t buf[64], rnd[64], token[NGTCP2_STATELESS_RESET_TOKENLEN];
	struct h3_creds *cr = sh->srv->h3;
	size_t len = pktlen <= 43 ? pktlen - 1 : 42;
	ngtcp2_cid cid;
	ngtcp2_ssize n;

	if (pktlen < 22 || sh->h3->resets >= H3_RESETS_MAX)
		return;
	sh->h3->resets++;
	ngtcp2_cid_init(&cid, dcid, H3_CIDLEN);
	if (ngtcp2_crypto_generate_stateless_reset_token(token, cr->secret,
	                                                 sizeof cr->secret,
	                                                 &cid) != 0)
		return;
	h3_random_fill(rnd, len - sizeof token);
	n = ngtcp2_pkt_write_stateless_reset(buf, len, token, rnd,
	                                     len - sizeof token);
	if (n > 0)
		h3_send_datagram(sh, path, buf, (size_t)n);
}

/*
 * A long-header packet in a version we do not speak, of 1200 bytes or
 * more (a client's first Initial is; ngtcp2_pkt_decode_version_cid
 * checks): a Version Negotiation packet listing v1 (RFC 9000 6,
 * 17.2.1), the client's connection IDs swapped.  At most 7 + 2 x 255 + 4
 * bytes, under half the packet, so no amplification; counted with the
 * stateless resets (H3_RESETS_MAX a sweep per shard).
 */
void h3_version_negotiate(struct serve_shard *sh, const ngtcp2_path *path,
                          const ngtcp2_version_cid *vc)
{
	static const uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
	uint8_t buf[7 + 2 * 255 + sizeof versions], unused;
	ngtcp2_ssize n;

	if (sh->h3->resets >= H3_RESETS_MAX)
		return;
	sh->h3->resets++;
	h3_random_fill(&unused, 1);
	n = ngtcp2_pkt_write_version_negotiation(
	    buf, sizeof buf, unused, vc->scid, vc->scidlen, vc->dcid, vc->dcidlen,
	    versions, sizeof versions / sizeof versions[0]);
	if (n > 0)
		h3_send_datagram(sh, path, buf, (size_t)n);
}
