/* probe_device.c -- device identity, mount, diskstats; see probe_device.h. */
#include "probe_device.h"
#include "probe_json.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

/* Identity attributes looked for under <disk>/device/, in this order.  Not
 * every device has each; MMC/SD cards have the second half. */
static const char *const identity_attrs[] = {
	"vendor", "model", "rev", "firmware_rev", "serial", "type",
	"name", "manfid", "oemid", "date", "hwrev", "fwrev", "cid", "csd",
	"scr", "preferred_erase_size", "erase_size",
};

/* Read a small text file into buf (trimmed); 0 on success, -1 otherwise. */
static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* Build dir/leaf into buf; 0, or -1 if it does not fit. */
static int join(char *buf, size_t len, const char *dir, const char *leaf)
{
	int n = snprintf(buf, len, "%s/%s", dir, leaf);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Copy a name, which must fit; "" if it does not. */
static void copy_name(char *dst, size_t len, const char *src)
{
	if (snprintf(dst, len, "%s", src) >= (int)len)
		dst[0] = '\0';
}

static int read_int(const char *path, int fallback)
{
	char buf[64];

	if (read_text(path, buf, sizeof(buf)) < 0 || buf[0] == '\0')
		return fallback;
	return atoi(buf);
}

/* Fill the queue and identity fields from the disk's sysfs directory. */
static void read_sysfs(const char *diskdir, struct probe_dev_info *out)
{
	char path[PATH_MAX];
	size_t i;

	if (join(path, sizeof(path), diskdir, "queue/rotational") == 0)
		out->rotational = read_int(path, -1);
	if (join(path, sizeof(path), diskdir, "queue/fua") == 0)
		out->fua = read_int(path, -1);
	if (join(path, sizeof(path), diskdir, "queue/logical_block_size") == 0)
		out->logical_block = (unsigned)read_int(path, 0);
	if (join(path, sizeof(path), diskdir, "queue/physical_block_size") == 0)
		out->physical_block = (unsigned)read_int(path, 0);
	if (join(path, sizeof(path), diskdir, "queue/write_cache") == 0)
		read_text(path, out->write_cache, sizeof(out->write_cache));
	for (i = 0; i < sizeof(identity_attrs) / sizeof(identity_attrs[0]); i++) {
		struct probe_dev_attr *a = &out->attr[out->nattrs];

		if (out->nattrs >= PROBE_DEV_ATTRS)
			break;
		char leaf[64];

		snprintf(leaf, sizeof(leaf), "device/%s", identity_attrs[i]);
		if (join(path, sizeof(path), diskdir, leaf) < 0 ||
		    read_text(path, a->value, sizeof(a->value)) < 0)
			continue;
		snprintf(a->name, sizeof(a->name), "%s", identity_attrs[i]);
		out->nattrs++;
	}
}

/* Find the whole disk behind device number dev. */
static void find_disk(dev_t dev, struct probe_dev_info *out)
{
	char link[64], real[PATH_MAX], probe[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	if (!realpath(link, real))
		return; /* tmpfs, overlay, NFS: no block device */
	out->is_block = 1;
	/* a partition's directory holds a "partition" file and sits inside
	 * its disk's directory */
	if (join(probe, sizeof(probe), real, "partition") == 0 &&
	    stat(probe, &st) == 0) {
		slash = strrchr(real, '/');
		copy_name(out->partition, sizeof(out->partition),
			  slash ? slash + 1 : real);
		if (slash)
			*slash = '\0';
	}
	slash = strrchr(real, '/');
	copy_name(out->disk, sizeof(out->disk), slash ? slash + 1 : real);
	out->is_mmc = strncmp(out->disk, "mmcblk", 6) == 0;
	read_sysfs(real, out);
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Does mount point mp hold absolute path p? */
static int holds(const char *mp, const char *p)
{
	size_t n = strlen(mp);

	if (strcmp(mp, "/") == 0)
		return 1;
	return strncmp(mp, p, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/* Parse one mountinfo line; take it if it is on dev, holds path and has a
 * longer mount point than the best so far. */
static void consider_mount(char *line, dev_t dev, const char *path,
			   struct probe_dev_info *out, size_t *best)
{
	char *field[8], *sep, *save = NULL, *tok;
	char *fstype, *source, *superopts;
	unsigned maj, min;
	int n = 0;

	sep = strstr(line, " - ");
	if (!sep)
		return;
	*sep = '\0';
	for (tok = strtok_r(line, " ", &save); tok && n < 8;
	     tok = strtok_r(NULL, " ", &save))
		field[n++] = tok;
	if (n < 6 || sscanf(field[2], "%u:%u", &maj, &min) != 2)
		return;
	if (maj != major(dev) || min != minor(dev))
		return;
	unescape(field[4]);
	if (!holds(field[4], path) || strlen(field[4]) < *best)
		return;
	save = NULL;
	fstype = strtok_r(sep + 3, " \n", &save);
	source = strtok_r(NULL, " \n", &save);
	superopts = strtok_r(NULL, " \n", &save);
	*best = strlen(field[4]);
	snprintf(out->mount_point, sizeof(out->mount_point), "%s", field[4]);
	snprintf(out->fstype, sizeof(out->fstype), "%s", fstype ? fstype : "");
	snprintf(out->mount_source, sizeof(out->mount_source), "%s",
		 source ? source : "");
	snprintf(out->mount_options, sizeof(out->mount_options), "%s%s%s",
		 field[5], superopts ? " " : "", superopts ? superopts : "");
}

static void find_mount(dev_t dev, const char *path, struct probe_dev_info *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	size_t best = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		consider_mount(line, dev, path, out, &best);
	fclose(f);
}

int probe_dev_identify(const char *path, struct probe_dev_info *out)
{
	char copy[PATH_MAX], real[PATH_MAX];
	const char *target = path;
	struct statvfs vfs;
	struct utsname uts;
	struct stat st;

	memset(out, 0, sizeof(*out));
	out->rotational = out->fua = -1;
	/* the file may not exist yet: then its directory decides */
	if (stat(target, &st) < 0) {
		snprintf(copy, sizeof(copy), "%s", path);
		target = dirname(copy);
		if (stat(target, &st) < 0) {
			fprintf(stderr, "fsync-probe: cannot stat %s: %s\n",
				path, strerror(errno));
			return PROBE_EIO;
		}
	}
	if (!realpath(target, real))
		snprintf(real, sizeof(real), "%s", target);
	find_disk(st.st_dev, out);
	find_mount(st.st_dev, real, out);
	/* btrfs and some others give files an anonymous device number; the
	 * mount's source then names the block device */
	if (!out->is_block && strncmp(out->mount_source, "/dev/", 5) == 0) {
		struct stat src;

		if (stat(out->mount_source, &src) == 0 && S_ISBLK(src.st_mode))
			find_disk(src.st_rdev, out);
	}
	if (uname(&uts) == 0)
		snprintf(out->kernel, sizeof(out->kernel), "%s", uts.release);
	if (statvfs(target, &vfs) == 0) {
		out->fs_free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		out->fs_total_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	}
	return PROBE_OK;
}

static void json_int_or_null(FILE *f, const char *key, long v, int known)
{
	if (known)
		fprintf(f, ",\"%s\":%ld", key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

void probe_dev_write_json(FILE *f, const struct probe_dev_info *info)
{
	int i;

	fprintf(f, "{\"block_device\":%s,\"disk\":", info->is_block ? "true" : "false");
	probe_json_str(f, info->is_block ? info->disk : NULL);
	fputs(",\"partition\":", f);
	probe_json_str(f, info->partition[0] ? info->partition : NULL);
	json_int_or_null(f, "rotational", info->rotational, info->rotational >= 0);
	fputs(",\"write_cache\":", f);
	probe_json_str(f, info->write_cache[0] ? info->write_cache : NULL);
	json_int_or_null(f, "fua", info->fua, info->fua >= 0);
	json_int_or_null(f, "logical_block_size", (long)info->logical_block,
			 info->logical_block > 0);
	json_int_or_null(f, "physical_block_size", (long)info->physical_block,
			 info->physical_block > 0);
	fprintf(f, ",\"mmc\":%s,\"identity\":{", info->is_mmc ? "true" : "false");
	for (i = 0; i < info->nattrs; i++) {
		fputs(i ? "," : "", f);
		probe_json_str(f, info->attr[i].name);
		fputc(':', f);
		probe_json_str(f, info->attr[i].value);
	}
	fputs("},\"fstype\":", f);
	probe_json_str(f, info->fstype);
	fputs(",\"mount_point\":", f);
	probe_json_str(f, info->mount_point);
	fputs(",\"mount_source\":", f);
	probe_json_str(f, info->mount_source);
	fputs(",\"mount_options\":", f);
	probe_json_str(f, info->mount_options);
	fputs(",\"kernel\":", f);
	probe_json_str(f, info->kernel);
	fprintf(f, ",\"fs_free_bytes\":%" PRIu64 ",\"fs_total_bytes\":%" PRIu64 "}",
		info->fs_free_bytes, info->fs_total_bytes);
}

static const char *attr_value(const struct probe_dev_info *info, const char *name)
{
	int i;

	for (i = 0; i < info->nattrs; i++)
		if (strcmp(info->attr[i].name, name) == 0)
			return info->attr[i].value;
	return NULL;
}

void probe_dev_describe(const struct probe_dev_info *info, char *buf, size_t len)
{
	const char *model = attr_value(info, info->is_mmc ? "name" : "model");
	const char *vendor = attr_value(info, "vendor");

	if (!info->is_block) {
		snprintf(buf, len, "no block device (%s on %s)",
			 info->fstype[0] ? info->fstype : "unknown filesystem",
			 info->mount_point[0] ? info->mount_point : "?");
		return;
	}
	snprintf(buf, len, "%s (%s%s%s), %s, %s cache, %s, %s on %s", info->disk,
		 vendor ? vendor : "", vendor && model ? " " : "",
		 model ? model : (vendor ? "" : "no model"),
		 info->rotational == 1 ? "rotational" :
		 info->rotational == 0 ? "non-rotational" : "rotation unknown",
		 info->write_cache[0] ? info->write_cache : "unknown",
		 info->fua == 1 ? "FUA" : info->fua == 0 ? "no FUA" : "FUA unknown",
		 info->fstype[0] ? info->fstype : "?",
		 info->mount_point[0] ? info->mount_point : "?");
}

int probe_dev_stats_read(const char *disk, struct probe_dev_stats *out)
{
	unsigned long long v[17];
	char name[64], line[512];
	FILE *f;
	int n;

	memset(out, 0, sizeof(*out));
	if (!disk || !disk[0] || !(f = fopen("/proc/diskstats", "r")))
		return PROBE_EIO;
	while (fgets(line, sizeof(line), f)) {
		memset(v, 0, sizeof(v));
		/* major minor name, then 11 (old), 15 (4.18+) or 17 (5.5+) fields */
		n = sscanf(line, "%*u %*u %63s %llu %llu %llu %llu %llu %llu %llu"
			   " %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
			   &v[14], &v[15], &v[16]);
		if (n < 12 || strcmp(name, disk) != 0)
			continue;
		out->valid = 1;
		out->writes = v[4];
		out->sectors_written = v[6];
		out->write_ms = v[7];
		out->in_flight = v[8];
		out->io_ms = v[9];
		out->flushes = v[15];
		out->flush_ms = v[16];
		break;
	}
	fclose(f);
	return out->valid ? PROBE_OK : PROBE_EIO;
}

void probe_dev_stats_delta(const struct probe_dev_stats *before,
			   const struct probe_dev_stats *after,
			   struct probe_dev_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!before->valid || !after->valid)
		return;
	out->valid = 1;
	out->writes = after->writes - before->writes;
	out->sectors_written = after->sectors_written - before->sectors_written;
	out->write_ms = after->write_ms - before->write_ms;
	out->in_flight = after->in_flight;
	out->io_ms = after->io_ms - before->io_ms;
	out->flushes = after->flushes - before->flushes;
	out->flush_ms = after->flush_ms - before->flush_ms;
}

void probe_dev_stats_json(FILE *f, const struct probe_dev_stats *d)
{
	if (!d->valid) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"writes\":%" PRIu64 ",\"sectors_written\":%" PRIu64
		",\"write_ms\":%" PRIu64 ",\"in_flight\":%" PRIu64
		",\"io_ms\":%" PRIu64 ",\"flushes\":%" PRIu64
		",\"flush_ms\":%" PRIu64 "}",
		d->writes, d->sectors_written, d->write_ms, d->in_flight,
		d->io_ms, d->flushes, d->flush_ms);
}

/* The rule (docs/fsync-probe.md, "The too-fast flag"): a durable write must
 * reach the medium, and each medium has a physical minimum. */
uint64_t probe_dev_flush_floor_ns(const struct probe_dev_info *info,
				  const char **why)
{
	if (!info->is_block) {
		*why = "not a block device: a sync here reaches no medium";
		return 0;
	}
	if (info->is_mmc) {
		*why = "an SD/MMC card must move the data over its bus and "
		       "program NAND before it ends its busy signal; 100 us is "
		       "below any card's page program time";
		return 100000;
	}
	if (info->rotational == 1) {
		*why = "the device says it is rotational: a sector reaches the "
		       "platter only when it passes under the head, 2 ms on "
		       "average even at 15,000 rpm; 1 ms is a generous floor";
		return 1000000;
	}
	if (strcmp(info->write_cache, "write back") == 0) {
		*why = "the device claims a volatile write cache: a flush must "
		       "program at least one flash page, which takes longer "
		       "than 50 us on NAND";
		return 50000;
	}
	*why = "the device reports no volatile write cache (write through, or "
	       "protected against power loss): a fast sync can be honest";
	return 0;
}
