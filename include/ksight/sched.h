/* Layouts shared by the scheduler collectors (runqlat, offcpu) on both sides: row keys and per-thread slots. */
#ifndef KSIGHT_SCHED_H
#define KSIGHT_SCHED_H

#include "hist.h"
#include "filter.h"

/*
 * --by keys, and where their rows live (see KS_SCHED_ROW_MAPS in
 * bpf/sched.bpf.h): NONE, CPU and POLICY in a per-CPU array, PRIO in a
 * per-CPU hash, PID, TID, COMM and CGROUP in a shared hash.
 */
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

/* Kernel priorities 0..139; -1 (SCHED_DEADLINE) and anything else are -1. */
#define KS_SCHED_PRIOS 141
/* SCHED_NORMAL .. SCHED_EXT */
#define KS_SCHED_POLICIES 8

/*
 * A scheduler row's histogram: the slots of values below 2^40 ns (18
 * minutes; longer ones share the last slot, max stays exact), 4.7 KiB
 * where the full u64 range took 7.8: a per-CPU row costs this times the
 * possible CPUs.  u64 slots: a shared row counts with atomics and may
 * take more than 2^32 events between two drains of a long run.
 */
#define KS_SCHED_HIST_SLOTS KS_HIST_SLOTS_BELOW(40)
struct ks_sched_hist {
	__u64 sum;
	__u64 max;
	__u64 slots[KS_SCHED_HIST_SLOTS];
};

/* Key of the hash-backed modes; gen selects the buffer half. */
struct ks_sched_key {
	__u32 gen;
	__u32 sub;	       /* a collector's split of one key, e.g. offcpu's state */
	__u64 id;	       /* tgid, tid or cgroup id */
	char comm[KS_COMM_LEN]; /* by comm only: a pid's or tid's name changes with exec, its row must not */
};

/* id of a hash row that stands for the rows the map had no room for ("other"), never a real key's */
#define KS_SCHED_OTHER_ID (~0ull)

/* How the wait in a slot began; set when it began, read when it ends. */
enum ks_slot_flags {
	KS_SLOT_WOKEN = 1u << 0, /* sched_wakeup or sched_wakeup_new, not a preemption */
	KS_SLOT_CROSS = 1u << 1, /* the waker ran on another CPU than the target */
	/* No wait open: sched_waking left the waker's CPU in the bits from
	 * KS_SLOT_WAKER_SHIFT up, for the sched_wakeup that follows (runqlat). */
	KS_SLOT_WAKER = 1u << 2,
	/* No wait open, KS_SLOT_WAKER clear: the thread blocked, and no wakeup
	 * of it was seen since (runqlat: on a CPU again, its wait went unseen). */
	KS_SLOT_BLOCKED = 1u << 3,
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
	__u64 map_full;	       /* not even the "other" row could be had (never expected) */
	__u64 update_failed;   /* events lost: the row map's lock refused their new row (ks_map_failed) */
	__u64 unseen_in;       /* intervals whose end, a switch in, went unreported, at a time not told */
	__u64 unseen_wakeup;   /* runqlat: waits whose wakeup went unreported, at a time not told or with */
			       /* their switch in unreported too */
};

/* Indexes of ks_inferred in each scheduler collector's .bss (bpf/sched.bpf.h). */
enum { KS_INFERRED_IN = 0, KS_INFERRED_WAKEUP = 1 };

_Static_assert(sizeof(struct ks_sched_key) == 32, "ks_sched_key layout");
_Static_assert(sizeof(struct ks_sched_slot) == 16, "ks_sched_slot layout");

#endif /* KSIGHT_SCHED_H */
