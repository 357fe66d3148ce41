/* Kernel side of `ksight wall`: each thread's time split into states (on-CPU, runnable, throttled, I/O, lock, ...) at every sched_switch and wakeup. */
#include "sched.bpf.h"
#include "ksight/wall.h"
#include "wall_state.bpf.h"

KS_SCHED_ROW_MAPS(struct ks_wall_stat);

/*
 * When each buffer half began (bpf_ktime_get_ns), set by user space just
 * before it flips ks_gen: an interval ended in a half counts from the
 * half's start at the earliest; the part before was the previous
 * window's, which user space cut at its end from the row's last state.
 */
__u64 ks_wall_start[2] = {};
/*
 * A thread switched out throttled: its cfs_rq and that cfs_rq's
 * throttled_clock_self_time then.  At its switch in, the growth of that
 * total is the part of the interval its group was throttled; the rest,
 * after the unthrottle (which no tracepoint reports), it waited for a CPU.
 * Few threads are throttled at once: a small hash, filled only then.
 */
struct thr_mark {
	__u64 cfs_rq;
	__u64 self_time;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct thr_mark);
} thr_marks SEC(".maps");

/* by cgroup: each row keeps its thread's cgroup id (a helper walk per transition, so only then) */
const volatile bool wall_cgroup = false;

/* @t's cfs_rq (0 without CONFIG_FAIR_GROUP_SCHED) and its throttled time so far (v5.19+, else 0). */
static __always_inline __u64 cfs_throttled_ns(struct task_struct *t, __u64 *cfs)
{
	struct cfs_rq *c;

	*cfs = 0;
	if (!bpf_core_field_exists(t->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, throttled_clock_self_time))
		return 0;
	c = BPF_CORE_READ(t, se.cfs_rq);
	*cfs = (__u64)c;
	return c ? BPF_CORE_READ(c, throttled_clock_self_time) : 0;
}

/*
 * Of @t's throttled interval [@ts, @now], the part its cfs_rq was
 * throttled (the whole, where the kernel does not tell or the thread
 * moved to another CPU's cfs_rq).
 */
static __always_inline __u64 throttled_part(struct task_struct *t, __u32 tid, __u64 ts, __u64 now)
{
	struct thr_mark *m = bpf_map_lookup_elem(&thr_marks, &tid);
	__u64 cfs, self, part = now - ts;

	if (!m)
		return part;
	self = cfs_throttled_ns(t, &cfs);
	if (cfs && cfs == m->cfs_rq && self >= m->self_time && self - m->self_time < part)
		part = self - m->self_time;
	bpf_map_delete_elem(&thr_marks, &tid);
	return part;
}

/* @t switches out throttled: marks where its cfs_rq's throttled time stands. */
static __always_inline void mark_throttled(struct task_struct *t, __u32 tid)
{
	struct thr_mark m = {};

	m.self_time = cfs_throttled_ns(t, &m.cfs_rq);
	if (m.cfs_rq && bpf_map_update_elem(&thr_marks, &tid, &m, BPF_ANY))
		__sync_fetch_and_add(&lost.update_failed, 1);
}

/*
 * @t (thread @tid, slot @s) enters state @st at @now (KS_WALL_STATES: it
 * exits): the state it was in is added to its row, from its start or
 * this half's, whichever is later.  An untracked thread (@s not its own
 * or no state open) starts being tracked here.
 */
static __always_inline void enter(struct task_struct *t, __u32 tid, struct ks_sched_slot *s, __u32 st, __u64 now,
				  bool trusted)
{
	__u32 gen = ks_gen & 1, cur = KS_WALL_STATES;
	struct ks_wall_stat *r;
	__u64 from = s->ts;

	if (s->tid == tid && from) {
		cur = s->flags & 0xff;
	} else {
		if (s->tid != tid && from)
			__sync_fetch_and_add(&lost.slot_collisions, 1);
		s->tid = tid;
		s->flags = 0;
	}
	r = ks_sched_row(&rows, &hrows, &srows, &sother, &zero_stat, t, 0, trusted);
	if (r) {
		if (from < ks_wall_start[gen])
			from = ks_wall_start[gen];
		if (cur == KS_WALL_THROTTLED) {
			__u64 thr = throttled_part(t, tid, s->ts, now);

			/* throttled first, then runnable from the unthrottle on: each cut at this half's start */
			if (s->ts + thr > from)
				__sync_fetch_and_add(&r->ns[KS_WALL_THROTTLED], s->ts + thr - from);
			if (now > s->ts + thr && now > from)
				__sync_fetch_and_add(&r->ns[KS_WALL_RUNNABLE],
						     now - (s->ts + thr > from ? s->ts + thr : from));
		} else if (cur < KS_WALL_STATES && now > from) {
			__sync_fetch_and_add(&r->ns[cur], now - from);
		}
		r->pid = KS_RD(trusted, t, tgid);
		r->last = st;
		r->last_ts = now;
		r->utime = KS_RD(trusted, t, utime);
		r->stime = KS_RD(trusted, t, stime);
		if (wall_cgroup)
			r->cgroup_id = ks_task_cgroup_id(t, trusted);
	}
	s->flags = (s->flags & ~0xffu) | (st & 0xff);
	s->ts = st < KS_WALL_STATES ? now : 0;
}

/* The slot of @t if it is tracked (passed the filter when first seen), else NULL. */
static __always_inline struct ks_sched_slot *tracked(struct task_struct *t, __u32 tid)
{
	struct ks_sched_slot *s;

	if (!tid)
		return NULL; /* the idle tasks */
	s = ks_slot(tid);
	if (!s || s->tid != tid || !s->ts)
		return NULL;
	return s;
}

/* PF_EXITING (include/linux/sched.h): set in do_exit before sched_process_exit */
#define PF_EXITING 0x00000004

/*
 * The slot of @t, tracked or to be tracked: NULL when @t fails the
 * filter, or is exiting (its life ended at sched_process_exit: what the
 * exit path does after is not counted, so that no later event opens a
 * state that its last switch out, if unreported, would leave open).
 */
static __always_inline struct ks_sched_slot *slot_of(struct task_struct *t, __u32 tid, bool trusted)
{
	struct ks_sched_slot *s = tracked(t, tid);

	if (s || !tid || (KS_RD(trusted, t, flags) & PF_EXITING) ||
	    !ks_filter_pass_task(t, bpf_get_smp_processor_id(), ~0u, trusted))
		return s;
	return ks_slot(tid);
}

/*
 * --by lock.  A futex wait remembers its word at sys_enter (arg 0; for
 * futex_waitv the first waiter's), a sleeping kernel lock its address at
 * lock:contention_begin; the sleep on it starts at the switch out in the
 * lock state, its waker is the thread whose sched_waking targets it
 * (the holder that unlocked), and it ends at sched_wakeup, where one
 * record goes to user space, which rolls them up per lock.
 */
const volatile bool wall_locks = false;
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* --by lock: set from the budget */
	__type(key, __u32);
	__type(value, struct ks_wall_lock_wait);
} lock_waits SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* --by lock: set from the budget */
} lock_events SEC(".maps");
/* lock sleeps lost: no room in lock_waits or lock_events */
__u64 lock_lost = 0;

#define FUTEX_PRIVATE_FLAG 128
#define FUTEX2_PRIVATE 128
/* lock:contention_begin flags (include/trace/events/lock.h): a spinning wait never sleeps */
#define LCB_F_SPIN (1U << 0)

/* struct futex_waitv (include/uapi/linux/futex.h) */
struct ks_futex_waitv {
	__u64 val, uaddr;
	__u32 flags, reserved;
};

/* Notes @tid's lock (@how: BPF_NOEXIST where a futex wait noted first must stay); no room is a lost sleep. */
static __always_inline void lock_note(__u32 tid, __u64 addr, __u32 kind, __u64 how)
{
	struct ks_wall_lock_wait w = { .addr = addr, .kind = kind };
	int err = bpf_map_update_elem(&lock_waits, &tid, &w, how);

	if (err && err != -KS_EEXIST)
		__sync_fetch_and_add(&lock_lost, 1);
}

/* sys_enter/exit of a tracked thread: a futex wait's word noted, and forgotten at its exit (@sys: its class). */
static __always_inline void lock_sys(struct pt_regs *regs, long nr, __u32 tid, __u16 sys, bool enter_, bool trusted)
{
	struct ks_futex_waitv wv = {};
	__u64 addr;
	__u32 kind;

	if (sys != KS_WALL_SYS_LOCK)
		return;
	if (!enter_) {
		bpf_map_delete_elem(&lock_waits, &tid);
		return;
	}
	if (nr == NR_FUTEX) {
		addr = KS_RD(trusted, regs, di);
		kind = KS_RD(trusted, regs, si) & FUTEX_PRIVATE_FLAG ? KS_WALL_LOCK_PRIVATE : KS_WALL_LOCK_SHARED;
	} else {
		bpf_probe_read_user(&wv, sizeof(wv), (void *)KS_RD(trusted, regs, di));
		addr = wv.uaddr;
		kind = wv.flags & FUTEX2_PRIVATE ? KS_WALL_LOCK_PRIVATE : KS_WALL_LOCK_SHARED;
	}
	lock_note(tid, addr, kind, BPF_ANY);
}

/* The thread @tid goes to sleep on its lock at @now. */
static __always_inline void lock_sleep(__u32 tid, __u64 now)
{
	struct ks_wall_lock_wait *w = bpf_map_lookup_elem(&lock_waits, &tid);

	if (w && !w->start) {
		w->start = now;
		w->waker = w->waker_pid = 0;
	}
}

/* sched_waking: the current thread wakes @p; if @p sleeps on a lock, it is the waker. */
static __always_inline int on_waking(struct task_struct *p, bool trusted)
{
	__u32 tid = KS_RD(trusted, p, pid);
	struct ks_wall_lock_wait *w;
	__u64 cur;

	if (!wall_locks)
		return 0;
	w = bpf_map_lookup_elem(&lock_waits, &tid);
	if (!w || !w->start)
		return 0;
	cur = bpf_get_current_pid_tgid();
	w->waker = (__u32)cur;
	w->waker_pid = cur >> 32;
	return 0;
}

/* sched_wakeup of @p (thread @tid), asleep on a lock: its sleep's record to user space. */
static __always_inline void lock_woken(struct task_struct *p, __u32 tid, bool trusted)
{
	struct ks_wall_lock_wait *w = bpf_map_lookup_elem(&lock_waits, &tid);
	struct ks_wall_lock_ev *e;

	if (!w || !w->start)
		return;
	e = bpf_ringbuf_reserve(&lock_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lock_lost, 1);
		w->start = 0;
		return;
	}
	e->addr = w->addr;
	e->start = w->start;
	e->end = ks_sched_now();
	e->pid = KS_RD(trusted, p, tgid);
	e->tid = tid;
	e->waker = w->waker;
	e->waker_pid = w->waker_pid;
	e->kind = w->kind;
	e->pad = 0;
	BPF_CORE_READ_STR_INTO(&e->comm, p, group_leader, comm);
	e->waker_comm[0] = 0;
	if (w->waker)
		bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
	bpf_ringbuf_submit(e, 0);
	w->start = 0;
}

/*
 * lock:contention_begin/end (v5.19+; probed once by user space, which
 * disables these programs without them): a tracked thread waiting on a
 * sleeping kernel lock is marked in its slot, so that a sleep then counts
 * as a lock wait; under --by lock the lock is noted unless a futex wait is.
 */
static __always_inline int on_contention(void *lock, __u32 flags, bool begin)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ks_sched_slot *s;
	struct ks_wall_lock_wait *w;

	if (begin && (flags & LCB_F_SPIN))
		return 0;
	s = ks_slot(tid);
	if (!tid || !s || s->tid != tid || !s->ts)
		return 0;
	if (begin) {
		s->flags |= KS_WALL_SYS_KLOCK << KS_WALL_SYS_SHIFT;
		if (wall_locks)
			lock_note(tid, (__u64)lock, KS_WALL_LOCK_KERNEL, BPF_NOEXIST);
		return 0;
	}
	if (!(s->flags & (KS_WALL_SYS_KLOCK << KS_WALL_SYS_SHIFT)))
		return 0;
	s->flags &= ~(KS_WALL_SYS_KLOCK << KS_WALL_SYS_SHIFT);
	if (wall_locks) {
		w = bpf_map_lookup_elem(&lock_waits, &tid);
		if (w && w->kind == KS_WALL_LOCK_KERNEL)
			bpf_map_delete_elem(&lock_waits, &tid);
	}
	return 0;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state, bool trusted)
{
	__u32 ptid = KS_RD(trusted, prev, pid), ntid = KS_RD(trusted, next, pid), st;
	struct ks_sched_slot *s;
	__u64 now = ks_sched_now();

	s = slot_of(prev, ptid, trusted);
	if (s) {
		if (!preempt && (prev_state & ST_DEAD))
			st = KS_WALL_STATES;
		else
			st = state_out(prev, preempt, prev_state, s->tid == ptid ? s->flags >> KS_WALL_SYS_SHIFT : 0);
		enter(prev, ptid, s, st, now, trusted);
		if (st == KS_WALL_THROTTLED)
			mark_throttled(prev, ptid);
		if (st == KS_WALL_LOCK && wall_locks)
			lock_sleep(ptid, now);
	}
	s = slot_of(next, ntid, trusted);
	if (s)
		enter(next, ntid, s, KS_WALL_ONCPU, now, trusted);
	return 0;
}

/* sched_wakeup, sched_wakeup_new: @p, blocked (or new), becomes runnable. */
static __always_inline int on_wakeup(struct task_struct *p, bool trusted)
{
	__u32 tid = KS_RD(trusted, p, pid);
	struct ks_sched_slot *s = slot_of(p, tid, trusted);

	if (!s)
		return 0;
	/* a wakeup of a thread still on its CPU or queued (ttwu_runnable) changes nothing */
	if (s->tid == tid && s->ts && (s->flags & 0xff) < KS_WALL_BLKIO)
		return 0;
	if (wall_locks && s->tid == tid && s->ts && (s->flags & 0xff) == KS_WALL_LOCK)
		lock_woken(p, tid, trusted);
	enter(p, tid, s, KS_WALL_RUNNABLE, ks_sched_now(), trusted);
	return 0;
}

/* sched_process_exit: @p, on its CPU, ends its life here (each thread's exit, not only a process's). */
static __always_inline int on_exit(struct task_struct *p, bool trusted)
{
	__u32 tid = KS_RD(trusted, p, pid);
	struct ks_sched_slot *s = tracked(p, tid);

	if (s)
		enter(p, tid, s, KS_WALL_STATES, ks_sched_now(), trusted);
	/* a thread killed in a futex wait never reaches its sys_exit: its noted lock goes here */
	if (wall_locks)
		bpf_map_delete_elem(&lock_waits, &tid);
	return 0;
}

/* sys_enter, sys_exit: a tracked thread's blocking system call, for the state it sleeps in. */
static __always_inline int on_sys(struct pt_regs *regs, long nr, bool enter_, bool trusted)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ks_sched_slot *s = ks_slot(tid);
	__u16 sys = 0;

	if (!tid || !s || s->tid != tid || !s->ts)
		return 0;
	/* x86_64: the second argument, futex's op, is in si */
	if (enter_)
		sys = sys_class(nr, nr == NR_FUTEX ? KS_RD(trusted, regs, si) : 0);
	if (wall_locks)
		lock_sys(regs, nr, tid, enter_ ? sys : (s->flags >> KS_WALL_SYS_SHIFT) & ~KS_WALL_SYS_KLOCK, enter_,
			 trusted);
	s->flags = (s->flags & 0xff) | (sys << KS_WALL_SYS_SHIFT);
	return 0;
}

KS_SCHED_SWITCH_PROGS(on_switch)
KS_BTF_RAW_PROGS(sched_wakeup, sched_wakeup, on_wakeup(p, trusted), struct task_struct *p)
KS_BTF_RAW_PROGS(sched_wakeup_new, sched_wakeup_new, on_wakeup(p, trusted), struct task_struct *p)
KS_BTF_RAW_PROGS(sched_process_exit, sched_process_exit, on_exit(p, trusted), struct task_struct *p)
KS_BTF_RAW_PROGS(sys_enter, sys_enter, on_sys(regs, id, true, trusted), struct pt_regs *regs, long id)
KS_BTF_RAW_PROGS(sys_exit, sys_exit, on_sys(regs, 0, false, trusted), struct pt_regs *regs, long ret)
KS_BTF_RAW_PROGS(lock_waking, sched_waking, on_waking(p, trusted), struct task_struct *p)
KS_BTF_RAW_PROGS(contention_begin, contention_begin, on_contention(lock, flags, true), void *lock, unsigned int flags)
KS_BTF_RAW_PROGS(contention_end, contention_end, on_contention(lock, 0, false), void *lock, int ret)
