/*
 * probe_device.h -- what is the device under a file, and what is it doing.
 *
 * probe_dev_identify() follows a path to its block device: stat() gives the
 * device number, /sys/dev/block/MAJ:MIN the sysfs node, and for a partition
 * the parent disk.  From the disk's sysfs node it reads the queue attributes
 * (rotational, write_cache, fua, block sizes) and every identity attribute
 * that exists (SCSI/ATA model, vendor, rev; NVMe model, firmware; MMC/SD
 * name, manfid, oemid, date, cid, csd, preferred_erase_size ...).  From
 * /proc/self/mountinfo it finds the mount (matched on the device number,
 * longest mount point that holds the path): filesystem type, source and
 * options.  It also records the kernel release and the free space.
 *
 * Where the file's device number is anonymous (btrfs), the block device
 * named as the mount's source is used.  A file on tmpfs, overlayfs or NFS
 * has no block device: identify still succeeds, with is_block = 0 and empty
 * device fields.
 *
 * probe_dev_stats_read() reads the whole disk's line of /proc/diskstats;
 * probe_dev_stats_delta() subtracts two readings.
 *
 * probe_dev_flush_floor_ns() is the rule behind the "faster than the device
 * can flush" flag: the shortest time in which a device of this class can
 * honestly make a write durable (0: no floor applies).  The rule and its
 * reasons are in docs/fsync-probe.md.
 *
 * Calling sequence:
 *   struct probe_dev_info info;
 *   probe_dev_identify(path, &info);       // PROBE_OK or PROBE_EIO
 *   probe_dev_write_json(stdout, &info);   // a JSON object, no newline
 *   probe_dev_stats_read(info.disk, &before); ... probe_dev_stats_delta(...)
 */
#ifndef KEEL_PROBE_DEVICE_H
#define KEEL_PROBE_DEVICE_H

#include <stdio.h>
#include "probe.h"

#define PROBE_DEV_ATTRS 24
#define PROBE_DEV_TEXT 256

struct probe_dev_attr {
	char name[32];               /* sysfs attribute name, e.g. "model", "cid" */
	char value[PROBE_DEV_TEXT];  /* its content, trimmed */
};

struct probe_dev_info {
	int is_block;                /* 1 when the file lives on a block device */
	char disk[64];               /* whole-disk name, e.g. "sda", "mmcblk0" */
	char partition[64];          /* partition name, or "" */
	int rotational;              /* queue/rotational: 1, 0, or -1 unknown */
	char write_cache[32];        /* queue/write_cache: "write back"/"write through" */
	int fua;                     /* queue/fua: 1, 0, or -1 unknown */
	unsigned logical_block;      /* queue/logical_block_size (0 unknown) */
	unsigned physical_block;     /* queue/physical_block_size (0 unknown) */
	int is_mmc;                  /* 1 for an MMC/SD card (mmcblk*) */
	int nattrs;                  /* identity attributes found */
	struct probe_dev_attr attr[PROBE_DEV_ATTRS];
	char fstype[32];             /* filesystem type from mountinfo */
	char mount_point[PROBE_DEV_TEXT];
	char mount_source[PROBE_DEV_TEXT];
	char mount_options[512];     /* per-mount options, then superblock options */
	char kernel[128];            /* uname -r */
	uint64_t fs_free_bytes;      /* statvfs: available to this user */
	uint64_t fs_total_bytes;     /* statvfs: filesystem size */
};

/* Fill *out for the file or directory at path.  PROBE_EIO if path cannot be
 * stat()ed; missing sysfs or mountinfo data only leaves fields empty. */
int probe_dev_identify(const char *path, struct probe_dev_info *out);

/* Write info as one JSON object (no trailing newline). */
void probe_dev_write_json(FILE *f, const struct probe_dev_info *info);

/* A one-line human description, e.g. "vda (virtio 0x1af4), rotational, write
 * back cache, no FUA, ext4 on /". */
void probe_dev_describe(const struct probe_dev_info *info, char *buf, size_t len);

/* Read disk's counters; out->valid = 0 (and PROBE_EIO) when not found. */
int probe_dev_stats_read(const char *disk, struct probe_dev_stats *out);

/* out = after - before (in_flight is after's level).  Invalid if either is. */
void probe_dev_stats_delta(const struct probe_dev_stats *before,
			   const struct probe_dev_stats *after,
			   struct probe_dev_stats *out);

/* Write a delta as a JSON object. */
void probe_dev_stats_json(FILE *f, const struct probe_dev_stats *d);

/* The flush floor for this device class, in ns, and why (a sentence in
 * *why).  0 when no floor applies (no volatile cache, not a block device). */
uint64_t probe_dev_flush_floor_ns(const struct probe_dev_info *info,
				  const char **why);

#endif
