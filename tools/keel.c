/*
 * keel -- the command-line tool for keel stores.
 *
 *   keel put DB KEY [FILE|-]   keel get DB KEY      keel del DB KEY
 *   keel ls DB [--prefix P]    keel stat DB         keel heads DB
 *   keel check DB              keel compact DB
 *
 * Exit status: 0 success, 1 failure (not found, conflict, damage found),
 * 2 usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int fail(int rc, const char *what, const char *path)
{
	fprintf(stderr, "keel: %s %s: %s\n", what, path, keel_strerror(rc));
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

static int open_db(const char *path, unsigned flags, keel_db **db)
{
	keel_options o = {.flags = flags, .lock_timeout_ms = 2000};
	keel_recovery r = {0};
	o.report = &r;
	int rc = keel_open(path, &o, db);
	if (rc == KEEL_ECORRUPT)
		fprintf(stderr, "keel: %s: corrupt at offset %" PRIu64 ": %s\n", path,
		        r.offset, r.reason);
	return rc;
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

/* Splits options (--expect X, --prefix X) from positional arguments. */
typedef struct args {
	const char *pos[4];
	int npos;
	const char *expect, *prefix;
	int limit;
	bool long_list;
} args;

static int parse_args(const char *cmd, int argc, char **argv, int min, int max,
                      args *a)
{
	memset(a, 0, sizeof(*a));
	a->limit = 20;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if ((!strcmp(s, "--expect") || !strcmp(s, "--prefix") ||
		     !strcmp(s, "--limit")) && i + 1 < argc) {
			if (s[2] == 'e')
				a->expect = argv[++i];
			else if (s[2] == 'p')
				a->prefix = argv[++i];
			else
				a->limit = atoi(argv[++i]);
		} else if (!strcmp(s, "-l")) {
			a->long_list = true;
		} else if (s[0] == '-' && s[1] == '-') {
			fprintf(stderr, "keel %s: unknown or incomplete option %s\n", cmd, s);
			return usage_of(cmd, stderr);
		} else if (a->npos < 4) {
			a->pos[a->npos++] = s;
		} else {
			a->npos++;
		}
	}
	if (a->npos < min || a->npos > max) {
		fprintf(stderr, "keel %s: expected %d%s argument%s, got %d\n", cmd, min,
		        max > min ? " or more" : "", min == 1 ? "" : "s", a->npos);
		return usage_of(cmd, stderr);
	}
	return 0;
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
	int rc = parse_args("put", argc, argv, 2, 3, &a);
	if (rc)
		return rc;
	if (a.expect && parse_expect(a.expect, &expect)) {
		fprintf(stderr, "keel put: --expect wants a revision, 'absent' or 'any'\n");
		return EXIT_USAGE;
	}
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
	if ((rc = open_db(a.pos[0], 0, &db))) {
		free(val);
		return fail(rc, "open", a.pos[0]);
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
	int rc = parse_args("get", argc, argv, 2, 2, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, &db)))
		return fail(rc, "open", a.pos[0]);
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
	int rc = parse_args("del", argc, argv, 2, 2, &a);
	if (rc)
		return rc;
	if (a.expect && (parse_expect(a.expect, &expect) || expect == KEEL_REV_ABSENT)) {
		fprintf(stderr, "keel del: --expect wants a revision or 'any'\n");
		return EXIT_USAGE;
	}
	if ((rc = open_db(a.pos[0], 0, &db)))
		return fail(rc, "open", a.pos[0]);
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
	int rc = parse_args("ls", argc, argv, 1, 1, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, &db)))
		return fail(rc, "open", a.pos[0]);
	if ((rc = keel_snapshot_open(db, &s)) == KEEL_OK) {
		size_t plen = a.prefix ? strlen(a.prefix) : 0;
		if ((rc = keel_iter_open(s, a.prefix, plen, NULL, 0, &it)) == KEEL_OK) {
			const void *k;
			size_t kl;
			keel_view v;
			while ((rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK) {
				if (a.long_list)
					printf("%" PRIu64 "\t%zu\t", v.rev, v.len);
				fwrite(k, 1, kl, stdout);
				putchar('\n');
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
	int rc = parse_args("stat", argc, argv, 1, 1, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], KEEL_RDONLY, &db)))
		return fail(rc, "open", a.pos[0]);
	keel_stat(db, &st);
	keel_recovery_info(db, &r);
	printf("txid        %" PRIu64 "\nkeys        %" PRIu64 "\n"
	       "live_bytes  %" PRIu64 "\nend_offset  %" PRIu64 "\n"
	       "file_size   %" PRIu64 "\nrecovery    %s",
	       st.txid, st.keys, st.live_bytes, st.end_offset, st.file_size,
	       status[r.status]);
	if (r.status != KEEL_RECOVERY_OK)
		printf(" at offset %" PRIu64 " (%s)", r.offset, r.reason);
	printf("\n");
	keel_close(db);
	return 0;
}

/* Lists heads newest first, following prev_head, checking each region. */
static int cmd_heads(int argc, char **argv)
{
	args a;
	recovery_result r;
	const keel_io *io = keel_io_posix();
	int rc = parse_args("heads", argc, argv, 1, 1, &a);
	if (rc)
		return rc;
	int fd = io->open(io->ctx, a.pos[0], KEEL_IO_RDONLY, 0);
	if (fd < 0) {
		fprintf(stderr, "keel heads: cannot open %s: %s\n", a.pos[0], strerror(-fd));
		return EXIT_USAGE;
	}
	rc = recovery_find(io, fd, KEEL_SALVAGE, UINT64_MAX, &r);
	if (rc) {
		io->close(io->ctx, fd);
		return fail(rc, "heads", a.pos[0]);
	}
	if (r.status != KEEL_RECOVERY_OK)
		printf("tail: %s at offset %" PRIu64 ": %s\n",
		       r.status == KEEL_RECOVERY_TRUNCATED ? "torn" : "DAMAGED",
		       r.offset, r.reason);
	keel_head h = r.head;
	int shown = 0, bad = 0;
	printf("%-12s %-14s %-10s %s\n", "txid", "offset", "keys", "state");
	for (;;) {
		keel_head prev;
		const char *state = "valid";
		if (h.prev_head == 0) {
			state = "valid (first head)";
		} else {
			if (recovery_read_head(io, fd, h.prev_head, &prev) != KEEL_OK ||
			    recovery_check_region(io, fd, &h, prev.chain_crc, NULL) != KEEL_OK)
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
	return bad ? 1 : 0;
}

static void report_problem(void *arg, uint64_t off, const char *what)
{
	(void)arg;
	printf("damage at offset %" PRIu64 ": %s\n", off, what);
}

static int cmd_check(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_check_result res;
	keel_recovery r;
	int rc = parse_args("check", argc, argv, 1, 1, &a);
	if (rc)
		return rc;
	rc = open_db(a.pos[0], KEEL_RDONLY, &db);
	if (rc == KEEL_ECORRUPT)
		return 1;
	if (rc)
		return fail(rc, "open", a.pos[0]);
	keel_recovery_info(db, &r);
	if (r.status == KEEL_RECOVERY_TRUNCATED)
		printf("torn tail after the newest head at offset %" PRIu64
		       " (cut at the next writable open): %s\n", r.offset, r.reason);
	rc = keel_check(db, report_problem, NULL, &res);
	keel_close(db);
	printf("%s: txid %" PRIu64 ", %" PRIu64 " keys, %" PRIu64 " records, %" PRIu64
	       " bytes verified, %" PRIu64 " problem%s\n",
	       a.pos[0], r.txid, res.keys, res.records, res.bytes, res.problems,
	       res.problems == 1 ? "" : "s");
	if (rc && rc != KEEL_ECORRUPT)
		return fail(rc, "check", a.pos[0]);
	return rc ? 1 : 0;
}

static int cmd_compact(int argc, char **argv)
{
	args a;
	keel_db *db;
	keel_stats before, after;
	int rc = parse_args("compact", argc, argv, 1, 1, &a);
	if (rc)
		return rc;
	if ((rc = open_db(a.pos[0], 0, &db)))
		return fail(rc, "open", a.pos[0]);
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

static const command commands[] = {
	{"put", "DB KEY [FILE|-] [--expect REV|absent|any]",
	 "Stores the bytes of FILE (or standard input) under KEY, durably, and\n"
	 "prints the new revision.  --expect fails with a conflict (exit 1) unless\n"
	 "the key's revision matches.  Creates DB if missing.", cmd_put},
	{"get", "DB KEY", "Writes the value of KEY to standard output (exit 1 if absent).",
	 cmd_get},
	{"del", "DB KEY [--expect REV|any]", "Deletes KEY durably (exit 1 if absent).",
	 cmd_del},
	{"ls", "DB [--prefix P] [-l]",
	 "Lists keys in order, optionally only those starting with P.\n"
	 "-l adds each key's revision and value size.", cmd_ls},
	{"stat", "DB", "Prints the newest txid, key count, live bytes, file size and\n"
	 "what recovery found.", cmd_stat},
	{"heads", "DB [--limit N]",
	 "Lists head records newest first (20 by default, --limit 0 for all) and\n"
	 "whether each one's region checks out.  Exit 1 if one does not.", cmd_heads},
	{"check", "DB",
	 "Verifies every record reachable from the newest head (CRCs, Merkle links,\n"
	 "key order, tree shape, counts).  Exit 0 clean, 1 damage found (each\n"
	 "problem printed with its offset), 2 usage.", cmd_check},
	{"compact", "DB", "Rewrites the live tree into a new file and switches to it.",
	 cmd_compact},
	{NULL, NULL, NULL, NULL},
};

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
	for (const command *c = commands; c->name; c++) {
		if (strcmp(c->name, argv[1]) != 0)
			continue;
		if (wants_help(argc - 1, argv + 1))
			return usage_of(c->name, stdout);
		return c->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "keel: unknown command '%s'\n", argv[1]);
	usage_all(stderr);
	return EXIT_USAGE;
}
