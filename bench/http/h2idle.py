#!/usr/bin/env python3
"""h2idle.py PORT CAFILE N PATH -- hold N idle HTTP/2 connections over TLS.

Opens N connections to 127.0.0.1:PORT (TLS 1.3, ALPN h2, the server's
certificate checked against CAFILE), sends each the client preface and an
empty SETTINGS frame, reads the server's SETTINGS, and prints "open N".
Then it waits for a line on stdin, sends one GET of PATH on stream 1 of
every connection, counts the connections whose answer (a HEADERS frame on
stream 1) arrives within 30 s, prints "answered K of N" and closes them.
Standard library only; HPACK as literal fields, never Huffman.
"""
import resource
import selectors
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    # literal header field without indexing, new name; lengths < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def get(path):
    block = literal(b":method", b"GET") + literal(b":scheme", b"https") + \
        literal(b":authority", b"127.0.0.1") + literal(b":path", path)
    return frame(1, 0x5, 1, block)  # HEADERS, END_STREAM | END_HEADERS


def main():
    port, cafile, n, path = (int(sys.argv[1]), sys.argv[2],
                             int(sys.argv[3]), sys.argv[4].encode())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    conns = []
    for _ in range(n):
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        if s.selected_alpn_protocol() != "h2":
            sys.exit("the server did not choose h2")
        s.sendall(PREFACE + frame(4, 0, 0))
        conns.append(s)
    print("open", len(conns), flush=True)
    sys.stdin.readline()
    for s in conns:
        s.sendall(get(path))
    answered = 0
    deadline = time.monotonic() + 30
    sel = selectors.DefaultSelector()
    bufs = {}
    for s in conns:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        bufs[s] = b""
    while bufs and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                del bufs[s]
                continue
            buf = bufs[s] + data
            done = False
            while len(buf) >= 9:
                ln = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + ln:
                    break
                ftype = buf[3]
                sid = struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
                buf = buf[9 + ln:]
                if ftype == 1 and sid == 1:
                    done = True
                    break
            if done:
                answered += 1
                sel.unregister(s)
                del bufs[s]
            else:
                bufs[s] = buf
    print("answered", answered, "of", len(conns), flush=True)
    for s in conns:
        s.close()


main()
