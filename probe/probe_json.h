/*
 * probe_json.h -- writing JSON values for the JSONL output.
 *
 * The JSONL lines are written with fprintf; the only part that needs care is
 * strings taken from the system (device model names, mount options, paths),
 * which may hold quotes, backslashes, control bytes or trailing newlines.
 *
 * probe_json_str(f, s) writes s as a JSON string literal: surrounding quotes,
 * '"' and '\\' escaped, control bytes as \u00XX, trailing whitespace (sysfs
 * files end in '\n', SCSI model names are space-padded) trimmed.  Bytes >= 0x80
 * are passed through when they form valid UTF-8 and written as \u00XX (their
 * Latin-1 reading) otherwise, so the output is always valid JSON.  A NULL s
 * is written as null.  It cannot fail (stream errors are checked by whoever
 * closes the stream).
 *
 * probe_json_num(f, v) writes a double as a JSON number (NaN and infinities,
 * which JSON lacks, become null), with up to 3 decimals.
 */
#ifndef KEEL_PROBE_JSON_H
#define KEEL_PROBE_JSON_H

#include <stdio.h>

void probe_json_str(FILE *f, const char *s);
void probe_json_num(FILE *f, double v);

#endif
