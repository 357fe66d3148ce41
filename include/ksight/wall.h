/* Map layouts of the wall collector (where a thread's wall-clock time went), shared by bpf/wall.bpf.c and src/collectors/wall.c. */
#ifndef KSIGHT_WALL_H
#define KSIGHT_WALL_H

#include "sched.h"

/*
 * The states a thread's time is split into; every nanosecond of a
 * thread's life inside the window is in exactly one.
 */
enum ks_wall_state {
	KS_WALL_ONCPU = 0,	/* running */
	KS_WALL_RUNNABLE = 1,	/* runnable, waiting for a CPU */
	KS_WALL_THROTTLED = 2,	/* runnable, but its cgroup's CPU quota is spent (switched out throttled) */
	KS_WALL_BLKIO = 3,	/* D in io_schedule (task->in_iowait): block I/O */
	KS_WALL_DSTATE = 4,	/* other uninterruptible (D) */
	KS_WALL_LOCK = 5,	/* S in futex waits (FUTEX_WAIT*, LOCK_PI*, futex_waitv) */
	KS_WALL_NETPIPE = 6,	/* S in read, write, recv*, send*, poll, epoll, select: sockets, pipes */
	KS_WALL_SLEEP = 7,	/* S in nanosleep, clock_nanosleep */
	KS_WALL_OTHER_SLEEP = 8, /* any other S, and TASK_IDLE */
	KS_WALL_OTHER = 9,	/* stopped, traced, frozen, ... */
	KS_WALL_STATES = 10,
};

/*
 * wall --stacks: the state of a stack row (ks_prof_key.sc - 1).  Off-CPU
 * rows take the KS_WALL_* state the thread left its CPU in (or was woken
 * to: runnable); on-CPU samples KS_WALL_ONCPU when they interrupted the
 * kernel (cpu_sys) and KS_WALL_STACK_USER when user mode (cpu_user).
 */
#define KS_WALL_STACK_USER KS_WALL_STATES

/* The blocking syscall a thread is in, remembered at sys_enter (bits 8..15 of its slot's flags). */
enum ks_wall_sys {
	KS_WALL_SYS_NONE = 0,
	KS_WALL_SYS_LOCK = 1,
	KS_WALL_SYS_NET = 2,
	KS_WALL_SYS_SLEEP = 3,
};
#define KS_WALL_SYS_SHIFT 8

/*
 * One thread's row of a buffer half (always keyed by tid: the --by
 * roll-ups are made in user space, which must know each thread's open
 * state to cut it at the window's end).  ns[] holds the intervals ended
 * in this half, cut at the half's start; last/last_ts the state the
 * thread entered last and when (KS_WALL_STATES: it exited).
 */
struct ks_wall_stat {
	char comm[KS_COMM_LEN];
	__u32 pid; /* tgid */
	__u32 last;
	__u64 last_ts;
	__u64 cgroup_id; /* by cgroup only, else 0 */
	__u64 ns[KS_WALL_STATES];
	/* the thread's task_struct utime and stime (ns, by ticks) at its last transition: the on-CPU split */
	__u64 utime, stime;
};

_Static_assert(sizeof(struct ks_wall_stat) == 136, "ks_wall_stat layout");

#endif /* KSIGHT_WALL_H */
