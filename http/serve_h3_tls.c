/*
 * serve_h3_tls.c -- QUIC's TLS for keel-serve's HTTP/3: the certificate
 * in force and its SIGHUP reload (h3_creds, h3_cert), each connection's
 * GnuTLS session from accept to the end of its handshake (h3_conn_tls ..
 * h3_tls_release), the session ticket key and 0-RTT's anti-replay store.
 * serve_h3.h, SESSION TICKETS AND 0-RTT, says what clients get.
 */
#include "serve_h3_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define H3_REPLAY_SLOTS 16384 /* ClientHellos the anti-replay store holds */
#define H3_REPLAY_PROBE 16    /* slots one binder may take               */
/* seconds an early ClientHello is held past GnuTLS's expiry for it:
 * that is in whole seconds from a truncated clock, and must not end
 * before the ticket-age check (within the window) refuses a replay */
#define H3_REPLAY_SLACK_S 2
/* TLS 1.3 only, without the middlebox compatibility mode QUIC forbids */
#define H3_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE"

/* The certificate and key in force, or one a SIGHUP replaced: held by
 * the server while in force, and by each GnuTLS session made with it
 * (GnuTLS keeps a pointer, no count), so it is freed by whichever lets go
 * last.  The server lets go only once every shard is past the swap
 * (serve_main.c, retired_sweep): none can then be between loading the
 * pointer and counting itself in. */
struct h3_cert {
	gnutls_certificate_credentials_t cred;
	atomic_int refs;
};

/* One ClientHello that brought early data: its PSK binder (the first
 * 32 bytes) and when it may be forgotten (0: a free slot). */
struct h3_replay_slot {
	int64_t forget_at;  /* time(2) seconds                              */
	uint8_t binder[32];
};

/* The anti-replay store (RFC 8446 8.2) of the whole server: shards are
 * threads, and a replay may come from another source port, so to
 * another shard.  Open addressing, H3_REPLAY_PROBE slots per binder. */
struct h3_replay {
	pthread_mutex_t lock;     /* every shard's handshakes add to it  */
	uint32_t seed;            /* the slots' hash key, from getrandom */
	struct h3_replay_slot slot[H3_REPLAY_SLOTS];
};

/* ---- session tickets and anti-replay ----------------------------------- */

/*
 * CR's session ticket key and anti-replay store.  One key for the whole
 * server, from getrandom at start, never written anywhere: a ticket
 * opens only in the process that issued it (a restart makes every
 * client's ticket useless, and it falls back to a full handshake).
 * GnuTLS derives the key that seals tickets from it and rotates that by
 * itself (TOTP-like, per ticket lifetime); the master key is not
 * rotated.  Since the key dies with the process, so do the transport
 * parameters a client remembered with its ticket for 0-RTT (RFC 9000
 * 7.4.1): ours are constants of serve_h3.h, the same for every
 * connection of a process, so early data never meets lower limits than
 * the ticket's holder was told.  The store is allocated untouched (its
 * pages become resident as early ClientHellos fill them).  0 or -1.
 */
static int tickets_init(struct h3_creds *cr)
{
	h3_random_fill(cr->ticket_key, sizeof cr->ticket_key);
	cr->ticket.data = cr->ticket_key;
	cr->ticket.size = sizeof cr->ticket_key;
	cr->replay = calloc(1, sizeof *cr->replay);
	if (cr->replay == NULL)
		return -1;
	h3_random_fill((uint8_t *)&cr->replay->seed, sizeof cr->replay->seed);
	pthread_mutex_init(&cr->replay->lock, NULL);
	return 0;
}

/*
 * GnuTLS's anti-replay add function (gnutls_anti_replay_set_add_function):
 * KEY is 12 bytes of the shard's recording window start, then the
 * ClientHello's PSK binder.  Only the binder is compared (the windows of
 * shards differ; a binder is a MAC over the ClientHello, so one per
 * ClientHello).  Returns 0 when it is new and remembered until
 * EXPIRES (plus H3_REPLAY_SLACK_S), GNUTLS_E_DB_ENTRY_EXISTS for a
 * replay, GNUTLS_E_DB_ERROR when it cannot be remembered (its slots are
 * full): either error makes GnuTLS refuse the early data, and the
 * connection goes on as a 1-RTT one.
 */
static int replay_add(void *ptr, time_t expires, const gnutls_datum_t *key,
                      const gnutls_datum_t *data)
{
	struct h3_replay *rp = ptr;
	struct h3_replay_slot *free_slot = NULL, *e;
	uint8_t binder[32] = {0};
	int64_t now = (int64_t)time(NULL);
	uint32_t h = rp->seed;
	int i, rc = 0;

	(void)data;
	if (key->size <= 12)
		return GNUTLS_E_DB_ERROR;
	memcpy(binder, key->data + 12,
	       key->size - 12 < sizeof binder ? key->size - 12 : sizeof binder);
	for (i = 0; i < (int)sizeof binder; i++)
		h = (h ^ binder[i]) * 16777619u; /* FNV-1a, keyed by the seed */
	pthread_mutex_lock(&rp->lock);
	for (i = 0; i < H3_REPLAY_PROBE; i++) {
		e = &rp->slot[(h + (uint32_t)i) & (H3_REPLAY_SLOTS - 1)];
		if (e->forget_at <= now) {
			if (free_slot == NULL)
				free_slot = e;
		} else if (memcmp(e->binder, binder, sizeof binder) == 0) {
			rc = GNUTLS_E_DB_ENTRY_EXISTS;
			goto out_unlock;
		}
	}
	if (free_slot == NULL) {
		rc = GNUTLS_E_DB_ERROR;
		goto out_unlock;
	}
	free_slot->forget_at = (int64_t)expires + H3_REPLAY_SLACK_S;
	memcpy(free_slot->binder, binder, sizeof binder);
out_unlock:
	pthread_mutex_unlock(&rp->lock);
	return rc;
}

/* SH's GnuTLS anti-replay context (its default 10 s window), adding to
 * the server's store.  0, or -1 with errno. */
int h3_replay_window_open(struct serve_shard *sh)
{
	if (gnutls_anti_replay_init(&sh->h3->anti_replay) < 0) {
		sh->h3->anti_replay = NULL;
		errno = ENOMEM;
		return -1;
	}
	gnutls_anti_replay_set_add_function(sh->h3->anti_replay, replay_add);
	gnutls_anti_replay_set_ptr(sh->h3->anti_replay, sh->srv->h3->replay);
	return 0;
}

/* ---- credentials ------------------------------------------------------ */

/* CERT and KEY (PEM) into a new h3_cert, counted once (the caller's).
 * Returns it, or NULL with a message in WHY. */
static struct h3_cert *cert_load(const char *cert, const char *key, char *why,
                                 size_t cap)
{
	struct h3_cert *ct = calloc(1, sizeof *ct);
	int rc;

	if (ct == NULL) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	rc = gnutls_certificate_allocate_credentials(&ct->cred);
	if (rc == 0)
		rc = gnutls_certificate_set_x509_key_file(ct->cred, cert, key,
		                                          GNUTLS_X509_FMT_PEM);
	if (rc < 0) {
		snprintf(why, cap, "%s, %s: %s", cert, key, gnutls_strerror(rc));
		if (ct->cred)
			gnutls_certificate_free_credentials(ct->cred);
		free(ct);
		return NULL;
	}
	atomic_init(&ct->refs, 1);
	return ct;
}

static struct h3_cert *cert_get(struct h3_cert *ct)
{
	atomic_fetch_add(&ct->refs, 1);
	return ct;
}

void h3_cert_put(struct h3_cert *ct)
{
	if (ct && atomic_fetch_sub(&ct->refs, 1) == 1) {
		gnutls_certificate_free_credentials(ct->cred);
		free(ct);
	}
}

struct h3_cert *h3_cert_reload(struct h3_creds *cr, const char *cert,
                               const char *key, char *why, size_t cap)
{
	struct h3_cert *ct = cert_load(cert, key, why, cap);

	return ct ? atomic_exchange(&cr->cert, ct) : NULL;
}

int h3_creds_load(const char *cert, const char *key, struct h3_creds **out,
                  char *why, size_t cap)
{
	struct h3_creds *cr = calloc(1, sizeof *cr);
	struct h3_cert *ct;
	int rc;

	if (cr == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	ct = cert_load(cert, key, why, cap);
	if (ct == NULL)
		goto out_free;
	atomic_init(&cr->cert, ct);
	rc = gnutls_priority_init(&cr->prio, H3_PRIORITY, NULL);
	if (rc < 0) {
		snprintf(why, cap, "TLS priorities: %s", gnutls_strerror(rc));
		goto out_free;
	}
	h3_random_fill(cr->secret, sizeof cr->secret);
	h3_random_fill(cr->retry_secret, sizeof cr->retry_secret);
	if (tickets_init(cr) < 0) {
		snprintf(why, cap, "out of memory");
		gnutls_priority_deinit(cr->prio);
		goto out_free;
	}
	*out = cr;
	return 0;
out_free:
	h3_cert_put(atomic_load(&cr->cert));
	free(cr);
	return -1;
}

void h3_creds_free(struct h3_creds *cr)
{
	if (cr == NULL)
		return;
	pthread_mutex_destroy(&cr->replay->lock);
	free(cr->replay);
	explicit_bzero(cr->ticket_key, sizeof cr->ticket_key);
	gnutls_priority_deinit(cr->prio);
	h3_cert_put(atomic_load(&cr->cert));
	free(cr);
}

/* ---- a connection's TLS session ---------------------------------------- */

static ngtcp2_conn *ref_get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct h3_conn *)ref->user_data)->quic;
}

/* Frees HC's GnuTLS session, if any, and lets go of its certificate. */
void h3_tls_free(struct h3_conn *hc)
{
	if (hc->tls)
		gnutls_deinit(hc->tls);
	hc->tls = NULL;
	h3_cert_put(hc->cert);
	hc->cert = NULL;
}

/* HC's GnuTLS session: the certificate, TLS 1.3, ALPN "h3" only,
 * session tickets with the server's key (sent by h3_tls_release, not by
 * GnuTLS), early data unless --no-0rtt (QUIC lifts TLS's size limit,
 * RFC 9001 4.6.1; the shard's anti-replay window checks it), and
 * ngtcp2's QUIC hooks.  Returns 0 or -1. */
int h3_conn_tls(struct h3_conn *hc, struct h3_creds *cr)
{
	struct serve_shard *sh = hc->c->shard;
	gnutls_datum_t alpn = {(unsigned char *)"h3", 2};
	int early = !sh->srv->cfg.h3_no_0rtt;

	if (gnutls_init(&hc->tls, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA |
	                              GNUTLS_NO_AUTO_SEND_TICKET |
	                              (early ? GNUTLS_ENABLE_EARLY_DATA : 0)) != 0) {
		hc->tls = NULL;
		return -1;
	}
	hc->cert = cert_get(atomic_load(&cr->cert)); /* h3_tls_free lets go */
	if (gnutls_priority_set(hc->tls, cr->prio) != 0 ||
	    gnutls_session_ticket_enable_server(hc->tls, &cr->ticket) != 0 ||
	    ngtcp2_crypto_gnutls_configure_server_session(hc->tls) != 0 ||
	    gnutls_credentials_set(hc->tls, GNUTLS_CRD_CERTIFICATE,
	                           hc->cert->cred) != 0 ||
	    gnutls_alpn_set_protocols(hc->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0)
		return -1;
	if (early) {
		gnutls_anti_replay_enable(hc->tls, sh->h3->anti_replay);
		if (gnutls_record_set_max_early_data_size(hc->tls, 0xffffffffu) != 0)
			return -1;
	}
	hc->ref.get_conn = ref_get_conn;
	hc->ref.user_data = hc;
	gnutls_session_set_ptr(hc->tls, &hc->ref);
	ngtcp2_conn_set_tls_native_handle(hc->quic, hc->tls);
	return 0;
}

/* HC's handshake is over: one session ticket goes out (GnuTLS seals it
 * and hands it to ngtcp2, which copies it into the CRYPTO stream: about
 * 4 KB it keeps to the end, serve_h3.h MEMORY), then the GnuTLS session
 * (about 9 KB, and what it kept of the handshake) goes.  QUIC's keys are ngtcp2's, key updates derive
 * from them, and a later resumption needs only the ticket, which the
 * client holds.  A ticket that cannot be made costs the client its next
 * resumption, not this connection. */
void h3_tls_release(struct h3_conn *hc)
{
	if (hc->tls == NULL || !ngtcp2_conn_get_handshake_completed(hc->quic))
		return;
	(void)gnutls_session_ticket_send(hc->tls, 1, 0);
	ngtcp2_conn_set_tls_native_handle(hc->quic, NULL);
	h3_tls_free(hc);
}
