/*
 * adapters.h -- the engine adapters of targets/ as torture knows them:
 * `torture --target NAME[:CONFIG]` is `--target exec` with the workload
 * `targets/NAME DIR CONFIG` and the checker `targets/NAME DIR CONFIG
 * --check` (both beside the torture binary), plus the adapter's --volatile
 * patterns.  docs/claims.md is the table of what they found.
 */
#ifndef TORTURE_ADAPTERS_H
#define TORTURE_ADAPTERS_H

#include <stdio.h>

#define ADAPTER_CONFIGS_MAX 8

typedef struct torture_adapter {
	const char *name;         /* "sqlite": the program targets/NAME      */
	const char *configs[ADAPTER_CONFIGS_MAX + 1]; /* NULL-terminated;
	                             the first is the default                */
	const char *volatile_files; /* --volatile patterns, or NULL          */
	const char *package;      /* the Debian package it needs, or NULL    */
	unsigned kill_every_ms;   /* the default --kill-every: long enough
	                             for the engine to open and acknowledge
	                             under the shim on a busy machine        */
} torture_adapter;

/* Parses "NAME" or "NAME:CONFIG".  Returns the adapter and sets *CONFIG
 * (the default when none is named); NULL when NAME is no adapter, or
 * CONFIG is none of its configurations (*CONFIG is then NULL too). */
const torture_adapter *adapter_parse(const char *arg, const char **config);

/* The adapter ARG's part before ':' names, or NULL. */
const torture_adapter *adapter_find(const char *arg);

/* Prints every NAME:CONFIG, one per line, to F (to NAME's only, when
 * ONLY is not NULL). */
void adapter_list(FILE *f, const torture_adapter *only);

#endif /* TORTURE_ADAPTERS_H */
