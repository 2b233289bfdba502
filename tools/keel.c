/*
 * keel -- the command-line tool for keel stores.
 *
 *   keel put DB KEY [FILE|-]   keel get DB KEY      keel del DB KEY
 *   keel ls DB [--prefix P]    keel stat DB         keel heads DB
 *   keel check DB              keel compact DB      keel salvage DB OUT
 *
 * Only put creates a store; every other command refuses a missing one.
 * Exit status: 0 success, 1 failure (not found, conflict, damage found),
 * 2 usage or set-up error (an unknown option or a bad value is named).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "keel.h"
#include "recover.h"

#define EXIT_USAGE 2

typedef struct command {
	const char *name;
	const char *usage;
	const char *help;
	int (*run)(int argc, char **argv);
} command;

static const command commands[];

/* KEY as it may be shown in a message: printable bytes as they are, others
 * as \xHH, cut after 64 bytes with the full length said (a key may be
 * 1,024 bytes of anything). */
static const char *show_key(const char *key, size_t len)
{
	static char out[64 * 4 + 40];
	size_t n = 0, i;

	for (i = 0; i < len && i < 64; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n, "\\x%02x", c);
	}
	if (i < len)
		snprintf(out + n, sizeof(out) - n, "... (%zu bytes)", len);
	else
		out[n] = '\0';
	return out;
}

static int exit_for(int rc)
{
	/* Problems with the store or the arguments are set-up errors. */
	switch (rc) {
	case KEEL_ENOTFOUND:
	case KEEL_ECONFLICT:
	case KEEL_ECORRUPT:
		return 1;
	default:
		return EXIT_USAGE;
	}
}

static int fail(int rc, const char *what, const char *name)
{
	fprintf(stderr, "keel: %s %s: %s\n", what, show_key(name, strlen(name)),
	        keel_strerror(rc));
	return exit_for(rc);
}

static int usage_of(const char *name, FILE *to)
{
	for (const command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0) {
			fprintf(to, "usage: keel %s %s\n\n%s\n", c->name, c->usage, c->help);
			return to == stdout ? 0 : EXIT_USAGE;
		}
	return EXIT_USAGE;
}

/* Returns 1 if ARGV asks for help (then prints it). */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

/* Opens PATH; on failure says why on stderr and returns the exit status.
 * Only put passes CREATE: a typo in DB must not make a new store. */
static int open_db(const char *path, unsigned flags, bool create, keel_db **db)
{
	keel_options o = {.flags = flags, .lock_timeout_ms = 2000};
	keel_recovery r = {0};
	o.report = &r;
	if (!create)
		o.flags |= KEEL_NOCREATE;
	int rc = keel_open(path, &o, db);
	if (rc == KEEL_OK)
		return 0;
	if (rc == KEEL_ECORRUPT) {
		fprintf(stderr, "keel: %s: corrupt at offset %" PRIu64 ": %s\n",
		        path, r.offset, r.reason[0] ? r.reason : keel_strerror(rc));
		if (!(flags & KEEL_SALVAGE) && r.offset >= KEEL_DATA_START)
			fprintf(stderr, "keel: 'keel salvage %s OUT' copies every "
			        "record that still verifies into a new store\n", path);
	} else if (rc == KEEL_ENOTKEEL && r.reason[0]) {
		fprintf(stderr, "keel: %s: %s\n", path, r.reason);
	} else if (rc == KEEL_ENOENT) {
		fprintf(stderr, "keel: %s: no such store (only 'keel put' creates "
		        "one)\n", path);
	} else {
		fprintf(stderr, "keel: %s: %s\n", path, keel_strerror(rc));
	}
	return exit_for(rc);
}

/* Parses --expect REV|absent|any into *expect; returns -1 on a bad value. */
static int parse_expect(const char *s, uint64_t *expect)
{
	char *end;
	if (!strcmp(s, "any")) {
		*expect = KEEL_REV_ANY;
		return 0;
	}
	if (!strcmp(s, "absent")) {
		*expect = KEEL_REV_ABSENT;
		return 0;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s || v == 0 || s[0] == '-')
		return -1;
	*expect = v;
	return 0;
}

/* The options a command takes (command.opts). */
#define OPT_EXPECT 0x1u /* --expect REV|absent|any */
#define OPT_PREFIX 0x2u /* --prefix P              */
#define OPT_LIMIT  0x4u /* --limit N               */
#define OPT_LONG   0x8u /* -l                      */

/* Splits options from positional arguments.  "--" ends the options (for a
 * key that starts with '-'); "-" alone is a positional (standard input). */
typedef struct args {
	const char *pos[3];
	int npos;
	const char *expect, *prefix;
	unsigned long limit;
	bool long_list;
} args;

static const command *command_named(const char *name);

static int usage_error(const char *cmd, const char *fmt, const char *what)
{
	const command *c = command_named(cmd);
	fprintf(stderr, "keel %s: ", cmd);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\nusage: keel %s %s\n", cmd, c ? c->usage : "");
	return EXIT_USAGE;
}

/* --limit's value: a whole number, 0 meaning no limit. */
static int parse_limit(const char *s, unsigned long *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(const char *cmd, int argc, char **argv, int min, int max,
                      unsigned opts, unsigned long limit, args *a)
{
	bool options_done = false;
	memset(a, 0, sizeof(*a));
	a->limit = limit;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i], *val = NULL;
		char name[32];
		unsigned bit = 0;
		if (options_done || s[0] != '-' || s[1] == '\0') {
			if (a->npos >= max)
				return usage_error(cmd, "unexpected argument '%s'", s);
			a->pos[a->npos++] = s;
			continue;
		}
		if (!strcmp(s, "--")) {
			options_done = true;
			continue;
		}
		/* --name VALUE or --name=VALUE */
		size_t nlen = strcspn(s, "=");
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		memcpy(name, s, nlen);
		name[nlen] = '\0';
		if (!strcmp(name, "--expect"))
			bit = OPT_EXPECT;
		else if (!strcmp(name, "--prefix"))
			bit = OPT_PREFIX;
		else if (!strcmp(name, "--limit"))
			bit = OPT_LIMIT;
		else if (!strcmp(s, "-l"))
			bit = OPT_LONG;
		if (!(bit & opts))
			return usage_error(cmd, "unknown option %s", s);
		if (bit == OPT_LONG) {
			a->long_list = true;
			continue;
		}
		if (s[nlen] == '=')
			val = s + nlen + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return usage_error(cmd, "%s needs a value", name);
		if (bit == OPT_EXPECT)
			a->expect = val;
		else if (bit == OPT_PREFIX)
			a->prefix = val;
		else if (parse_limit(val, &a->limit)) {
			fprintf(stderr, "keel %s: --limit %s: expected a whole "
			        "number (0 for no limit)\n", cmd, val);
			return EXIT_USAGE;
		}
	}
	if (a->npos < min)
		return usage_error(cmd, "%s", "missing arguments");
	return 0;
}

/* A key given on the command line: 1 to KEEL_KEY_MAX bytes, checked before
 * anything is opened. */
static int check_key(const char *cmd, const char *key)
{
	size_t len = strlen(key);
	if (len >= 1 && len <= KEEL_KEY_MAX)
		return 0;
	if (len == 0)
		fprintf(stderr, "keel %s: empty key: keys are 1 to %u bytes\n", cmd,
		        KEEL_KEY_MAX);
	else
		fprintf(stderr, "keel %s: key %s: keys are 1 to %u bytes\n", cmd,
		        show_key(key, len), KEEL_KEY_MAX);
	return EXIT_USAGE;
}

static uint8_t *read_all(int fd, size_t *len)
{
	size_t cap = 65536, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

static int cmd_put(int argc, char **argv)
{
	args a;
	uint64_t expect = KEEL_REV_ANY, rev;
	int rc = parse_args("put", argc, argv, 2, 3, OPT_EXPECT, 0, &a);
	if (rc)
		return rc;
	if (a.expect && parse_expect(a.expect, &expect)) {
		fprintf(stderr, "keel put: --expect %s: expected a revision, "
		        "'absent' or 'any'\n", a.expect);
		return EXIT_USAGE;
	}
	if ((rc = check_key("put", a.pos[1])))
		return rc;
	const char *src = a.npos == 3 ? a.pos[2] : "-";
	int fd = strcmp(src, "-") ? open(src, O_RDONLY) : 0;
	if (fd < 0) {
		fprintf(stderr, "keel put: cannot read %s: %s\n", src, strerror(errno));
		return EXIT_USAGE;
	}
	size_t len;
	uint8_t *val = read_all(fd, &len);
	if (fd)
		close(fd);
	if (!val) {
		fprintf(stderr, "keel put: cannot read %s: %s\n", src, strerror(errno));
		return EXIT_USAGE;
	}
	keel_db *db;
	if ((rc = open_db(a.pos[0], 0, true, &db))) {
		free(val);
		return rc;
	}
	rc = keel_put(db, a.pos[1], strlen(a.pos[1]), val, len, expect, &rev);
	free(val);
	int crc = keel_close(db);
	if (rc)
		return fail(rc, "put", a.pos[1]);
	if (crc)
		return fail(crc, "close", a.pos[0]);
	printf("%" PRIu64 "\n", rev);
	return 0;
}

static int cmd_get(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_view v;
	int rc = parse_args("get", argc, argv, 2, 2, 0, 0, &a);
	if (rc || (rc = check_key("get", a.pos[1])))
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, false, &db)))
		return rc;
	rc = keel_get(db, a.pos[1], strlen(a.pos[1]), &v);
	if (rc == KEEL_OK) {
		if (fwrite(v.data, 1, v.len, stdout) != v.len || fflush(stdout)) {
			fprintf(stderr, "keel get: writing output: %s\n", strerror(errno));
			rc = KEEL_EIO;
		}
		keel_view_release(&v);
	}
	keel_close(db);
	return rc ? fail(rc, "get", a.pos[1]) : 0;
}

static int cmd_del(int argc, char **argv)
{
	args a;
	keel_db *db;
	uint64_t expect = KEEL_REV_ANY;
	int rc = parse_args("del", argc, argv, 2, 2, OPT_EXPECT, 0, &a);
	if (rc)
		return rc;
	if (a.expect && (parse_expect(a.expect, &expect) || expect == KEEL_REV_ABSENT)) {
		fprintf(stderr, "keel del: --expect %s: expected a revision or "
		        "'any'\n", a.expect);
		return EXIT_USAGE;
	}
	if ((rc = check_key("del", a.pos[1])))
		return rc;
	if ((rc = open_db(a.pos[0], 0, false, &db)))
		return rc;
	rc = keel_del(db, a.pos[1], strlen(a.pos[1]), expect, NULL);
	int crc = keel_close(db);
	if (rc)
		return fail(rc, "del", a.pos[1]);
	return crc ? fail(crc, "close", a.pos[0]) : 0;
}

static int cmd_ls(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_snapshot *s;
	keel_iter *it;
	unsigned long shown = 0;
	int rc = parse_args("ls", argc, argv, 1, 1, OPT_PREFIX | OPT_LIMIT | OPT_LONG,
	                    0, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, false, &db)))
		return rc;
	if ((rc = keel_snapshot_open(db, &s)) == KEEL_OK) {
		size_t plen = a.prefix ? strlen(a.prefix) : 0;
		if ((rc = keel_iter_open(s, a.prefix, plen, NULL, 0, &it)) == KEEL_OK) {
			const void *k;
			size_t kl;
			keel_view v;
			while ((a.limit == 0 || shown < a.limit) &&
			       (rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK) {
				if (a.long_list)
					printf("%" PRIu64 "\t%zu\t", v.rev, v.len);
				fwrite(k, 1, kl, stdout);
				putchar('\n');
				shown++;
			}
			keel_iter_close(it);
			if (rc == KEEL_ENOTFOUND)
				rc = KEEL_OK;
		}
		keel_snapshot_close(s);
	}
	keel_close(db);
	return rc ? fail(rc, "ls", a.pos[0]) : 0;
}

static int cmd_stat(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_stats st;
	keel_recovery r;
	static const char *status[] = {"ok", "truncated", "corrupt"};
	int rc = parse_args("stat", argc, argv, 1, 1, 0, 0, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, false, &db)))
		return rc;
	keel_stat(db, &st);
	keel_recovery_info(db, &r);
	printf("txid        %" PRIu64 "\nkeys        %" PRIu64 "\n"
	       "live_bytes  %" PRIu64 "\nend_offset  %" PRIu64 "\n"
	       "file_size   %" PRIu64 "\nrecovery    %s",
	       st.txid, st.keys, st.live_bytes, st.end_offset, st.file_size,
	       status[r.status]);
	if (r.status != KEEL_RECOVERY_OK)
		printf(" at offset %" PRIu64 " (%s)", r.offset, r.reason);
	printf("\nformat      %u\npending     %" PRIu64 " commits, %" PRIu64
	       " bytes\n", st.format_version, st.pending_heads, st.pending_bytes);
	keel_close(db);
	return 0;
}

/* Lists heads newest first, following prev_head, checking each region.
 * Exit 1 when the store holds damage: a head whose region does not check
 * out, or heads beyond damage that recovery had to stop before. */
static int cmd_heads(int argc, char **argv)
{
	args a;
	recovery_result r;
	const keel_io *io = keel_io_posix();
	int rc = parse_args("heads", argc, argv, 1, 1, OPT_LIMIT, 20, &a);
	if (rc)
		return rc;
	int fd = io->open(io->ctx, a.pos[0], KEEL_IO_RDONLY, 0);
	if (fd < 0) {
		fprintf(stderr, "keel heads: cannot open %s: %s\n", a.pos[0], strerror(-fd));
		return EXIT_USAGE;
	}
	rc = recovery_find(io, fd, RECOVERY_SALVAGE, UINT64_MAX, &r);
	if (rc) {
		io->close(io->ctx, fd);
		if (r.reason[0]) {
			fprintf(stderr, "keel heads: %s: %s\n", a.pos[0], r.reason);
			return exit_for(rc);
		}
		return fail(rc, "heads", a.pos[0]);
	}
	int bad = r.status == KEEL_RECOVERY_CORRUPT;
	if (r.status != KEEL_RECOVERY_OK)
		printf("tail: %s at offset %" PRIu64 ": %s\n",
		       r.status == KEEL_RECOVERY_TRUNCATED ? "torn" : "DAMAGED",
		       r.offset, r.reason);
	keel_head h = r.head;
	unsigned long shown = 0;
	printf("%-12s %-14s %-10s %s\n", "txid", "offset", "keys", "state");
	for (;;) {
		keel_head prev;
		const char *state = "valid";
		if (h.prev_head == 0) {
			state = "valid (first head)";
		} else if (h.prev_head >= h.off ||
		           recovery_read_head(io, fd, h.prev_head, &prev) != KEEL_OK ||
		           recovery_check_region(io, fd, &h, prev.chain_crc, NULL) != KEEL_OK) {
			state = "INVALID (region checksum)";
		}
		bad += state[0] == 'I';
		printf("%-12" PRIu64 " %-14" PRIu64 " %-10" PRIu64 " %s\n", h.txid, h.off,
		       h.keys, state);
		if (h.prev_head == 0 || (a.limit > 0 && ++shown >= a.limit) ||
		    state[0] == 'I')
			break;
		h = prev;
	}
	io->close(io->ctx, fd);
	free(r.deltas);
	return bad ? 1 : 0;
}

static void report_problem(void *arg, uint64_t off, const char *what)
{
	(void)arg;
	printf("damage at offset %" PRIu64 ": %s\n", off, what);
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static int cmd_check(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_check_result res;
	keel_recovery r;
	int rc = parse_args("check", argc, argv, 1, 1, 0, 0, &a);
	if (rc)
		return rc;
	/* every valid head, as the next writer's recovery takes them: also
	 * those a killed writer left past its durable marker */
	if ((rc = open_db(a.pos[0], KEEL_RDONLY | KEEL_RDONLY_UNSYNCED, false,
	                  &db)))
		return rc;
	keel_recovery_info(db, &r);
	if (r.status == KEEL_RECOVERY_TRUNCATED)
		printf("torn tail after the newest head at offset %" PRIu64
		       " (cut at the next writable open): %s\n", r.offset, r.reason);
	rc = keel_check(db, report_problem, NULL, &res);
	keel_close(db);
	printf("%s: txid %" PRIu64 ", %" PRIu64 " %s; %" PRIu64 " %s (tree nodes "
	       "and values stored apart) and %" PRIu64 " bytes verified; %" PRIu64
	       " %s\n",
	       a.pos[0], r.txid, res.keys, plural(res.keys, "key", "keys"),
	       res.records, plural(res.records, "record", "records"), res.bytes,
	       res.problems, plural(res.problems, "problem", "problems"));
	if (rc && rc != KEEL_ECORRUPT)
		return fail(rc, "check", a.pos[0]);
	return rc ? 1 : 0;
}

static int cmd_compact(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_stats before, after;
	int rc = parse_args("compact", argc, argv, 1, 1, 0, 0, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], 0, false, &db)))
		return rc;
	keel_stat(db, &before);
	rc = keel_compact(db);
	keel_stat(db, &after);
	int crc = keel_close(db);
	if (rc)
		return fail(rc, "compact", a.pos[0]);
	if (crc)
		return fail(crc, "close", a.pos[0]);
	printf("compacted %s: %" PRIu64 " -> %" PRIu64 " bytes in use\n", a.pos[0],
	       before.end_offset, after.end_offset);
	return 0;
}

/* What salvage copied and what it could not. */
typedef struct salvage_count {
	uint64_t copied, lost_values, older;
	bool tree_cut; /* the iteration met a damaged node: keys after it lost */
} salvage_count;

/* Commits B into OUT (a batch at a time keeps the syncs few). */
static int salvage_flush(keel_db *out, keel_batch *b)
{
	int rc = keel_batch_count(b) ? keel_commit(out, b, NULL, NULL) : KEEL_OK;
	keel_batch_clear(b);
	return rc;
}

/* Adds KEY=V to B, committing B first when it is full. */
static int salvage_add(keel_db *out, keel_batch *b, size_t *pending,
                       const void *k, size_t kl, const keel_view *v)
{
	int rc = keel_batch_put(b, k, kl, v->data, v->len, KEEL_REV_ANY);
	if (rc == KEEL_ETOOBIG) {
		if ((rc = salvage_flush(out, b)) == KEEL_OK)
			rc = keel_batch_put(b, k, kl, v->data, v->len, KEEL_REV_ANY);
		if (rc == KEEL_ETOOBIG) /* more than a batch holds */
			rc = keel_put(out, k, kl, v->data, v->len, KEEL_REV_ANY, NULL);
		*pending = 0;
	}
	*pending += kl + v->len;
	if (rc == KEEL_OK &&
	    (keel_batch_count(b) >= 1024 || *pending >= ((size_t)32 << 20))) {
		rc = salvage_flush(out, b);
		*pending = 0;
	}
	return rc;
}

/* Copies every key of SRC whose node and value still verify into OUT; with
 * ONLY_MISSING, only keys OUT lacks (counted as older versions). */
static int salvage_copy(keel_db *src, keel_db *out, bool only_missing,
                        salvage_count *n)
{
	keel_snapshot *s;
	keel_iter *it;
	keel_batch *b;
	const void *k;
	size_t kl, pending = 0;
	int rc;

	if ((rc = keel_batch_new(&b)))
		return rc;
	if ((rc = keel_snapshot_open(src, &s))) {
		keel_batch_free(b);
		return rc;
	}
	if ((rc = keel_iter_open(s, NULL, 0, NULL, 0, &it)))
		goto out_snapshot;
	/* Keys first (the nodes' checksums), each value on its own: a value
	 * that fails its checksum loses that key only. */
	while ((rc = keel_iter_next(it, &k, &kl, NULL)) == KEEL_OK) {
		keel_view v;
		if (only_missing) {
			if ((rc = keel_get(out, k, kl, &v)) == KEEL_OK) {
				keel_view_release(&v);
				continue;
			}
			if (rc != KEEL_ENOTFOUND)
				break;
		}
		rc = keel_snapshot_get(s, k, kl, &v);
		if (rc == KEEL_ECORRUPT) {
			fprintf(stderr, "keel salvage: lost key %s: its value fails "
			        "its checksum\n", show_key(k, kl));
			n->lost_values++;
			continue;
		}
		if (rc)
			break;
		rc = salvage_add(out, b, &pending, k, kl, &v);
		keel_view_release(&v);
		if (rc)
			break;
		n->copied++;
		n->older += only_missing;
	}
	if (rc == KEEL_ECORRUPT) {
		fprintf(stderr, "keel salvage: a tree node fails its checksum: keys "
		        "after the last one copied are lost\n");
		n->tree_cut = true;
		rc = KEEL_ENOTFOUND;
	}
	if (rc == KEEL_ENOTFOUND)
		rc = salvage_flush(out, b);
	keel_iter_close(it);
out_snapshot:
	keel_snapshot_close(s);
	keel_batch_free(b);
	return rc;
}

/* Salvage reads from the newest head it can: past damage behind a durable
 * head, the heads beyond it are still whole records with their own CRCs,
 * and so is every node and value their trees reach.  Recovery will not
 * accept them (their chain does not check out), so the tree of the newest
 * one is opened as KEEL_UNSAFE_TRUST_HEAD does, and every record read from
 * it is still verified on the way (keel_get checks the value's CRC, the
 * iteration each node's).  When a node of that tree is damaged, the keys
 * it hid are taken from the newest head before the damage, as older
 * versions (and said so). */
static int cmd_salvage(int argc, char **argv)
{
	args a;
	keel_db *safe, *beyond = NULL, *out;
	keel_recovery r, rb;
	salvage_count n = {0};
	struct stat st;
	int rc = parse_args("salvage", argc, argv, 2, 2, 0, 0, &a);
	if (rc)
		return rc;
	if (lstat(a.pos[1], &st) == 0 || errno != ENOENT) {
		fprintf(stderr, "keel salvage: %s exists: name a new file for the "
		        "copy\n", a.pos[1]);
		return EXIT_USAGE;
	}
	if ((rc = open_db(a.pos[0], KEEL_RDONLY | KEEL_RDONLY_UNSYNCED |
	                  KEEL_SALVAGE, false, &safe)))
		return rc;
	keel_recovery_info(safe, &r);
	if (r.status == KEEL_RECOVERY_CORRUPT) {
		keel_options o = {.flags = KEEL_RDONLY | KEEL_RDONLY_UNSYNCED |
		                           KEEL_NOCREATE | KEEL_SALVAGE |
		                           KEEL_UNSAFE_TRUST_HEAD};
		if (keel_open(a.pos[0], &o, &beyond) == KEEL_OK) {
			keel_recovery_info(beyond, &rb);
			if (rb.txid <= r.txid) {
				keel_close(beyond);
				beyond = NULL;
			}
		}
	}
	if ((rc = open_db(a.pos[1], KEEL_NOCOMPACT, true, &out))) {
		keel_close(beyond);
		keel_close(safe);
		return rc;
	}
	if (beyond) {
		rc = salvage_copy(beyond, out, false, &n);
		if (rc == KEEL_OK && n.tree_cut) {
			n.tree_cut = false; /* what the older tree still has */
			rc = salvage_copy(safe, out, true, &n);
		}
	} else {
		rc = salvage_copy(safe, out, false, &n);
	}
	keel_close(beyond);
	keel_close(safe);
	int crc = keel_close(out);
	if (rc)
		return fail(rc, "salvage", a.pos[0]);
	if (crc)
		return fail(crc, "close", a.pos[1]);
	printf("salvaged %s into %s: %" PRIu64 " %s (new revisions)\n", a.pos[0],
	       a.pos[1], n.copied, plural(n.copied, "key", "keys"));
	if (r.status == KEEL_RECOVERY_CORRUPT)
		printf("damage at offset %" PRIu64 ": %s\n", r.offset, r.reason);
	if (beyond)
		printf("read from txid %" PRIu64 ", past the damage (every record "
		       "copied passed its own checksum)\n", rb.txid);
	else if (r.status == KEEL_RECOVERY_CORRUPT)
		printf("lost: every commit after txid %" PRIu64 "\n", r.txid);
	if (n.older)
		printf("%" PRIu64 " of them as of txid %" PRIu64 ", the newest "
		       "head before the damage: older versions, and keys deleted "
		       "since may be among them\n", n.older, r.txid);
	if (r.status == KEEL_RECOVERY_TRUNCATED)
		printf("lost: the last commit, whose region does not check out (a "
		       "torn tail at offset %" PRIu64 "): %s\n", r.offset, r.reason);
	if (n.lost_values)
		printf("lost: %" PRIu64 " %s whose value fails its checksum (named "
		       "on stderr)\n", n.lost_values,
		       plural(n.lost_values, "key", "keys"));
	if (n.tree_cut)
		printf("lost: the keys after a damaged tree node\n");
	return r.status != KEEL_RECOVERY_OK || n.lost_values || n.tree_cut;
}

static const command commands[] = {
	{"put", "DB KEY [FILE|-] [--expect REV|absent|any]",
	 "Stores the bytes of FILE (or standard input) under KEY, durably, and\n"
	 "prints the new revision.  --expect fails with a conflict (exit 1) unless\n"
	 "the key's revision matches.  Creates DB if missing (the only command\n"
	 "that does).  A KEY that starts with '-' follows '--'.", cmd_put},
	{"get", "DB KEY", "Writes the value of KEY to standard output (exit 1 if absent).",
	 cmd_get},
	{"del", "DB KEY [--expect REV|any]", "Deletes KEY durably (exit 1 if absent).",
	 cmd_del},
	{"ls", "DB [--prefix P] [--limit N] [-l]",
	 "Lists keys in order, optionally only those starting with P, at most N\n"
	 "of them (0, the default: all).  -l adds each key's revision and value\n"
	 "size.", cmd_ls},
	{"stat", "DB", "Prints the newest txid, key count, live bytes, file size and\n"
	 "what recovery found.", cmd_stat},
	{"heads", "DB [--limit N]",
	 "Lists head records newest first (20 by default, --limit 0 for all) and\n"
	 "whether each one's region checks out.  Exit 1 if one does not, or if\n"
	 "damage keeps later heads from being reached.", cmd_heads},
	{"check", "DB",
	 "Verifies every record reachable from the newest head (CRCs, Merkle links,\n"
	 "key order, tree shape, counts).  A record is a tree node or a value\n"
	 "stored apart from its leaf.  Exit 0 clean, 1 damage found (each\n"
	 "problem printed with its offset), 2 usage.", cmd_check},
	{"compact", "DB", "Rewrites the live tree into a new file and switches to it.",
	 cmd_compact},
	{"salvage", "DB OUT",
	 "Copies every key whose records still verify from a damaged DB into a\n"
	 "new store OUT (which must not exist), from the newest head before the\n"
	 "damage, and says what was lost.  Keys get new revisions in OUT.\n"
	 "Exit 0 nothing lost, 1 something lost, 2 usage or set-up error.",
	 cmd_salvage},
	{NULL, NULL, NULL, NULL},
};

static const command *command_named(const char *name)
{
	for (const command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void usage_all(FILE *to)
{
	fprintf(to, "usage: keel COMMAND ARGS...  (keel COMMAND --help for more)\n\n");
	for (const command *c = commands; c->name; c++)
		fprintf(to, "  keel %-8s %s\n", c->name, c->usage);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_all(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage_all(stdout);
		return 0;
	}
	const command *c = command_named(argv[1]);
	if (!c) {
		fprintf(stderr, "keel: unknown command '%s'\n", argv[1]);
		usage_all(stderr);
		return EXIT_USAGE;
	}
	if (wants_help(argc - 1, argv + 1))
		return usage_of(c->name, stdout);
	return c->run(argc - 1, argv + 1);
}
