/* Kernel side of `ksight mem`: page faults, reclaim and compaction stalls, kswapd wakeups, OOM kills, migrations. */
#include "common.bpf.h"
#include "ksight/mem.h"

#define KS_SIGKILL 9

const volatile __u32 by_mode = KS_MEM_BY_PID;
/* Arguments of migrate:mm_migrate_pages in this kernel (from its BTF): `reason` is the last */
const volatile __u32 migrate_nargs = 7;

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_mem_counts counts = {};

static const struct ks_mem_fault zero_fault = {};
/* too big for the BPF stack */
static const struct ks_mem_rare zero_rare = {};

/*
 * Memory budget (issue 11): page faults are the only frequent events, so
 * only their two counters are per-CPU (16 bytes a CPU: 2.1 KiB a row at 128
 * CPUs, against 6 KiB before and 1.2 MiB for the old per-CPU histograms);
 * everything rare lives in one shared row updated with atomics.  Both maps
 * are preallocated: a row is made without allocating, so it cannot fail
 * under memory pressure (the very moment mem is run for) or because the
 * allocator's per-CPU cache is empty with interrupts off, which is where
 * rows were refused from maps far from full.  Row counts come from the
 * budget (src/collectors/mem.c); events without room for their own row
 * land in the "other" row of their half, counted in counts.to_other.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_row_key);
	__type(value, struct ks_mem_fault);
} faults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_row_key);
	__type(value, struct ks_mem_rare);
} rare SEC(".maps");

/* The "other" rows, by buffer half: they cannot be missing. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct ks_mem_fault);
} other_faults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct ks_mem_rare);
} other_rare SEC(".maps");

/* Start of the stall in progress on each thread, by kind. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_mem_skey);
	__type(value, __u64);
} starts SEC(".maps");

/* Kernels whose oom:mark_victim gives a pid only: the targets of SIGKILL, by tid, until it names one. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct ks_mem_victim);
} victims SEC(".maps");

KS_PID_COMM_MAP(pid_comm);
KS_PID_COMM_EXEC(pid_comm)

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

/*
 * The row of @k in @map, made from @zero when absent (*@created then
 * true); NULL when it cannot be had, for the caller's "other" row.  Two
 * CPUs making the same row both get the one entry (EEXIST is no failure).
 */
static __always_inline void *row(void *map, const struct ks_row_key *k, const void *zero, bool *created)
{
	void *v = bpf_map_lookup_elem(map, k);
	int err;

	if (v)
		return v;
	/*
	 * The low 32 bits only: before 6.4 (d7ba4cc900bf "bpf: return long
	 * from bpf_map_ops funcs") the verifier calls the map's int-returning
	 * update directly, and -EEXIST reaches the program zero-extended.
	 */
	err = (int)bpf_map_update_elem(map, k, zero, BPF_NOEXIST);
	if (!err)
		*created = true;
	else if (err != -KS_EEXIST && err != -KS_E2BIG) {
		__sync_fetch_and_add(&counts.row_errors, 1);
		counts.row_errno = -err;
	}
	v = bpf_map_lookup_elem(map, k);
	if (!v)
		__sync_fetch_and_add(&counts.to_other, 1);
	return v;
}

/*
 * Pid mode: names a new row of the current process by its group leader's
 * name, as /proc/PID/comm does (a thread may have named itself otherwise).
 * Later renames and execs update it (mem_rename; KS_PID_COMM_EXEC where
 * the kernel has no task_rename).
 */
static __always_inline void name_current(const struct ks_row_key *k)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct task_struct *leader = BPF_CORE_READ(t, group_leader);
	char comm[KS_COMM_LEN] = {};

	bpf_core_read_str(comm, sizeof(comm), &leader->comm);
	/* a name cache: a refusal loses no count (see KS_PID_COMM_MAP) */
	bpf_map_update_elem(&pid_comm, &k->id, comm, BPF_ANY);
}

static __always_inline void *other(void *map, __u32 gen)
{
	return bpf_map_lookup_elem(map, &gen);
}

/* The rare-events row of @k (the current task's when @cur), or the "other" one. */
static __always_inline struct ks_mem_rare *rare_row(const struct ks_row_key *k, bool cur)
{
	bool created = false;
	struct ks_mem_rare *r = row(&rare, k, &zero_rare, &created);

	if (!r)
		return other(&other_rare, k->gen);
	if (created && cur && by_mode == KS_MEM_BY_PID)
		name_current(k);
	return r;
}

static __always_inline struct ks_mem_rare *current_rare(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_row_key k = {};

	if (!ks_filter_pass(pid_tgid))
		return NULL;
	task_key(&k, pid_tgid);
	return rare_row(&k, true);
}

static __always_inline int on_fault(bool user)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_row_key k = {};
	struct ks_mem_fault *f;
	bool created = false;

	if (!ks_filter_pass(pid_tgid))
		return 0;
	/*
	 * Not a fault of the task's: a read that must not fault (a profiler
	 * copying the user stack from an NMI, a probe's bpf_probe_read_user)
	 * faulted on a page not yet there; the kernel fails the read without
	 * handling or counting it (faulthandler_disabled), so do we.
	 */
	if (!user && BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), pagefault_disabled))
		return 0;
	task_key(&k, pid_tgid);
	f = row(&faults, &k, &zero_fault, &created);
	if (!f)
		f = other(&other_faults, k.gen);
	else if (created && by_mode == KS_MEM_BY_PID)
		name_current(&k);
	if (!f) {
		__sync_fetch_and_add(&counts.map_full, 1);
		return 0;
	}
	/* per-CPU: plain increments */
	if (user)
		f->user++;
	else
		f->kernel++;
	return 0;
}

static __always_inline int on_kswapd_wakeup(void)
{
	struct ks_mem_rare *r = current_rare();

	if (r)
		__sync_fetch_and_add(&r->kswapd_wakeups, 1);
	return 0;
}

static __always_inline int on_stall_begin(__u32 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts;
	struct ks_mem_skey sk = { .tid = (__u32)pid_tgid, .kind = kind };
	long err;

	if (!ks_filter_pass(pid_tgid))
		return 0;
	ts = bpf_ktime_get_ns();
	/* either way the stall goes untimed; a refusal by the map's lock is counted apart from a full map */
	err = ks_map_update(&starts, &sk, &ts, BPF_ANY, &counts.update_failed);
	if (err && !ks_map_failed(err))
		__sync_fetch_and_add(&counts.starts_full, 1);
	return 0;
}

/* Keeps the larger: racy across CPUs (no atomic max before BPF cpu v3's cmpxchg), see ks_mem_rare. */
static __always_inline void set_max(__u64 *m, __u64 v)
{
	if (v > *m)
		*m = v;
}

static __always_inline int on_stall_end(__u32 kind, __u64 nr_reclaimed)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_mem_skey sk = { .tid = (__u32)pid_tgid, .kind = kind };
	struct ks_row_key k = {};
	struct ks_mem_rare *r;
	__u64 *ts = bpf_map_lookup_elem(&starts, &sk), delta;
	__u32 slot;

	/* a begin seen proves the thread passed the filters then */
	if (!ts)
		return 0;
	delta = bpf_ktime_get_ns() - *ts;
	/* a start left behind would time a later end whose begin went unseen */
	ks_map_delete(&starts, &sk, &counts.update_failed);
	task_key(&k, pid_tgid);
	r = rare_row(&k, true);
	if (!r) {
		__sync_fetch_and_add(&counts.map_full, 1);
		return 0;
	}
	slot = ks_hist_slot_max(delta, KS_MEM_SLOTS);
	if (kind == KS_MEM_COMPACT) {
		__sync_fetch_and_add(&r->compact_sum, delta);
		set_max(&r->compact_max, delta);
		__sync_fetch_and_add(&r->compact[slot], 1);
		return 0;
	}
	__sync_fetch_and_add(&r->reclaims[kind & 1], 1);
	__sync_fetch_and_add(&r->reclaimed_pages, nr_reclaimed);
	__sync_fetch_and_add(&r->reclaim_sum, delta);
	set_max(&r->reclaim_max, delta);
	__sync_fetch_and_add(&r->reclaim[slot], 1);
	return 0;
}

/* --- hot and frequent events: one variant per hook type --- */

KS_BTF_RAW_PROGS(mem_fault_user, page_fault_user, on_fault(true))
KS_BTF_RAW_PROGS(mem_fault_kernel, page_fault_kernel, on_fault(false))
KS_BTF_RAW_PROGS(mem_kswapd, mm_vmscan_wakeup_kswapd, on_kswapd_wakeup())
KS_BTF_RAW_PROGS(mem_direct_begin, mm_vmscan_direct_reclaim_begin, on_stall_begin(KS_MEM_RECLAIM_DIRECT))
KS_BTF_RAW_PROGS(mem_direct_end, mm_vmscan_direct_reclaim_end, on_stall_end(KS_MEM_RECLAIM_DIRECT, nr_reclaimed),
		 unsigned long nr_reclaimed)
KS_BTF_RAW_PROGS(mem_memcg_begin, mm_vmscan_memcg_reclaim_begin, on_stall_begin(KS_MEM_RECLAIM_MEMCG))
KS_BTF_RAW_PROGS(mem_memcg_end, mm_vmscan_memcg_reclaim_end, on_stall_end(KS_MEM_RECLAIM_MEMCG, nr_reclaimed),
		 unsigned long nr_reclaimed)
KS_BTF_RAW_PROGS(mem_compact_begin, mm_compaction_begin, on_stall_begin(KS_MEM_COMPACT))
KS_BTF_RAW_PROGS(mem_compact_end, mm_compaction_end, on_stall_end(KS_MEM_COMPACT, 0))

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
 * --- rare events: raw tracepoints in every variant ---
 * Their arguments changed between kernels (mm_migrate_pages gained
 * large_folio_split before reason: 7 arguments on 6.1, 8 on 6.18;
 * mark_victim went from a pid on 6.1 to the task on 6.18), so user space reads this kernel's layout from its BTF and sets
 * migrate_nargs, or picks mem_oom_task or mem_oom_pid.  raw_tp needs no
 * tracefs.
 */

SEC("raw_tp/mm_migrate_pages")
int mem_migrate(__u64 *ctx)
{
	struct ks_mem_rare *r;
	__u64 n = ctx[0], reason;

	/* a ctx load must have a constant offset, which clang merges away: read it as memory */
	if (migrate_nargs < 7 || migrate_nargs > 9 ||
	    bpf_probe_read_kernel(&reason, sizeof(reason), &ctx[migrate_nargs - 1]))
		return 0;
	r = current_rare();
	if (!r)
		return 0;
	__sync_fetch_and_add(&r->migrated_pages, n);
	if ((__u32)reason == bpf_core_enum_value(enum migrate_reason, MR_NUMA_MISPLACED))
		__sync_fetch_and_add(&r->numa_migrated_pages, n);
	return 0;
}

/* What names @t's rows (tgid, thread name, cgroup) and whether it passes the filters. */
static __always_inline void victim_of(struct task_struct *t, struct ks_mem_victim *v)
{
	v->tgid = BPF_CORE_READ(t, tgid);
	v->cgroup = ks_task_cgroup_id(t, false);
	bpf_core_read_str(v->comm, sizeof(v->comm), &t->comm);
	v->pass = ks_filter_pass_task(t, bpf_get_smp_processor_id(), ~0u, false);
}

/*
 * Counts an OOM kill in the victim's row: the victim is rarely the task
 * at hand (the allocating task that ran out of memory picks it), so the
 * row comes from the victim's own task_struct, in every mode.
 */
static __always_inline void oom_count(const struct ks_mem_victim *v)
{
	struct ks_row_key k = { .gen = ks_gen & 1 };
	struct ks_mem_rare *r;
	bool created = false;

	if (!v->pass)
		return;
	if (by_mode == KS_MEM_BY_PID)
		k.id = v->tgid;
	else if (by_mode == KS_MEM_BY_COMM)
		__builtin_memcpy(k.comm, v->comm, sizeof(k.comm));
	else
		k.cgroup = v->cgroup;
	r = row(&rare, &k, &zero_rare, &created);
	if (!r)
		r = other(&other_rare, k.gen);
	else if (created && by_mode == KS_MEM_BY_PID) /* a name cache (see KS_PID_COMM_MAP) */
		bpf_map_update_elem(&pid_comm, &k.id, v->comm, BPF_ANY);
	if (r)
		__sync_fetch_and_add(&r->oom_kills, 1);
}

/* Kernels that pass the victim (6.18 here): mark_victim(struct task_struct *task, uid_t uid). */
SEC("raw_tp/mark_victim")
int BPF_PROG(mem_oom_task, struct task_struct *t)
{
	struct ks_mem_victim v = {};

	__sync_fetch_and_add(&counts.oom_kills, 1);
	victim_of(t, &v);
	oom_count(&v);
	return 0;
}

/*
 * Older kernels: mark_victim(int pid).  __oom_kill_process sends the victim
 * SIGKILL just before it marks it, so the signal names the task; a task
 * marked without a signal (one already exiting, granted reserves) is current.
 */
SEC("raw_tp/signal_generate")
int BPF_PROG(mem_oom_signal, int sig, void *info, struct task_struct *t)
{
	struct ks_mem_victim v = {};
	__u32 pid;

	if (sig != KS_SIGKILL)
		return 0;
	pid = BPF_CORE_READ(t, pid);
	victim_of(t, &v);
	/* refused: its mark_victim finds no name, and the kill is in no row */
	ks_map_update(&victims, &pid, &v, BPF_ANY, &counts.update_failed);
	return 0;
}

SEC("raw_tp/mark_victim")
int BPF_PROG(mem_oom_pid, int pid)
{
	struct ks_mem_victim v = {}, *s;
	__u32 p = (__u32)pid;

	__sync_fetch_and_add(&counts.oom_kills, 1);
	s = bpf_map_lookup_elem(&victims, &p);
	if (s) {
		v = *s;
		/* left behind, it would name a later victim of the pid that gets no SIGKILL */
		ks_map_delete(&victims, &p, &counts.update_failed);
	} else if ((__u32)bpf_get_current_pid_tgid() == p) {
		victim_of((struct task_struct *)bpf_get_current_task(), &v);
	} else {
		return 0; /* not named: only the report-wide count has it */
	}
	oom_count(&v);
	return 0;
}

/*
 * Pid mode: a process renamed (prctl, /proc/PID/comm) keeps its row under
 * its new name, even when it exits before the report reads /proc.  Only
 * the group leader's name is the process's.  An exec fires task_rename
 * too (begin_new_exec sets the comm, after de_thread made the exec'ing
 * thread the leader), so where this program loads, mem leaves out
 * KS_PID_COMM_EXEC's, which would write the same name again.
 */
SEC("raw_tp/task_rename")
int BPF_PROG(mem_rename, struct task_struct *t, const char *comm)
{
	char c[KS_COMM_LEN] = {};
	__u32 tgid = BPF_CORE_READ(t, tgid);

	if (BPF_CORE_READ(t, pid) != tgid)
		return 0;
	bpf_probe_read_kernel_str(c, sizeof(c), comm);
	/* only rows already named: the others are named when made; a
	 * refusal loses no count (see KS_PID_COMM_MAP) */
	bpf_map_update_elem(&pid_comm, &tgid, c, BPF_EXIST);
	return 0;
}
