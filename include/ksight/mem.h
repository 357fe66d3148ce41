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

/* Event counts of one row; per-CPU, made at a task's first event. */
struct ks_mem_count {
	__u64 faults_user;
	__u64 faults_kernel;
	__u64 kswapd_wakeups;
	__u64 oom_kills; /* pid mode: times this process was chosen as the OOM victim */
	__u64 migrated_pages;
	__u64 numa_migrated_pages; /* of those, moved by NUMA balancing */
};

/* Stall latencies of one row; per-CPU, made only for tasks that stall. */
struct ks_mem_stall {
	__u64 reclaims[2]; /* direct, memcg */
	__u64 reclaimed_pages;
	__u64 reclaim_sum;
	__u64 reclaim_max;
	__u64 compact_sum;
	__u64 compact_max;
	__u64 _pad;
	__u64 reclaim[KS_HIST_SLOTS]; /* both kinds of reclaim */
	__u64 compact[KS_HIST_SLOTS];
};

/* A stall in progress: the thread and its kind. */
struct ks_mem_skey {
	__u32 tid;
	__u32 kind;
};

/* Counters in .bss, reported after every run. */
struct ks_mem_counts {
	__u64 map_full;	   /* no room (or no free element at hand) for a row */
	__u64 starts_full; /* no room to remember a stall in progress: it goes untimed */
	__u64 oom_kills;   /* every OOM victim, whatever the filters */
};

_Static_assert(sizeof(struct ks_mem_skey) == 8, "ks_mem_skey layout");

#endif /* KSIGHT_MEM_H */
