/*
 * http_target.h -- `torture --target http`: the process torture SIGKILLs is
 * keel-serve, not a writer that embeds the engine.
 *
 * ONE CYCLE (run.c calls these where it would fork the embedded writer)
 *   1. http_target_spawn starts `keel-serve --db STORE --listen 127.0.0.1:0`
 *      (its own process group, so a ^C at the terminal reaches torture
 *      alone), reads the port from its first stdout line, then forks the
 *      client process (http_client.h) with the record pipe.  The harness
 *      gets the SERVER's pid, and the pipe.
 *   2. The harness SIGKILLs the server at its kill time and reaps it, exactly
 *      as it would the embedded writer.
 *   3. http_target_reap lets the client process see its connections break
 *      and end on its own -- so an answer the server wrote before it died is
 *      read and reported, not lost with the client -- then reaps it.  Only
 *      then is the pipe drained: every acknowledgement the client received
 *      is in it, and nothing more can arrive.
 *   With --http-tls (or --http3) the first cycle first makes a throwaway
 *   certificate and key beside the store (http_conn.h) and every server
 *   gets --tls-cert and --tls-key; with --http-tls, --http2 or --http3 the
 *   first cycle probes the server before the client starts (handshake
 *   against the pinned certificate, ALPN h2, SETTINGS in answer to the
 *   HTTP/2 preface, a QUIC handshake with ALPN h3), so a server that
 *   cannot speak what was asked is a set-up failure.
 *   4. Verification opens the store file read-only, as for the embedded
 *      writer; the oracle is the same.  The next cycle starts a new server
 *      on the same store, whose keel_open runs recovery.
 *
 * The acknowledged record stays exact because the process that receives
 * the answers is not the one that is killed: the client's DONE record is
 * written after the 2xx arrived, and the client outlives the server.
 */
#ifndef TORTURE_HTTP_TARGET_H
#define TORTURE_HTTP_TARGET_H

#include <sys/types.h>

#include "writer.h"

/* Before anything is created: refuses flags keel-serve cannot honour (the
 * fault simulator's, --compact-every, the engine's --unsafe modes) and finds
 * keel-serve (--serve PATH, else beside this program) and checks that it
 * can be run.  0, or -1 after a message naming the problem (exit 2). */
int http_target_check(const torture_options *o);

/*
 * Starts the server, waits until it listens, and starts the client.
 * Returns 0 with *PID (the server) and *FD (the client's record pipe, read
 * end, non-blocking, close-on-exec).
 *
 * FIRST: this is the run's first cycle.  A server that does not start then,
 * or fails the probe, is a set-up problem (not keel-serve, no port, flags
 * it refuses, no TLS or HTTP/2): -1 with a message.  In a
 * later cycle it is the store's recovery failing after a crash: the call
 * returns 0 with the server's pid (unreaped; it exited or is killed next)
 * and a pipe already at end of file, so the harness reports a writer that
 * ended before its kill.
 */
int http_target_spawn(const writer_plan *plan, int first, pid_t *pid,
                      int *fd);

/*
 * After the server was killed and reaped: waits up to 5 s for the client
 * process to end on its own, SIGKILLs it if it does not, reaps it.  0, or
 * -1 when the client ended abnormally (said on stderr).
 */
int http_target_reap(void);

#endif /* TORTURE_HTTP_TARGET_H */
