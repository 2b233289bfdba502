/* probe_json.c -- JSON string and number output; see probe_json.h. */
#include "probe_json.h"

#include <math.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0 && s[0] >= 0xc2)
		n = 2;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3;
	else if ((s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void probe_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len, i, n;

	if (!s) {
		fputs("null", f);
		return;
	}
	len = strlen(s);
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\n' ||
			   p[len - 1] == '\t' || p[len - 1] == '\r'))
		len--;
	fputc('"', f);
	for (i = 0; i < len; i += n) {
		n = 1;
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fprintf(f, "\\u%04x", p[i]);
		else if (p[i] < 0x80)
			fputc(p[i], f);
		else if ((n = utf8_len(p + i, len - i)) > 0)
			fwrite(p + i, 1, n, f);
		else {
			n = 1;
			fprintf(f, "\\u%04x", p[i]);
		}
	}
	fputc('"', f);
}

void probe_json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.3f", v);
}
