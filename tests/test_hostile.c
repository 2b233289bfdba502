/* test_hostile.c -- store files nobody vouches for: a tree whose branches
 * all share one child, a branch that is its own child, a child written after
 * its parent, keys out of order, heads that send recovery's scan back and
 * forth -- every record with a valid checksum and a valid head, as a backup
 * or a copy from another machine may hold them -- and values damaged where
 * open does not look.  Every public entry point must answer promptly with a
 * clear error, never loop, never hand out damaged bytes.
 *
 * Run with "--write-dag PATH" or "--write-bad-value PATH" it only writes
 * such a store, for tests/hostile.sh (the command line and keel-serve). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "crc32c.h"
#include "format.h"
#include "keel.h"
#include "testcraft.h"
#include "testutil.h"
#include "verify.h"

typedef struct fixture {
	char *dir, *path;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = tu_mkdtemp();
	f->path = tu_path(f->dir, "db");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	tu_rmdir(f->dir);
	free(f->path);
	free(f);
	return 0;
}

/* A node payload of LEVEL with N entries keyed KEYS[i]: branch entries all
 * point at (COFF, CCRC); leaf entries hold the one-byte value "v" inline.
 * Returns its length; P must hold 65535 bytes. */
static uint32_t node_payload(uint8_t *p, int level, int n, char (*keys)[16],
                             uint64_t coff, uint32_t ccrc)
{
	const uint8_t *first = (const uint8_t *)keys[0],
	              *last = (const uint8_t *)keys[n - 1];
	uint32_t eo = keel_node_begin(p, (uint8_t)level, (uint16_t)n, first,
	                              (uint16_t)strlen(keys[0]), last,
	                              (uint16_t)strlen(keys[n - 1]));
	for (int i = 0; i < n; i++) {
		const uint8_t *k = (const uint8_t *)keys[i];
		uint16_t kl = (uint16_t)strlen(keys[i]);
		keel_node_set_slot(p, (unsigned)i, eo, k, kl);
		if (level) {
			eo += keel_branch_ent_encode(p + eo, k, kl, ccrc, coff);
		} else {
			keel_leaf_ent le = {.key = k, .klen = kl,
			                    .inl = (const uint8_t *)"v", .vlen = 1,
			                    .rev = 1};
			eo += keel_leaf_ent_encode(p + eo, &le);
		}
		assert_true(eo < 65536);
	}
	return eo;
}

/* A store holding the one key "k" (its root is a leaf). */
static void make_one_key_store(const char *path)
{
	keel_db *db;
	/* a checkpoint: the key in a leaf of the tree, for the crafting */
	keel_options o = {.checkpoint_bytes = 1};
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "k", 1, "value of k", 10, KEEL_REV_ANY, NULL),
	                 KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* Builds DEPTH levels of branches over the store's one leaf, each with
 * FANOUT entries that all point at the level below: a DAG whose walk would
 * visit the leaf FANOUT^DEPTH times.  SAME_KEYS: every entry keyed "k" (so
 * each one's key equals its child's first key); otherwise ascending keys
 * "k", "k00001", ... (so each branch alone looks ordered). */
static void make_dag(const char *path, int fanout, int depth, bool same_keys)
{
	static char keys[4096][16];
	static uint8_t p[65536];
	craft c;

	assert_true(fanout <= 4096);
	make_one_key_store(path);
	craft_begin(&c, path);
	for (int i = 0; i < fanout; i++)
		snprintf(keys[i], sizeof(keys[i]), i && !same_keys ? "k%05d" : "k", i);
	uint64_t off = c.head.root_off;
	uint32_t crc = c.head.root_crc;
	for (int level = 1; level <= depth; level++) {
		uint32_t len = node_payload(p, level, fanout, keys, off, crc);
		off = craft_record(&c, KEEL_REC_BRANCH, p, len, &crc);
	}
	craft_commit(&c, path, off, crc, 1);
}

/* ---- the entry points, run in a child under alarm() ---------------------------
 * A walk that does not end is caught by the child's alarm, not by a guess
 * about how long a fixed walk should take: the bounded ones here read a few
 * records, the unbounded ones billions of visits. */
#define CHILD_ALARM_S 60

typedef struct outcome {
	int stage;            /* entry points done                        */
	int open_rc, get_rc, iter_open_rc, iter_rc, check_rc, put_rc, compact_rc;
	uint64_t iter_keys;   /* keys iteration returned before stopping  */
	uint64_t reported;    /* keel_check's REPORT calls                */
	uint64_t problems, records;
	char last_report[160];
} outcome;

static void count_report(void *arg, uint64_t off, const char *what)
{
	outcome *o = arg;
	(void)off;
	o->reported++;
	snprintf(o->last_report, sizeof(o->last_report), "%s", what);
}

static const char *const stage_name[] = {
	"keel_open", "keel_get", "iteration", "keel_check", "keel_put",
	"keel_compact", "(done)"};

/* Calls every public entry point on PATH in turn. */
static void entry_points(const char *path, outcome *o, int out_fd)
{
	keel_db *db;
	keel_view v;
	keel_snapshot *s;
	keel_iter *it;
	keel_check_result res;

#define STAGE_DONE() do { o->stage++; \
	if (write(out_fd, o, sizeof(*o)) != (ssize_t)sizeof(*o)) _exit(3); } while (0)
	o->open_rc = keel_open(path, NULL, &db);
	STAGE_DONE();
	if (o->open_rc)
		return;
	o->get_rc = keel_get(db, "k", 1, &v);
	if (o->get_rc == KEEL_OK)
		keel_view_release(&v);
	STAGE_DONE();
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	o->iter_open_rc = keel_iter_open(s, NULL, 0, NULL, 0, &it);
	if (o->iter_open_rc == KEEL_OK) {
		const void *k;
		size_t kl;
		while ((o->iter_rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK)
			o->iter_keys++;
		keel_iter_close(it);
	}
	keel_snapshot_close(s);
	STAGE_DONE();
	o->check_rc = keel_check(db, count_report, o, &res);
	o->problems = res.problems;
	o->records = res.records;
	STAGE_DONE();
	o->put_rc = keel_put(db, "new", 3, "x", 1, KEEL_REV_ANY, NULL);
	STAGE_DONE();
	o->compact_rc = keel_compact(db);
	keel_close(db);
	STAGE_DONE();
#undef STAGE_DONE
}

/* Runs entry_points(PATH) in a child bounded by CHILD_ALARM_S; fails the
 * test, naming the entry point, when it did not return. */
static void run_bounded(const char *path, outcome *o)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		outcome mine;
		close(pfd[0]);
		memset(&mine, 0, sizeof(mine));
		alarm(CHILD_ALARM_S);
		entry_points(path, &mine, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	memset(o, 0, sizeof(*o));
	outcome got;
	ssize_t n;
	/* Each read ends when the child writes or dies: its alarm bounds it. */
	while ((n = read(pfd[0], &got, sizeof(got))) == (ssize_t)sizeof(got))
		*o = got;
	close(pfd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("%s did not return within %d s (signal %d): its work is not "
		         "bounded", stage_name[o->stage], CHILD_ALARM_S,
		         WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- a tree whose branches share one child ---------------------------------- */

/* 200^5 = 320 billion paths to the one leaf: before the fix iteration,
 * check and compaction walked them all (a check of 200^3 reported 7,999,999
 * problems). */
static void shared_child_dag_is_refused_at_once_by_every_entry_point(void **state)
{
	fixture *f = *state;
	outcome o;

	make_dag(f->path, 200, 5, false);
	run_bounded(f->path, &o);
	assert_int_equal(o.open_rc, KEEL_OK);   /* the chain itself is sound */
	assert_true(o.get_rc == KEEL_OK || o.get_rc == KEEL_ECORRUPT);
	assert_int_equal(o.iter_rc, KEEL_ECORRUPT);
	assert_true(o.iter_keys <= 1);
	assert_int_equal(o.check_rc, KEEL_ECORRUPT);
	assert_true(o.reported <= KEEL_CHECK_REPORT_MAX + 1);
	assert_true(o.records <= 6); /* each of the 6 records read at most once */
	assert_true(o.put_rc == KEEL_OK || o.put_rc == KEEL_ECORRUPT);
	assert_int_equal(o.compact_rc, KEEL_ECORRUPT);
}

/* The same with every entry keyed "k": each branch is out of order itself,
 * and the check stops at the root. */
static void shared_child_with_equal_keys_stops_the_check_at_the_root(void **state)
{
	fixture *f = *state;
	outcome o;

	make_dag(f->path, 200, 5, true);
	run_bounded(f->path, &o);
	assert_int_equal(o.open_rc, KEEL_OK);
	assert_int_equal(o.iter_rc, KEEL_ECORRUPT);
	assert_true(o.iter_keys <= 1);
	assert_int_equal(o.check_rc, KEEL_ECORRUPT);
	assert_int_equal(o.problems, 1);
	assert_int_equal(o.records, 1);
	assert_int_equal(o.compact_rc, KEEL_ECORRUPT);
}

/* A small DAG (16^3 = 4096 paths), in process, measured by the work the
 * calls report: keys returned, records read, problems listed. */
static void shared_child_work_is_bounded_by_the_records(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_snapshot *s;
	keel_iter *it;
	keel_check_result res;
	outcome o = {0};

	make_dag(f->path, 16, 3, false);
	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	int rc, keys = 0;
	while ((rc = keel_iter_next(it, NULL, NULL, NULL)) == KEEL_OK)
		keys++;
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_int_equal(keys, 1);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ECORRUPT);
	keel_iter_close(it);
	/* a listing that starts at the repeated key ("after=k") stops too */
	assert_int_equal(keel_iter_open(s, NULL, 0, "k", 1, &it), KEEL_OK);
	keys = 0;
	while ((rc = keel_iter_next(it, NULL, NULL, NULL)) == KEEL_OK)
		keys++;
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_int_equal(keys, 1);
	keel_iter_close(it);
	keel_snapshot_close(s);

	assert_int_equal(keel_check(db, count_report, &o, &res), KEEL_ECORRUPT);
	assert_true(res.records <= 4);   /* 3 branches and the leaf */
	assert_true(res.problems <= 16 * 3);
	assert_int_equal(o.reported, res.problems);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- a branch that is its own child ------------------------------------------ */

/* The Merkle link makes a loop need a CRC fixed point, and CRC32C is affine
 * over GF(2): crc(x) = crc(0) ^ L.x for the 32 bits x of the link field.
 * Solves (L ^ I).x = crc(0) for x; false when singular. */
static bool crc_fixed_point(uint8_t *p, uint32_t len, uint32_t field,
                            uint32_t *out)
{
	uint8_t hdr[KEEL_REC_HDR];
	uint32_t basis_v[32] = {0}, basis_m[32] = {0};
#define CRC_AT(x) (keel_st32(p + field, (x)), keel_rec_encode(hdr, KEEL_REC_BRANCH, p, len), \
                   keel_ld32(hdr + 12))
	uint32_t c0 = CRC_AT(0);
	for (int i = 0; i < 32; i++) {
		uint32_t v = CRC_AT(1u << i) ^ c0 ^ (1u << i), m = 1u << i;
		for (int bit = 31; bit >= 0 && v; bit--) {
			if (!(v >> bit & 1))
				continue;
			if (!basis_v[bit]) {
				basis_v[bit] = v;
				basis_m[bit] = m;
				break;
			}
			v ^= basis_v[bit];
			m ^= basis_m[bit];
		}
	}
	uint32_t target = c0, x = 0;
	for (int bit = 31; bit >= 0; bit--) {
		if (!(target >> bit & 1))
			continue;
		if (!basis_v[bit])
			return false;
		target ^= basis_v[bit];
		x ^= basis_m[bit];
	}
	bool ok = CRC_AT(x) == x;
#undef CRC_AT
	*out = x;
	return ok;
}

/* A store whose root is a branch with one entry that points at the branch
 * itself, with a matching CRC. */
static void make_self_loop(const char *path)
{
	static uint8_t p[65536];
	char keys[1][16];
	craft c;
	uint32_t x = 0, len = 0, crc;

	make_one_key_store(path);
	craft_begin(&c, path);
	uint64_t self = craft_next(&c);
	bool found = false;
	for (int t = 0; t < 64 && !found; t++) {
		snprintf(keys[0], sizeof(keys[0]), "k%d", t);
		len = node_payload(p, 1, 1, keys, self, 0);
		/* the one entry's ccrc field: entries start after the slot */
		uint32_t eo = keel_node_entries_at(1, keel_node_plen(p));
		found = crc_fixed_point(p, len, eo + 4, &x);
	}
	assert_true(found);
	uint64_t off = craft_record(&c, KEEL_REC_BRANCH, p, len, &crc);
	assert_int_equal(off, self);
	assert_int_equal(crc, x);
	craft_commit(&c, path, off, crc, 1);
}

static void branch_that_is_its_own_child_is_refused(void **state)
{
	fixture *f = *state;
	outcome o;

	make_self_loop(f->path);
	run_bounded(f->path, &o);
	assert_int_equal(o.open_rc, KEEL_OK);
	assert_int_equal(o.get_rc, KEEL_ECORRUPT);
	assert_true(o.iter_open_rc == KEEL_ECORRUPT || o.iter_rc == KEEL_ECORRUPT);
	assert_int_equal(o.iter_keys, 0);
	assert_int_equal(o.check_rc, KEEL_ECORRUPT);
	/* named as what it is, once: not as a second visit of the branch */
	assert_int_equal(o.problems, 1);
	assert_string_equal(o.last_report, "entry 0 points forward");
	assert_int_equal(o.put_rc, KEEL_ECORRUPT);
	assert_int_equal(o.compact_rc, KEEL_ECORRUPT);
}

/* ---- a child written after its parent ------------------------------------------
 * No loop, but the order a writer never produces: a parent holds the CRC of
 * a child written later.  (A child always comes first in an append-only
 * file; checking it is what makes every descent end.) */
static void child_after_its_parent_is_refused(void **state)
{
	fixture *f = *state;
	static uint8_t pb[65536], pl[65536];
	char keys[2][16] = {"a", "b"};
	craft c;
	uint32_t crc, lcrc;
	keel_db *db;
	keel_view v;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	/* the leaf's bytes first, to know its CRC; the branch goes first */
	uint32_t llen = node_payload(pl, 0, 2, keys, 0, 0);
	uint8_t hdr[KEEL_REC_HDR];
	keel_rec_encode(hdr, KEEL_REC_LEAF, pl, llen);
	lcrc = keel_ld32(hdr + 12);
	uint32_t blen = node_payload(pb, 1, 1, keys, 0, 0);
	uint64_t boff = craft_next(&c), loff = boff + keel_rec_size(blen);
	blen = node_payload(pb, 1, 1, keys, loff, lcrc);
	assert_int_equal(craft_record(&c, KEEL_REC_BRANCH, pb, blen, &crc), boff);
	uint32_t got;
	assert_int_equal(craft_record(&c, KEEL_REC_LEAF, pl, llen, &got), loff);
	assert_int_equal(got, lcrc);
	craft_commit(&c, f->path, boff, crc, 2);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "a", 1, &v), KEEL_ECORRUPT);
	keel_snapshot *s;
	keel_iter *it;
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	int rc = keel_iter_open(s, NULL, 0, NULL, 0, &it);
	if (rc == KEEL_OK) {
		rc = keel_iter_next(it, NULL, NULL, NULL);
		keel_iter_close(it);
	}
	assert_int_equal(rc, KEEL_ECORRUPT);
	keel_snapshot_close(s);
	assert_int_equal(keel_check(db, NULL, NULL, NULL), KEEL_ECORRUPT);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- keys out of order under valid checksums ------------------------------------ */

/* One leaf, keys "b" then "a". */
static void keys_out_of_order_in_a_leaf_stop_iteration(void **state)
{
	fixture *f = *state;
	static uint8_t p[65536];
	char keys[2][16] = {"b", "a"};
	craft c;
	uint32_t crc;
	keel_db *db;
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_check_result res;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	uint32_t len = node_payload(p, 0, 2, keys, 0, 0);
	uint64_t off = craft_record(&c, KEEL_REC_LEAF, p, len, &crc);
	craft_commit(&c, f->path, off, crc, 2);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_OK);
	assert_memory_equal(k, "b", 1);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_ECORRUPT);
	keel_iter_close(it);
	keel_snapshot_close(s);
	assert_int_equal(keel_check(db, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_string_equal(res.first_reason, "entry 1 key out of order");
	assert_int_equal(keel_compact(db), KEEL_ECORRUPT);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* A store whose root is one leaf keyed KEYS (N of them), under valid CRCs;
 * iterates it from the start and returns the keys it gave, joined by ",",
 * and *RC the iterator's last answer. */
static void iterate_one_leaf(const char *path, char (*keys)[16], int n,
                             char *got, size_t size, int *rc)
{
	static uint8_t p[65536];
	craft c;
	uint32_t crc;
	keel_db *db;
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;

	unlink(path); /* a fresh store each time */
	make_one_key_store(path);
	craft_begin(&c, path);
	uint32_t len = node_payload(p, 0, n, keys, 0, 0);
	uint64_t off = craft_record(&c, KEEL_REC_LEAF, p, len, &crc);
	craft_commit(&c, path, off, crc, (uint64_t)n);
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	got[0] = '\0';
	while ((*rc = keel_iter_next(it, &k, &kl, NULL)) == KEEL_OK)
		snprintf(got + strlen(got), size - strlen(got), "%s%.*s",
		         got[0] ? "," : "", (int)kl, (const char *)k);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), *rc); /* it sticks */
	keel_iter_close(it);
	keel_snapshot_close(s);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* Inside a leaf the cursor steps on the slots' heads (the four key bytes
 * past the leaf's prefix): a key whose head is lower than the one before
 * it, or equal to it with the key itself lower, stops iteration there. */
static void keys_out_of_order_deep_in_a_leaf_stop_iteration_there(void **state)
{
	fixture *f = *state;
	char lower_head[4][16] = {"a", "c", "d", "b"};
	char tied_head[4][16] = {"a", "bbbbz", "bbbbm", "c"};
	char equal_keys[3][16] = {"a", "bbbbb", "bbbbb"};
	char ordered[5][16] = {"a", "bbbba", "bbbbb", "bbbc", "c"};
	char got[128];
	int rc;

	iterate_one_leaf(f->path, lower_head, 4, got, sizeof(got), &rc);
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_string_equal(got, "a,c,d");
	iterate_one_leaf(f->path, tied_head, 4, got, sizeof(got), &rc);
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_string_equal(got, "a,bbbbz");
	iterate_one_leaf(f->path, equal_keys, 3, got, sizeof(got), &rc);
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_string_equal(got, "a,bbbbb");
	/* and ties in order are read through */
	iterate_one_leaf(f->path, ordered, 5, got, sizeof(got), &rc);
	assert_int_equal(rc, KEEL_ENOTFOUND);
	assert_string_equal(got, "a,bbbba,bbbbb,bbbc,c");
}

/* A scan that reaches a damaged leaf after good ones -- its branch entry
 * carries another CRC -- stops there with KEEL_ECORRUPT, and stays
 * stopped; it never reads the branch's entries as the leaf's. */
static void a_scan_stops_at_a_damaged_leaf_after_good_ones(void **state)
{
	fixture *f = *state;
	static uint8_t p[65536];
	char l1[2][16] = {"a", "b"}, l2[2][16] = {"c", "d"};
	craft c;
	uint32_t c1, c2, crc;
	keel_db *db;
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	uint64_t o1 = craft_record(&c, KEEL_REC_LEAF, p, node_payload(p, 0, 2, l1, 0, 0), &c1);
	uint64_t o2 = craft_record(&c, KEEL_REC_LEAF, p, node_payload(p, 0, 2, l2, 0, 0), &c2);
	uint32_t eo = keel_node_begin(p, 1, 2, (const uint8_t *)"a", 1,
	                              (const uint8_t *)"c", 1);
	keel_node_set_slot(p, 0, eo, (const uint8_t *)"a", 1);
	eo += keel_branch_ent_encode(p + eo, (const uint8_t *)"a", 1, c1, o1);
	keel_node_set_slot(p, 1, eo, (const uint8_t *)"c", 1);
	eo += keel_branch_ent_encode(p + eo, (const uint8_t *)"c", 1, c2 ^ 1, o2);
	uint64_t root = craft_record(&c, KEEL_REC_BRANCH, p, eo, &crc);
	craft_commit(&c, f->path, root, crc, 4);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_OK);
	assert_memory_equal(k, "a", 1);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_OK);
	assert_memory_equal(k, "b", 1);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_ECORRUPT);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_ECORRUPT);
	keel_iter_close(it);
	/* and a scan that starts in it is refused at once */
	assert_int_equal(keel_iter_open(s, NULL, 0, "c", 1, &it), KEEL_ECORRUPT);
	keel_snapshot_close(s);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* Two leaves in order by their separators, but the first holds a key past
 * the second's separator: the check names the separator range. */
static void key_outside_its_separator_range_is_reported(void **state)
{
	fixture *f = *state;
	static uint8_t p[65536];
	char l1[2][16] = {"a", "z"}, l2[1][16] = {"m"}, seps[2][16] = {"a", "m"};
	craft c;
	uint32_t c1, c2, crc;
	keel_db *db;
	keel_check_result res;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	uint64_t o1 = craft_record(&c, KEEL_REC_LEAF, p, node_payload(p, 0, 2, l1, 0, 0), &c1);
	uint64_t o2 = craft_record(&c, KEEL_REC_LEAF, p, node_payload(p, 0, 1, l2, 0, 0), &c2);
	/* a branch with two different children: built by hand */
	uint32_t eo = keel_node_begin(p, 1, 2, (const uint8_t *)"a", 1,
	                              (const uint8_t *)"m", 1);
	keel_node_set_slot(p, 0, eo, (const uint8_t *)seps[0], 1);
	eo += keel_branch_ent_encode(p + eo, (const uint8_t *)seps[0], 1, c1, o1);
	keel_node_set_slot(p, 1, eo, (const uint8_t *)seps[1], 1);
	eo += keel_branch_ent_encode(p + eo, (const uint8_t *)seps[1], 1, c2, o2);
	uint64_t root = craft_record(&c, KEEL_REC_BRANCH, p, eo, &crc);
	craft_commit(&c, f->path, root, crc, 3);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_check(db, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_int_equal(res.first_offset, o1);
	assert_string_equal(res.first_reason, "entry 1 key not below the next separator");
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- the check's report is bounded ------------------------------------------ */

/* A leaf of 300 entries with revision 0: 300 problems, 100 listed and a
 * last line that counts the rest. */
static void check_lists_a_bounded_number_of_problems(void **state)
{
	fixture *f = *state;
	static uint8_t p[65536];
	static char keys[300][16];
	craft c;
	uint32_t crc;
	keel_db *db;
	keel_check_result res;
	outcome o = {0};

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	for (int i = 0; i < 300; i++)
		snprintf(keys[i], sizeof(keys[i]), "k%05d", i);
	uint32_t len = node_payload(p, 0, 300, keys, 0, 0);
	for (int i = 0; i < 300; i++) /* revision 0 in every entry */
		keel_st64((uint8_t *)keel_node_entry(p, (unsigned)i) + 8, 0);
	uint64_t off = craft_record(&c, KEEL_REC_LEAF, p, len, &crc);
	craft_commit(&c, f->path, off, crc, 300);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_check(db, count_report, &o, &res), KEEL_ECORRUPT);
	assert_int_equal(res.problems, 300);
	assert_int_equal(res.first_offset, off); /* at the leaf */
	assert_string_equal(res.first_reason, "entry 0 has revision 0");
	assert_int_equal(o.reported, KEEL_CHECK_REPORT_MAX + 1);
	assert_string_equal(o.last_report, "and 200 more problems not listed");
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- records nested inside one another -----------------------------------------
 * 200 VALUE records, each starting 16 bytes into the previous one and all
 * ending together after 256 KiB, every CRC valid (built from the innermost
 * out), and a leaf whose 200 keys each name one of them.  Records never
 * overlap in a store: reading them all cost 200 times their bytes of CRC
 * (a quadratic in the file's size), so the second one read is refused. */
#define NESTED 200
#define NESTED_TAIL ((size_t)256 << 10)

static void make_nested_values(const char *path)
{
	static uint8_t p[65536];
	craft c;
	uint64_t voff[NESTED];
	uint32_t vcrc[NESTED], vlen[NESTED], crc;
	size_t span = 16 * NESTED + NESTED_TAIL;

	make_one_key_store(path);
	craft_begin(&c, path);
	uint8_t *buf = malloc(span);
	assert_non_null(buf);
	memset(buf, 'n', span);
	for (int i = NESTED - 1; i >= 0; i--) { /* innermost first */
		vlen[i] = (uint32_t)(span - 16 * (size_t)(i + 1));
		keel_rec_encode(buf + 16 * i, KEEL_REC_VALUE, buf + 16 * (i + 1), vlen[i]);
		vcrc[i] = keel_ld32(buf + 16 * i + 12);
		voff[i] = craft_next(&c) + 16 * (uint64_t)i;
	}
	/* the outermost record holds them all: append it as one */
	assert_int_equal(craft_record(&c, KEEL_REC_VALUE, buf + 16, vlen[0], &crc),
	                 voff[0]);
	assert_int_equal(crc, vcrc[0]);
	free(buf);
	char keys[NESTED][16];
	for (int i = 0; i < NESTED; i++)
		snprintf(keys[i], sizeof(keys[i]), "v%03d", i);
	uint32_t eo = keel_node_begin(p, 0, NESTED, (const uint8_t *)keys[0], 4,
	                              (const uint8_t *)keys[NESTED - 1], 4);
	for (int i = 0; i < NESTED; i++) {
		keel_leaf_ent le = {.key = (const uint8_t *)keys[i], .klen = 4,
		                    .vlen = vlen[i], .voff = voff[i], .vcrc = vcrc[i],
		                    .rev = 1};
		keel_node_set_slot(p, (unsigned)i, eo, le.key, 4);
		eo += keel_leaf_ent_encode(p + eo, &le);
	}
	uint64_t leaf = craft_record(&c, KEEL_REC_LEAF, p, eo, &crc);
	craft_commit(&c, path, leaf, crc, NESTED);
}

static void nested_records_are_read_once_then_refused(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_view v;
	keel_snapshot *s;
	keel_iter *it;
	keel_check_result res;
	struct stat st;

	make_nested_values(f->path);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "v000", 4, &v), KEEL_OK); /* the outermost */
	assert_int_equal(v.len, 16 * (NESTED - 1) + NESTED_TAIL);
	keel_view_release(&v);
	assert_int_equal(keel_get(db, "v001", 4, &v), KEEL_ECORRUPT);
	assert_int_equal(keel_get(db, "v199", 4, &v), KEEL_ECORRUPT);

	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	int rc, values = 0;
	while ((rc = keel_iter_next(it, NULL, NULL, &v)) == KEEL_OK)
		values++;
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_int_equal(values, 1);
	keel_iter_close(it);
	keel_snapshot_close(s);

	assert_int_equal(keel_check(db, NULL, NULL, &res), KEEL_ECORRUPT);
	if (res.bytes > (uint64_t)st.st_size)
		fail_msg("check verified %" PRIu64 " bytes of a %lld-byte file",
		         res.bytes, (long long)st.st_size);
	assert_string_equal(res.first_reason,
	                    "value referenced a second time, or inside another record");
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- recovery's look past damage -------------------------------------------------
 * After the newest valid head: a bad record header, 1.5 MiB of nonzero
 * filler, then 64 heads with valid checksums that each name the damaged
 * spot as their predecessor.  Recovery looks for a later head that proves
 * the damage durable; reading each named predecessor through its 1 MiB
 * read-ahead window, and the window back, made the scan read about 1 MiB
 * per such head (70 MiB here): the bytes it reads must stay a small
 * multiple of the file's size. */
static void a_scan_past_damage_reads_each_byte_a_bounded_number_of_times(void **state)
{
	fixture *f = *state;
	craft c;
	keel_db *db;
	keel_recovery rep;
	keel_options o = {.flags = KEEL_RDONLY, .report = &rep};
	const size_t filler = (size_t)3 << 19;
	const int heads = 64;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	uint64_t damage = c.pos;
	size_t len = 16 + filler + (size_t)heads * KEEL_HEAD_SIZE;
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	memset(buf, 0xAA, 16 + filler);
	for (int i = 0; i < heads; i++) {
		uint64_t at = damage + 16 + filler + (uint64_t)i * KEEL_HEAD_SIZE;
		keel_head h = {.txid = c.head.txid + 5 + (uint64_t)i,
		               .prev_head = damage, .region_start = damage,
		               .file_id = c.head.file_id};
		keel_head_encode(buf + (at - damage), &h);
	}
	int fd = open(f->path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)damage), (ssize_t)len);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	free(buf);

	assert_int_equal(keel_open(f->path, &o, &db), KEEL_OK);
	assert_int_equal(rep.status, KEEL_RECOVERY_TRUNCATED); /* a torn tail */
	assert_int_equal(rep.head_offset, c.head.off);
	if (rep.bytes_read > 4 * (uint64_t)st.st_size)
		fail_msg("recovery read %" PRIu64 " bytes of a %lld-byte file",
		         rep.bytes_read, (long long)st.st_size);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- damaged values open does not look at ---------------------------------------- */

#define BIG_LEN 3000

static void big_value(uint8_t *v)
{
	for (int i = 0; i < BIG_LEN; i++)
		v[i] = (uint8_t)('A' + (i * 7 + i / 26) % 26);
}

/* A store where "big" (a value stored out of line, in its own record) was
 * written by an early commit and 70 later commits followed, so the hints
 * name a head past it and open never reads its region again; then one
 * byte in the middle of the value flipped.  Returns the flipped offset. */
static uint64_t make_bad_value(const char *path)
{
	keel_db *db;
	uint8_t v[BIG_LEN];
	char k[16];

	big_value(v);
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "a", 1, "first", 5, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(db, "big", 3, v, sizeof(v), KEEL_REV_ANY, NULL), KEEL_OK);
	for (int i = 0; i < 70; i++) {
		snprintf(k, sizeof(k), "n%03d", i);
		assert_int_equal(keel_put(db, k, strlen(k), "x", 1, KEEL_REV_ANY, NULL),
		                 KEEL_OK);
	}
	assert_int_equal(keel_close(db), KEEL_OK);
	size_t len = 0;
	uint8_t *img = tu_read_file(path, &len);
	assert_non_null(img);
	uint8_t *at = memmem(img, len, v, sizeof(v));
	assert_non_null(at);
	assert_null(memmem(at + 1, len - (size_t)(at + 1 - img), v, sizeof(v))); /* one copy */
	uint64_t off = (uint64_t)(at - img) + BIG_LEN / 2;
	img[off] ^= 0x20; /* a letter's case: still plausible bytes */
	assert_int_equal(tu_write_file(path, img, len), 0);
	free(img);
	return off;
}

static void flipped_value_out_of_line_in_an_older_commit_is_never_returned(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_view v;
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_recovery r;

	uint64_t off = make_bad_value(f->path);
	/* open does not read the old region: it opens cleanly */
	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_recovery_info(db, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	assert_true(r.head_offset > off);

	memset(&v, 0, sizeof(v));
	assert_int_equal(keel_get(db, "big", 3, &v), KEEL_ECORRUPT);
	assert_null(v.data);
	assert_int_equal(keel_get(db, "a", 1, &v), KEEL_OK); /* the rest reads */
	keel_view_release(&v);

	/* iteration: "a" then "big", which fails; nothing damaged is shown */
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, &k, &kl, &v), KEEL_OK);
	assert_int_equal(kl, 1);
	memset(&v, 0, sizeof(v));
	assert_int_equal(keel_iter_next(it, &k, &kl, &v), KEEL_ECORRUPT);
	assert_null(v.data);
	keel_iter_close(it);
	/* from a snapshot, and again (once verified is not once trusted) */
	assert_int_equal(keel_snapshot_get(s, "big", 3, &v), KEEL_ECORRUPT);
	assert_int_equal(keel_snapshot_get(s, "big", 3, &v), KEEL_ECORRUPT);
	keel_snapshot_close(s);

	keel_check_result res;
	assert_int_equal(keel_check(db, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_string_equal(res.first_reason, "value: checksum mismatch");
	assert_int_equal(keel_compact(db), KEEL_ECORRUPT); /* nothing copied */
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* A branch keyed "a" over a leaf whose first key is "b": the check names
 * the leaf, at its offset. */
static void child_first_key_differing_from_its_separator_is_reported(void **state)
{
	fixture *f = *state;
	static uint8_t p[65536];
	char lk[1][16] = {"b"}, bk[1][16] = {"a"};
	craft c;
	uint32_t lcrc, bcrc;
	keel_db *db;
	keel_check_result res;

	make_one_key_store(f->path);
	craft_begin(&c, f->path);
	uint64_t leaf = craft_record(&c, KEEL_REC_LEAF, p,
	                             node_payload(p, 0, 1, lk, 0, 0), &lcrc);
	uint64_t root = craft_record(&c, KEEL_REC_BRANCH, p,
	                             node_payload(p, 1, 1, bk, leaf, lcrc), &bcrc);
	craft_commit(&c, f->path, root, bcrc, 1);

	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_check(db, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_int_equal(res.problems, 1);
	assert_int_equal(res.first_offset, leaf);
	assert_string_equal(res.first_reason,
	                    "first key differs from its parent's separator");
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* ---- pending heads that claim what recovery would refuse ----------------------
 * The check reads an image and a head it is given: it must not trust the
 * head's pending span more than recovery does. */

/* A store of three commits, all pending (no checkpoint): its image, and in
 * *HEAD its newest head. */
static unsigned char *pending_store(const char *path, keel_head *head,
                                    size_t *len)
{
	keel_db *db;
	keel_stats st;
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	for (int i = 0; i < 3; i++) {
		char k[16];
		snprintf(k, sizeof(k), "p%d", i);
		assert_int_equal(keel_put(db, k, strlen(k), "v", 1, KEEL_REV_ANY, NULL),
		                 KEEL_OK);
	}
	keel_stat(db, &st);
	assert_int_equal(keel_close(db), KEEL_OK);
	unsigned char *img = tu_read_file(path, len);
	assert_non_null(img);
	uint64_t off = st.end_offset - KEEL_HEAD_SIZE;
	assert_int_equal(keel_head_decode(img + off, head), KEEL_OK);
	head->off = off;
	assert_int_equal(head->pending_heads, 3);
	return img;
}

static void pending_head_claims_are_checked(void **state)
{
	fixture *f = *state;
	keel_check_result res;
	keel_head h, bad;
	size_t len = 0;
	unsigned char *img = pending_store(f->path, &h, &len);

	/* the control: the image as written checks out */
	assert_int_equal(verify_tree(img, len, &h, NULL, NULL, &res), KEEL_OK);
	assert_int_equal(res.keys, 3);
	/* pending heads but no DELTA record: a span the format rules out */
	bad = h;
	bad.delta_off = 0;
	bad.delta_crc = 0;
	assert_int_equal(verify_tree(img, len, &bad, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_int_equal(res.first_offset, h.off);
	assert_string_equal(res.first_reason,
	                    "head claims a pending span past the bounds");
	/* a pending head whose predecessor is itself */
	bad = h;
	bad.prev_head = h.off;
	assert_int_equal(verify_tree(img, len, &bad, NULL, NULL, &res), KEEL_ECORRUPT);
	assert_int_equal(res.first_offset, h.off);
	assert_string_equal(res.first_reason, "pending head's predecessor unreadable");
	free(img);
}

int main(int argc, char **argv)
{
	/* The stores tests/hostile.sh gives to the command line and keel-serve. */
	if (argc == 3 && strcmp(argv[1], "--write-dag") == 0) {
		make_dag(argv[2], 200, 5, false);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--write-bad-value") == 0) {
		make_bad_value(argv[2]);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shared_child_dag_is_refused_at_once_by_every_entry_point, setup, teardown),
		cmocka_unit_test_setup_teardown(shared_child_with_equal_keys_stops_the_check_at_the_root, setup, teardown),
		cmocka_unit_test_setup_teardown(shared_child_work_is_bounded_by_the_records, setup, teardown),
		cmocka_unit_test_setup_teardown(branch_that_is_its_own_child_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(child_after_its_parent_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(keys_out_of_order_in_a_leaf_stop_iteration, setup, teardown),
		cmocka_unit_test_setup_teardown(keys_out_of_order_deep_in_a_leaf_stop_iteration_there, setup, teardown),
		cmocka_unit_test_setup_teardown(a_scan_stops_at_a_damaged_leaf_after_good_ones, setup, teardown),
		cmocka_unit_test_setup_teardown(key_outside_its_separator_range_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(child_first_key_differing_from_its_separator_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(pending_head_claims_are_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(check_lists_a_bounded_number_of_problems, setup, teardown),
		cmocka_unit_test_setup_teardown(nested_records_are_read_once_then_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(a_scan_past_damage_reads_each_byte_a_bounded_number_of_times, setup, teardown),
		cmocka_unit_test_setup_teardown(flipped_value_out_of_line_in_an_older_commit_is_never_returned, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
