/* Map layouts of the offcpu collector, shared by bpf/offcpu.bpf.c and src/collectors/offcpu.c. */
#ifndef KSIGHT_OFFCPU_H
#define KSIGHT_OFFCPU_H

#include "sched.h"

/* Why the thread left the CPU, from prev_state at sched_switch. */
enum ks_off_state {
	KS_OFF_S = 0,	  /* interruptible sleep */
	KS_OFF_D = 1,	  /* uninterruptible (D) */
	KS_OFF_I = 2,	  /* idle: uninterruptible without load (TASK_IDLE) */
	KS_OFF_OTHER = 3, /* stopped, traced, parked, frozen, ... */
	KS_OFF_STATES = 4,
};

/* Off-CPU time of one (key, state) row; per-CPU, summed by user space, or shared (see ks_sched_by). */
struct ks_off_stat {
	char comm[KS_COMM_LEN]; /* by pid and tid: the name at the last event (exec renames) */
	struct ks_sched_hist off;
};

#endif /* KSIGHT_OFFCPU_H */
