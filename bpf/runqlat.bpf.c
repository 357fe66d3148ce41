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

/*
 * Ends @t's wait begun at @start with @flags at @end (either 0: not told,
 * the loss counted), on @cpu, in @t's row (@r when the caller has it);
 * empties its slot @s, which holds the wait's migrations.
 */
static __always_inline void end_wait(struct task_struct *t, struct ks_sched_slot *s, __u64 start, __u16 flags,
				     __u64 end, __u32 cpu, struct ks_rq_stat *r, bool trusted)
{
	__u16 migr = s->migr;

	s->ts = 0;
	s->migr = 0;
	s->flags = 0;
	if (!start || !end || ((ks_filter.flags & KS_F_CPU) && !ks_cpu_allowed(cpu)))
		return;
	if (!r)
		r = row_of(t, trusted);
	if (!r)
		return;
	ks_sched_hist_add(&r->lat, end > start ? end - start : 0);
	if (flags & KS_SLOT_WOKEN)
		KS_ROW_ADD(r->wakeups, 1);
	if (flags & KS_SLOT_CROSS)
		KS_ROW_ADD(r->cross_cpu, 1);
	if (migr)
		KS_ROW_ADD(r->migrations, migr);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state, bool trusted)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 tid = KS_RD(trusted, prev, pid), ntid;
	struct ks_sched_slot *s;
	struct ks_rq_stat *r_prev = NULL;
	bool runnable = preempt || prev_state == KS_TASK_RUNNING, pass;
	/*
	 * One stamp, first, for both ends, when either needs it (next's slot
	 * is an inlined array lookup): taken after prev's filter and row (a
	 * hash lookup, slower under load), next's wait grew by their cost, and
	 * short waits (a wakeup preempting its waker, ~0.5 us) read long.
	 */
	__u64 now = runnable || ks_slot_open(next, trusted) ? ks_sched_now() : 0;

	pass = tid && ks_filter_pass_task(prev, cpu, ~KS_F_CPU, trusted);
	/* prev: -C: switches count on the CPU they happen on, a wait on the one it ends on */
	if (pass && (!(ks_filter.flags & KS_F_CPU) || ks_cpu_allowed(cpu))) {
		r_prev = row_of(prev, trusted);
		if (r_prev) {
			if (runnable)
				KS_ROW_ADD(r_prev->involuntary, 1);
			else
				KS_ROW_ADD(r_prev->voluntary, 1);
		}
	}
	s = tid ? ks_slot(tid) : NULL;
	if (s && s->tid == tid && s->ts) {
		/* prev leaves the CPU still waiting for it: its switch in went unseen (its row looked up
		 * again: one event a look-up, as to_other counts them) */
		if (!now)
			now = ks_sched_now();
		end_wait(prev, s, s->ts, s->flags, ks_sched_unseen_in(prev, s->ts, now, trusted), cpu, NULL, trusted);
	}
	if (s && s->tid == tid && !s->ts && s->flags == KS_SLOT_BLOCKED) {
		/* blocked when last seen, on a CPU since: a whole wait went unseen, its wakeup and switch in */
		__sync_fetch_and_add(&lost.unseen_wakeup, 1);
		s->flags = 0;
	}
	if (pass && s && runnable) {
		/* a preempted (or yielding) task stays queued, its wait begins now */
		if (s->tid != tid) {
			if (s->ts)
				__sync_fetch_and_add(&lost.slot_collisions, 1);
			s->tid = tid;
			s->migr = 0;
		}
		s->flags = 0;
		s->ts = now;
	} else if (pass && s && (s->tid == tid || !s->ts)) {
		/* a blocking task takes its slot too: a wakeup of it that goes unseen shows at its switch in */
		if (s->tid != tid) {
			s->tid = tid;
			s->migr = 0;
		}
		s->flags = KS_SLOT_BLOCKED;
	}

	/* next: its wait ends; the filter was applied when the wait began */
	ntid = KS_RD(trusted, next, pid);
	s = ntid ? ks_slot(ntid) : NULL;
	if (!s || s->tid != ntid)
		return 0;
	/* by nothing or by cpu, prev's row on this CPU is next's row too */
	if (!(ks_by == KS_SCHED_BY_NONE || ks_by == KS_SCHED_BY_CPU))
		r_prev = NULL;
	if (s->ts) {
		end_wait(next, s, s->ts, s->flags, now, cpu, r_prev, trusted);
	} else if (ks_filter_pass_task(next, 0, ~KS_F_CPU, trusted)) {
		/* a thread seen in this run back on a CPU with no wait open: its wakeup went unseen */
		if (!now)
			now = ks_sched_now();
		end_wait(next, s, ks_sched_unseen_wakeup(next, now, trusted), KS_SLOT_WOKEN, now, cpu, r_prev,
			 trusted);
	} else if (s->flags == KS_SLOT_BLOCKED) {
		s->flags = 0; /* woken, but its wakeup left out by the filter: nothing unseen */
	}
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

KS_BTF_RAW_PROGS(sched_wakeup, sched_wakeup, on_wakeup(p, trusted, false), struct task_struct *p)
KS_BTF_RAW_PROGS(sched_wakeup_new, sched_wakeup_new, on_wakeup(p, trusted, true), struct task_struct *p)
KS_BTF_RAW_PROGS(sched_waking, sched_waking, on_waking(p, trusted), struct task_struct *p)
KS_SCHED_SWITCH_PROGS(on_switch)
KS_BTF_RAW_PROGS(sched_migrate_task, sched_migrate_task, on_migrate(p, dest_cpu, trusted), struct task_struct *p,
		 int dest_cpu)
