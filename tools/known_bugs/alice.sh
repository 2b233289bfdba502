# alice.sh -- sourced by tools/known_bugs.sh: ALICE's cases (Pillai et al.,
# "All File Systems Are Not Created Equal: On the Complexity of Crafting
# Crash-Consistent Applications", OSDI 2014).  ALICE records a workload's
# system calls, builds the states a crash could leave under an abstract file
# system that keeps only what the calls' persistence properties promise, and
# runs the program's checker on each: a vulnerability is a spot of the
# update protocol that needs more than that (an atomic append, a rename
# ordered after the file's data, a directory synced for durability).  Here:
# one row per class of vulnerability per program that Debian 12 ships --
# LevelDB, LMDB, GDBM, SQLite, PostgreSQL, Git, Mercurial, ZooKeeper -- each the
# program's own workload under power cuts with the device and file-system
# model that exposes that class.  Uses case_, section, $B, $D, $T, $pv and
# ZooKeeper's $Z, $ZK and $zv from known_bugs.sh.

section ALICE "The crash vulnerabilities ALICE (Pillai et al., \"All File Systems Are Not Created Equal\", OSDI 2014) found by replaying each program's system calls under an abstract file system that keeps only what persistence properties promise; among them LevelDB (1.10 and 1.15), LMDB, GDBM, SQLite, PostgreSQL, Git, Mercurial and ZooKeeper, which Debian 12 ships (HSQLDB, HDFS and VMware's player are not run here). A row is one class of vulnerability in one program -- atomicity of a write or of an update across calls, ordering of a rename or an unlink after data, durability (a directory never synced) -- run as the program's own workload under power cuts with the device model (\`--device\`) and file-system model (\`--fs\`) that expose that class."

al_lvl_v=$("$B/targets/leveldb" --version 2>/dev/null)
al_lmdb_v=$("$B/targets/lmdb" --version 2>/dev/null | sed 's/^LMDB \([0-9.]*\).*/\1/')
al_gdbm_v=$("$B/targets/gdbm" --version 2>/dev/null)
al_sql_v=$("$B/targets/sqlite" --version 2>/dev/null)
al_git_v=$("$B/targets/git" --version 2>/dev/null)
al_hg_v=$(hg --version -q 2>/dev/null | sed -n 's/.*version \([0-9.]*\).*/\1/p')
al_P=tests/targets/postgres.sh
al_H=tests/targets/hg.sh
al_gitsetup='git init -q {dir} && git -C {dir} config user.name t && git -C {dir} config user.email t@t && git -C {dir} config gc.auto 0'

case_ alice-leveldb-appends "ALICE, LevelDB, atomicity of appends" "1.10, 1.15" "${al_lvl_v:-?}" \
	"ALICE: a crash that leaves an append to the log or a table file half made (garbage or a hole in the appended range) made LevelDB report corruption at open or drop records; here: the leveldb:sync adapter (every put's log record fdatasynced), power cut tearing each unsynced write at 512-byte sectors (torn)" \
	"every acknowledged put survived and the database opened after every cut: 1.23's log records each carry a CRC32C and a type; the reader drops a torn or garbled tail record instead of failing the open (paranoid_checks off, the default), and a put is acknowledged only after its record's fdatasync, so what a tear leaves is never an acknowledged record" not -- \
	--target leveldb:sync --power-loss --device torn --duration "$D" --cycles 300

case_ alice-leveldb-rename "ALICE, LevelDB, ordering of the CURRENT rename" "1.10, 1.15" "${al_lvl_v:-?}" \
	"ALICE: LevelDB points CURRENT at a new MANIFEST by writing a temporary file and renaming it, then unlinks the old MANIFEST; the protocol needs the new MANIFEST's data before the rename and the rename before the unlink, else the next open finds no valid descriptor; here: the leveldb:sync adapter, whose every open writes a new MANIFEST and renames CURRENT, power cut under the ext4 model (namespace operations persist as a prefix in issue order, unsynced writes kept or lost each: reorder)" \
	"every acknowledged put survived and the database opened after every cut: 1.23 fsyncs the new MANIFEST and, because it is a MANIFEST, its directory (SyncDirIfManifest in util/env_posix.cc), and writes CURRENT's temporary file with WriteStringToFileSync (db/filename.cc, SetCurrentFile) before the rename; the unlink of the old MANIFEST comes later. An unlink persisting without the earlier rename is an order no model here makes (ext4's keeps a prefix of the namespace operations; posix undoes every unsynced one), nor the file systems ALICE measured" not -- \
	--target leveldb:sync --power-loss --fs ext4 --device reorder --duration "$D" --cycles 300

case_ alice-lmdb-meta "ALICE, LMDB, atomicity of a one-sector overwrite" "0.9 (2014)" "${al_lmdb_v:-?}" \
	"ALICE: LMDB commits a transaction by overwriting part of a meta page (about a hundred bytes in one sector) and relies on that write being atomic, with no checksum; here: the lmdb:default adapter, power cut under the garbage device model (each unsynced write lost, kept or torn at 512-byte sectors, and 1 in 2 gets one sector of its range filled with random bytes: harsher than ALICE's partly made write). LMDB's maintainers answered ALICE that devices keep a one-sector write atomic (openldap-technical, October 2014); under the torn model, which keeps sectors whole, lmdb:default holds in the claims table" \
	"every acknowledged put survived and every open succeeded: no cut garbled the meta page's unsynced overwrite in these cycles" not -- \
	--target lmdb:default --power-loss --device garbage --duration "$D" --cycles 300

case_ alice-gdbm-update "ALICE, GDBM, atomicity and ordering of in-place updates" "2014 release" "${al_gdbm_v:-?}" \
	"ALICE: GDBM updates its bucket, directory and free-space structures in place across several writes, so a crash between them, or with them reordered, leaves a database gdbm_open or a read rejects; here: the gdbm:sync adapter (GDBM_SYNC: gdbm_sync after every store), power cut under the ext4 model tearing unsynced writes (torn). GDBM 1.23 has an opt-in crash-tolerance mode (gdbm_failure_atomic, since 1.21) that needs a file system with reflink copies, which this machine's does not offer (the claims table's gdbm:crash-tolerant row)" \
	"every acknowledged store survived and every open and read succeeded in these cycles" not -- \
	--target gdbm:sync --power-loss --fs ext4 --device torn --duration "$D" --cycles 300

case_ alice-sqlite-unlink "ALICE, SQLite, durability of a rollback-journal commit" "2014 release" "${al_sql_v:-?}" \
	"ALICE: in rollback-journal mode (journal_mode=DELETE) the commit point is the unlink of the journal, and synchronous=FULL never syncs the directory after it: a crash can bring the journal back and the next open rolls the acknowledged transaction back; here: the sqlite:delete-full adapter, power cut under the ext4 model (unsynced namespace operations persist as a prefix; unsynced writes kept or lost each: reorder). SQLite documents the gap and its remedy: synchronous=EXTRA syncs the directory after the unlink (the claims table's sqlite:delete-extra row holds); FULL is still the default" \
	"every acknowledged put survived in these cycles: the unlink of the journal was always made durable by a later sync before a cut fell between the two" not -- \
	--target sqlite:delete-full --power-loss --fs ext4 --device reorder --duration "$D" --cycles 300

case_ alice-postgres "ALICE, PostgreSQL, ordering and durability of a commit" "2014 release" "${pv:-?}" \
	"ALICE: PostgreSQL's update protocol (WAL appends, fsyncs, segment files created and renamed) checked under an abstract file system that reorders and tears unsynced calls; here: inserts through psql (synchronous_commit=on), power cut under the posix model (a new or renamed name is durable only after its directory is fsynced; unsynced writes kept or lost each: reorder)" \
	"every acknowledged insert survived and the server restarted after every cut: PostgreSQL 15 fsyncs each WAL record before it answers a commit and fsyncs the directory after it creates or renames a WAL segment (durable_rename and fsync_fname in src/backend/storage/file/fd.c), so nothing it acknowledged rests on an unsynced name" not -- \
	--target exec --user postgres --power-loss --device reorder --kill-every 4s --duration "$D" --cycles 12 \
	--setup "bash $al_P {dir} --init" --workload "bash $al_P {dir}" --checker "bash $al_P {dir} --check"

case_ alice-git-order "ALICE, Git, ordering of a ref update after its objects" "2014 release" "${al_git_v:-?}" \
	"ALICE: git add and git commit write objects, the index and the branch ref (each through a lock file renamed into place) without making the data durable first, so a crash can leave a ref naming an object that is empty or missing (the repository corrupt) or lose the commit; here: the git:defaults adapter (git's own core.fsync: objects and derived metadata, not references), a repository made in --setup, power cut under the ext4 model (torn)" \
	"every acknowledged commit survived and HEAD named a readable commit after every cut in these cycles" not -- \
	--target git:defaults --power-loss --fs ext4 --device torn --kill-every 2s --duration "$D" --cycles 60 \
	--setup "$al_gitsetup"

case_ alice-git-durable "ALICE, Git, durability of a commit (no directory sync)" "2014 release" "${al_git_v:-?}" \
	"ALICE: git never fsyncs a directory, so the renames that publish a commit (the ref's lock file onto the ref) are not durable when git returns; here: the git:fsync adapter (core.fsync=all: every file git writes is fsynced), a repository made in --setup, power cut under the posix model (ordered: unsynced writes persist as a prefix in issue order)" \
	"every acknowledged commit survived in these cycles" not -- \
	--target git:fsync --power-loss --device ordered --kill-every 2s --duration "$D" --cycles 60 \
	--setup "$al_gitsetup"

case_ alice-hg-order "ALICE, Mercurial, atomicity and ordering of revlog appends" "2014 release" "${al_hg_v:-?}" \
	"ALICE: hg commit appends to the changelog, manifest and file revlogs (index and data) and renames the dirstate into place without an fsync, so a crash can keep the changelog's entry and lose what it points to (the repository corrupt: hg cannot read the tip) or lose the commit; here: tests/targets/hg.sh (one hg commit per put, acknowledged once it returned; the checker runs hg recover on an abandoned transaction, then reads each key at tip), power cut under the ext4 model (torn)" \
	"every acknowledged commit survived and hg read the tip after every cut in these cycles" not -- \
	--target exec --power-loss --fs ext4 --device torn --kill-every 3s --duration "$D" --cycles 15 \
	--setup "sh $al_H {dir} --init" --workload "sh $al_H {dir}" --checker "sh $al_H {dir} --check"

case_ alice-hg-durable "ALICE, Mercurial, durability of a commit (no fsync at all)" "2014 release" "${al_hg_v:-?}" \
	"ALICE: Mercurial makes no fsync, so nothing a commit wrote is durable when hg returns; here: tests/targets/hg.sh, power cut under the posix model (ordered: unsynced writes persist as a prefix in issue order, unsynced creates and renames undone)" \
	"every acknowledged commit survived and hg read the tip after every cut in these cycles" not -- \
	--target exec --power-loss --device ordered --kill-every 3s --duration "$D" --cycles 15 \
	--setup "sh $al_H {dir} --init" --workload "sh $al_H {dir}" --checker "sh $al_H {dir} --check"

refused="tests/targets/zookeeper.sh needs Debian's zookeeper, java and its client built (make: $ZK)"
said='grep -h -m1 -o -E "No snapshot found[^!]*!|has invalid magic number [-0-9]+ != [0-9]+|CRC check failed|Unable to load database[^(]*|Last transaction was partial" "$kept.zk.log"'
case_ alice-zookeeper-durable "ALICE, ZooKeeper, durability of a new log file (no directory sync)" "3.4 (2014)" "${zv:-?}" \
	"ALICE: ZooKeeper fsyncs (fdatasync) its transaction log before it answers a write, but never the data directory: a log file it creates (one per start, and again every snapCount transactions) and its snapshots are named by an unsynced directory entry; here: tests/targets/zookeeper.sh (forceSync=yes, the default), puts, power cut under the posix model (a new name is durable only after its directory is fsynced; unsynced writes kept or lost each: reorder)" \
	"every acknowledged put survived in these cycles: no cut fell before a log file's creation was made durable" not -- \
	--target exec --front-end shim --power-loss --device reorder --kill-every 6s --duration "$D" --cycles 12 \
	--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK forcesync" --checker "sh $Z {dir} $ZK --check"

case_ alice-zookeeper-appends "ALICE, ZooKeeper, atomicity of log appends" "3.4 (2014)" "${zv:-?}" \
	"ALICE: a crash that leaves an append to the transaction log partly made; each transaction carries an Adler-32 checksum and ends with the byte 'B', and the log is preallocated with zeros: a transaction cut short at its end is read as the log's end (\"Last transaction was partial\"), one with a hole inside fails the checksum and the server will not start (\"CRC check failed\", LazyFS's bug 8); here: values padded to about 3 KB (forceSync=yes), power cut under the ext4 model, each 512-byte sector of an unsynced write kept or lost (torn)" \
	"every acknowledged put survived and the server restarted after every cut in these cycles: no cut left a hole inside a transaction the server had written to its log but not yet synced while keeping its end (the kill must fall between the write and its fdatasync; a tear that loses the end is read as the log's end)" not -- \
	--target exec --front-end shim --power-loss --fs ext4 --device torn --kill-every 6s --duration "$D" --cycles 12 \
	--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK forcesync big" --checker "sh $Z {dir} $ZK --check"
unset refused said
