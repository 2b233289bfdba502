/* duration -- see duration.h for the rule. */
#include <string.h>

#include "duration.h"

int duration_parse(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{"", 1000000000ull}, /* a bare number is seconds */
		{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000ull},
		{"m", 60000000000ull}, {"h", 3600000000000ull},
	};
	uint64_t whole = 0, frac = 0, scale = 1, v;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > 1000000000ull) /* more than any unit allows */
			return -1;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000000ull) { /* finer than 1 ns: dropped */
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t u = units[i].ns;
		if (strcmp(p, units[i].unit) != 0)
			continue;
		if (whole > UINT64_MAX / u / 2) /* about 292 years of ns */
			return -1;
		v = whole * u + frac * (u / scale) +
		    (u % scale ? frac * (u % scale) / scale : 0);
		if (!v)
			return -1;
		*ns = v;
		return 0;
	}
	return -1;
}
