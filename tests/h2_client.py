#!/usr/bin/env python3
"""h2_client.py -- raw HTTP/2 frames for tests/h2.sh (standard library
only: socket, ssl, struct; HPACK as literal fields, never Huffman).

  h2_client.py ATTACK PORT [CAFILE]
      connect (TLS with ALPN h2 when CAFILE is given, else h2c by prior
      knowledge), send the preface, our SETTINGS, then ATTACK in one write,
      and read until the server closes or 20 s pass.  Prints one line:
      "goaway CODE" (the first GOAWAY's error code, in hex) or "none",
      then " closed" when the server ended the connection, and
      " answers N" (HEADERS frames the server sent).
  ATTACK is one of
      rapid-reset    1000 times: HEADERS for a new stream (a GET), then
                     RST_STREAM(CANCEL) for it (CVE-2023-44487)
      continuation   HEADERS without END_HEADERS, then 2000 CONTINUATION
                     frames that never end the block (the 2024 flood)
      hpack-bomb     one 4000-byte field added to the dynamic table, then
                     8000 one-byte references to it in the same block
                     (32 MB decoded from 16 KB)
      settings-flood 5000 empty SETTINGS frames
      ping-flood     5000 PING frames
      streams        150 HEADERS (GET /) without END_STREAM: over
                     SETTINGS_MAX_CONCURRENT_STREAMS (100); prints
                     " refused N" (RST_STREAM REFUSED_STREAM or
                     PROTOCOL_ERROR received)
      stream-flood   2000 HEADERS (GET /) without END_STREAM: 1900 over
                     SETTINGS_MAX_CONCURRENT_STREAMS, each refused
      header-431     one GET whose header list is 20000 bytes (over
                     SETTINGS_MAX_HEADER_LIST_SIZE, under the bomb bound)
      window-flood   5000 WINDOW_UPDATE frames (increment 1) on the
                     connection, for no DATA at all
      lower-id       a GET on stream 5, then a HEADERS on stream 3 (lower
                     than one already used: RFC 9113 5.1.1)
      head-stall     HEADERS without END_HEADERS, then nothing: the block
                     never ends; also prints " after S" (seconds to the
                     GOAWAY, or to the end of the wait)
      idle-close     nothing after SETTINGS (and its ACK): the connection
                     sits idle until the server ends it
      trailers       a PUT /tr whose body ("v") is followed by trailers (a
                     HEADERS on the same stream, END_STREAM); prints the
                     answers as usual (one, and no GOAWAY)

  h2_client.py rapid-reset-paced PORT [CAFILE]
      rapid reset in two batches, timed against CLOCK_MONOTONIC's seconds
      (the clock nghttp2's own reset limit refills by, a whole second's
      tokens at once): 150 HEADERS + RST_STREAM pairs just after a second
      begins, 100 more just before it ends, then 400 more if nothing has
      ended the connection; prints as ATTACK does
  h2_client.py ping-idle PORT [CAFILE]
      no stream, a PING every 0.5 s for up to 20 s, until the server ends
      the connection; prints "goaway CODE" or "none", " closed" and
      " after S" (seconds)
  h2_client.py slow-body PORT N HOLD [CAFILE]
      N PUT streams (content-length 200000), 16000 body bytes on each,
      then "loaded"; then a byte on each stream every 0.5 s (far below
      any --body-min-rate) for up to 15 s, until each stream was reset
      or the connection ended.  Prints "reset R code C goaway G"
      (RST_STREAMs received, the last one's code, the GOAWAY's code or
      none), then " served S" (streams answered on the same connection
      afterwards, when it is still open: a GET) and " closed"; then keeps
      the connection open HOLD seconds more

  h2_client.py put-get PORT [CAFILE]
      one write: PUT /pg (body "v") on stream 1, then GET /k on streams 3,
      5 and 7; prints the stream of each answer (HEADERS) in the order
      they came, e.g. "3 5 7 1": the GETs do not wait for the PUT's sync
  h2_client.py split PORT
      h2c whose preface comes in two writes 0.3 s apart, then a GET /k;
      prints the stream of each answer ("1")
  h2_client.py listings PORT N
      SETTINGS_INITIAL_WINDOW_SIZE 0 (no DATA may come), then N GETs of
      /?limit=1000 at once; prints how many answers were 200 and how many
      something else ("ok A other B"), from each HEADERS' first field
      (nghttp2 sends :status 200 as static index 8, byte 0x88)
  h2_client.py idle PORT SMALL BIG [CAFILE]
      three GETs on one connection, each after the one before was answered
      and the connection sat idle for 1.5 s (past H2_IDLE_PAGES_MS and a
      sweep: the server has dropped its frame buffer's pages): GET SMALL,
      GET BIG, then GET SMALL with a 12000-byte header field; prints each
      answer's stream and DATA bytes, e.g. "1:5 3:1048576 5:5"
  h2_client.py term PORT [CAFILE]
      HEADERS of a PUT /term (no END_STREAM), then a PING; once its ACK
      is back (the server has the stream) prints "ready" and waits for a
      GOAWAY (SIGTERM), then sends the body "t" with END_STREAM; prints
      "goaway CODE last LAST", " answered STREAM" and " closed" as seen
"""
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONT = range(10)
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + struct.pack(
        ">BBI", ftype, flags, stream) + payload


def hpack_int(value, prefix_bits, first):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name, value, index=False):
    """A literal field with a literal name, without (or with) indexing."""
    first = 0x40 if index else 0x00
    prefix = 6 if index else 4
    return (hpack_int(0, prefix, first) + hpack_int(len(name), 7, 0) + name +
            hpack_int(len(value), 7, 0) + value)


def request(path=b"/", method=b"GET", extra=b""):
    return (literal(b":method", method) + literal(b":scheme", b"http") +
            literal(b":authority", b"localhost") + literal(b":path", path) +
            extra)


def attack(name):
    out = []
    if name == "rapid-reset":
        for i in range(1000):
            sid = 1 + 2 * i
            out.append(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                             request(b"/k")))
            out.append(frame(RST, 0, sid, struct.pack(">I", 0x8)))
    elif name == "continuation":
        out.append(frame(HEADERS, END_STREAM, 1, request(b"/k")))
        for i in range(2000):
            out.append(frame(CONT, 0, 1, literal(b"x-c", b"v" * 16)))
    elif name == "hpack-bomb":
        block = request(b"/k") + literal(b"x-bomb", b"a" * 4000, index=True)
        block += bytes([0x80 | 62]) * 8000  # indexed: the dynamic entry
        out.append(frame(HEADERS, END_STREAM | END_HEADERS, 1, block))
    elif name == "settings-flood":
        out = [frame(SETTINGS, 0, 0)] * 5000
    elif name == "ping-flood":
        out = [frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(5000)]
    elif name == "streams":
        for i in range(150):
            out.append(frame(HEADERS, END_HEADERS, 1 + 2 * i, request(b"/")))
    elif name == "stream-flood":
        for i in range(2000):
            out.append(frame(HEADERS, END_HEADERS, 1 + 2 * i, request(b"/")))
    elif name == "window-flood":
        out = [frame(WINDOW, 0, 0, struct.pack(">I", 1))] * 5000
    elif name == "lower-id":
        out.append(frame(HEADERS, END_STREAM | END_HEADERS, 5, request(b"/k")))
        out.append(frame(HEADERS, END_STREAM | END_HEADERS, 3, request(b"/k")))
    elif name == "head-stall":
        out.append(frame(HEADERS, END_STREAM, 1, request(b"/k")))
    elif name == "idle-close":
        pass
    elif name == "trailers":
        put = request(b"/tr", b"PUT", literal(b"content-length", b"1"))
        out.append(frame(HEADERS, END_HEADERS, 1, put))
        out.append(frame(DATA, 0, 1, b"v"))
        out.append(frame(HEADERS, END_STREAM | END_HEADERS, 1,
                         literal(b"x-trailer", b"1")))
    elif name == "header-431":
        extra = literal(b"x-big", b"b" * 20000)
        block = request(b"/k", extra=extra)
        out.append(frame(HEADERS, END_STREAM, 1, block[:16000]))
        out.append(frame(CONT, END_HEADERS, 1, block[16000:]))
    else:
        sys.exit("unknown attack " + name)
    return b"".join(out)


def connect(port, cafile):
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    if not cafile:
        return raw
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    if s.selected_alpn_protocol() != "h2":
        sys.exit("the server did not pick h2: %r" % s.selected_alpn_protocol())
    return s


def frames(s, buf):
    """Reads one chunk; returns (complete frames, the rest, eof)."""
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        return [], buf, None
    except OSError:
        return [], buf, True
    if not chunk:
        return [], buf, True
    buf += chunk
    out = []
    while len(buf) >= 9:
        length = struct.unpack(">I", b"\0" + buf[:3])[0]
        if len(buf) < 9 + length:
            break
        sid = struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
        out.append((buf[3], buf[4], sid, buf[9:9 + length]))
        buf = buf[9 + length:]
    return out, buf, False


def put_get(s):
    put = request(b"/pg", b"PUT", literal(b"content-length", b"1"))
    s.sendall(frame(HEADERS, END_HEADERS, 1, put) + frame(DATA, END_STREAM, 1, b"v") +
              b"".join(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                             request(b"/k")) for sid in (3, 5, 7)))
    order, buf, deadline = [], b"", time.time() + 20
    while len(order) < 4 and time.time() < deadline:
        got, buf, eof = frames(s, buf)
        for ftype, flags, sid, payload in got:
            if ftype == HEADERS:
                order.append(str(sid))
            elif ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
        if eof:
            break
    print(" ".join(order))


def answer(s, sid, buf):
    """Reads until stream SID ends; returns (DATA bytes, the rest)."""
    got_bytes, deadline = 0, time.time() + 20
    while time.time() < deadline:
        got, buf, eof = frames(s, buf)
        for ftype, flags, fsid, payload in got:
            if ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            if fsid != sid:
                continue
            if ftype == DATA and payload:
                got_bytes += len(payload)
                credit = struct.pack(">I", len(payload))
                s.sendall(frame(WINDOW, 0, sid, credit) +
                          frame(WINDOW, 0, 0, credit))
            if ftype in (DATA, HEADERS) and flags & END_STREAM:
                return got_bytes, buf
        if eof:
            break
    return -1, buf


def idle(s, small, big):
    out, buf = [], b""
    gets = ((1, small, b""), (3, big, b""),
            (5, small, literal(b"x-big", b"b" * 12000)))
    for i, (sid, p, extra) in enumerate(gets):
        if i:
            time.sleep(1.5)
        s.sendall(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                        request(p, extra=extra)))
        n, buf = answer(s, sid, buf)
        out.append("%d:%d" % (sid, n))
    print(" ".join(out))


def term(s):
    put = request(b"/term", b"PUT", literal(b"content-length", b"1"))
    s.sendall(frame(HEADERS, END_HEADERS, 1, put) + frame(PING, 0, 0, b"p" * 8))
    buf, deadline, line, ready = b"", time.time() + 30, "", False
    while time.time() < deadline:
        got, buf, eof = frames(s, buf)
        for ftype, flags, sid, payload in got:
            if ftype == PING and flags & ACK and not ready:
                ready = True
                print("ready", flush=True)
            elif ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            elif ftype == GOAWAY and "goaway" not in line:
                last = struct.unpack(">I", payload[:4])[0] & 0x7fffffff
                code = struct.unpack(">I", payload[4:8])[0]
                line += "goaway 0x%x last %d" % (code, last)
                s.sendall(frame(DATA, END_STREAM, 1, b"t"))
            elif ftype == HEADERS:
                line += " answered %d" % sid
        if eof:
            line += " closed" if eof is True else ""
            break
    print(line.strip())


def pairs(first, n):
    """N HEADERS + RST_STREAM(CANCEL) pairs from stream FIRST on."""
    return b"".join(frame(HEADERS, END_STREAM | END_HEADERS, first + 2 * i,
                          request(b"/k")) +
                    frame(RST, 0, first + 2 * i, struct.pack(">I", 0x8))
                    for i in range(n))


def until_fraction(lo, hi):
    """Sleeps until CLOCK_MONOTONIC's fraction of a second is in [lo, hi)."""
    while True:
        f = time.monotonic() % 1.0
        if lo <= f < hi:
            return
        time.sleep(((lo - f) % 1.0) or 0.001)


def watch(s, buf, seen, wait):
    """Reads frames for up to WAIT seconds, or until the connection ends;
    notes the first GOAWAY's code, EOF and answers in SEEN."""
    deadline = time.time() + wait
    s.settimeout(0.05)
    while time.time() < deadline and not seen.get("closed"):
        got, buf, eof = frames(s, buf)
        for ftype, flags, sid, payload in got:
            if ftype == GOAWAY and "goaway" not in seen:
                seen["goaway"] = struct.unpack(">I", payload[4:8])[0]
            elif ftype == HEADERS:
                seen["answers"] = seen.get("answers", 0) + 1
            elif ftype == RST:
                seen.setdefault("rst", {})[sid] = struct.unpack(">I", payload)[0]
            elif ftype == SETTINGS and not flags & ACK:
                send(s, frame(SETTINGS, ACK, 0))
        if eof:
            seen["closed"] = True
    return buf


def send(s, data):
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def rapid_reset_paced(s):
    seen, buf = {}, b""
    until_fraction(0.02, 0.2)
    send(s, pairs(1, 150))
    buf = watch(s, buf, seen, 0.3)
    until_fraction(0.88, 0.95)
    send(s, pairs(301, 100))
    buf = watch(s, buf, seen, 1.0)
    if "goaway" not in seen and not seen.get("closed"):
        send(s, pairs(501, 400))
    watch(s, buf, seen, 20)
    line = "goaway 0x%x" % seen["goaway"] if "goaway" in seen else "none"
    if seen.get("closed"):
        line += " closed"
    print(line + " answers %d" % seen.get("answers", 0))


def ping_idle(s):
    seen, buf, started = {}, b"", time.time()
    while time.time() < started + 20 and not seen.get("closed"):
        if not send(s, frame(PING, 0, 0, b"keepaliv")):
            break
        buf = watch(s, buf, seen, 0.5)
    line = "goaway 0x%x" % seen["goaway"] if "goaway" in seen else "none"
    if seen.get("closed"):
        line += " closed"
    print(line + " after %d" % int(time.time() - started))


def slow_body(s, n, hold):
    put = request(b"/slow", b"PUT", literal(b"content-length", b"200000"))
    send(s, b"".join(frame(HEADERS, END_HEADERS, 1 + 2 * i, put)
                     for i in range(n)))
    # 16000 bytes on each stream take the connection's window past the
    # 65535 it starts with: wait for the server's WINDOW_UPDATE first
    buf, deadline, opened = b"", time.time() + 10, False
    while not opened and time.time() < deadline:
        got, buf, eof = frames(s, buf)
        for ftype, flags, sid, payload in got:
            if ftype == WINDOW and sid == 0:
                opened = True
            elif ftype == SETTINGS and not flags & ACK:
                send(s, frame(SETTINGS, ACK, 0))
        if eof:
            break
    send(s, b"".join(frame(DATA, 0, 1 + 2 * i, b"d" * 16000)
                     for i in range(n)))
    print("loaded", flush=True)
    seen, deadline = {"rst": {}}, time.time() + 15
    while time.time() < deadline:
        if seen.get("closed") or "goaway" in seen or len(seen["rst"]) >= n:
            break
        send(s, b"".join(frame(DATA, 0, 1 + 2 * i, b"t") for i in range(n)
                         if 1 + 2 * i not in seen["rst"]))
        buf = watch(s, buf, seen, 0.5)
    line = "reset %d code 0x%x goaway " % (
        len(seen["rst"]), max(seen["rst"].values()) if seen["rst"] else 0)
    line += "0x%x" % seen["goaway"] if "goaway" in seen else "none"
    served = 0
    if not seen.get("closed") and "goaway" not in seen:
        seen["answers"] = 0
        send(s, frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * n,
                      request(b"/k")))
        buf = watch(s, buf, seen, 5)
        served = seen["answers"]
    line += " served %d" % served
    if seen.get("closed"):
        line += " closed"
    print(line, flush=True)
    deadline = time.time() + hold
    while time.time() < deadline and not seen.get("closed"):
        buf = watch(s, buf, seen, 0.5)


def main():
    name, port = sys.argv[1], int(sys.argv[2])
    if name == "slow-body":
        s = connect(port, sys.argv[5] if len(sys.argv) > 5 else None)
        s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        return slow_body(s, int(sys.argv[3]), float(sys.argv[4]))
    if name == "idle":
        cafile = sys.argv[5] if len(sys.argv) > 5 else None
    else:
        cafile = sys.argv[3] if len(sys.argv) > 3 and name != "listings" else None
    s = connect(port, cafile)
    if name == "listings":
        n = int(sys.argv[3])
        s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)) +
                  b"".join(frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i,
                                 request(b"/?limit=1000")) for i in range(n)))
        ok = other = 0
        buf, deadline = b"", time.time() + 20
        while ok + other < n and time.time() < deadline:
            got, buf, eof = frames(s, buf)
            for ftype, flags, sid, payload in got:
                if ftype == HEADERS:
                    if payload[:1] == b"\x88":
                        ok += 1
                    else:
                        other += 1
                elif ftype == SETTINGS and not flags & ACK:
                    s.sendall(frame(SETTINGS, ACK, 0))
            if eof:
                break
        print("ok %d other %d" % (ok, other))
        return
    if name == "split":
        s.sendall(PREFACE[:16])
        time.sleep(0.3)
        s.sendall(PREFACE[16:] + frame(SETTINGS, 0, 0) + frame(
            HEADERS, END_STREAM | END_HEADERS, 1, request(b"/k")))
        order, buf, deadline = [], b"", time.time() + 20
        while not order and time.time() < deadline:
            got, buf, eof = frames(s, buf)
            order += [str(sid) for ftype, _, sid, _ in got if ftype == HEADERS]
            if eof:
                break
        print(" ".join(order))
        return
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    if name == "put-get":
        return put_get(s)
    if name == "term":
        return term(s)
    if name == "idle":
        return idle(s, sys.argv[3].encode(), sys.argv[4].encode())
    if name == "rapid-reset-paced":
        return rapid_reset_paced(s)
    if name == "ping-idle":
        return ping_idle(s)
    if name == "head-stall":
        # the SETTINGS ACK first: a frame other than CONTINUATION inside
        # the block would be a protocol error of ours
        buf, acked = b"", False
        while not acked:
            got, buf, eof = frames(s, buf)
            for ftype, flags, sid, payload in got:
                if ftype == SETTINGS and not flags & ACK:
                    s.sendall(frame(SETTINGS, ACK, 0))
                    acked = True
            if eof or eof is None:
                break
    started = time.time()
    try:
        s.sendall(attack(name))
    except OSError:
        pass  # the server may end it before taking it all: read on
    buf, goaway, closed, answers, refused = b"", None, False, 0, 0
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        buf += chunk
        while len(buf) >= 9:
            length = struct.unpack(">I", b"\0" + buf[:3])[0]
            if len(buf) < 9 + length:
                break
            ftype, flags = buf[3], buf[4]
            payload = buf[9:9 + length]
            buf = buf[9 + length:]
            if ftype == GOAWAY and goaway is None:
                goaway = struct.unpack(">I", payload[4:8])[0]
            elif ftype == HEADERS:
                answers += 1
            elif ftype == RST and struct.unpack(">I", payload)[0] in (1, 7):
                refused += 1
            elif ftype == SETTINGS and not flags & ACK:
                try:
                    s.sendall(frame(SETTINGS, ACK, 0))
                except OSError:
                    pass
        if name in ("streams", "header-431", "trailers") and (answers or refused):
            # these are answered per stream; give the rest a moment
            deadline = min(deadline, time.time() + 1)
            s.settimeout(max(0.05, deadline - time.time()))
    line = "goaway 0x%x" % goaway if goaway is not None else "none"
    if closed:
        line += " closed"
    line += " answers %d" % answers
    if name == "head-stall":
        line += " after %d" % int(time.time() - started)
    if name == "streams":
        line += " refused %d" % refused
    print(line)


if __name__ == "__main__":
    main()
