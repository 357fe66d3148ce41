/* Kernel-side pieces shared by the scheduler collectors (runqlat, offcpu): per-thread slots, task CPU, row look-up. */
#ifndef KSIGHT_SCHED_BPF_H
#define KSIGHT_SCHED_BPF_H

#include "common.bpf.h"
#include "compat.bpf.h"
#include "ksight/sched.h"

/* Fixed before load, so the verifier drops the modes not in use. */
const volatile __u32 ks_by = KS_SCHED_BY_NONE;
const volatile __u32 ks_nsub = 1;	/* rows per key in the array modes */
const volatile __u32 ks_slot_mask = 0; /* slots - 1 (a power of two >= pid_max) */

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_sched_lost lost = {};
/* Events counted in the "other" row of each buffer half (the hash was full); user space empties a drained half's. */
__u64 ks_to_other[2] = {};
/* Intervals timed from sched_info, their end (KS_INFERRED_IN) or start (KS_INFERRED_WAKEUP) unreported. */
__u64 ks_inferred[2] = {};
/* When the programs were attached (bpf_ktime_get_ns), set by user space: no wait that began before counts. */
__u64 ks_since = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_sched_slot);
} ks_slots SEC(".maps");

/*
 * The row maps of a scheduler collector, rows of @value_t, sized by the
 * loader from the memory budget (src/collectors/sched.c); the maps a mode
 * does not use get one entry.
 * - rows: per-CPU array.  By nothing, cpu and policy: [gen][key][sub], the
 *   rate is every switch of the machine and the keys few.  By prio: the
 *   "other" row of each half ([gen][sub]).
 * - hrows: per-CPU hash, by prio: up to 141 keys, each as hot as policy's
 *   but too many for an array of per-CPU histograms at 128+ CPUs.
 * - srows: shared hash, by pid, tid, comm and cgroup: many keys, each hit
 *   at the rate of its own threads; one copy a row, updated with atomics.
 * - sother: the shared modes' "other" row of each half ([gen][sub]).
 * Hashes are preallocated: creating a row under the runqueue lock must
 * not depend on an allocation that can fail there.  A row the hash has no
 * room for goes to "other", counted in ks_to_other.
 */
#define KS_SCHED_ROW_MAPS(value_t)                               \
	static const value_t zero_stat = {};                     \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);         \
		__uint(max_entries, 1);                          \
		__type(key, __u32);                              \
		__type(value, value_t);                          \
	} rows SEC(".maps");                                     \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);          \
		__uint(max_entries, 1);                          \
		__type(key, struct ks_sched_key);                \
		__type(value, value_t);                          \
	} hrows SEC(".maps");                                    \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_HASH);                 \
		__uint(max_entries, 1);                          \
		__type(key, struct ks_sched_key);                \
		__type(value, value_t);                          \
	} srows SEC(".maps");                                    \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_ARRAY);                \
		__uint(max_entries, 1);                          \
		__type(key, __u32);                              \
		__type(value, value_t);                          \
	} sother SEC(".maps")

/* Whether rows are shared by all CPUs (updated with atomics). */
static __always_inline bool ks_rows_shared(void)
{
	return ks_by >= KS_SCHED_BY_PID;
}

/* Adds @v to a counter of a row, atomically when rows are shared. */
#define KS_ROW_ADD(field, v)                                      \
	do {                                                      \
		if (ks_rows_shared())                             \
			__sync_fetch_and_add(&(field), (v));      \
		else                                              \
			(field) += (v);                           \
	} while (0)

/*
 * Adds one value to a row's histogram.  The max of a shared row is a
 * plain compare and store: two CPUs ending waits of one row in the same
 * few nanoseconds may keep the smaller (a tid row never races: one thread
 * ends one interval at a time).
 */
static __always_inline void ks_sched_hist_add(struct ks_sched_hist *h, __u64 v)
{
	__u32 slot = ks_hist_slot_max(v, KS_SCHED_HIST_SLOTS);

	KS_ROW_ADD(h->sum, v);
	KS_ROW_ADD(h->slots[slot], 1);
	if (v > h->max)
		h->max = v;
}

/*
 * Now: bpf_ktime_get_ns at both ends of every interval.  Not rq->clock,
 * though three plain loads cost less than this helper call: the scheduler
 * skips its update on some paths (a wakeup that preempts the current task
 * leaves the next switch with the wakeup's clock), which put ~40% of a
 * same-CPU ping-pong's waits under 100 ns.  run_delay in
 * /proc/PID/schedstat is measured on rq->clock, so totals compare with it
 * only approximately.
 */
static __always_inline __u64 ks_sched_now(void)
{
	return bpf_ktime_get_ns();
}

/* The slot of @tid, or NULL (only if the map is smaller than the mask says). */
static __always_inline struct ks_sched_slot *ks_slot(__u32 tid)
{
	__u32 idx = tid & ks_slot_mask;

	return bpf_map_lookup_elem(&ks_slots, &idx);
}

/* The slot of @t when it holds an interval of @t's that is open (ts set), else NULL. */
static __always_inline struct ks_sched_slot *ks_slot_open(struct task_struct *t, bool trusted)
{
	__u32 tid = KS_RD(trusted, t, pid);
	struct ks_sched_slot *s;

	if (!tid)
		return NULL; /* the idle tasks */
	s = ks_slot(tid);
	if (!s || s->tid != tid || !s->ts)
		return NULL;
	return s;
}

/*
 * The kernel does not report every scheduler event.  On some kernels no
 * tracepoint reaches any consumer while certain tasks are on the CPU
 * (perf and bpftrace miss them too; on the development VM, its PID 1's
 * threads): their switches out, so the task they hand the CPU to is
 * switched in unseen, and the wakeups that interrupts raise meanwhile.  A
 * run the kernel skips (recursion) misses one too.  Where an interval's
 * end or start went unseen, sched_info, which the scheduler keeps itself,
 * still tells when it was.
 *
 * For a task @prev switched out at @now whose slot still holds an
 * interval open since @since: a slot is open only while its task is off
 * the CPU, so the switch in that ended it went unseen.  Without this, the
 * interval was never counted (offcpu) or ran on over the task's next
 * sleep (runqlat).  Returns when @prev got its CPU, counted in
 * ks_inferred[KS_INFERRED_IN]; or 0 where the kernel does not tell
 * (counted in lost.unseen_in): the interval is dropped.
 */
static __always_inline __u64 ks_sched_unseen_in(struct task_struct *prev, __u64 since, __u64 now, bool trusted)
{
	__u64 end = ks_task_switched_in(prev, since, now, trusted);

	__sync_fetch_and_add(end ? &ks_inferred[KS_INFERRED_IN] : &lost.unseen_in, 1);
	return end;
}

/*
 * runqlat: for a task @next switched in at @now with no wait open though
 * its slot is its own (a thread already seen in this run): the wakeup
 * that began the wait went unseen.  Returns when @next was queued,
 * counted in ks_inferred[KS_INFERRED_WAKEUP]; or 0 where the kernel does
 * not tell (counted in lost.unseen_wakeup) or the wait began before
 * ks_since.
 */
static __always_inline __u64 ks_sched_unseen_wakeup(struct task_struct *next, __u64 now, bool trusted)
{
	__u64 waited;

	if (!ks_task_sched_age(next, trusted, true, &waited) || waited >= now) {
		__sync_fetch_and_add(&lost.unseen_wakeup, 1);
		return 0;
	}
	/* a migration before its first switch in claims the slot of a task queued before the run */
	if (!ks_since || now - waited < ks_since)
		return 0;
	__sync_fetch_and_add(&ks_inferred[KS_INFERRED_WAKEUP], 1);
	return now - waited;
}

/* Keys per buffer half in the per-CPU array modes. */
static __always_inline __u32 ks_array_keys(void)
{
	if (ks_by == KS_SCHED_BY_POLICY)
		return KS_SCHED_POLICIES;
	return 1; /* NONE, and CPU: each CPU's copy is its row */
}

static __always_inline bool ks_by_array(void)
{
	return ks_by == KS_SCHED_BY_NONE || ks_by == KS_SCHED_BY_CPU || ks_by == KS_SCHED_BY_POLICY;
}

static __always_inline void ks_copy_comm(char *dst, struct task_struct *t, bool trusted)
{
	if (trusted)
		__builtin_memcpy(dst, t->comm, KS_COMM_LEN);
	else
		bpf_core_read(dst, KS_COMM_LEN, &t->comm);
}

/*
 * The row of @t (split @sub) in the current buffer half: an element of
 * @rows in the array modes, of @hrows or @srows (created from @zero) in
 * the hash modes, or, when the hash has no room, the "other" row of the
 * half (@rows or @sother).  By pid and tid the row's first bytes, its
 * comm, are set to the task's name now: the key holds no name, so a
 * process that execs keeps one row and shows its new name.
 */
static __always_inline void *ks_sched_row(void *rows, void *hrows, void *srows, void *sother, const void *zero,
					  struct task_struct *t, __u32 sub, bool trusted)
{
	__u32 gen = ks_gen & 1, idx;
	enum ks_init_miss miss = 0;
	struct ks_sched_key k = {};
	void *map, *v;

	if (ks_by_array()) {
		__u32 key = 0;

		if (ks_by == KS_SCHED_BY_POLICY)
			key = KS_RD(trusted, t, policy) & (KS_SCHED_POLICIES - 1);
		idx = (gen * ks_array_keys() + key) * ks_nsub + sub;
		return bpf_map_lookup_elem(rows, &idx);
	}
	k.gen = gen;
	k.sub = sub;
	if (ks_by == KS_SCHED_BY_PRIO) {
		int prio = KS_RD(trusted, t, prio);

		k.id = prio >= 0 && prio < KS_SCHED_PRIOS - 1 ? (__u64)prio : (__u64)-1;
	} else if (ks_by == KS_SCHED_BY_PID) {
		k.id = KS_RD(trusted, t, tgid);
	} else if (ks_by == KS_SCHED_BY_TID) {
		k.id = KS_RD(trusted, t, pid);
	} else if (ks_by == KS_SCHED_BY_COMM) {
		ks_copy_comm(k.comm, t, trusted);
	} else {
		k.id = ks_task_cgroup_id(t, trusted);
	}
	map = ks_by == KS_SCHED_BY_PRIO ? hrows : srows;
	v = ks_map_lookup_or_init(map, &k, zero, NULL, &miss, &lost.update_failed);
	if (v) {
		if (ks_by == KS_SCHED_BY_PID)
			ks_copy_comm(v, KS_RD(trusted, t, group_leader), trusted);
		else if (ks_by == KS_SCHED_BY_TID)
			ks_copy_comm(v, t, trusted);
		return v;
	}
	/* refused by the map's lock (counted): the event is lost, not the "other" row's, which is for keys with no room */
	if (miss == KS_INIT_FAILED)
		return NULL;
	__sync_fetch_and_add(&ks_to_other[gen], 1);
	idx = gen * ks_nsub + sub;
	v = bpf_map_lookup_elem(ks_by == KS_SCHED_BY_PRIO ? rows : sother, &idx);
	if (!v)
		__sync_fetch_and_add(&lost.map_full, 1);
	return v;
}

/* The running state at sched_switch: 0, as prev_state reports it. */
#define KS_TASK_RUNNING 0

/*
 * prev_state is an argument of sched_switch since v5.18 (commit
 * fa2c3254d7cf, "sched/tracing: Don't re-read p->state when emitting
 * sched_switch event"); before, it is read from the task (ks_task_state,
 * compat.bpf.h).  Not a CO-RE relocation: the loader counts the
 * tracepoint's arguments in the kernel's BTF (clang-14 has no
 * bpf_core_type_matches) and sets this.
 */
const volatile bool ks_switch_has_state = true;

/* The state @prev switched out in, from the raw context of tp_btf and raw_tp sched_switch. */
static __always_inline unsigned int ks_switch_state(unsigned long long *ctx, struct task_struct *prev, bool trusted)
{
	if (ks_switch_has_state)
		return (unsigned int)ctx[3];
	return ks_task_state(prev, trusted);
}

/*
 * Declares the tp_btf and raw_tp programs of sched_switch around one body
 * (bpf/hooks.bpf.h): the arguments are read from the context, as kernels
 * before v5.18 pass no prev_state.
 */
#define KS_SCHED_SWITCH_PROGS(body)                                                     \
	KS_BTF_RAW_CTX_PROGS(sched_switch, sched_switch, ({                             \
				     struct task_struct *prev = (void *)ctx[1];         \
				     body((bool)ctx[0], prev, (void *)ctx[2],           \
					  ks_switch_state(ctx, prev, trusted), trusted); \
			     }))

#endif /* KSIGHT_SCHED_BPF_H */
