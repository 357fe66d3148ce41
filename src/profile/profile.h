/* The engine of `ksight profile`: sample on-CPU stacks with a perf_event BPF program and symbolize them into a stack profile. */
#ifndef KS_PROFILE_PROFILE_H
#define KS_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include "core/budget.h"
#include "core/opts.h"
#include "ksight/filter.h"
#include "ksight/profile.h"
#include "output/profile.h"
#include "output/stacks.h"
#include "profile/cfi.h"

struct ks_profile_opts {
	const struct ks_common *c; /* duration, pid (the run ends when it exits), cpus, max_memory */
	struct ks_filter filter;
	uint32_t hz;
	const char *event; /* "cpu-clock" (NULL), or a hardware event name */
	bool kernel, user; /* which stacks to take */
	bool dwarf;	   /* --call-graph dwarf: copy the user stack, unwind with CFI in user space */
	bool cfi;	   /* --call-graph cfi: walk the user stack in the kernel with CFI tables (x86-64) */
	bool no_inline;	   /* --no-inline: no frames for inlined calls (no DWARF read for them) */
	bool pprof;	   /* also the address view pprof writes: mappings, addresses, source lines, threads */
	bool offcpu;	   /* offcpu --stacks: off-CPU time by blocking stack, at sched_switch */
	bool syscalls;	   /* syscalls --stacks: time in syscall_nr (< 0: every one) by the caller's stack */
	int syscall_nr;
	bool bio;	   /* biolat --stacks: bytes submitted by the submitter's stack, at block_bio_queue */
	bool wall;	   /* wall --stacks: on-CPU samples (as ns) and off-CPU time by `wall`'s state, rooted at it */
};

/*
 * Sizes the profile's maps without loading anything, for a shared budget:
 * @o->c->share (measure set) gets the least and the most they take.  0 or
 * negative errno.
 */
int ks_profile_measure(const struct ks_profile_opts *o);
void ks_profile_result_free(struct ks_profile_result *res);

/*
 * The profiler in parts, for a loop: `profile`'s own (ks_drive_profile,
 * src/drive/profile.c) or another command's (record --profile): start loads and attaches (*@out, freed by
 * ks_profiler_free); the loop polls ks_profiler_fd with
 * ks_profiler_ready, calls ks_profiler_tick every period (100 ms to a
 * few seconds: the maps are sized for ~1 s), and ks_profiler_finish(start: the
 * window's CLOCK_MONOTONIC s) detaches and symbolizes into @res.  Each is 0,
 * KS_LOOP_DONE (ready, tick) or negative errno after p_err.
 */
struct ks_profiler;
/* How often the loop calls ks_profiler_tick: the halves are sized for it (size_maps). */
#define KS_PROFILE_DRAIN_MS 100
int ks_profile_start(const struct ks_profile_opts *o, struct ks_profile_result *res, struct ks_profiler **out);
int ks_profiler_fd(const struct ks_profiler *p);
int ks_profiler_ready(struct ks_profiler *p, double end);
int ks_profiler_tick(struct ks_profiler *p, double end);
/* A tick, then what it drained symbolized into the result now (not at the end): a recording's interval stacks.  0 or negative errno (said). */
int ks_profiler_flush(struct ks_profiler *p);
int ks_profiler_finish(struct ks_profiler *p, double start);
void ks_profiler_free(struct ks_profiler *p);

/* Perf event names -e takes, NULL-terminated: cpu-clock, task-clock and the hardware events. */
bool ks_profile_event_known(const char *name);

#endif
