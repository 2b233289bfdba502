#!/usr/bin/env python3
"""fake_serve.py MODE [keel-serve's arguments, ignored] -- a stand-in for
keel-serve that torture --target http --serve can start: it prints the
"listening" line keel-serve prints and then misbehaves on purpose, so
tests/torture_http.sh can check torture fails clearly and in bounded time.

  http1     speaks HTTP/1.1 only: every connection gets 400 and is closed
            (what an HTTP/2 client's preface gets from a server without h2)
  h2garbage answers the HTTP/2 preface with a SETTINGS frame, then sends
            garbage: a frame header claiming 16 MiB and random bytes
Loopback only; it runs until torture SIGKILLs it.
"""
import os
import socket
import sys
import threading

MODE = sys.argv[1] if len(sys.argv) > 1 else "http1"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def serve(conn):
    try:
        conn.settimeout(30)
        if MODE == "http1":
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
        else:
            conn.sendall(SETTINGS)
            conn.recv(65536)
            conn.sendall(b"\xff\xff\xff\x00\x00\x00\x00\x00\x01" +
                         os.urandom(4096))
            while conn.recv(65536):
                pass
    except OSError:
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print("keel-serve: listening on 127.0.0.1:%d (fake, %s)"
          % (s.getsockname()[1], MODE), flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


main()
