/*
 * leveldb.c -- LevelDB as a torture --target leveldb:CONFIG adapter
 * (adapter.h); the adapter itself is lsm.h, shared with RocksDB.
 */
#include <stdio.h>

#include <leveldb/c.h>

#define LSM_NAME "leveldb"
#define LSM(x) leveldb_##x
#include "lsm.h"

static const char *version(void)
{
	static char v[32];

	snprintf(v, sizeof v, "%d.%d", leveldb_major_version(),
	         leveldb_minor_version());
	return v;
}
