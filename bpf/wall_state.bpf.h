/* The state a thread leaves its CPU in, as `ksight wall` tells it: shared by bpf/wall.bpf.c and the wall mode of bpf/profile.bpf.c (wall --stacks). */
#ifndef KSIGHT_WALL_STATE_BPF_H
#define KSIGHT_WALL_STATE_BPF_H

#include "common.bpf.h"
#include "ksight/wall.h"

/* task->__state bits (include/linux/sched.h) */
#define ST_INTERRUPTIBLE 0x0001
#define ST_UNINTERRUPTIBLE 0x0002
#define ST_DEAD 0x0080
#define ST_NOLOAD 0x0400

/* x86_64 system call numbers of the blocking calls told apart (arch/x86/entry/syscalls/syscall_64.tbl) */
#define NR_READ 0
#define NR_WRITE 1
#define NR_POLL 7
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SELECT 23
#define NR_NANOSLEEP 35
#define NR_CONNECT 42
#define NR_ACCEPT 43
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47
#define NR_FUTEX 202
#define NR_CLOCK_NANOSLEEP 230
#define NR_EPOLL_WAIT 232
#define NR_PSELECT6 270
#define NR_PPOLL 271
#define NR_EPOLL_PWAIT 281
#define NR_ACCEPT4 288
#define NR_RECVMMSG 299
#define NR_SENDMMSG 307
#define NR_EPOLL_PWAIT2 441
#define NR_FUTEX_WAITV 449

/* futex commands that wait (include/uapi/linux/futex.h), after FUTEX_CMD_MASK */
#define FUTEX_CMD_MASK 127
#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13

/* The class of system call @nr (futex op @op) for the sleep it may block in. */
static __always_inline __u16 sys_class(long nr, unsigned long op)
{
	switch (nr) {
	case NR_FUTEX:
		op &= FUTEX_CMD_MASK;
		return op == FUTEX_WAIT || op == FUTEX_LOCK_PI || op == FUTEX_WAIT_BITSET ||
				       op == FUTEX_WAIT_REQUEUE_PI || op == FUTEX_LOCK_PI2 ?
			       KS_WALL_SYS_LOCK :
			       KS_WALL_SYS_NONE;
	case NR_FUTEX_WAITV:
		return KS_WALL_SYS_LOCK;
	case NR_READ:
	case NR_WRITE:
	case NR_POLL:
	case NR_READV:
	case NR_WRITEV:
	case NR_SELECT:
	case NR_CONNECT:
	case NR_ACCEPT:
	case NR_SENDTO:
	case NR_RECVFROM:
	case NR_SENDMSG:
	case NR_RECVMSG:
	case NR_EPOLL_WAIT:
	case NR_PSELECT6:
	case NR_PPOLL:
	case NR_EPOLL_PWAIT:
	case NR_ACCEPT4:
	case NR_RECVMMSG:
	case NR_SENDMMSG:
	case NR_EPOLL_PWAIT2:
		return KS_WALL_SYS_NET;
	case NR_NANOSLEEP:
	case NR_CLOCK_NANOSLEEP:
		return KS_WALL_SYS_SLEEP;
	}
	return KS_WALL_SYS_NONE;
}

/*
 * Whether @t, runnable, is held back by its CPU quota.  Since v6.18 (the
 * series "sched/fair: Task based throttle", which added
 * task_struct::throttled) a throttled task is dequeued at its return to
 * user space and marks itself throttled; before, and for a task
 * preempted on a throttled hierarchy that has not got there yet, its
 * cfs_rq's throttle_count (>0 when it or an ancestor is throttled,
 * CONFIG_CFS_BANDWIDTH) tells.
 */
static __always_inline bool throttled(struct task_struct *t)
{
	if (bpf_core_field_exists(t->throttled) && BPF_CORE_READ(t, throttled))
		return true;
	if (!bpf_core_field_exists(t->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, throttle_count))
		return false;
	return BPF_CORE_READ(t, se.cfs_rq, throttle_count) > 0;
}

/* The state @t enters when it leaves the CPU in @st (@preempt: it stays runnable), its syscall class @sys. */
static __always_inline __u32 state_out(struct task_struct *t, bool preempt, unsigned int st, __u16 sys)
{
	if (preempt || st == 0 /* TASK_RUNNING */)
		return throttled(t) ? KS_WALL_THROTTLED : KS_WALL_RUNNABLE;
	if (sys & KS_WALL_SYS_KLOCK)
		return KS_WALL_LOCK; /* asleep on a contended kernel mutex, rwsem, ... */
	if (st & ST_UNINTERRUPTIBLE) {
		if (st & ST_NOLOAD)
			return KS_WALL_OTHER_SLEEP; /* TASK_IDLE: a kernel thread waiting for work */
		/* io_schedule() sets in_iowait around the wait for a block request */
		return BPF_CORE_READ_BITFIELD_PROBED(t, in_iowait) ? KS_WALL_BLKIO : KS_WALL_DSTATE;
	}
	if (st & ST_INTERRUPTIBLE) {
		if (sys == KS_WALL_SYS_LOCK)
			return KS_WALL_LOCK;
		if (sys == KS_WALL_SYS_NET)
			return KS_WALL_NETPIPE;
		if (sys == KS_WALL_SYS_SLEEP)
			return KS_WALL_SLEEP;
		return KS_WALL_OTHER_SLEEP;
	}
	return KS_WALL_OTHER;
}

#endif /* KSIGHT_WALL_STATE_BPF_H */
