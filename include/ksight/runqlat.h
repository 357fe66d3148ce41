/* Map layouts of the runqlat collector, shared by bpf/runqlat.bpf.c and src/collectors/runqlat.c. */
#ifndef KSIGHT_RUNQLAT_H
#define KSIGHT_RUNQLAT_H

#include "sched.h"

/*
 * One row; per-CPU, summed by user space (by cpu, one row per CPU), or
 * shared (the hash modes of ks_sched_by).
 * Every counter except the two switch counters is taken when a wait ends,
 * so a row's counters describe the waits in its histogram.
 */
struct ks_rq_stat {
	char comm[KS_COMM_LEN]; /* by pid and tid: the name at the last event (exec renames) */
	__u64 wakeups;	   /* waits that began with a wakeup */
	__u64 cross_cpu;   /* ... whose waker ran on another CPU */
	__u64 migrations;  /* CPU changes during the waits */
	__u64 voluntary;   /* switches out while blocking */
	__u64 involuntary; /* switches out while still runnable (preempted, yielded) */
	struct ks_sched_hist lat; /* wait: runnable -> on CPU */
};

#endif /* KSIGHT_RUNQLAT_H */
