/* error.c -- keel_strerror: one string per keel_err. */
#include "keel_err.h"

const char *keel_strerror(int err)
{
	switch (err) {
	case KEEL_OK: return "ok";
	case KEEL_EINVAL: return "invalid argument";
	case KEEL_EKEY: return "key must be 1 to 1024 bytes";
	case KEEL_ETOOBIG: return "value or batch too large";
	case KEEL_ENOTFOUND: return "not found";
	case KEEL_ECONFLICT: return "revision conflict";
	case KEEL_EIO: return "I/O error";
	case KEEL_ENOSPC: return "no space left on device";
	case KEEL_ECORRUPT: return "store is corrupt";
	case KEEL_ENOTKEEL: return "not a keel store";
	case KEEL_EVERSION: return "store in a format version this build cannot read";
	case KEEL_ENOMEM: return "out of memory";
	case KEEL_EBUSY: return "store is locked by another writer";
	case KEEL_EREADONLY: return "store is open read-only";
	case KEEL_EACCES: return "permission denied";
	case KEEL_EISDIR: return "path is a directory";
	case KEEL_ENOENT: return "store does not exist";
	}
	return "unknown error";
}
