/* testdb.h -- the store fixture and async-commit helpers shared by the
 * cmocka suites of the public API (test_engine.c, test_compact.c).  Include
 * after cmocka.h, keel.h and testutil.h. */
#ifndef KEEL_TESTDB_H
#define KEEL_TESTDB_H

#include <pthread.h>

typedef struct fixture {
	char *dir, *path;
	keel_db *db;
} fixture;

static inline int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = tu_mkdtemp();
	f->path = tu_path(f->dir, "db");
	assert_int_equal(keel_open(f->path, NULL, &f->db), KEEL_OK);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	fixture *f = *state;
	if (f->db)
		assert_int_equal(keel_close(f->db), KEEL_OK);
	tu_rmdir(f->dir);
	free(f->path);
	free(f);
	return 0;
}

/* Closes the fixture's store and opens it again with O (NULL: defaults). */
static inline void reopen_with(fixture *f, const keel_options *o)
{
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(keel_open(f->path, o, &f->db), KEEL_OK);
}

static inline void reopen(fixture *f)
{
	reopen_with(f, NULL);
}

static inline void check_value(keel_db *db, const char *key, const char *val)
{
	keel_view v;
	int rc = keel_get(db, key, strlen(key), &v);
	if (!val) {
		assert_int_equal(rc, KEEL_ENOTFOUND);
		return;
	}
	assert_int_equal(rc, KEEL_OK);
	assert_int_equal(v.len, strlen(val));
	assert_memory_equal(v.data, val, v.len);
	keel_view_release(&v);
}

typedef struct async_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, ok;
	uint64_t txid[64];
} async_state;

static inline void on_commit(void *arg, int rc, uint64_t txid, size_t failed)
{
	(void)failed;
	async_state *s = arg;
	pthread_mutex_lock(&s->mu);
	if (rc == KEEL_OK)
		s->txid[s->ok++] = txid;
	s->done++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static inline void on_commit_count(void *arg, int rc, uint64_t txid, size_t failed)
{
	(void)txid;
	(void)failed;
	async_state *s = arg;
	pthread_mutex_lock(&s->mu);
	s->ok += rc == KEEL_OK;
	s->done++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Submits a put of KEY (value: KEY) with its own state; *B must outlive
 * the commit. */
static inline async_state *commit_async_key(keel_db *db, const char *key,
                                     keel_batch **b)
{
	async_state *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	assert_int_equal(keel_batch_new(b), KEEL_OK);
	assert_int_equal(keel_batch_put(*b, key, strlen(key), key, strlen(key),
	                                KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_commit_async(db, *b, on_commit, s), KEEL_OK);
	return s;
}

static inline int async_done(async_state *s)
{
	pthread_mutex_lock(&s->mu);
	int d = s->done;
	pthread_mutex_unlock(&s->mu);
	return d;
}

/* Waits (unbounded: a lost callback hangs the test) for N completions. */
static inline void async_wait(async_state *s, int n)
{
	pthread_mutex_lock(&s->mu);
	while (s->done < n)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

#endif /* KEEL_TESTDB_H */
