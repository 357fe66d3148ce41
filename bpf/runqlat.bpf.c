/* Kernel side of `ksight runqlat`: run-queue wait (runnable -> on CPU) per --by key, with switch, wakeup and migration counts. */
#include "sched.bpf.h"
#include "ksight/runqlat.h"

KS_SCHED_ROW_MAPS(struct ks_rq_stat);

static __always_inline struct ks_rq_stat *row_of(struct task_struct *t, bool trusted)
{
	return ks_sched_row(&rows, &hrows, &srows, &sother, &zero_stat, t, 0, trusted);
}

/*
 * True when sched_wakeup runs on the target's own CPU for a wakeup that
 * another CPU queued there (ttwu_queue_wakelist: the target was idle or in
 * another LLC): the target runqueue's ttwu_pending stays set while
 * sched_ttwu_pending() activates the list, since v6.2 (commit d6962c4fe8f9,
 * "sched: Clear ttwu_pending after enqueue_task()"; before, it was cleared
 * first, and sched_waking supplies the waker's CPU instead).  A local
 * wakeup racing with a queued remote one reads as remote too: rare, and
 * only overcounts.
 * Older kernels and those without the way there: see
 * ks_task_rq_ttwu_pending (compat.bpf.h).
 */
static __always_inline bool queued_remotely(struct task_struct *p, bool trusted)
{
	return ks_task_rq_ttwu_pending(p, trusted);
}

/*
 * sched_waking, on the waker's CPU before the target is chosen: only where
 * the wakeup itself cannot tell a queued wakeup from a local one (see
 * ks_sched_wakelist_marked), it leaves the waker's CPU in the slot.
 */
static __always_inline int on_waking(struct task_struct *p, bool trusted)
{
	__u32 tid = KS_RD(trusted, p, pid), cpu = bpf_get_smp_processor_id();
	struct ks_sched_slot *s;

	if (!tid || cpu >= KS_SLOT_WAKER_CPUS || !ks_filter_pass_task(p, 0, ~KS_F_CPU, trusted))
		return 0;
	s = ks_slot(tid);
	/* an open wait (this thread's, preempted while going to sleep, or a
	 * colliding one's) keeps its flags, and sched_wakeup leaves it too */
	if (!s || s->ts)
		return 0;
	if (s->tid != tid) {
		s->tid = tid;
		s->migr = 0;
	}
	s->flags = (__u16)(KS_SLOT_WAKER | (cpu << KS_SLOT_WAKER_SHIFT));
	return 0;
}

/* sched_wakeup, sched_wakeup_new (@new_task): @p becomes runnable. */
static __always_inline int on_wakeup(struct task_struct *p, bool trusted, bool new_task)
{
	__u32 tid = KS_RD(trusted, p, pid), cpu;
	struct ks_sched_slot *s;
	__u16 flags = KS_SLOT_WOKEN;
	__u64 now;

	/* a wakeup of a task still on its CPU (woken before it reached
	 * schedule()) does not queue it: its wait, if any, starts when it
	 * is switched out runnable */
	if (!tid || KS_RD(trusted, p, on_cpu))
		return 0;
	if (!ks_filter_pass_task(p, 0, ~KS_F_CPU, trusted))
		return 0;
	s = ks_slot(tid);
	if (!s)
		return 0;
	if (s->tid == tid && s->ts)
		return 0; /* already queued (preempted in a sleeping state): the wait began then */
	if (s->tid != tid && s->ts)
		__sync_fetch_and_add(&lost.slot_collisions, 1); /* another thread's open wait (tids alias) */
	now = ks_sched_now();
	cpu = ks_task_cpu(p, trusted);
	/* a new task has no sched_waking: what its slot holds is a dead thread's */
	if (!new_task && s->tid == tid && (s->flags & KS_SLOT_WAKER)) {
		if ((__u32)(s->flags >> KS_SLOT_WAKER_SHIFT) != cpu)
			flags |= KS_SLOT_CROSS;
	} else if (bpf_get_smp_processor_id() != cpu || queued_remotely(p, trusted)) {
		flags |= KS_SLOT_CROSS;
	}
	if (s->tid != tid) {
		s->tid = tid;
		s->migr = 0;
	}
	s->flags = flags;
	s->ts = now;
	return 0;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state, bool trusted)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 tid = KS_RD(trusted, prev, pid);
	struct ks_sched_slot *s;
	struct ks_rq_stat *r, *r_prev = NULL;
	bool runnable = preempt || prev_state == KS_TASK_RUNNING;
	/*
	 * One stamp, first, for both ends, when either needs it (next's slot
	 * is an inlined array lookup): taken after prev's filter and row (a
	 * hash lookup, slower under load), next's wait grew by their cost, and
	 * short waits (a wakeup preempting its waker, ~0.5 us) read long.
	 */
	__u64 now = runnable || ks_slot_open(next, trusted) ? ks_sched_now() : 0, ts;
	__u16 flags, migr;

	/* prev: a preempted (or yielding) task stays queued, its wait begins now */
	if (tid && ks_filter_pass_task(prev, cpu, ~KS_F_CPU, trusted)) {
		/* -C: switches count on the CPU they happen on, a wait on the one it ends on */
		if (!(ks_filter.flags & KS_F_CPU) || ks_cpu_allowed(cpu))
			r = r_prev = row_of(prev, trusted);
		else
			r = NULL;
		if (r) {
			if (runnable)
				KS_ROW_ADD(r->involuntary, 1);
			else
				KS_ROW_ADD(r->voluntary, 1);
		}
		if (runnable && (s = ks_slot(tid))) {
			if (s->tid != tid) {
				if (s->ts)
					__sync_fetch_and_add(&lost.slot_collisions, 1);
				s->tid = tid;
				s->migr = 0;
			}
			s->flags = 0;
			s->ts = now;
		}
	}

	/* next: its wait ends; the filter was applied when the wait began */
	s = ks_slot_open(next, trusted);
	if (!s)
		return 0;
	ts = s->ts;
	flags = s->flags;
	migr = s->migr;
	s->ts = 0;
	s->migr = 0;
	if ((ks_filter.flags & KS_F_CPU) && !ks_cpu_allowed(cpu))
		return 0;
	/* by nothing or by cpu, prev's row on this CPU is next's row too */
	r = r_prev && (ks_by == KS_SCHED_BY_NONE || ks_by == KS_SCHED_BY_CPU) ? r_prev : row_of(next, trusted);
	if (!r)
		return 0;
	ks_sched_hist_add(&r->lat, now > ts ? now - ts : 0);
	if (flags & KS_SLOT_WOKEN)
		KS_ROW_ADD(r->wakeups, 1);
	if (flags & KS_SLOT_CROSS)
		KS_ROW_ADD(r->cross_cpu, 1);
	if (migr)
		KS_ROW_ADD(r->migrations, migr);
	return 0;
}

/* A migration is charged to the wait it happens in, when that wait ends. */
static __always_inline int on_migrate(struct task_struct *p, int dest_cpu, bool trusted)
{
	__u32 tid = KS_RD(trusted, p, pid);
	struct ks_sched_slot *s;

	if (!tid || ks_task_cpu(p, trusted) == (__u32)dest_cpu)
		return 0;
	s = ks_slot(tid);
	if (!s)
		return 0;
	/* a waking task migrates before sched_wakeup opens its wait */
	if (s->tid != tid) {
		if (s->ts)
			return 0; /* another thread's open wait: leave it */
		s->tid = tid;
		s->migr = 0;
	}
	s->migr++;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup__tp_btf, struct task_struct *p)
{
	return on_wakeup(p, true, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new__tp_btf, struct task_struct *p)
{
	return on_wakeup(p, true, true);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking__tp_btf, struct task_struct *p)
{
	return on_waking(p, true);
}

KS_SCHED_SWITCH_PROGS(on_switch)

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(sched_migrate_task__tp_btf, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup__raw_tp, struct task_struct *p)
{
	return on_wakeup(p, false, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new__raw_tp, struct task_struct *p)
{
	return on_wakeup(p, false, true);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(sched_waking__raw_tp, struct task_struct *p)
{
	return on_waking(p, false);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(sched_migrate_task__raw_tp, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, false);
}
