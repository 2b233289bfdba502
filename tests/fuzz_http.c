/*
 * fuzz_http.c -- libFuzzer target for the HTTP request parser
 * (http/http_parse.h).  `make fuzz` builds it with ASan and UBSan and runs
 * it for 60 seconds on the seed corpus in tests/http-corpus/.
 *
 * The input is copied into a buffer of exactly its size, so ASan reports a
 * read one byte past the end.  Everything the server does with a parsed
 * head is exercised too: the entity-tag lists, the Bearer credentials,
 * the key's percent-decoding, the listing's query parameters, and the
 * chunked decoder on whatever follows the head.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"

static void exercise(const struct http_request *req, char *rest, size_t n)
{
	char key[HTTP_KEY_MAX];
	struct http_slice v;
	struct http_chunked c = {.limit = 1 << 20};
	size_t out;
	ssize_t used;

	if (req->if_match.p)
		(void)http_etag_match(req->if_match.p, req->if_match.n, 7, 0);
	if (req->if_none_match.p)
		(void)http_etag_match(req->if_none_match.p, req->if_none_match.n,
		                      7, 1);
	if (http_bearer_token(&req->authorization, &v) &&
	    (v.n == 0 || v.p + v.n > req->authorization.p + req->authorization.n))
		abort(); /* a token outside the header's value */
	(void)http_pct_decode(req->path.p + 1, req->path.n - 1, key, sizeof key,
	                      0);
	if (http_query_param(req->query.p, req->query.n, "prefix", &v))
		(void)http_pct_decode(v.p, v.n, key, sizeof key, 1);
	if (req->chunked && n > 0) {
		/* feed the rest in two pieces, the way a server would */
		used = http_chunked_decode(&c, rest, n / 2, &out);
		if (used >= 0 && !c.done) {
			memmove(rest + out, rest + used, n - (size_t)used);
			n -= (size_t)used - out;
			(void)http_chunked_decode(&c, rest + out, n - out, &out);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request req;
	char *buf = malloc(size ? size : 1);
	int rc;

	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	rc = http_parse_request(buf, size, &req);
	if (rc > 0) {
		if ((size_t)rc > size || (size_t)rc > HTTP_HEAD_MAX)
			abort(); /* consumed more than it was given */
		exercise(&req, buf + rc, size - (size_t)rc);
	} else if (rc != HTTP_PARTIAL && rc != -400 && rc != -414 &&
	           rc != -417 && rc != -431 && rc != -501 && rc != -505) {
		abort(); /* a status the header does not promise */
	}
	free(buf);
	return 0;
}
