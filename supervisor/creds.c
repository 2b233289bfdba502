/*
 * creds.c -- whose call the recorder makes: the caller's file-system
 * identity (fsuid, fsgid, supplementary groups) and umask, read from
 * /proc/TID/status, and worn by the recorder's thread for the one system
 * call it makes on the caller's behalf that names a path (a create, a
 * truncate, a rename, an unlink, a link, a mkdir, a symlink, a change of
 * times), so that the kernel checks that call's permissions as it would
 * have checked the caller's: a program torture runs as another user
 * (--user), or one that gave up root itself, is refused what it may not
 * do.  The identity is the thread's alone (the raw setfsuid, setfsgid
 * and setgroups system calls, not libc's, which would change every
 * thread of torture), and taken off again before the recorder's own work
 * (the fault simulator's stash, the harness's files) goes on.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The numbers of a "Groups:" line (P: after its key) into K; 0, or
 * -E2BIG past SUP_GROUPS. */
static int groups_of(const char *p, sup_creds *k)
{
	char *end;

	k->ngroups = 0;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			return 0;
		unsigned long g = strtoul(p, &end, 10);
		if (k->ngroups >= SUP_GROUPS)
			return -E2BIG;
		k->groups[k->ngroups++] = (gid_t)g;
		p = end;
	}
}

/* What follows "KEY" at the start of one of BUF's lines, or NULL. */
static const char *field(const char *buf, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, n) == 0)
			return p + n;
	}
	return NULL;
}

/* The 4th number (the file-system id) of a "Uid:" or "Gid:" line at P. */
static int fs_id(const char *p, unsigned *out)
{
	char *end;

	for (int i = 0; p && i < 4; i++, p = end) {
		unsigned long v = strtoul(p, &end, 10);
		if (end == p)
			return -1;
		if (i == 3)
			*out = (unsigned)v;
	}
	return p ? 0 : -1;
}

/* The status file is read whole, in one read where it fits (the kernel
 * makes it afresh for each open: about half of what a read line by line
 * costs), and only its four lines are looked at. */
int sup_creds_of(const sup_call *c, sup_creds *k)
{
	char p[64], buf[16384];
	size_t got = 0;
	ssize_t n;

	k->umask = 022;
	k->uid = (unsigned)geteuid();
	k->gid = (unsigned)getegid();
	k->ngroups = -1; /* not read: the groups are left as they are */
	snprintf(p, sizeof p, "/proc/%d/status", c->tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	while (got < sizeof buf - 1 &&
	       (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	const char *u = field(buf, "Umask:"), *g = field(buf, "Groups:");
	if (!got || fs_id(field(buf, "Uid:"), &k->uid) < 0 ||
	    fs_id(field(buf, "Gid:"), &k->gid) < 0)
		return -ESRCH; /* gone, or not a task's status */
	if (u)
		k->umask = (mode_t)strtoul(u, NULL, 8);
	/* a groups line the buffer cuts off: more groups than are kept */
	if (g && (!strchr(g, '\n') || groups_of(g, k) < 0))
		return -E2BIG;
	return 0;
}

/* The harness's own identity, read once (torture does not change it). */
static struct {
	int read;
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[SUP_GROUPS];
} self;

static void self_read(void)
{
	if (self.read)
		return;
	self.uid = geteuid();
	self.gid = getegid();
	self.ngroups = getgroups(SUP_GROUPS, self.groups);
	if (self.ngroups < 0)
		self.ngroups = 0;
	self.read = 1;
}

/* Sets this thread's fsuid to UID: 0, or -EPERM when it did not take (the
 * call answers the previous value whatever happens; asking again with an
 * impossible id reads the current one). */
static int set_fsuid(uid_t uid)
{
	syscall(SYS_setfsuid, uid);
	return (uid_t)syscall(SYS_setfsuid, (uid_t)-1) == uid ? 0 : -EPERM;
}

static int set_fsgid(gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	return (gid_t)syscall(SYS_setfsgid, (gid_t)-1) == gid ? 0 : -EPERM;
}

int sup_wear(sup_creds *k)
{
	int rc = 0;

	k->worn = 0;
	self_read();
	int same_groups = k->ngroups < 0 ||
	                  (k->ngroups == self.ngroups &&
	                   memcmp(k->groups, self.groups,
	                          (size_t)k->ngroups * sizeof(gid_t)) == 0);
	if (k->uid == (unsigned)self.uid && k->gid == (unsigned)self.gid &&
	    same_groups)
		return 0;
	k->worn = 1;
	/* groups and fsgid while this thread still has the capability to
	 * set them; the fsuid last (from root, it takes the file-system
	 * capabilities off the effective set until it is given back) */
	if (!same_groups &&
	    syscall(SYS_setgroups, (size_t)k->ngroups, k->groups) != 0)
		rc = -errno;
	else if ((rc = set_fsgid((gid_t)k->gid)) == 0)
		rc = set_fsuid((uid_t)k->uid);
	if (rc < 0)
		sup_as_harness(k);
	return rc;
}

void sup_as_harness(sup_creds *k)
{
	int e = errno; /* the call's errno survives the change back */

	if (!k->worn)
		return;
	/* fsuid first: back to root, the capabilities return */
	(void)set_fsuid(self.uid);
	(void)set_fsgid(self.gid);
	(void)syscall(SYS_setgroups, (size_t)self.ngroups, self.groups);
	k->worn = 0;
	errno = e;
}
