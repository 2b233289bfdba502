#!/usr/bin/env python3
"""tls_client.py -- TLS clients for tests/tls.sh (Python's ssl module).

  tls_client.py keep PORT CAFILE   one connection; each line on stdin is a
        path: GET it on that same connection and print "STATUS BODYLEN
        FINGERPRINT" (the server certificate's SHA-256), flushed
  tls_client.py idle PORT CAFILE N [PATH]  open N connections with their
        handshake done (and PATH got on each, if given), print "open N",
        hold them until stdin ends (docs/http.md: memory per idle
        connection)
  tls_client.py half PORT CAFILE N  open N connections that each send a
        ClientHello (TLS 1.3, ALPN h2 and http/1.1) and then nothing: the
        server answers with its flight and waits for our Finished; once
        the server's flight arrived on each (or 10 s), print "open N",
        hold them until stdin ends (docs/http.md: a half-open handshake)
  tls_client.py halfcount PORT CAFILE N  open N connections, one after
        the other, that each send a ClientHello made in memory (so the
        handshake can never go on) and then nothing; once each has the
        server's flight or was closed (or 10 s), print "flight A closed B",
        hold them until stdin ends
  (KEEL_SOURCE=ADDR: connect from that local address; halfcount, keep,
        idle)
  tls_client.py stalls PORT N HEX   open N connections that each send the
        bytes HEX (a part of a ClientHello, say) and then nothing; print
        "open N", hold them until stdin ends
  tls_client.py pipe PORT CAFILE N  one write: a PUT of /pipe then N GETs
        of it, pipelined; print each answer's status on one line
  tls_client.py stall PORT HEX      connect, send the bytes HEX (may be
        empty), print the seconds until the server closes (at most 30)
"""
import hashlib
import os
import resource
import socket
import ssl
import sys
import time


def context(cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def source():
    """KEEL_SOURCE: the local address to connect from (127.0.0.0/8 is
    every source a loopback test can be), else the kernel's choice."""
    src = os.environ.get("KEEL_SOURCE")
    return (src, 0) if src else None


def connect(port, ctx):
    raw = socket.create_connection(("127.0.0.1", port), timeout=20,
                                   source_address=source())
    return ctx.wrap_socket(raw, server_hostname="localhost")


def get(sock, path):
    sock.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode())
    status, body, _ = answer(sock, b"")
    return status, len(body)


def answer(sock, buf):
    """Reads one answer; returns its status, body and the bytes after it."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return "closed", b"", b""
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")[1]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, body[:length], body[length:]


def pipe(port, cafile, n):
    sock = connect(port, context(cafile))
    value = b"v" * 20000  # more than one TLS record
    reqs = [b"PUT /pipe HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d"
            b"\r\n\r\n" % len(value) + value]
    reqs += [b"GET /pipe HTTP/1.1\r\nHost: localhost\r\n\r\n"] * n
    sock.sendall(b"".join(reqs))
    rest, statuses = b"", []
    for _ in range(n + 1):
        status, body, rest = answer(sock, rest)
        if status == "200" and body != value:
            status = "200-wrong-body"
        statuses.append(status)
    print(" ".join(statuses), flush=True)


def keep(port, cafile):
    sock = connect(port, context(cafile))
    fp = hashlib.sha256(sock.getpeercert(binary_form=True)).hexdigest()
    for line in sys.stdin:
        status, n = get(sock, line.strip())
        print(status, n, fp, flush=True)
    sock.close()


def idle(port, cafile, n, path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    ctx = context(cafile)
    conns = [connect(port, ctx) for _ in range(n)]
    if path:
        for c in conns:
            get(c, path)
    print("open", len(conns), flush=True)
    sys.stdin.read()
    for c in conns:
        c.close()


def half(port, cafile, n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    ctx = context(cafile)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    conns = []
    for _ in range(n):
        raw = socket.create_connection(("127.0.0.1", port), timeout=20)
        raw.sendall(client_hello(ctx))  # made in memory: it goes no further
        raw.setblocking(False)
        conns.append(raw)
    # the server's flight is in each socket's buffer once it answered:
    # peek at it without reading (the handshake must stay half done)
    deadline = time.monotonic() + 10
    for c in conns:
        flight_or_close(c, deadline)
    print("open", len(conns), flush=True)
    sys.stdin.read()
    for c in conns:
        c.close()


def flight_or_close(c, deadline):
    """'flight' once the server's first bytes are in C's socket (peeked:
    the handshake stays half done), 'closed' at its EOF or reset, else
    'none' at DEADLINE."""
    while time.monotonic() < deadline:
        try:
            got = c.recv(1, socket.MSG_PEEK)
            return "flight" if got else "closed"
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            return "closed"
    return "none"


def client_hello(ctx):
    """The bytes of a ClientHello from CTX, made in memory: the handshake
    can go no further, whatever the server answers and however fast."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def halfcount(port, cafile, n):
    ctx = context(cafile)
    conns, seen = [], {"flight": 0, "closed": 0, "none": 0}
    for _ in range(n):
        raw = socket.create_connection(("127.0.0.1", port), timeout=20,
                                       source_address=source())
        try:
            raw.sendall(client_hello(ctx))
        except OSError:  # the server closed it already (a reset)
            seen["closed"] += 1
            conns.append(raw)
            continue
        raw.setblocking(False)
        # one at a time: the server has judged this one before the next
        seen[flight_or_close(raw, time.monotonic() + 10)] += 1
        conns.append(raw)
    print("flight %d closed %d" % (seen["flight"], seen["closed"]),
          flush=True)
    sys.stdin.read()
    for c in conns:
        c.close()


def stalls(port, n, data):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(data)
        conns.append(s)
    print("open", len(conns), flush=True)
    sys.stdin.read()
    for s in conns:
        s.close()


def stall(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    start = time.monotonic()
    if data:
        s.sendall(data)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    print("%.1f" % (time.monotonic() - start), flush=True)


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "keep":
        keep(port, sys.argv[3])
    elif cmd == "idle":
        idle(port, sys.argv[3], int(sys.argv[4]),
             sys.argv[5] if len(sys.argv) > 5 else None)
    elif cmd == "half":
        half(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "halfcount":
        halfcount(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "stalls":
        stalls(port, int(sys.argv[3]), bytes.fromhex(sys.argv[4]))
    elif cmd == "pipe":
        pipe(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "stall":
        stall(port, bytes.fromhex(sys.argv[3] if len(sys.argv) > 3 else ""))
    else:
        sys.exit("unknown command " + cmd)


main()
