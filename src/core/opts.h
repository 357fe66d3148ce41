/* The one option parser: shared options of DESIGN.md plus each command's own, help generated from the tables. */
#ifndef KS_CORE_OPTS_H
#define KS_CORE_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ksight/filter.h"

/* Which shared options a command accepts. */
enum ks_common_opt {
	KS_O_DURATION = 1u << 0,
	KS_O_INTERVAL = 1u << 1,
	KS_O_PID = 1u << 2,
	KS_O_TID = 1u << 3,
	KS_O_CGROUP = 1u << 4,
	KS_O_CPU = 1u << 5,
	KS_O_COMM = 1u << 6,
	KS_O_BY = 1u << 7,
	KS_O_TOP = 1u << 8,
	KS_O_JSON = 1u << 9,
	KS_O_OUTPUT = 1u << 10,
	KS_O_MEMORY = 1u << 11,
	KS_O_SELF = 1u << 12,
	KS_O_SORT = 1u << 13,
	KS_O_CMD = 1u << 14, /* "-- CMD [ARG...]": run CMD once attached (core/cmd.h) */
	KS_O_HEATMAP = 1u << 15, /* --heatmap FILE: with -i, an SVG heatmap of the run's series (output/heatmap.h) */
	KS_O_FILTERS = KS_O_PID | KS_O_TID | KS_O_CGROUP | KS_O_CPU | KS_O_COMM | KS_O_SELF,
	KS_O_COLLECTOR = 0xffff,
};

/* The shortest -i: below it the reports cost more than the events they count. */
#define KS_MIN_INTERVAL 0.01

/* Values of the shared options; defaults set by ks_common_init. */
struct ks_budget_share;
struct ks_cmd;

struct ks_common {
	double duration; /* seconds; 0 (no -d) runs until SIGINT/SIGTERM */
	double interval; /* seconds, >= KS_MIN_INTERVAL; 0 reports once at the end */
	uint32_t pid, tid;
	const char *cgroup;
	bool has_cpus;
	uint64_t cpus[KS_MAX_CPUS / 64];
	const char *cpus_arg;
	bool has_comm;
	char comm[KS_COMM_LEN];
	const char *by;
	int top_n;
	bool json;
	const char *output;
	uint64_t max_memory; /* bytes of BPF maps at the possible-CPU count; 0: the default budget */
	struct ks_budget_share *share; /* serve, run: this instance's part of max_memory (core/budget.h) */
	bool include_self; /* --include-self: ksight's own events are counted too */
	const char *sort;    /* --sort column; NULL: the collector's order */
	char **cmd_argv;     /* -- CMD [ARG...]: NULL-terminated, or NULL */
	struct ks_cmd *cmd;  /* its state once spawned (core/cmd.h): the filter follows its cgroup */
	const char *heatmap; /* --heatmap FILE, or NULL */
	uint64_t series_memory; /* --series-memory: the heatmap's series budget in bytes; 0: KS_SERIES_BUDGET */
};

/*
 * A command's own option.  @id is the short option character, or a value
 * >= 256 for long-only options; @arg names the argument (NULL for flags).
 */
struct ks_optdef {
	const char *name;
	int id;
	const char *arg;
	const char *help;
};

/* Called for each of the command's own options; returns 0 or -EINVAL after p_err. */
typedef int (*ks_opt_cb)(void *ctx, int id, const char *arg);

/*
 * One --by word and the collector's value for it (its own enum).  A table
 * ends with { NULL, value when --by is not given }.  Combined keys such as
 * "pid,syscall" are words of their own: each names one kernel row layout.
 */
struct ks_by_word {
	const char *word;
	int value;
};

/* The words an option's argument takes, for completion: { "call-graph", "fp|dwarf|cfi" }; a table ends with { 0 }. */
struct ks_opt_values {
	const char *name;
	const char *words;
};

struct ks_cmd_spec {
	const char *name;
	const char *summary;
	const char *args;    /* positional arguments for the usage line, or NULL */
	unsigned int common; /* enum ks_common_opt */
	const char *by_keys; /* "syscall|pid" for --by, NULL if none (by_words takes precedence) */
	const struct ks_by_word *by_words; /* the --by words and their values, NULL if none */
	const struct ks_optdef *opts; /* terminated by { 0 } */
	const struct ks_opt_values *values; /* enumerable arguments of its options, NULL if none */
};

void ks_common_init(struct ks_common *c);
/* The value of @by in @words; @by NULL: the default (the terminator's value); -EINVAL if not a word. */
int ks_by_parse(const struct ks_by_word *words, const char *by);
/* Writes @words as "w1|w2|..." into @buf (truncated to @len); returns @buf. */
char *ks_by_format(const struct ks_by_word *words, char *buf, size_t len);
/* The --by words @spec takes as "w1|w2" in @buf (by_words or by_keys), or NULL if it takes none. */
const char *ks_spec_by_keys(const struct ks_cmd_spec *spec, char *buf, size_t len);
/*
 * Parses argv (argv[0] is the command name).  With KS_O_CMD, what follows
 * a "--" is the command (c->cmd_argv) and all of argv counts as parsed.
 * Returns the index of the first positional argument, KS_OPTS_HELP after printing help to stdout,
 * or -EINVAL after printing a one-line error.  A callback's own negative
 * errno other than -EINVAL (e.g. -EACCES: tracefs not readable) is passed
 * on, so the command can exit 1 for what is missing rather than 2 for
 * bad usage.
 */
#define KS_OPTS_HELP (-1000)
int ks_opts_parse(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
		  ks_opt_cb cb, void *ctx);
/*
 * ks_opts_parse for a command without positional arguments: 0,
 * KS_OPTS_HELP, or -EINVAL after a one-line error, which for a
 * left-over argument is "unexpected argument".
 */
int ks_opts_parse_noargs(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
			 ks_opt_cb cb, void *ctx);
void ks_opts_usage(const struct ks_cmd_spec *spec, FILE *out);
/*
 * When set, ks_opts_usage hands @spec to it instead of printing: the man
 * pages and shell completion (cli/help.c) read every command's own table
 * by running it with -h.
 */
extern void (*ks_opts_usage_hook)(const struct ks_cmd_spec *spec);
/* The options @spec takes, in its help's order (its own, then the shared ones), into @defs; their count (at most @max). */
int ks_opts_list(const struct ks_cmd_spec *spec, const struct ks_optdef **defs, int max);
/*
 * The checks that need every shared option parsed (options may come in
 * any order, around positional arguments): --heatmap without -i, or
 * naming the -o file; --series-memory without --heatmap.  0, or
 * -EINVAL after a one-line error.
 */
int ks_opts_check(const struct ks_common *c);

#endif
