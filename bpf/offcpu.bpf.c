/* Kernel side of `ksight offcpu`: time from a blocking sched_switch out to the switch back in, per --by key and state. */
#include "sched.bpf.h"
#include "ksight/offcpu.h"

KS_SCHED_ROW_MAPS(struct ks_off_stat);

/* task->__state bits (include/linux/sched.h; TASK_DEAD is 0x80 since v4.14) */
#define ST_INTERRUPTIBLE 0x0001
#define ST_UNINTERRUPTIBLE 0x0002
#define ST_DEAD 0x0080
#define ST_NOLOAD 0x0400

static __always_inline __u16 state_of(unsigned int st)
{
	if (st & ST_UNINTERRUPTIBLE)
		return (st & ST_NOLOAD) ? KS_OFF_I : KS_OFF_D; /* TASK_IDLE: a kernel thread waiting for work */
	if (st & ST_INTERRUPTIBLE)
		return KS_OFF_S;
	return KS_OFF_OTHER;
}

/* Ends the interval open in @t's slot @s at @end (0: its end was not told, the loss counted) in @t's row. */
static __always_inline void end_interval(struct task_struct *t, struct ks_sched_slot *s, __u64 end, bool trusted)
{
	__u64 ts = s->ts;
	struct ks_off_stat *r;

	s->ts = 0;
	if (!end)
		return;
	r = ks_sched_row(&rows, &hrows, &srows, &sother, &zero_stat, t, s->flags & (KS_OFF_STATES - 1), trusted);
	if (r)
		ks_sched_hist_add(&r->off, end > ts ? end - ts : 0);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state, bool trusted)
{
	__u32 tid = KS_RD(trusted, prev, pid);
	struct ks_sched_slot *s;
	__u64 now = 0;

	/* prev leaves the CPU with an interval still open: its switch in went unseen */
	s = ks_slot_open(prev, trusted);
	if (s) {
		now = ks_sched_now();
		end_interval(prev, s, ks_sched_unseen_in(prev, s->ts, now, trusted), trusted);
	}

	/* prev blocks (a preempted task is runnable: runqlat's business);
	 * an exiting task never comes back, so it opens nothing */
	if (tid && !preempt && prev_state != KS_TASK_RUNNING && !(prev_state & ST_DEAD) &&
	    ks_filter_pass_task(prev, bpf_get_smp_processor_id(), ~0u, trusted) && (s = ks_slot(tid))) {
		if (s->tid != tid && s->ts)
			__sync_fetch_and_add(&lost.slot_collisions, 1);
		if (!now)
			now = ks_sched_now();
		s->tid = tid;
		s->flags = state_of(prev_state);
		s->ts = now;
	}

	/* next comes back: the filter was applied when it left */
	s = ks_slot_open(next, trusted);
	if (!s)
		return 0;
	if (!now)
		now = ks_sched_now();
	end_interval(next, s, now, trusted);
	return 0;
}

KS_SCHED_SWITCH_PROGS(on_switch)
