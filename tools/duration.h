/*
 * duration -- the one way every keel program reads a length of time.
 *
 * The rule, the same for torture, fsync-probe and any other tool:
 *
 *   a bare number is seconds          "10"    = 10 s
 *   or a number with a unit           "500ms", "1.5s", "5m", "2h"
 *   units: ns, us, ms, s, m (minutes), h
 *
 * A decimal fraction is allowed ("0.25s", "1.5" = 1.5 s); a sign, spaces,
 * an exponent and zero are not.
 *
 *   uint64_t ns;
 *   if (duration_parse(arg, &ns) < 0)
 *       ... complain, naming arg and DURATION_RULE ...
 */
#ifndef KEEL_DURATION_H
#define KEEL_DURATION_H

#include <stdint.h>

/* The rule in words, for error messages and --help. */
#define DURATION_RULE "a positive number of seconds, or a number with a unit " \
	"(ns, us, ms, s, m, h), e.g. 10, 500ms, 5m"

/* Parses S into *NS (nanoseconds).  Returns 0, or -1 (and leaves *NS alone)
 * when S is empty, zero, malformed, has an unknown unit or is longer than
 * about 290 years. */
int duration_parse(const char *s, uint64_t *ns);

#endif
