#!/usr/bin/env python3
"""names.py -- the reference model of names (creates, renames, unlinks,
links, mkdir, directory syncs) under the file system models of
docs/faults.md ("File system models", --fs), written apart from the fault
simulator like model.py, and its differential check (tests/refmodel.sh,
tests/refmodel/driver.c --names FS).

    names.py gen N            every valid workload of 1..N ops
    names.py check SEEDS < DRIVER_OUTPUT

The directory D starts durable with file a (one 512-byte sector of 'i')
and an empty directory s.  Names: a and b in D, c in s.  Ops:

  Cx    create x, write one sector of the op's byte ('A' + its index):
        an append to an empty file; never synced by itself
  Rxy   rename x to y (over y when y exists); Ux unlink x
  Lab   link a to the new name b (Lba: b to a)
  Fx    fsync of the file named x
  Y     fsync of D;  Ys  fsync of s
  M     mkdir D/m

A state: "a=V|b=V|c=V|m=V", V the name's content: '-' no such name, 'e'
an empty file, '0' one sector of zeros, else the sector's byte; m is 'd'
once made.

The rules, each from its row of docs/faults.md:

  N-dir   "The volatile cache" table, create/rename/unlink: durable at
          "the next successful fsync_dir of its directory (both, for a
          rename)"; the `posix` row: "a name is durable only after a sync
          of its directory; every other create, rename, unlink is undone".
  N-link  "The shim: what it sees", link: "the new name, as a create".
  N-mkdir the same table, mkdir: "a crash never undoes them".
  N-dir   (the same section's rename rule) "where only one was, the names
          in the synced one win": a durable create that took the old name
          of a file renamed away keeps it.
  N-gone  "The crash: device models": "an unlink made durable takes its
          file for good": where the rename that gave it that name is
          undone (its other directory never synced), the file does not
          come back under its old name.
  N-data  R-sync of model.py: a file's data is durable after an fsync of
          it; the device decides the rest (ordered: a prefix; reorder,
          torn: any subset -- a one-sector write is never torn).
  r1      ext4, ext4-writeback, xfs, btrfs rows: "a file fsynced after its
          create or rename keeps its name", with "every earlier namespace
          operation on a name those depend on (an unlink or rename that
          freed the name)" (the rule's statement above the tables).
  r2      ext4, ext4-writeback, xfs rows: "namespace ops persist as a
          prefix; a sync with metadata commits every earlier one" -- a
          directory sync, or a file sync with metadata of its own (its
          name, or a size change); btrfs's row "not r2": "unsynced ones
          are all undone".
  r3      ext4 row: "a rename over a file that persists brings the new
          file's data" (not ext4-writeback, xfs, btrfs).
  r4      the ext4-writeback row "not r4": "a lost or torn append may
          leave the size grown over zeros"; ext4, xfs, btrfs (r4) and
          posix never show zeros: a lost append leaves the file empty.

A front end's states (ops.c --names under torture, posix and btrfs only:
their names are decided without a prefix over the batch) come from batches
of workloads, each in its own directory, crashed by one cut (SEED is
BATCH:CYCLE): under ordered the data prefix runs over the batch, so there
each workload is judged for soundness only.

check reports soundness (every state left is allowed) and completeness
(every allowed state is left by some seed where there are at most four;
where there are five or six, every value each name may hold, a lost
append's empty file and zeros taken as one), and the shortest workload that
disagrees.
"""
import itertools
import sys

FSES = ["posix", "ext4", "ext4-writeback", "xfs", "btrfs"]
NAMES = "abc"
DIR = {"a": "D", "b": "D", "c": "s"}
OPS = (["C" + x for x in NAMES] +
       ["R" + x + y for x in NAMES for y in NAMES if x != y] +
       ["U" + x for x in NAMES] + ["Lab", "Lba"] +
       ["F" + x for x in NAMES] + ["Y", "Ys", "M"])
R1 = {"ext4", "ext4-writeback", "xfs", "btrfs"}
R2 = {"ext4", "ext4-writeback", "xfs"}
R3 = {"ext4"}
ZEROS = {"ext4-writeback"}


def trace(workload):
    """Run WORKLOAD on the names: the list of events, or None when an op
    cannot be made (a missing name, a create over one, a rename between
    two names of one file).  Events: ("ns", n, kind, from, to, inode,
    replaced), ("data", n, inode, byte), ("fsync", n, inode),
    ("dsync", n, dir), ("mkdir", n)."""
    names = {"a": 0}
    inodes = 1
    made = False
    out = []
    for n, op in enumerate(workload.split()):
        k, args = op[0], op[1:]
        if k == "C":
            if args in names:
                return None
            names[args] = inodes
            out.append(("ns", n, "create", None, args, inodes, None))
            out.append(("data", n, inodes, chr(ord("A") + n)))
            inodes += 1
        elif k == "R":
            x, y = args
            if x not in names or names.get(y) == names[x]:
                return None
            out.append(("ns", n, "rename", x, y, names[x], names.get(y)))
            names[y] = names.pop(x)
        elif k == "U":
            if args not in names:
                return None
            out.append(("ns", n, "unlink", args, None, names.pop(args),
                        None))
        elif k == "L":
            x, y = args
            if x not in names or y in names:
                return None
            names[y] = names[x]
            out.append(("ns", n, "create", None, y, names[x], None))
        elif k == "F":
            if args not in names:
                return None
            out.append(("fsync", n, names[args], args))
        elif k == "Y":
            out.append(("dsync", n, args or "D"))
        elif k == "M":
            if made:
                return None
            made = True
            out.append(("mkdir", n))
    return out


def dirs(e):
    """N-dir: the directories an op needs synced (both, for a rename)."""
    return {DIR[x] for x in (e[3], e[4]) if x}


def chain(events, upto, inode, name):
    """r1: the ops that brought INODE to NAME before event UPTO -- its
    create (or link), the renames -- and the ops that freed a name they
    took (an earlier unlink of it, or rename away from it)."""
    out = set()
    for i in range(upto - 1, -1, -1):
        e = events[i]
        if e[0] != "ns" or e[5] != inode or e[4] != name:
            continue
        out.add(i)
        for j in range(i - 1, -1, -1):       # what freed NAME before it
            f = events[j]
            if f[0] == "ns" and f[3] == name and f[2] in ("unlink", "rename"):
                out.add(j)
                break
        if e[2] != "rename":
            break
        name = e[3]
    return out


def durability(events, fs):
    """The ns ops and data writes made durable by the syncs (N-dir, N-data,
    r1, r2), as sets of event indexes."""
    ns, data = set(), set()
    for i, e in enumerate(events):
        if e[0] == "dsync":
            for j in range(i):
                f = events[j]
                if f[0] != "ns":
                    continue
                if fs in R2:                # r2: every earlier one
                    ns.add(j)
                elif e[2] in dirs(f):       # N-dir: its own directory's
                    need = dirs(f) - {e[2]}
                    if all(any(g[0] == "dsync" and g[2] == d
                               for g in events[j + 1:i]) for d in need):
                        ns.add(j)
        elif e[0] == "fsync":
            inode, name = e[2], e[3]
            own = {j for j in range(i) if events[j][0] == "data" and
                   events[j][2] == inode}
            meta = bool(own - data)         # a size change not yet durable
            data |= own                     # N-data
            if fs in R1:
                mine = chain(events, i, inode, name)
                meta = meta or bool(mine - ns)
                ns |= mine                  # r1
            if fs in R2 and meta:           # r2: a sync with metadata
                ns |= {j for j in range(i) if events[j][0] == "ns"}
    return ns, data


def replay(events, kept_ns, kept_data, zeroed):
    """The names after the kept ops, in issue order."""
    names = {"a": 0}
    content = {0: "i"}
    for i, e in enumerate(events):
        if e[0] == "ns" and i in kept_ns:
            kind, x, y, inode = e[2], e[3], e[4], e[5]
            if kind == "create":            # over a name an undone
                names[y] = inode            # rename left: N-dir, its own
            elif kind == "rename":
                names[y] = names.pop(x)
            elif x in names:
                names.pop(x)
            else:                           # N-gone: the file, wherever
                names = {k: v for k, v in names.items() if v != inode}
        elif e[0] == "data":
            inode = e[2]
            content[inode] = (e[3] if i in kept_data else
                              "0" if i in zeroed else "e")
    made = any(e[0] == "mkdir" for e in events)       # N-mkdir
    return "|".join(["%s=%s" % (x, content[names[x]] if x in names else "-")
                     for x in NAMES] + ["m=" + ("d" if made else "-")])


def subsets(xs, device):
    if device == "ordered":                 # R-ord: a prefix
        return [set(xs[:k]) for k in range(len(xs) + 1)]
    return [set(s) for k in range(len(xs) + 1)
            for s in itertools.combinations(xs, k)]


def allowed(workload, fs, device):
    events = trace(workload)
    ns, data = durability(events, fs)
    loose_ns = [i for i, e in enumerate(events) if e[0] == "ns" and i not in ns]
    loose = [i for i, e in enumerate(events) if e[0] == "data" and i not in data]
    ns_choices = ([set(loose_ns[:k]) for k in range(len(loose_ns) + 1)]
                  if fs in R2 else [set()])           # r2 / not r2
    states = set()
    for kn in ns_choices:
        kept_ns = ns | kn
        forced = set()
        if fs in R3:                        # r3: a persisted rename over
            for i in kept_ns:
                e = events[i]
                if e[2] == "rename" and e[6] is not None:
                    forced |= {j for j in range(i) if events[j][0] == "data"
                               and events[j][2] == e[5]}
        for kd in subsets(loose, device):
            kept_data = data | kd | forced
            lost = [j for j in loose if j not in kept_data]
            for z in (subsets(lost, "reorder") if fs in ZEROS else [set()]):
                states.add(replay(events, kept_ns, kept_data, z))
    return states


def gen(n):
    for length in range(1, n + 1):
        for ops in itertools.product(OPS, repeat=length):
            w = " ".join(ops)
            if trace(w) is not None:
                print(w)


def check(seeds):
    seen = {}
    batched = set()
    for line in sys.stdin:
        w, fs, dev, seed, st = line.rstrip("\n").split("|", 4)
        seen.setdefault((w, fs, dev), set()).add(st)
        if ":" in seed and dev == "ordered":
            batched.add((w, fs, dev))
    problems = []
    states = 0
    for (w, fs, dev), got in seen.items():
        want = allowed(w, fs, dev)
        states += len(got)
        bad = got - want
        if bad:
            problems.append((len(w.split()), w, fs, dev,
                             "soundness: the simulator left %s, which the "
                             "rules do not allow (allowed: %s)" %
                             (sorted(bad)[0], " ".join(sorted(want)))))
        if (w, fs, dev) in batched:
            continue    # a batch's ordered prefix: completeness not judged
        if len(want) <= 4 and want - got:
            problems.append((len(w.split()), w, fs, dev,
                             "completeness: no seed of %d left %s, "
                             "which the rules allow" %
                             (seeds, sorted(want - got)[0])))
        for k in range(len(NAMES)):         # each name's values, alone
            # (a lost append's two outcomes, empty and zeros, as one)
            def value(x):
                return x.split("|")[k].replace("=0", "=e")
            missing = {value(x) for x in want} - {value(x) for x in got}
            if 4 < len(want) <= 6 and missing:
                problems.append((len(w.split()), w, fs, dev,
                                 "completeness: no seed of %d left %s, "
                                 "which the rules allow" %
                                 (seeds, sorted(missing)[0])))
    print("names.py: %d workloads, %d (workload, fs, device) triples "
          "judged, %d distinct crash states compared" %
          (len({k[0] for k in seen}), len(seen), states))
    if problems:
        problems.sort()
        _, w, fs, dev, what = problems[0]
        print("names.py: %d disagreements; the shortest: workload '%s', "
              "--fs %s, device %s: %s" % (len(problems), w, fs, dev, what))
        return 1
    print("names.py: no disagreement")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(int(sys.argv[2])))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
