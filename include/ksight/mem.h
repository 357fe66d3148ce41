/* Map layouts of the mem collector, shared by bpf/mem.bpf.c and src/collectors/mem.c. */
#ifndef KSIGHT_MEM_H
#define KSIGHT_MEM_H

#include "hist.h"
#include "filter.h"
#include "rowkey.h"

enum ks_mem_by {
	KS_MEM_BY_PID = 0,
	KS_MEM_BY_COMM = 1,
	KS_MEM_BY_CGROUP = 2,
};

/* Kinds of stall, timed from their begin to their end tracepoint on one thread. */
enum ks_mem_stall_kind {
	KS_MEM_RECLAIM_DIRECT = 0, /* vmscan:mm_vmscan_direct_reclaim_* (zone watermarks) */
	KS_MEM_RECLAIM_MEMCG = 1,  /* vmscan:mm_vmscan_memcg_reclaim_* (a cgroup's limit) */
	KS_MEM_COMPACT = 2,	   /* compaction:mm_compaction_begin/end (one zone) */
	KS_MEM_NKINDS = 3,
};

/*
 * Page faults of one row: the only frequent events, so the only per-CPU
 * values (16 bytes a CPU), made at a task's first fault.
 */
struct ks_mem_fault {
	__u64 user;
	__u64 kernel;
};

/*
 * Histogram length: stalls below 2^36 ns (68 s); longer ones share the
 * last slot (their max is still exact).  u32 slots: one interval of one
 * row never sees 4 billion stalls.
 */
#define KS_MEM_SLOTS KS_HIST_SLOTS_BELOW(36)

/*
 * The rare events of one row (stalls, kswapd wakeups, OOM kills,
 * migrations): one copy shared by all CPUs, updated with atomic adds, made
 * only for tasks that have such events.  The maxima are updated without a
 * lock: two stalls of one row ending at the same instant may keep the
 * smaller.
 */
struct ks_mem_rare {
	__u64 kswapd_wakeups;
	__u64 oom_kills; /* times this row's task was chosen as the OOM victim */
	__u64 migrated_pages;
	__u64 numa_migrated_pages; /* of those, moved by NUMA balancing */
	__u64 reclaims[2];	   /* direct, memcg */
	__u64 reclaimed_pages;
	__u64 reclaim_sum;
	__u64 reclaim_max;
	__u64 compact_sum;
	__u64 compact_max;
	__u64 _pad;
	__u32 reclaim[KS_MEM_SLOTS]; /* both kinds of reclaim */
	__u32 compact[KS_MEM_SLOTS];
};

/* A stall in progress: the thread and its kind. */
struct ks_mem_skey {
	__u32 tid;
	__u32 kind;
};

/* An OOM victim named by its signal, for kernels whose oom:mark_victim gives only a pid. */
struct ks_mem_victim {
	__u32 tgid;
	__u32 pass; /* it passed the filters */
	__u64 cgroup;
	char comm[KS_COMM_LEN];
};

/* Counters in .bss, reported after every run. */
struct ks_mem_counts {
	__u64 map_full;	   /* events with no row at all, not even "other" (never expected) */
	__u64 starts_full; /* no room to remember a stall in progress: it goes untimed */
	__u64 oom_kills;   /* every OOM victim, whatever the filters */
	__u64 to_other;	   /* events counted in the "other" row: no room for their own */
	__u64 row_errors;  /* rows refused for another cause than a full map (no memory, a busy lock) */
	__u64 row_errno;   /* the errno of the last such refusal, for -v */
	__u64 update_failed; /* a stall's start or an OOM victim's name not stored, or not removed: the map's lock refused */
};

_Static_assert(sizeof(struct ks_mem_skey) == 8, "ks_mem_skey layout");
_Static_assert(sizeof(struct ks_mem_fault) == 16, "ks_mem_fault layout");
_Static_assert(sizeof(struct ks_mem_rare) % 8 == 0, "ks_mem_rare layout");
_Static_assert(sizeof(struct ks_mem_victim) == 32, "ks_mem_victim layout");

#endif /* KSIGHT_MEM_H */
