/* record --collect: collector instances run inside a recording, each interval's report (and the whole window's) written as a chunk. */
#ifndef KS_RECORD_COLLECT_H
#define KS_RECORD_COLLECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include "core/accum.h"
#include "core/instance.h"
#include "format/recfile.h"
#include "profile/profile.h"

#define KS_REC_COLLECT_MAX 16

/*
 * The instances are set up by the command (ks_instance_init, their
 * options, ks_instances_share) and opened here, once the file exists;
 * each tick collects them all (ks_instances_collect, as core/driver.c)
 * and appends one KS_REC_REPORT chunk per instance, so a kill -9 keeps
 * every interval already written.  The whole window is merged as it goes
 * (core/accum.h) and written at the end as the "total" chunks.
 */
struct ks_rec_collect {
	struct ks_instance *in;
	int n;
	double interval; /* seconds: the loop's ticks */
	const struct ks_cmd *cmd;
	/* the recorder's */
	struct ks_accum acc[KS_REC_COLLECT_MAX];
	int opened;
	struct rusage ru;	/* at the start of the interval: ksight's own CPU */
	uint64_t run_ns[KS_REC_COLLECT_MAX], run_cnt[KS_REC_COLLECT_MAX]; /* each one's BPF run time so far */
	double start, last;	/* CLOCK_MONOTONIC s: the first interval's start, this one's */
	uint64_t cpu_total;	/* ksight's CPU (us) over the intervals so far */
	/* --profile: its options (NULL: none), set by the command; the run's, here */
	const struct ks_profile_opts *prof_opts;
	struct ks_profiler *prof;
	struct ks_profile_result prof_res;
	double prof_drained; /* when its maps were last drained: every 100 ms, what they are sized for */
	uint64_t *prof_prev; /* each stack's value in prof_res.st at the last stacks chunk (by index: they only grow) */
	size_t prof_nprev;
};

/* Opens every instance with @f; 0 or negative errno (said, naming the collector); closed by ks_rec_collect_close. */
int ks_rec_collect_open(struct ks_rec_collect *k, const struct ks_filter *f);
/* Marks the start of the first window (after the -- CMD's start). */
void ks_rec_collect_start(struct ks_rec_collect *k);
/* One interval (@interval 1, 2...) into @w; with @final, then the whole window too.  0 or negative errno (said). */
int ks_rec_collect_tick(struct ks_rec_collect *k, struct ks_rec_writer *w, int interval, bool final);
/* --profile: the sample ring's fd for the loop to poll, or -1. */
int ks_rec_collect_fd(const struct ks_rec_collect *k);
/* --profile: the fd is readable; @end the loop's deadline.  0, KS_LOOP_DONE or negative errno (said). */
int ks_rec_collect_ready(struct ks_rec_collect *k, double end);
/* After every wait of the loop: --profile's maps drained every 100 ms.  As ready. */
int ks_rec_collect_wake(struct ks_rec_collect *k, double end);
/* Closes the instances and frees what the recorder kept. */
void ks_rec_collect_close(struct ks_rec_collect *k);

#endif
