/*
 * keel_err.h -- the one error enum of libkeel.  Floor 0: the format's
 * decoders return these codes, and so does everything above them.  Part of
 * the public interface: keel.h includes it, and it is installed beside it.
 *
 * Every function of the library returns 0 (KEEL_OK) or one of the negative
 * codes below.  errno values never leak through the interface;
 * keel_strerror() names each code.
 */
#ifndef KEEL_ERR_H
#define KEEL_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum keel_err {
	KEEL_OK = 0,
	KEEL_EINVAL = -1,    /* bad argument: NULL, bad flag, bad option       */
	KEEL_EKEY = -2,      /* key empty or longer than KEEL_KEY_MAX          */
	KEEL_ETOOBIG = -3,   /* value or batch larger than the engine allows   */
	KEEL_ENOTFOUND = -4, /* no such key                                    */
	KEEL_ECONFLICT = -5, /* expected revision did not match                */
	KEEL_EIO = -6,       /* a read, write or sync failed; or handle FAILED */
	KEEL_ENOSPC = -7,    /* the device is full (handle is FAILED too)      */
	KEEL_ECORRUPT = -8,  /* damage found behind the newest valid head      */
	KEEL_ENOTKEEL = -9,  /* the file is not a keel store                   */
	KEEL_EVERSION = -10, /* store in a format version this build cannot read */
	KEEL_ENOMEM = -11,   /* out of memory                                  */
	KEEL_EBUSY = -12,    /* another process holds the writer lock          */
	KEEL_EREADONLY = -13,/* write on a read-only handle                     */
	KEEL_EACCES = -14,   /* permission denied by the file system           */
	KEEL_EISDIR = -15,   /* the path names a directory                     */
	KEEL_ENOENT = -16,   /* the store does not exist (KEEL_NOCREATE)       */
} keel_err;

/* A static string naming the error; never NULL, even for unknown codes. */
const char *keel_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* KEEL_ERR_H */
