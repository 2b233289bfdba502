# cuttlefs.sh -- sourced by tools/known_bugs.sh: CuttleFS's cases
# (Rebello et al., "Can Applications Recover from fsync Failures?", USENIX
# ATC 2020).  The paper fails one fsync of PostgreSQL, LMDB, LevelDB,
# SQLite (rollback and WAL journal) and Redis on a FUSE file system that
# behaves, after the failure, as ext4 (data=ordered and data=journal), XFS
# or btrfs does, then reads the data back live and after a restart, and
# sorts the outcomes: an old value, a false failure (an operation reported
# failed that is there after the restart), a key or value corrupted, a key
# not found.  Here: one row per application and file system the kit
# models -- ext4 (data=ordered), xfs, btrfs; data=journal has no model --
# each a run of process kills with fsync and fdatasync failing with EIO
# (p=0.05 a call, seeded) under that file system's profile (--fs: ext4 and
# xfs mark the failed pages clean, their bytes lost to the device; btrfs
# reverts them at once; docs/faults.md).  After each kill the next writer
# reads what the device holds, as after CuttleFS's restart with the cache
# dropped.  Uses case_, section, $B, $D and $T from known_bugs.sh.

section CuttleFS "The outcomes CuttleFS (Rebello et al., \"Can Applications Recover from fsync Failures?\", USENIX ATC 2020) found when one fsync fails: its findings say Redis never checked fsync's return code, LMDB, LevelDB and SQLite report the error and revert their in-memory state, and PostgreSQL crashes (PANIC); false failures follow where recovery reads the failed pages back from the page cache. Every run here is kills with \`--fail sync:EIO:p=0.05\` and \`--fs\` naming the file system (its failed-sync profile; no power cut, so only the failed writes are lost), and the kit's verdict covers an acknowledged put lost (old value, key not found) or garbled (corruption) and a refusal to recover. A false failure -- a put reported failed that is there later -- is allowed by the oracle (an operation not acknowledged may land or not), so no row can reproduce one; ext4's data=journal mode has no model here."

cf_redis_v=$("$B/targets/redis" --version 2>/dev/null)
cf_lmdb_v=$("$B/targets/lmdb" --version 2>/dev/null | sed 's/^LMDB \([0-9.]*\).*/\1/')
cf_lvl_v=$("$B/targets/leveldb" --version 2>/dev/null)
cf_sql_v=$("$B/targets/sqlite" --version 2>/dev/null)
cf_pg_v=${pv:-?}
cf_fail="--fail sync:EIO:p=0.05"
cf_P=tests/targets/postgres.sh

for cf_fs in ext4 xfs btrfs; do
	case $cf_fs in
	ext4) cf_prof="ext4 (data=ordered): the failed pages are marked clean with their new bytes, which never reach the device" ;;
	xfs) cf_prof="XFS: as ext4 in the model (pages marked clean, bytes lost to the device)" ;;
	btrfs) cf_prof="btrfs: the failed pages are reverted at once to what the device holds" ;;
	esac
	case_ "cuttlefs-redis-$cf_fs" "CuttleFS, Redis, $cf_fs" "2020 release" "${cf_redis_v:-?}" \
		"SETs to the AOF with appendfsync always, each acknowledged once Redis answered; an fsync of the AOF fails (EIO); $cf_prof. CuttleFS: Redis ignored fsync's return code and answered OK, so the failed write's SET was acknowledged and then found old or corrupted" \
		"no acknowledged SET was lost or garbled: Redis 7.0.15 exits when an fsync of the AOF fails under appendfsync always, before it answers the command (the run's workloads stopped on the injected error). Fixed upstream after the paper: redis/redis pull request 8347 (\"Redis exit for fsync error when the AOF fsync policy is 'always'\", released in 6.2; issue 8111 cites the paper) and 8419 (the background fsync's errors); Debian's redis-server binary carries the message \"Can't persist AOF for fsync error when the AOF fsync policy is 'always'\"" fixed -- \
		--target redis:always $cf_fail --fs $cf_fs --duration "$D" --cycles 300

	case_ "cuttlefs-lmdb-$cf_fs" "CuttleFS, LMDB, $cf_fs" "2020 release" "${cf_lmdb_v:-?}" \
		"puts, each a write transaction acknowledged once mdb_txn_commit returned 0 (default flags: data pages written and fdatasynced, then the meta page written and fdatasynced); an fdatasync fails (EIO); $cf_prof. CuttleFS: LMDB reports the error and reverts its in-memory state, and what comes back depends on what the file system did with the failed pages" \
		"no acknowledged put was lost or garbled and every open after a kill succeeded: a failed sync fails the commit (the adapter stops, status 3), and LMDB writes the meta page that makes a transaction visible only after the data pages' sync succeeded, so the device never holds a meta page that names lost pages. What CuttleFS saw beyond that needs the failed pages to stay readable to a later transaction or restart (Linux's page cache); the kit's exec targets read the device after each kill, and a failed commit seen later is a false failure, which the oracle allows" not -- \
		--target lmdb:default $cf_fail --fs $cf_fs --duration "$D" --cycles 300

	case_ "cuttlefs-leveldb-$cf_fs" "CuttleFS, LevelDB, $cf_fs" "2020 release" "${cf_lvl_v:-?}" \
		"synced puts (WriteOptions.sync), each acknowledged once Put returned OK; an fdatasync of the log fails (EIO); $cf_prof. CuttleFS: LevelDB reports the error and reverts, and a restart that reads the failed log record back from the page cache makes a false failure" \
		"no acknowledged put was lost or garbled and every open after a kill succeeded: LevelDB 1.23 turns a failed log sync into a background error that fails every later write (DBImpl::Write records it, db/db_impl.cc), so nothing is acknowledged after the hole, and the log reader drops the record whose bytes the device lost. A false failure (the failed put present after a restart that reads the page cache) is allowed by the oracle, and the kit's next writer reads the device" not -- \
		--target leveldb:sync $cf_fail --fs $cf_fs --duration "$D" --cycles 300

	case_ "cuttlefs-sqlite-rollback-$cf_fs" "CuttleFS, SQLite (rollback journal), $cf_fs" "2020 release" "${cf_sql_v:-?}" \
		"puts in journal_mode=DELETE, synchronous=FULL, each a transaction acknowledged once COMMIT returned SQLITE_OK; an fsync or fdatasync of the journal or the database fails (EIO); $cf_prof. CuttleFS: SQLite returns SQLITE_IOERR and rolls back, and a rollback that reads the journal back from the page cache makes false failures and, where the journal's bytes never reached the device, corruption" \
		"no acknowledged put was lost or garbled and every open after a kill succeeded: SQLite fails the COMMIT (SQLITE_IOERR_FSYNC; the adapter stops, status 3) and the next open rolls back from the journal the device holds. The corruption CuttleFS saw needs the rollback to read journal pages the page cache kept and the device lost, in the same machine's life; the kit's exec targets read the device after each kill" not -- \
		--target sqlite:delete-full $cf_fail --fs $cf_fs --duration "$D" --cycles 300

	case_ "cuttlefs-sqlite-wal-$cf_fs" "CuttleFS, SQLite (WAL), $cf_fs" "2020 release" "${cf_sql_v:-?}" \
		"puts in journal_mode=WAL, synchronous=FULL, each acknowledged once COMMIT returned SQLITE_OK; an fsync of the WAL or a checkpoint's fsync of the database fails (EIO); $cf_prof. CuttleFS: SQLite returns SQLITE_IOERR, and a WAL read back from the page cache after the failure makes false failures" \
		"no acknowledged put was lost or garbled and every open after a kill succeeded: a failed WAL sync fails the COMMIT (the adapter stops, status 3), and the WAL's frame checksums and salt make the next open stop at the first frame the device lost. A false failure (the failed commit read back from the page cache) is allowed by the oracle, and the kit's next writer reads the device" not -- \
		--target sqlite:wal-full $cf_fail --fs $cf_fs --duration "$D" --cycles 300

	case_ "cuttlefs-postgres-$cf_fs" "CuttleFS, PostgreSQL, $cf_fs" "2020 release" "$cf_pg_v" \
		"inserts (synchronous_commit=on, fsync=on), each acknowledged once psql returned; an fsync or fdatasync of the WAL or a data file fails (EIO); $cf_prof. CuttleFS: PostgreSQL crashes (PANIC) at a failed fsync, and its crash recovery, reading WAL pages the page cache kept, replays a transaction it had reported failed (a false failure)" \
		"no acknowledged insert was lost and the server restarted after every kill: PostgreSQL 15 PANICs at a failed fsync of a data file or the WAL (data_sync_retry = off, the setting's default since it came in the February 2019 minor releases, 11.2 among them), so nothing is acknowledged after the failure, and its recovery replays the WAL the device holds. The false failure CuttleFS saw needs recovery to read WAL pages the page cache kept; the kit's next life reads the device, and the oracle allows a failed transaction to appear" not -- \
		--target exec --user postgres $cf_fail --fs $cf_fs --kill-every 4s --duration "$D" --cycles 12 \
		--setup "bash $cf_P {dir} --init" --workload "bash $cf_P {dir}" --checker "bash $cf_P {dir} --check"
done
