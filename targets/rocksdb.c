/*
 * rocksdb.c -- RocksDB as a torture --target rocksdb:CONFIG adapter
 * (adapter.h); the adapter itself is lsm.h, shared with LevelDB.
 */
#include <rocksdb/c.h>

#define LSM_NAME "rocksdb"
#define LSM(x) rocksdb_##x
#include "lsm.h"

/* The C API has no version call: the Makefile reads rocksdb/version.h. */
#ifndef ROCKSDB_VERSION_TEXT
#define ROCKSDB_VERSION_TEXT "unknown"
#endif

static const char *version(void)
{
	return ROCKSDB_VERSION_TEXT;
}
