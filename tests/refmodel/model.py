#!/usr/bin/env python3
"""model.py -- a reference model of what a power cut may leave, written
apart from the fault simulator (it shares no code with faultsim/), and the
differential check of the simulator against it (tests/refmodel.sh).

    model.py gen N            every workload of 1..N ops (driver.c's alphabet)
    model.py gen-ext N [K]    the extended alphabet (EXT_OPS below): every
                              workload of 1..N ops with one of its new ops,
                              those of N ops only every Kth (default 1)
    model.py gen-size N [K]   the sizes' alphabet (SIZE_OPS below), the same
    model.py gen-zero N [K]   the same with FALLOC_FL_ZERO_RANGE (Qa), those
                              holding it (a file system that has it: not tmpfs)
    model.py check SEEDS < DRIVER_OUTPUT

The rules, each from its row of docs/faults.md:

  R-sync  "fsync fdatasync: the file's earlier records durable" (the table
          of calls): a write followed, before the cut, by an fsync or
          fdatasync of its own file persists whole; a sync of one file
          says nothing of another's writes.
  R-ord   device `ordered`: "the device writes back in issue order: a
          random prefix (over all files) persists, the suffix is lost".
  R-reo   device `reorder`: "any subset persists: each write
          independently".
  R-torn  device `torn`: "each write is lost, persists whole, or is torn:
          each of its --sector aligned pieces persists or not" -- so each
          512-byte sector ends with the byte of the last write over it whose
          piece persisted: the last durable write's (or the file's first
          bytes), or any unsynced write's issued after that one; and
          "Truncates and extensions persist or not, never torn" (the
          bullets under the table): the size ends where the last kept
          truncate put it, grown by later kept extensions and by the
          pieces that persisted past it -- never over a piece that did not
          (a piece past the end leaves zeros, '0', below it).
  R-data  a write that persists lands whole (whole-write devices) over
          what was there; writes land in issue order, a later one over an
          earlier one where they overlap; past the file's end it grows the
          file, zeros between.
  R-garbage device `garbage`: "as `torn`; also 1 in 2 writes gets one
          sector of its range filled with random bytes", and "Synced data
          is never touched": a sector an unsynced write covers may read
          '?' where that write may be the last over it.
  R-payload device `payload`: "a write of three sectors or more persists
          except one interior sector ... which is lost (keeps its old
          bytes) or, 1 in 2, filled with random bytes; a shorter write
          persists whole or not at all"; truncates and extensions persist
          or not.

  R-osync "on O_SYNC/O_DSYNC (or RWF_SYNC/RWF_DSYNC) the write is
          durable at once" (the shim's table, `write`): Of0, Of1 -- that
          write, no other.
  R-map   "Writes through a shared mapping": a store (Mf, 4 KiB at 0) is
          recorded at its page's first fault and sealed at the file's next
          flush point (an fsync, fdatasync or msync(MS_SYNC) of it, a
          recorded write or truncate of it, sync, or the crash): it then
          reaches a crash "exactly as a pwrite of its changed bytes would",
          holding the page's bytes at the seal (later stores to a page
          already writable make no new record), in the order of its fault.
          Xf is msync(MS_SYNC), a data sync of the whole file; Af,
          msync(MS_ASYNC), "makes nothing durable".
  R-all   "sync syncfs: everything below the directory durable" (Y).
  R-dup   a write through a dup of the descriptor (Kf1) is the file's write
          like any other: its record, its sync.
  R-dup2  the shim's table, `close dup dup2 ...`: "descriptor tracking
          follows": a write through dup2 of f's descriptor over one open on
          the other file (Bf1) is f's, and a sync of the other file (through
          its own descriptor) does not cover it.
  R-pass  `recvmsg`: "descriptors received with SCM_RIGHTS ... are followed
          from then on": a write through f's descriptor received (Rf1; in
          ops.c by a forked child) is f's write like any other.
  R-append `write`: "of an O_APPEND descriptor ... the end, taken under the
          cache's lock" (Pf): 4 KiB at the size the program sees then --
          after an unsynced truncate, the cut size; after an append, its
          end -- whatever a crash later keeps of them.
  R-grow  `fallocate`: "growing: an extension" (Gf, to 10 KiB: an extension
          only when the file is shorter, else nothing), the volatile
          cache's table ("old and new size") and faultsim.h ("the size
          grows to cover [OFF, OFF+LEN)"): kept, the file is at least that
          long -- an extension never shrinks a file (a kept append past a
          lost truncate stays whole); zeros past the old end.
  R-keep-size "`FALLOC_FL_KEEP_SIZE` alone: nothing visible" (Hf).
  R-punch "`PUNCH_HOLE`, `ZERO_RANGE`: a write of zeros" (Zf: 4 KiB at
          3 KiB, with KEEP_SIZE, so clipped at the size the program sees:
          two sectors after a truncate, none past the end); Qf, ZERO_RANGE
          of 4 KiB at 6 KiB without KEEP_SIZE: a write of zeros that may
          grow the file (gen-zero: tmpfs refuses it).
  R-fail  "fsync failure profiles": a failed fsync (Ef) under ext4 and xfs
          marks the pages clean, "the data is lost (records are LOST; no
          model keeps them)", even when a later sync of the file succeeds;
          under btrfs "the file's unsynced bytes are reverted to their
          pre-image at once (the file size is kept, the grown part reads
          as zeros ... a truncate put back grows the file again)" -- for a
          crash: a write within the size and a truncate never land; a
          write that grew the file, and an extension, leave an unsynced
          growth (zeros) from the size the file has without them; under
          keep "the data stays dirty and a later successful sync makes it
          durable" (the failed sync does nothing).  The profile is the
          line's sixth field (p=PROFILE; ext4 when absent).

check reads the simulator's states and reports:
  soundness     every state the simulator left is one the rules allow
                (nothing lost that the rules keep, nothing kept that was
                never written)
  completeness  every state the rules allow is left by some seed, for
                workloads with at most 2 unsynced writes (at most 4
                states; SEEDS seeds make a miss unlikely, and the seeds are
                fixed, so a pass stays a pass); under torn, a lone
                unsynced write is torn (some sectors, not all) by some seed
A front end's states (ops.c under torture: SEED is BATCH:CYCLE) come from
batches of workloads crashed by one cut: under reorder and torn each
workload is judged as above, under ordered each cut is judged whole
(ordered_batch: one prefix over the batch), for soundness only.  Under
--enumerate (SEED eBATCH:CYCLE, one cut per crash point) the workload a
crash cut short reads "OPS [OP]": its state must be one that OPS, or OPS
then OP, allows; there, soundness only.
A disagreement prints the shortest workload that shows it, and exits 1.
"""
import itertools
import sys

FILE_SECTORS = 16       # 8 KiB of 512-byte sectors, 'i' throughout at first
REGION = {"0": (0, 8), "1": (4, 12)}   # 4 KiB at 0, at 2 KiB: sectors [lo, hi)
OPS = ["Wa0", "Wa1", "Wb0", "Wb1", "Sa", "Sb", "Da", "Db", "Ta", "Tb"]
# the extended alphabet (gen-ext): the new ops, and enough of the first
# ones to meet them
NEW_OPS = ["Oa0", "Ob1", "Ma", "Mb", "Xa", "Aa", "Y", "Ka1", "Ea"]
EXT_OPS = ["Wa0", "Wa1", "Wb0", "Sa", "Sb", "Da", "Ta"] + NEW_OPS
# the sizes' alphabet (gen-size): appends, allocations, dup2 and a
# descriptor passed over a socket, with the ops that meet them
SIZE_NEW = ["Pa", "Pb", "Ga", "Ha", "Za", "Ba1", "Ra1"]
SIZE_OPS = ["Wa0", "Wa1", "Wb0", "Sa", "Sb", "Da", "Ta", "Ea"] + SIZE_NEW
CUT = 8                 # Tf: the file cut to 4 KiB, 8 sectors
APPEND = 8              # Pf: 4 KiB at the file's end
GROW = 20               # Gf: fallocate(0, 10 KiB): the size grows to 20
PUNCH = (6, 14)         # Zf: a hole punched at 3 KiB, 4 KiB long, KEEP_SIZE
ZERO = (12, 20)         # Qf: ZERO_RANGE at 6 KiB, 4 KiB long: it may grow
LOSES = {"ext4": True, "xfs": True, "btrfs": False, "keep": False}
# a change's fields: the op's index, its file, its kind ("W" a write of
# BYTE over sectors [LO, HI); "T" a truncate to LO sectors; "X" an
# extension to LO), its fate ("durable", "unsynced", "lost", "void") and
# the file's size when it was made
N, F, KIND, LO, HI, BYTE, FATE, OLD = range(8)


def writes(workload, profile="ext4"):
    """The data changes of WORKLOAD -- writes, mapped stores, truncates,
    extensions -- in the order they reach a crash, each a list of the
    fields above."""
    out = []
    page = {}           # R-map: file -> its unsealed store's change
    size = {"a": FILE_SECTORS, "b": FILE_SECTORS}   # as the program sees it

    def seal(f):
        page.pop(f, None)

    def settle(f):      # R-sync over every earlier change of F
        seal(f)
        for c in out:
            if c[F] == f and c[FATE] == "unsynced":
                c[FATE] = "durable"

    def change(n, f, kind, lo, hi, byte, fate="unsynced"):
        c = [n, f, kind, lo, hi, byte, fate, size[f]]
        out.append(c)
        if kind == "W":
            size[f] = max(size[f], hi)
        elif kind == "T":
            size[f] = lo
        else:
            size[f] = max(size[f], lo)
        return c

    def revert(f):      # R-fail, btrfs: put back at once
        back = [c for c in out if c[F] == f and c[FATE] == "unsynced"]
        if not back:
            return
        running = back[0][OLD]
        size[f] = max([size[f]] + [c[OLD] for c in back])
        for c in back:
            if c[KIND] == "W" and c[HI] > running:
                c[KIND], c[LO], c[OLD], running = "X", c[HI], running, c[HI]
            elif c[KIND] in "WT":
                c[FATE] = "void"
            else:
                running = max(running, c[LO])

    for n, op in enumerate(workload.split()):
        byte = chr(ord("A") + n)
        kind, f = op[0], op[1:2]
        if kind in "WKBR":                          # R-data, R-dup, R-dup2
            seal(f)                                 # R-pass
            change(n, f, "W", *REGION[op[2]], byte)
        elif kind == "O":                           # R-osync
            seal(f)
            change(n, f, "W", *REGION[op[2]], byte, "durable")
        elif kind == "P":                           # R-append
            seal(f)
            change(n, f, "W", size[f], size[f] + APPEND, byte)
        elif kind == "T":
            seal(f)
            change(n, f, "T", CUT, CUT, "")
        elif kind == "G":                           # R-grow
            seal(f)
            if size[f] < GROW:      # else it changes no size: nothing
                change(n, f, "X", GROW, 0, "")
        elif kind == "H":                           # R-keep-size
            seal(f)
        elif kind == "Z":                           # R-punch
            seal(f)
            lo, hi = PUNCH[0], min(PUNCH[1], size[f])
            if hi > lo:
                change(n, f, "W", lo, hi, "0")
        elif kind == "Q":                           # R-punch, no KEEP_SIZE
            seal(f)
            change(n, f, "W", *ZERO, "0")
        elif kind == "M":                           # R-map
            if f in page:
                page[f][BYTE] = byte
            else:
                page[f] = change(n, f, "W", *REGION["0"], byte)
        elif kind in "SDX":                         # R-sync, R-map's msync
            settle(f)
        elif kind == "Y":                           # R-all
            for g in "ab":
                settle(g)
        elif kind == "E":                           # R-fail
            seal(f)
            if LOSES[profile]:
                for c in out:
                    if c[F] == f and c[FATE] == "unsynced":
                        c[FATE] = "lost"
            elif profile == "btrfs":
                revert(f)
        elif kind != "A":                           # MS_ASYNC: nothing
            raise ValueError("an unknown op " + op)
    return out


def apply(sectors, c):
    """R-data: change C over a file's SECTORS (a list, changed in place);
    a sector never written past the old end reads as zeros ('0')."""
    if c[KIND] == "W":
        sectors.extend("0" * (c[HI] - len(sectors)))
        sectors[c[LO]:c[HI]] = c[BYTE] * (c[HI] - c[LO])
    elif c[KIND] == "T":
        del sectors[c[LO]:]
        sectors.extend("0" * (c[LO] - len(sectors)))
    else:                                       # R-grow: never shrinks
        sectors.extend("0" * (c[LO] - len(sectors)))


def state(ws, kept):
    """The files after the changes of WS whose index is in KEPT land in
    issue order (R-data)."""
    files = {"a": ["i"] * FILE_SECTORS, "b": ["i"] * FILE_SECTORS}
    for c in ws:
        if c[N] in kept:
            apply(files[c[F]], c)
    return "a=" + "".join(files["a"]) + "|b=" + "".join(files["b"])


def allowed(workload, device, profile="ext4"):
    ws = writes(workload, profile)
    durable = {w[N] for w in ws if w[FATE] == "durable"}
    unsynced = [w[N] for w in ws if w[FATE] == "unsynced"]
    states = set()
    if device == "ordered":     # R-ord: a prefix of the unsynced, in order
        for k in range(len(unsynced) + 1):
            states.add(state(ws, durable | set(unsynced[:k])))
    else:                       # R-reo: any subset
        for k in range(len(unsynced) + 1):
            for sub in itertools.combinations(unsynced, k):
                states.add(state(ws, durable | set(sub)))
    return states, len(unsynced)


def file_fits(got, mine, kept_sizes, garbage):
    """R-torn for one file whose size changes KEPT_SIZES (those of MINE,
    its changes, that persist) are chosen: do some pieces of its unsynced
    writes give GOT?  Each sector ends with the byte of the last piece over
    it that persisted after the last kept truncate below it (else 'i', or
    '0' past a cut or the first 8 KiB); the size ends at the last kept
    truncate's, grown by later kept extensions and pieces (R-grow, R-data);
    under garbage (R-garbage) any sector an unsynced write covers may hold
    random bytes ('?') instead."""
    size = len(got)
    cuts = [(i, c[LO]) for i, c in enumerate(mine)
            if c[KIND] == "T" and i in kept_sizes]
    last, base = cuts[-1] if cuts else (-1, FILE_SECTORS)
    base = max([base] + [c[LO] for i, c in enumerate(mine)
                         if c[KIND] == "X" and i in kept_sizes and i > last])
    if base > size:
        return False
    ws = [(i, c) for i, c in enumerate(mine) if c[KIND] == "W"]
    for s in range(max([size, FILE_SECTORS] + [c[HI] for _, c in ws])):
        cut = max([i for i, n in cuts if n <= s], default=-1)
        over = [c for i, c in ws if i > cut and c[LO] <= s < c[HI]]
        must = max([k for k, c in enumerate(over) if c[FATE] == "durable"],
                   default=-1)
        if s >= size:           # past the end: no piece after the cut
            if must >= 0:
                return False
            continue
        values = {c[BYTE] for c in over[max(must, 0):]}
        if garbage:
            values |= {"?" for c in over[max(must, 0):]
                       if c[FATE] == "unsynced"}
        if must < 0:
            values.add("0" if cut >= 0 or s >= FILE_SECTORS else "i")
        if got[s] not in values:
            return False
        if s == size - 1 and base < size and got[s] not in \
                {c[BYTE] for c in over[max(must, 0):]} | \
                ({"?"} if garbage and over else set()):
            return False        # the size grew to here: a piece did it
                                # (and garbage may cover it then)
    return True


def torn_allows(workload, got, profile="ext4", garbage=False):
    """R-torn (and R-garbage): is GOT ("a=...|b=...") a state the torn
    (garbage) device may leave?  Each file alone: some choice of its
    unsynced size changes that persist, and of its writes' pieces."""
    ws = writes(workload, profile)
    files = dict(part.split("=") for part in got.split("|"))
    for f in "ab":
        mine = [c for c in ws if c[F] == f and c[FATE] in
                ("durable", "unsynced")]
        free = [i for i, c in enumerate(mine)
                if c[KIND] != "W" and c[FATE] == "unsynced"]
        fixed = {i for i, c in enumerate(mine)
                 if c[KIND] != "W" and c[FATE] == "durable"}
        if not any(file_fits(files[f], mine,
                             fixed | {i for i, b in zip(free, bits) if b},
                             garbage)
                   for bits in itertools.product((0, 1), repeat=len(free))):
            return False
    return True


def payload_allows(workload, profile="ext4"):
    """R-payload: every state the payload device may leave: an unsynced
    write of three sectors or more persists but for one interior sector,
    which keeps what was there (zeros past the end) or gets random bytes;
    a shorter one, and a size change, persists whole or not at all."""
    states = {(("i",) * FILE_SECTORS, ("i",) * FILE_SECTORS)}
    for c in writes(workload, profile):
        if c[FATE] not in ("durable", "unsynced"):
            continue
        k = "ab".index(c[F])
        nxt = set()
        for st in states:
            def with_change(hole=None, fill=None):
                sectors = list(st[k])
                old = sectors[hole] if hole is not None and \
                    hole < len(sectors) else "0"
                apply(sectors, c)
                if hole is not None:
                    sectors[hole] = fill or old
                return st[:k] + (tuple(sectors),) + st[k + 1:]
            if c[FATE] == "durable":
                nxt.add(with_change())
            elif c[KIND] == "W" and c[HI] - c[LO] >= 3:
                for h in range(c[LO] + 1, c[HI] - 1):
                    nxt.add(with_change(h))
                    nxt.add(with_change(h, "?"))
            else:
                nxt.add(st)
                nxt.add(with_change())
        states = nxt
    return {"a=" + "".join(a) + "|b=" + "".join(b) for a, b in states}


def torn_shown(workload, got):
    """Does GOT show WORKLOAD's one write torn: some of its sectors, not
    all?"""
    c, = writes(workload, "keep")
    files = dict(part.split("=") for part in got.split("|"))
    shown = [s < len(files[c[F]]) and files[c[F]][s] == c[BYTE]
             for s in range(c[LO], c[HI])]
    return any(shown) and not all(shown)


def gen(n):
    for length in range(1, n + 1):
        for ops in itertools.product(OPS, repeat=length):
            print(" ".join(ops))


def gen_new(alphabet, new, n, every):
    k = 0
    for length in range(1, n + 1):
        for ops in itertools.product(alphabet, repeat=length):
            if not any(o in new for o in ops):
                continue
            k += 1
            if length == n and k % every:
                continue
            print(" ".join(ops))


def variants(w):
    """An enumerated crash's workload: "OPS [OP]" -- OP may or may not
    have been made when the writer was killed."""
    if w.endswith("]"):
        head, _, opt = w[:-1].rpartition("[")
        return [head.strip(), (head + opt).strip()]
    return [w]


def ordered_batch(crash):
    """R-ord over a batch (ops.c: many workloads, each on its own files,
    one power cut): the prefix that persists runs over the workloads in
    their order, so workload j keeps a prefix of its own unsynced changes
    of length K - (those of the workloads before it), clipped to 0 .. its
    own, for one K.  CRASH: [(workload, state)] in the batch's order.  A
    state no K explains: the first workload whose state is not that K's,
    for the K that explains the longest run from the start."""
    ws = [(w, writes(w)) for w, _ in crash]
    unsynced = [[x[N] for x in changes if x[FATE] == "unsynced"]
                for _, changes in ws]
    total = sum(len(u) for u in unsynced)
    best = (-1, None)
    for k in range(total + 1):
        off = 0
        for j, ((w, changes), (_, got)) in enumerate(zip(ws, crash)):
            keep = max(0, min(len(unsynced[j]), k - off))
            off += len(unsynced[j])
            durable = {x[N] for x in changes if x[FATE] == "durable"}
            if state(changes, durable | set(unsynced[j][:keep])) != got:
                if j > best[0]:
                    best = (j, crash[j])
                break
        else:
            return None
    return best[1]


def ordered_batch_any(crash):
    """ordered_batch over an enumerated crash: its one workload cut short
    ("OPS [OP]") read with and without OP; None when either explains it."""
    bad = None
    for j, (w, got) in enumerate(crash):
        if w.endswith("]"):
            for v in variants(w):
                bad = ordered_batch(crash[:j] + [(v, got)] + crash[j + 1:])
                if bad is None:
                    return None
            return bad
    return ordered_batch(crash)


def judge(w, dev, profile, got, seeds, where, problems, counts,
          enumerated=False):
    """One (workload, device, profile) and the states GOT left of it;
    ENUMERATED: from --enumerate, a cut per crash point (soundness only)."""
    ws = writes(variants(w)[-1], profile)
    cut_short = w.endswith("]") or enumerated
    counts["states"] += len(got)
    if dev in ("torn", "garbage"):
        bad = sorted(g for g in got
                     if not any(torn_allows(v, g, profile, dev == "garbage")
                                for v in variants(w)))
        if bad:
            problems.append((len(w.split()), w, where,
                             "soundness: the simulator left %s, where "
                             "a sector or the size holds what no change "
                             "that may persist put there" % bad[0]))
        if dev == "torn" and not cut_short and len(ws) == 1 and \
                ws[0][FATE] == "unsynced" and ws[0][KIND] == "W":
            counts["complete"] += 1
            if not any(torn_shown(w, g) for g in got):
                problems.append((len(w.split()), w, where,
                                 "completeness: no seed of %d tore its "
                                 "unsynced write, which the rules "
                                 "allow" % seeds))
        return
    if dev == "payload":
        want, unsynced = set(), 99
        for v in variants(w):
            want |= payload_allows(v, profile)
    else:
        want, unsynced = set(), 0
        for v in variants(w):
            s, unsynced = allowed(v, dev, profile)
            want |= s
    bad = got - want
    if bad:
        problems.append((len(w.split()), w, where,
                         "soundness: the simulator left %s, which the "
                         "rules do not allow (allowed: %s)" %
                         (sorted(bad)[0], " ".join(sorted(want)[:8]))))
    if unsynced <= 2 and not cut_short:
        counts["complete"] += 1
        missing = want - got
        if missing:
            problems.append((len(w.split()), w, where,
                             "completeness: no seed of %d left %s, "
                             "which the rules allow" %
                             (seeds, sorted(missing)[0])))


def check(seeds):
    seen = {}
    batches = {}
    enumerated = set()      # (workload, device, profile) from --enumerate
    for line in sys.stdin:
        w, dev, seed, a, b, *rest = line.rstrip("\n").split("|")
        profile = rest[0][2:] if rest else "ext4"
        if ":" in seed and dev == "ordered":
            # a front end's batch (ops.c): judged as one crash below
            batches.setdefault(seed, []).append((w, a + "|" + b))
            continue
        seen.setdefault((w, dev, profile), set()).add(a + "|" + b)
        if seed.startswith("e"):
            enumerated.add((w, dev, profile))
    problems = []
    counts = {"workloads": len({w for w, _, _ in seen} |
                               {w for c in batches.values() for w, _ in c}),
              "states": 0, "complete": 0}
    counts["states"] += len({x for c in batches.values() for x in c})
    for seed, crash in batches.items():
        bad = ordered_batch_any(crash)
        if bad:
            w, got = bad
            problems.append((len(w.split()), w, "ordered",
                             "soundness: the simulator left %s, which no "
                             "prefix over the batch (crash %s) explains" %
                             (got, seed)))
    for (w, dev, profile), got in seen.items():
        where = dev if profile == "ext4" else "%s, profile %s" % (dev, profile)
        judge(w, dev, profile, got, seeds, where, problems, counts,
              (w, dev, profile) in enumerated)
    print("model.py: %d workloads, %d (workload, device) pairs judged, %d "
          "distinct crash states compared; completeness checked on %d "
          "pairs" % (counts["workloads"], len(seen), counts["states"],
                     counts["complete"]))
    if batches:
        print("model.py: %d crashes of a batch under ordered judged whole "
              "(soundness; completeness under ordered is the driver's)" %
              len(batches))
    if problems:
        problems.sort()
        _, w, dev, what = problems[0]
        print("model.py: %d disagreements; the shortest: workload '%s', "
              "device %s: %s" % (len(problems), w, dev, what))
        return 1
    print("model.py: no disagreement")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(int(sys.argv[2]))
    elif len(sys.argv) in (3, 4) and sys.argv[1] in ("gen-ext", "gen-size",
                                                     "gen-zero"):
        alphabet, new = {"gen-ext": (EXT_OPS, NEW_OPS),
                         "gen-size": (SIZE_OPS, SIZE_NEW),
                         "gen-zero": (SIZE_OPS + ["Qa"], ["Qa"])}[sys.argv[1]]
        gen_new(alphabet, new, int(sys.argv[2]),
                int(sys.argv[3]) if len(sys.argv) == 4 else 1)
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(int(sys.argv[2])))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
