/* A stack profile's result as its writers read it (profile and the --stacks modes), and its JSON writer. */
#ifndef KS_OUTPUT_PROFILE_H
#define KS_OUTPUT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "core/budget.h"
#include "ksight/profile.h"
#include "output/stacks.h"

struct ks_cmd;

/* --call-graph cfi: what its tables cost and what did not fit (filled by src/profile/cfi.c). */
struct ks_cfi_stats {
	uint64_t procs, procs_lost;	/* processes loaded; not (the map full, unreadable maps: frame pointers there) */
	uint64_t modules, modules_fp;	/* modules loaded; those whose table did not fit (frame pointers) */
	uint64_t modules_cached;	/* modules whose table was read from the cache, not compiled */
	uint64_t modules_none;		/* modules with no CFI or unreadable: their frames end the walk */
	uint64_t maps_lost;		/* executable mappings past KS_CFI_MAPS in one process */
	uint64_t rows, rows_cap;	/* rows loaded, of the map's room */
	uint64_t rows_dropped;		/* rows of modules that did not fit */
	uint64_t compile_ns;		/* time compiling and loading tables */
};

/* A finished run of src/profile/profile.c (ks_drive_profile, src/drive/profile.c): the stacks and how they were taken. */
struct ks_profile_result {
	struct ks_stacks st;
	struct ks_prof_stats stats;
	const char *event; /* the event sampled */
	bool ksyms_hidden; /* kptr_restrict hid kernel addresses */
	double duration_s;
	uint64_t unwind_ns, unwound, user_frames; /* user-space unwinding cost and depth (dwarf) */
	uint64_t ustack_frames, ustacks;	  /* user frames in frame-pointer stacks */
	uint64_t stack_entries, count_entries;
	struct ks_cfi_stats cfi; /* --call-graph cfi: tables loaded, and what did not fit */
	struct ks_budget budget;
};

/* What profile's JSON says of the run beside its result: how it was asked for. */
struct ks_profile_json_opts {
	const char *collector;	  /* "profile", "offcpu", "syscalls", "biolat" */
	uint32_t hz;
	bool dwarf, cfi;	  /* the call graph: "dwarf", "cfi", else "fp" */
	bool offcpu;		  /* offcpu --stacks: its switch-in counts */
	const struct ks_cmd *cmd; /* -- CMD, or NULL */
};

/* One JSON document of @res (docs/json.md), a newline after it; 0 or negative errno. */
int ks_write_profile_json(const struct ks_profile_result *res, const struct ks_profile_json_opts *o, FILE *out);

#endif
