#!/usr/bin/env python3
"""h3_udp.py PORT KIND COUNT -- hostile datagrams at keel-serve's HTTP/3
socket on 127.0.0.1:PORT (tests/h3_udp.sh).  KIND:

  garbage   random bytes of random length (0 to 1500), first bits random
  short     short-header packets with random connection IDs
  long      long headers cut short, with absurd lengths, CIDs of 0 to 255
            bytes, versions we do not speak
  initial   well-formed QUIC v1 Initial headers (1200 bytes, 8-byte IDs)
            whose payload is random, so it does not decrypt
  gro       COUNT 60-byte short-header packets for no connection, sent
            joined in one sendmsg with UDP_SEGMENT (so that a server
            socket with UDP_GRO may read them as one buffer): prints
            "replies N", the stateless resets that came within 2 s of
            the last, one for each packet the server told apart; "no
            gso" where the kernel refuses UDP_SEGMENT
  vn        one 1200-byte long-header packet in a version we do not
            speak (0x1a2a3a4a, reserved for exercising negotiation),
            sent up to 8 times a second apart until answered, then one
            of 1199 bytes: prints "vn VERSIONS" for a Version
            Negotiation packet (version 0, our connection IDs swapped
            back, VERSIONS the ones listed, hex, comma-separated), "bad
            reply N" for another, "no reply" when none came (RFC 9000 6:
            none for a datagram under 1200 bytes)
  reset     one 60-byte and one 21-byte short-header packet for no
            connection, each waited on (up to 8 s, 2 s): prints "reply N
            0xFIRSTBYTE" or "no reply" for each (a stateless reset: 42
            bytes, short-header form, for the first; none for the second)

Deterministic (seeded); only "reset" and "vn" wait for answers.
"""
import random
import socket
import sys


def varint2(n):
    return bytes([0x40 | (n >> 8), n & 0xFF])


def initial(rng):
    dcid = bytes(rng.getrandbits(8) for _ in range(8))
    scid = bytes(rng.getrandbits(8) for _ in range(8))
    head = (bytes([0xC0]) + (1).to_bytes(4, "big") + bytes([8]) + dcid +
            bytes([8]) + scid + b"\x00")
    rest = 1200 - len(head) - 2
    return head + varint2(rest) + bytes(rng.getrandbits(8) for _ in range(rest))


def long_broken(rng):
    version = rng.choice([1, 0, 0x6B3343CF, 0xFF00001D, rng.getrandbits(32)])
    cidlen = rng.choice([0, 8, 20, 21, 255])
    p = bytes([0x80 | rng.getrandbits(7)]) + version.to_bytes(4, "big")
    p += bytes([cidlen]) + bytes(rng.getrandbits(8) for _ in range(cidlen))
    p += bytes([rng.choice([0, 8, 255])])
    p += bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
    return p[:rng.randrange(1, len(p) + 1)]


def resets(s, port, rng):
    # the 60-byte packet is sent again each second, 8 times at most: a
    # flood just before may have spent this sweep's resets
    for size, tries in ((60, 8), (21, 1)):
        p = bytes([0x40 | rng.getrandbits(6)]) + bytes(
            rng.getrandbits(8) for _ in range(size - 1))
        s.settimeout(2.0 if tries == 1 else 1.0)
        for _ in range(tries):
            s.sendto(p, ("127.0.0.1", port))
            try:
                r = s.recv(2048)
                print("reply %d 0x%02x" % (len(r), r[0] & 0xC0))
                break
            except socket.timeout:
                pass
        else:
            print("no reply")
    return 0


def vn_reply(r, dcid, scid):
    # RFC 9000 17.2.1: the form bit, version 0, the client's SCID as DCID
    # and its DCID as SCID, then the versions
    if len(r) < 7 or not r[0] & 0x80 or r[1:5] != bytes(4):
        return "bad reply %d" % len(r)
    n = r[5]
    got_dcid = r[6:6 + n]
    m = r[6 + n]
    got_scid = r[7 + n:7 + n + m]
    rest = r[7 + n + m:]
    if got_dcid != scid or got_scid != dcid or len(rest) % 4 or not rest:
        return "bad reply %d" % len(r)
    return "vn " + ",".join("%08x" % int.from_bytes(rest[i:i + 4], "big")
                            for i in range(0, len(rest), 4))


def negotiation(s, port, rng):
    for size, tries in ((1200, 8), (1199, 1)):
        dcid = bytes(rng.getrandbits(8) for _ in range(8))
        scid = bytes(rng.getrandbits(8) for _ in range(8))
        p = (bytes([0xC0]) + (0x1A2A3A4A).to_bytes(4, "big") + bytes([8]) +
             dcid + bytes([8]) + scid)
        p += bytes(rng.getrandbits(8) for _ in range(size - len(p)))
        s.settimeout(2.0 if tries == 1 else 1.0)
        for _ in range(tries):
            s.sendto(p, ("127.0.0.1", port))
            try:
                print(vn_reply(s.recv(2048), dcid, scid))
                break
            except socket.timeout:
                pass
        else:
            print("no reply")
    return 0


def gro(s, port, count, rng):
    s.connect(("127.0.0.1", port))
    train = b"".join(bytes([0x40 | rng.getrandbits(6)]) + bytes(
        rng.getrandbits(8) for _ in range(59)) for _ in range(count))
    try:
        # SOL_UDP (17), UDP_SEGMENT (103): the kernel cuts 60-byte datagrams
        s.sendmsg([train], [(17, 103, (60).to_bytes(2, sys.byteorder))])
    except OSError:
        print("no gso")
        return 0
    got = 0
    s.settimeout(2.0)
    try:
        while got < count:
            s.recv(2048)
            got += 1
    except socket.timeout:
        pass
    print("replies %d" % got)
    return 0


def main():
    port, kind, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    rng = random.Random(kind + str(count))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if kind == "reset":
        return resets(s, port, rng)
    if kind == "vn":
        return negotiation(s, port, rng)
    if kind == "gro":
        return gro(s, port, count, rng)
    for _ in range(count):
        if kind == "garbage":
            n = rng.randrange(0, 1500)
            p = bytes(rng.getrandbits(8) for _ in range(n))
        elif kind == "short":
            p = bytes([0x40 | rng.getrandbits(6)]) + bytes(
                rng.getrandbits(8) for _ in range(rng.randrange(0, 200)))
        elif kind == "long":
            p = long_broken(rng)
        else:
            p = initial(rng)
        s.sendto(p, ("127.0.0.1", port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
