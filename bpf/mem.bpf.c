/* Kernel side of `ksight mem`: page faults, reclaim and compaction stalls, kswapd wakeups, OOM kills, migrations. */
#include "common.bpf.h"
#include "ksight/mem.h"

const volatile __u32 by_mode = KS_MEM_BY_PID;

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_mem_counts counts = {};

static const struct ks_mem_count zero_count = {};
/* too big for the BPF stack */
static const struct ks_mem_stall zero_stall = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_row_key);
	__type(value, struct ks_mem_count);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_row_key);
	__type(value, struct ks_mem_stall);
} stalls SEC(".maps");

/* Start of the stall in progress on each thread, by kind. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct ks_mem_skey);
	__type(value, __u64);
} starts SEC(".maps");

KS_PID_COMM_MAP(pid_comm);

/* The row key of the current task in the current buffer half. */
static __always_inline void task_key(struct ks_row_key *k, __u64 pid_tgid)
{
	k->gen = ks_gen & 1;
	if (by_mode == KS_MEM_BY_PID)
		k->id = pid_tgid >> 32;
	else if (by_mode == KS_MEM_BY_COMM)
		bpf_get_current_comm(k->comm, sizeof(k->comm));
	else
		k->cgroup = bpf_get_current_cgroup_id();
}

static __always_inline void *row(void *map, const struct ks_row_key *k, const void *zero)
{
	bool created = false;
	void *v = ks_map_lookup_or_init(map, k, zero, &created);

	if (!v) {
		__sync_fetch_and_add(&counts.map_full, 1);
		return NULL;
	}
	if (created && by_mode == KS_MEM_BY_PID) {
		char comm[KS_COMM_LEN];

		/* in pid mode the current task is the row's, except for OOM victims */
		if ((__u32)(bpf_get_current_pid_tgid() >> 32) == k->id) {
			bpf_get_current_comm(comm, sizeof(comm));
			bpf_map_update_elem(&pid_comm, &k->id, comm, BPF_NOEXIST);
		}
	}
	return v;
}

static __always_inline struct ks_mem_count *current_events(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_row_key k = {};

	if (!ks_filter_pass(pid_tgid))
		return NULL;
	task_key(&k, pid_tgid);
	return row(&events, &k, &zero_count);
}

static __always_inline int on_fault(bool user)
{
	struct ks_mem_count *c = current_events();

	if (c) {
		if (user)
			c->faults_user++;
		else
			c->faults_kernel++;
	}
	return 0;
}

static __always_inline int on_kswapd_wakeup(void)
{
	struct ks_mem_count *c = current_events();

	if (c)
		c->kswapd_wakeups++;
	return 0;
}

static __always_inline int on_stall_begin(__u32 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts;
	struct ks_mem_skey sk = { .tid = (__u32)pid_tgid, .kind = kind };

	if (!ks_filter_pass(pid_tgid))
		return 0;
	ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&starts, &sk, &ts, BPF_ANY))
		__sync_fetch_and_add(&counts.starts_full, 1);
	return 0;
}

static __always_inline int on_stall_end(__u32 kind, __u64 nr_reclaimed)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_mem_skey sk = { .tid = (__u32)pid_tgid, .kind = kind };
	struct ks_row_key k = {};
	struct ks_mem_stall *s;
	__u64 *ts = bpf_map_lookup_elem(&starts, &sk), delta;
	__u32 slot;

	/* a begin seen proves the thread passed the filters then */
	if (!ts)
		return 0;
	delta = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&starts, &sk);
	task_key(&k, pid_tgid);
	s = row(&stalls, &k, &zero_stall);
	if (!s)
		return 0;
	slot = ks_hist_slot(delta);
	if (kind == KS_MEM_COMPACT) {
		s->compact_sum += delta;
		if (delta > s->compact_max)
			s->compact_max = delta;
		if (slot < KS_HIST_SLOTS)
			s->compact[slot]++;
		return 0;
	}
	s->reclaims[kind & 1]++;
	s->reclaimed_pages += nr_reclaimed;
	s->reclaim_sum += delta;
	if (delta > s->reclaim_max)
		s->reclaim_max = delta;
	if (slot < KS_HIST_SLOTS)
		s->reclaim[slot]++;
	return 0;
}

/* --- hot and frequent events: one variant per hook type --- */

#define MEM_VARIANT(v, kind)                                                              \
	SEC(kind "/page_fault_user")                                                      \
	int BPF_PROG(mem_fault_user__##v)                                                 \
	{                                                                                 \
		return on_fault(true);                                                    \
	}                                                                                 \
	SEC(kind "/page_fault_kernel")                                                    \
	int BPF_PROG(mem_fault_kernel__##v)                                               \
	{                                                                                 \
		return on_fault(false);                                                   \
	}                                                                                 \
	SEC(kind "/mm_vmscan_wakeup_kswapd")                                              \
	int BPF_PROG(mem_kswapd__##v)                                                     \
	{                                                                                 \
		return on_kswapd_wakeup();                                                \
	}                                                                                 \
	SEC(kind "/mm_vmscan_direct_reclaim_begin")                                       \
	int BPF_PROG(mem_direct_begin__##v)                                               \
	{                                                                                 \
		return on_stall_begin(KS_MEM_RECLAIM_DIRECT);                             \
	}                                                                                 \
	SEC(kind "/mm_vmscan_direct_reclaim_end")                                         \
	int BPF_PROG(mem_direct_end__##v, unsigned long nr_reclaimed)                     \
	{                                                                                 \
		return on_stall_end(KS_MEM_RECLAIM_DIRECT, nr_reclaimed);                 \
	}                                                                                 \
	SEC(kind "/mm_vmscan_memcg_reclaim_begin")                                        \
	int BPF_PROG(mem_memcg_begin__##v)                                                \
	{                                                                                 \
		return on_stall_begin(KS_MEM_RECLAIM_MEMCG);                              \
	}                                                                                 \
	SEC(kind "/mm_vmscan_memcg_reclaim_end")                                          \
	int BPF_PROG(mem_memcg_end__##v, unsigned long nr_reclaimed)                      \
	{                                                                                 \
		return on_stall_end(KS_MEM_RECLAIM_MEMCG, nr_reclaimed);                  \
	}                                                                                 \
	SEC(kind "/mm_compaction_begin")                                                  \
	int BPF_PROG(mem_compact_begin__##v)                                              \
	{                                                                                 \
		return on_stall_begin(KS_MEM_COMPACT);                                    \
	}                                                                                 \
	SEC(kind "/mm_compaction_end")                                                    \
	int BPF_PROG(mem_compact_end__##v)                                                \
	{                                                                                 \
		return on_stall_end(KS_MEM_COMPACT, 0);                                   \
	}

MEM_VARIANT(tp_btf, "tp_btf")
MEM_VARIANT(raw_tp, "raw_tp")

SEC("tracepoint/exceptions/page_fault_user")
int mem_fault_user__tp(void *ctx)
{
	return on_fault(true);
}

SEC("tracepoint/exceptions/page_fault_kernel")
int mem_fault_kernel__tp(void *ctx)
{
	return on_fault(false);
}

SEC("tracepoint/vmscan/mm_vmscan_wakeup_kswapd")
int mem_kswapd__tp(void *ctx)
{
	return on_kswapd_wakeup();
}

SEC("tracepoint/vmscan/mm_vmscan_direct_reclaim_begin")
int mem_direct_begin__tp(void *ctx)
{
	return on_stall_begin(KS_MEM_RECLAIM_DIRECT);
}

SEC("tracepoint/vmscan/mm_vmscan_direct_reclaim_end")
int mem_direct_end__tp(struct trace_event_raw_mm_vmscan_direct_reclaim_end_template *ctx)
{
	return on_stall_end(KS_MEM_RECLAIM_DIRECT, ctx->nr_reclaimed);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin")
int mem_memcg_begin__tp(void *ctx)
{
	return on_stall_begin(KS_MEM_RECLAIM_MEMCG);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_end")
int mem_memcg_end__tp(struct trace_event_raw_mm_vmscan_direct_reclaim_end_template *ctx)
{
	return on_stall_end(KS_MEM_RECLAIM_MEMCG, ctx->nr_reclaimed);
}

SEC("tracepoint/compaction/mm_compaction_begin")
int mem_compact_begin__tp(void *ctx)
{
	return on_stall_begin(KS_MEM_COMPACT);
}

SEC("tracepoint/compaction/mm_compaction_end")
int mem_compact_end__tp(void *ctx)
{
	return on_stall_end(KS_MEM_COMPACT, 0);
}

/*
 * --- rare events: classic tracepoints in every variant ---
 * Their arguments moved between kernels (mm_migrate_pages gained
 * large_folio_split before reason, mark_victim went from a pid to a task),
 * which tp_btf cannot follow; the trace format's fields can be relocated
 * by name.
 */

SEC("tracepoint/migrate/mm_migrate_pages")
int mem_migrate(struct trace_event_raw_mm_migrate_pages *ctx)
{
	struct ks_mem_count *c = current_events();
	__u64 n = ctx->succeeded;

	if (c) {
		c->migrated_pages += n;
		if (ctx->reason == bpf_core_enum_value(enum migrate_reason, MR_NUMA_MISPLACED))
			c->numa_migrated_pages += n;
	}
	return 0;
}

SEC("tracepoint/oom/mark_victim")
int mem_oom(struct trace_event_raw_mark_victim *ctx)
{
	struct ks_row_key k = { .gen = ks_gen & 1 };
	struct ks_mem_count *c;

	__sync_fetch_and_add(&counts.oom_kills, 1);
	/* the victim is not the task at hand: only pid mode can name its row */
	if (by_mode != KS_MEM_BY_PID)
		return 0;
	k.id = (__u32)ctx->pid;
	if ((ks_filter.flags & KS_F_TGID) && k.id != ks_filter.tgid)
		return 0;
	c = row(&events, &k, &zero_count);
	if (c)
		c->oom_kills++;
	return 0;
}
