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
/* Or'ed into the class: between lock:contention_begin and _end of a sleeping kernel lock (a sleep then is a lock wait). */
#define KS_WALL_SYS_KLOCK 0x40

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

/*
 * --by lock: a thread in the lock state has its lock remembered here
 * (tid-keyed hash): the futex word, or the kernel lock of
 * lock:contention_begin; @start when it went to sleep on it, @waker the
 * thread whose sched_waking ended the sleep (the mutex holder at unlock).
 */
enum ks_wall_lock_kind {
	KS_WALL_LOCK_PRIVATE = 0, /* futex with FUTEX_PRIVATE_FLAG: the address is the process's */
	KS_WALL_LOCK_SHARED = 1,  /* futex without it: the address is still the waiter's process's */
	KS_WALL_LOCK_KERNEL = 2,  /* lock:contention_begin's lock (sleeping kernel locks only) */
};
struct ks_wall_lock_wait {
	__u64 addr;
	__u64 start; /* 0: not asleep on it yet */
	__u32 waker, waker_pid;
	__u32 kind;
	__u32 pad;
};
_Static_assert(sizeof(struct ks_wall_lock_wait) == 32, "ks_wall_lock_wait layout");

/* One sleep on a lock, ended by a wakeup: a ring buffer record. */
struct ks_wall_lock_ev {
	__u64 addr;
	__u64 start, end; /* bpf_ktime_get_ns */
	__u32 pid, tid;
	__u32 waker, waker_pid; /* 0: no sched_waking seen for it */
	__u32 kind;
	__u32 pad;
	char comm[KS_COMM_LEN];	      /* the waiter's process (group leader) */
	char waker_comm[KS_COMM_LEN]; /* the waker thread's */
};
_Static_assert(sizeof(struct ks_wall_lock_ev) == 80, "ks_wall_lock_ev layout");

#endif /* KSIGHT_WALL_H */
