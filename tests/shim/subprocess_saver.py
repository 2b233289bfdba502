#!/usr/bin/env python3
"""subprocess_saver.py -- a Python saver that runs a command per put, for
tests/shim_backstop.sh: CPython's subprocess makes its child with vfork, and
the child dup2s the log onto its standard output and close_range()s the rest
before its exec, in the parent's memory.

    subprocess_saver.py DIR [unsafe]     the workload (torture's protocol on
                                         $KEEL_TORTURE_FD)
    subprocess_saver.py DIR --check      the checker

Each put appends "kN vM" to DIR/log with os.write, fdatasyncs it (not with
"unsafe"), runs `true` with the log as its standard output, writes a line of
noise to its own standard output, then acknowledges.  The checker prints the
newest complete value of each key in DIR/log.
"""
import os
import subprocess
import sys

KEYS = 8


def check(d):
    vals = {}
    try:
        with open(os.path.join(d, "log"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return 0
    for line in data.split(b"\n")[:-1]:  # a torn tail is no put
        parts = line.split()
        if len(parts) != 2 or not parts[0].startswith(b"k"):
            break
        vals[parts[0]] = parts[1]
    for k in sorted(vals):
        sys.stdout.write("%s %s\n" % (k.decode(), vals[k].decode()))
    return 0


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: subprocess_saver.py DIR [unsafe|--check]\n")
        return 2
    d = sys.argv[1]
    if sys.argv[2:3] == ["--check"]:
        return check(d)
    unsafe = sys.argv[2:3] == ["unsafe"]
    tfd = int(os.environ["KEEL_TORTURE_FD"])
    log = os.open(os.path.join(d, "log"),
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)  # the log's name
    os.fsync(dfd)
    os.close(dfd)
    for i in range(1, 1000000):
        k = "k%d" % (i % KEYS)
        os.write(tfd, ("intent %d %s v%d\n" % (i, k, i)).encode())
        os.write(log, ("%s v%d\n" % (k, i)).encode())
        if not unsafe:
            os.fdatasync(log)
        subprocess.run(["true"], stdout=log, check=True)
        os.write(1, b"noise\n")
        os.write(tfd, ("ack %d\n" % i).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
