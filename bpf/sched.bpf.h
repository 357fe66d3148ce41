/* Kernel-side pieces shared by the scheduler collectors (runqlat, offcpu): per-thread slots, task CPU, row look-up. */
#ifndef KSIGHT_SCHED_BPF_H
#define KSIGHT_SCHED_BPF_H

#include "common.bpf.h"
#include "ksight/sched.h"

/* Fixed before load, so the verifier drops the modes not in use. */
const volatile __u32 ks_by = KS_SCHED_BY_NONE;
const volatile __u32 ks_nsub = 1;	/* rows per key in the array modes */
const volatile __u32 ks_slot_mask = 0; /* slots - 1 (a power of two >= pid_max) */

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_sched_lost lost = {};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_sched_slot);
} ks_slots SEC(".maps");

/*
 * The row maps of a scheduler collector, rows of @value_t: an array for
 * the array modes ([gen][key][sub]; by cpu, each CPU's copy of [gen][sub])
 * and a hash for the others, both sized by the loader, and the zeroed
 * source for new hash rows (too big for the BPF stack).  The hash is
 * preallocated: creating a row under the runqueue lock must not depend
 * on an allocation that can fail there.
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
	} hrows SEC(".maps")

/* task_cpu() lived in task_struct.cpu from v5.3 until commit bcf9033e5449
 * ("sched: move CPU field back into thread_info if THREAD_INFO_IN_TASK=y", v5.16). */
struct task_struct___cpu_old {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 ks_task_cpu(struct task_struct *t, bool trusted)
{
	struct task_struct___cpu_old *o = (void *)t;

	if (bpf_core_field_exists(t->thread_info.cpu))
		return KS_RD(trusted, t, thread_info.cpu);
	return KS_RD(trusted, o, cpu);
}

/*
 * Now, on the clock of @t's runqueue: rq->clock, which the scheduler has
 * just updated at every point these collectors hook (ttwu and
 * wake_up_new_task before enqueueing, __schedule before picking), and
 * which run_delay in /proc/PID/schedstat is measured with.  Three plain
 * loads instead of bpf_ktime_get_ns, a helper call that cost 30-40 ns a
 * call on the development machine, twice per wakeup and switch.  Like
 * run_delay it reads the last update, so a switch whose clock update the
 * scheduler skipped (a wakeup that preempts) is timed from that wakeup.
 * The rq is reached through se.cfs_rq (CONFIG_FAIR_GROUP_SCHED); without
 * it, bpf_ktime_get_ns, at both ends of every interval alike.
 */
static __always_inline __u64 ks_sched_now(struct task_struct *t, bool trusted)
{
	if (!bpf_core_field_exists(t->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, rq))
		return bpf_ktime_get_ns();
	if (trusted)
		return t->se.cfs_rq->rq->clock;
	return BPF_CORE_READ(t, se.cfs_rq, rq, clock);
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

/* Keys per buffer half in the array modes. */
static __always_inline __u32 ks_array_keys(void)
{
	if (ks_by == KS_SCHED_BY_PRIO)
		return KS_SCHED_PRIOS;
	if (ks_by == KS_SCHED_BY_POLICY)
		return KS_SCHED_POLICIES;
	return 1; /* NONE, and CPU: each CPU's copy is its row */
}

static __always_inline bool ks_by_hash(void)
{
	return ks_by >= KS_SCHED_BY_PID;
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
 * @rows in the array modes, of @hrows (created from @zero) in the hash
 * modes.  NULL, counted in lost.map_full, when the hash has no room.
 */
static __always_inline void *ks_sched_row(void *rows, void *hrows, const void *zero, struct task_struct *t,
					  __u32 sub, bool trusted)
{
	__u32 gen = ks_gen & 1;
	struct ks_sched_key k = {};
	void *v;

	if (!ks_by_hash()) {
		__u32 key = 0, idx;

		if (ks_by == KS_SCHED_BY_PRIO) {
			int prio = KS_RD(trusted, t, prio);

			key = prio >= 0 && prio < KS_SCHED_PRIOS - 1 ? (__u32)prio : KS_SCHED_PRIOS - 1;
		} else if (ks_by == KS_SCHED_BY_POLICY) {
			key = KS_RD(trusted, t, policy) & (KS_SCHED_POLICIES - 1);
		}
		idx = (gen * ks_array_keys() + key) * ks_nsub + sub;
		return bpf_map_lookup_elem(rows, &idx);
	}
	k.gen = gen;
	k.sub = sub;
	if (ks_by == KS_SCHED_BY_PID) {
		struct task_struct *l = KS_RD(trusted, t, group_leader);

		k.id = KS_RD(trusted, t, tgid);
		ks_copy_comm(k.comm, l, trusted);
	} else if (ks_by == KS_SCHED_BY_TID) {
		k.id = KS_RD(trusted, t, pid);
		ks_copy_comm(k.comm, t, trusted);
	} else if (ks_by == KS_SCHED_BY_COMM) {
		ks_copy_comm(k.comm, t, trusted);
	} else {
		k.id = ks_task_cgroup_id(t, trusted);
	}
	v = bpf_map_lookup_elem(hrows, &k);
	if (v)
		return v;
	bpf_map_update_elem(hrows, &k, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(hrows, &k);
	if (!v)
		__sync_fetch_and_add(&lost.map_full, 1);
	return v;
}

/* The running state at sched_switch: 0, as prev_state reports it. */
#define KS_TASK_RUNNING 0

/*
 * prev_state is an argument of sched_switch since v5.18 (commit fa2c3254d7cf,
 * "sched/tracing: Don't re-read p->state when emitting sched_switch event");
 * before, it is read from the task, whose field was "state" until v5.14
 * (commit 2f064a59a11f, "sched: Change task_struct::state").  The loader
 * counts the tracepoint's arguments in the kernel's BTF (clang-14 has no
 * bpf_core_type_matches) and sets this.
 */
const volatile bool ks_switch_has_state = true;

struct task_struct___state_old {
	long state;
} __attribute__((preserve_access_index));

/* Arguments of sched_switch from the raw context of tp_btf and raw_tp. */
static __always_inline unsigned int ks_switch_state(unsigned long long *ctx, struct task_struct *prev, bool trusted)
{
	struct task_struct___state_old *o = (void *)prev;

	if (ks_switch_has_state)
		return (unsigned int)ctx[3];
	if (bpf_core_field_exists(prev->__state))
		return KS_RD(trusted, prev, __state);
	return (unsigned int)KS_RD(trusted, o, state);
}

/* Declares the tp_btf and raw_tp programs of sched_switch around one body. */
#define KS_SCHED_SWITCH_PROGS(body)                                                              \
	SEC("tp_btf/sched_switch")                                                               \
	int sched_switch__tp_btf(unsigned long long *ctx)                                        \
	{                                                                                        \
		struct task_struct *prev = (void *)ctx[1];                                       \
		return body((bool)ctx[0], prev, (void *)ctx[2], ks_switch_state(ctx, prev, true), true); \
	}                                                                                        \
	SEC("raw_tp/sched_switch")                                                               \
	int sched_switch__raw_tp(unsigned long long *ctx)                                        \
	{                                                                                        \
		struct task_struct *prev = (void *)ctx[1];                                       \
		return body((bool)ctx[0], prev, (void *)ctx[2], ks_switch_state(ctx, prev, false), false); \
	}

#endif /* KSIGHT_SCHED_BPF_H */
