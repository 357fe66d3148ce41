/* Layouts shared by the scheduler collectors (runqlat, offcpu) on both sides: row keys and per-thread slots. */
#ifndef KSIGHT_SCHED_H
#define KSIGHT_SCHED_H

#include "hist.h"
#include "filter.h"

/* --by keys.  NONE, CPU, PRIO and POLICY use arrays; the others a hash. */
enum ks_sched_by {
	KS_SCHED_BY_NONE = 0,
	KS_SCHED_BY_CPU = 1,	/* each CPU's copy of the one per-CPU row */
	KS_SCHED_BY_PRIO = 2,
	KS_SCHED_BY_POLICY = 3,
	KS_SCHED_BY_PID = 4,
	KS_SCHED_BY_TID = 5,
	KS_SCHED_BY_COMM = 6,
	KS_SCHED_BY_CGROUP = 7,
};

/* Kernel priorities 0..139; -1 (SCHED_DEADLINE) and anything else go to the last row. */
#define KS_SCHED_PRIOS 141
/* SCHED_NORMAL .. SCHED_EXT */
#define KS_SCHED_POLICIES 8

/* Key of the hash-backed modes; gen selects the buffer half. */
struct ks_sched_key {
	__u32 gen;
	__u32 sub;	       /* a collector's split of one key, e.g. offcpu's state */
	__u64 id;	       /* tgid, tid or cgroup id */
	char comm[KS_COMM_LEN]; /* pid: the leader's name, tid and comm: the thread's */
};

/* How the wait in a slot began; set when it began, read when it ends. */
enum ks_slot_flags {
	KS_SLOT_WOKEN = 1u << 0, /* sched_wakeup or sched_wakeup_new, not a preemption */
	KS_SLOT_CROSS = 1u << 1, /* the waker ran on another CPU than the target */
	/* No wait open: sched_waking left the waker's CPU in the bits from
	 * KS_SLOT_WAKER_SHIFT up, for the sched_wakeup that follows (runqlat). */
	KS_SLOT_WAKER = 1u << 2,
};
#define KS_SLOT_WAKER_SHIFT 3
#define KS_SLOT_WAKER_CPUS (1u << (16 - KS_SLOT_WAKER_SHIFT))

/*
 * Per-thread state in an array indexed by tid: a plain array lookup is
 * inlined by the verifier, where task storage costs a helper call (about
 * 70 ns more per event on the development machine).  The tid is kept to
 * detect two threads sharing a slot, possible only if pid_max grows after
 * load.
 */
struct ks_sched_slot {
	__u64 ts;    /* when the interval began (bpf_ktime_get_ns); 0 when none is open */
	__u32 tid;
	__u16 flags; /* enum ks_slot_flags, or offcpu's state */
	__u16 migr;  /* migrations since the thread last got a CPU */
};

/* Loss counters in each scheduler collector's .bss, reported after every interval. */
struct ks_sched_lost {
	__u64 slot_collisions; /* a thread's slot held another thread's open interval */
	__u64 map_full;	       /* a hash row could not be created */
};

_Static_assert(sizeof(struct ks_sched_key) == 32, "ks_sched_key layout");
_Static_assert(sizeof(struct ks_sched_slot) == 16, "ks_sched_slot layout");

#endif /* KSIGHT_SCHED_H */
