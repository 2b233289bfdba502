/*
 * tokens.h -- keel-serve's access tokens (--tokens FILE, docs/http.md
 * "Access tokens").
 *
 * WHAT IT IS
 *   A tokens file names who may do what.  It holds no token in clear: each
 *   line is the SHA-256 of a token, its scope (read or write) and an
 *   optional key prefix the token is limited to.  A table loaded from it is
 *   immutable; keel-serve replaces the whole table on SIGHUP, so a shard
 *   never sees half of a reload.
 *
 * THE FILE (byte for byte)
 *   At most TOKENS_FILE_MAX bytes, lines ended by LF (a CR before it is
 *   allowed), each at most TOKENS_LINE_MAX bytes.  A line that is empty,
 *   holds only spaces/tabs, or whose first non-blank byte is '#' is
 *   skipped.  Every other line is
 *       HASH SP SCOPE [SP PREFIX]
 *   HASH    64 lowercase hex digits: SHA-256 of the token's bytes
 *   SCOPE   "read" or "write"
 *   PREFIX  the key prefix, written like a key in a URL path: bytes
 *           0x21-0x7e, '%XX' for any other byte (and for '%' itself);
 *           1 to HTTP_KEY_MAX bytes once decoded.  '+' is a plus.
 *   SP is one or more spaces or tabs; blanks at the start and the end of
 *   a line are ignored.  No NUL byte anywhere.  At most TOKENS_MAX tokens; the same hash twice is an error.
 *
 * CALLING SEQUENCE
 *     tokens_table *t;
 *     char why[TOKENS_ERR_MAX];
 *     if (tokens_load(path, &t, why, sizeof why) < 0)  report why
 *     ... tokens_find(t, token, n, &grant) on any thread ...
 *     tokens_free(t);       once no thread can still use it
 *
 * SECRECY
 *   A presented token is hashed and compared with every entry in constant
 *   time (no early exit, no branch on the bytes), so the time taken says
 *   nothing about how close a guess was.  No function here writes a token
 *   or a hash anywhere; load errors name the file, the line and what is
 *   wrong with it, never its text.
 */
#ifndef TOKENS_H
#define TOKENS_H

#include <stddef.h>

#define TOKENS_FILE_MAX (1024 * 1024) /* bytes; a larger file is refused   */
#define TOKENS_LINE_MAX 4096          /* bytes of one line, without its LF */
#define TOKENS_MAX 1024               /* tokens; each request compares with
                                         every one                         */
#define TOKENS_HASH_LEN 32            /* SHA-256                           */
#define TOKENS_ERR_MAX 512            /* room for a load error message     */
#define TOKENS_PREFIX_MAX 1024        /* decoded prefix (HTTP_KEY_MAX)     */

typedef struct tokens_table tokens_table;

/* What a token may do. */
struct tokens_grant {
	int write;          /* 1: PUT and DELETE too; 0: GET/HEAD only      */
	const char *prefix; /* keys it is limited to (in the table)         */
	size_t prefix_len;  /* 0: every key                                 */
};

/*
 * tokens_load - reads and checks the tokens file PATH.  Returns 0 with a
 * new table in *OUT, or -1 with "PATH: line N: what is wrong" (or
 * "PATH: <errno text>", "PATH: larger than ...") in WHY[0..CAP), *OUT
 * untouched.  An empty file (no tokens) is valid: every request is then
 * refused.
 */
int tokens_load(const char *path, tokens_table **out, char *why, size_t cap);

/* The number of tokens in T. */
size_t tokens_count(const tokens_table *t);

/*
 * tokens_find - is TOKEN[0..N) one of T's?  Hashes it and compares the
 * hash with every entry in constant time.  Returns 1 with *G filled in
 * (G->prefix points into T), or 0 (unknown token, or out of memory).
 */
int tokens_find(const tokens_table *t, const char *token, size_t n,
                struct tokens_grant *g);

/* Does G's prefix cover KEY[0..KLEN) (or a listing of the keys that start
 * with KEY)?  Returns 1 or 0. */
int tokens_covers(const struct tokens_grant *g, const char *key, size_t klen);

/*
 * tokens_line - the tokens-file line for TOKEN[0..N) with SCOPE ("read" or
 * "write") and PREFIX (as written in the file, or NULL), LF-ended, into
 * OUT[0..CAP).  Returns 0, or -1 with what is wrong in OUT (a token that
 * is not a token68, an unknown scope, a bad prefix) -- never the token.
 */
int tokens_line(const char *token, size_t n, const char *scope,
                const char *prefix, char *out, size_t cap);

/* tokens_free - frees T (NULL is fine). */
void tokens_free(tokens_table *t);

#endif /* TOKENS_H */
