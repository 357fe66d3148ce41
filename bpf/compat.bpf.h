/* Every CO-RE shim in one place: kernel fields, records and enums that moved, each with the kernel commit that moved it. */
#ifndef KSIGHT_COMPAT_BPF_H
#define KSIGHT_COMPAT_BPF_H

#include "common.bpf.h"

/*
 * Minimum kernel: 5.15 with BTF.  Below it there is no shim, by choice:
 * - biolat reads rq->q->disk (commit d152c682f03c, "block: add an explicit
 *   ->disk backpointer to the request_queue", v5.15) and bio->bi_bdev
 *   (commit 309dca309fc3, "block: store a block_device pointer in struct
 *   bio", v5.12); older kernels have rq->rq_disk and bio->bi_disk;
 * - syscalls calls bpf_task_pt_regs (v5.15);
 * - the cgroup keys read kernfs_node->id as a u64 (v5.5, "kernfs: convert
 *   kernfs_node->id from union kernfs_node_id to u64").
 * `ksight doctor` says it (kernel_min) and src/cli/doctor.c checks the
 * first two fields in the kernel's BTF.  Everything newer than 5.15 that a
 * collector reads is below, with what it reads on the kernels before.
 */

/*
 * task_cpu(): task_struct.cpu (with THREAD_INFO_IN_TASK, v5.3 on) until
 * commit bcf9033e5449 ("sched: move CPU field back into thread_info if
 * THREAD_INFO_IN_TASK=y", v5.16), thread_info.cpu after.
 */
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
 * A task's state: task_struct.state until commit 2f064a59a11f ("sched:
 * Change task_struct::state", v5.14), __state after.  sched_switch hands
 * it as an argument since v5.18 (commit fa2c3254d7cf, "sched/tracing:
 * Don't re-read p->state when emitting sched_switch event"): a choice the
 * loader makes (ks_switch_has_state in sched.bpf.h), this is the fallback.
 */
struct task_struct___state_old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int ks_task_state(struct task_struct *t, bool trusted)
{
	struct task_struct___state_old *o = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return KS_RD(trusted, t, __state);
	return (unsigned int)KS_RD(trusted, o, state);
}

/*
 * rq::ttwu_pending of @p's runqueue: exists since v5.8 (commit
 * 126c2092e5c8, "sched: Add rq::ttwu_pending"); reached through
 * se.cfs_rq, present with CONFIG_FAIR_GROUP_SCHED (the runqueues symbol
 * is not in kallsyms without KALLSYMS_ALL).  False where any is missing.
 */
static __always_inline bool ks_task_rq_ttwu_pending(struct task_struct *p, bool trusted)
{
	if (!bpf_core_field_exists(p->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, rq) ||
	    !bpf_core_field_exists(struct rq, ttwu_pending))
		return false;
	if (trusted)
		return p->se.cfs_rq->rq->ttwu_pending;
	return BPF_CORE_READ(p, se.cfs_rq, rq, ttwu_pending);
}

/*
 * An age of @t's sched_info (CONFIG_SCHED_INFO, with schedstats or delay
 * accounting) against its runqueue's clock, which __schedule updates
 * before sched_switch (the runqueue through se.cfs_rq as above): with
 * @queued, how long @t, being switched in, has waited (last_queued, that
 * clock when it was queued; sched_info_arrive clears it after
 * sched_switch); else how long @t, being switched out, has held its CPU
 * (last_arrival, that clock when it was last switched in).  The kernel
 * may leave last_arrival as it was (sched_info_arrive returns early for a
 * task with no last_queued): the caller rejects an age that reaches back
 * before the interval it ends.  False where a field is missing or the
 * time is 0.
 */
static __always_inline bool ks_task_sched_age(struct task_struct *t, bool trusted, bool queued, __u64 *ns)
{
	__u64 clock, then;

	if (!bpf_core_field_exists(t->sched_info) || !bpf_core_field_exists(t->se.cfs_rq) ||
	    !bpf_core_field_exists(struct cfs_rq, rq))
		return false;
	if (queued)
		then = KS_RD(trusted, t, sched_info.last_queued);
	else
		then = KS_RD(trusted, t, sched_info.last_arrival);
	if (trusted)
		clock = t->se.cfs_rq->rq->clock;
	else
		clock = BPF_CORE_READ(t, se.cfs_rq, rq, clock);
	if (!then || clock < then)
		return false;
	*ns = clock - then;
	return true;
}

/*
 * How far before an interval's start sched_info may place its end, and
 * the end is taken as the start (a zero-length interval): the runqueue's
 * clock lags when __schedule skips its update (after a wakeup that
 * preempts, it keeps the wakeup's), so a short wait's inferred end can
 * fall microseconds before the wakeup that began it.
 */
#define KS_SCHED_CLOCK_SLACK_NS 200000ull

/*
 * When @t, being switched out at @now (bpf_ktime_get_ns) and off the CPU
 * since @since by what a collector saw, was switched in: from sched_info
 * (ks_task_sched_age), within [@since, @now]; 0 where it does not tell.
 */
static __always_inline __u64 ks_task_switched_in(struct task_struct *t, __u64 since, __u64 now, bool trusted)
{
	__u64 held;

	if (!ks_task_sched_age(t, trusted, false, &held) || now <= since ||
	    held >= now - since + KS_SCHED_CLOCK_SLACK_NS)
		return 0;
	return held < now - since ? now - held : since;
}

/*
 * RQF_FLUSH_SEQ: the request is in the flush machinery (blk-flush.c).  Its
 * bit is named in enum rqf_flags since commit 5f89154e8e9e ("block: Use
 * enum to define RQF_x bit indexes", v6.11); before (5.15, 6.1) it is
 * only a #define of (1 << 4), which BTF does not show.
 */
static __always_inline __u32 ks_rqf_flush_seq(void)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		return 1u << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	return 1u << 4;
}

/*
 * RQF_STATS: blk_mq_start_request() stamped rq->io_start_time_ns at the
 * request's issue.  Named in enum rqf_flags since commit 5f89154e8e9e
 * (v6.11, as RQF_FLUSH_SEQ above); a #define of (1 << 17) before (5.15,
 * 6.1).
 */
static __always_inline __u32 ks_rqf_stats(void)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_STATS))
		return 1u << bpf_core_enum_value(enum rqf_flags, __RQF_STATS);
	return 1u << 17;
}

/*
 * Whether rq->io_start_time_ns is the time of the request's issue.  Where
 * the queue keeps statistics (QUEUE_FLAG_STATS: wbt, on by default for
 * blk-mq disks, iolatency, polling), blk_mq_start_request() stamps it
 * right after block_rq_issue: with ktime_get_ns() before v6.9, with
 * blk_time_get_ns() since the commit "block: cache current nsec time in
 * struct blk_plug" (v6.9), which under a plug returns the plug's cached
 * time.  Every submitter runs under a plug there (__submit_bio() makes
 * one), so the stamp is mostly the request's allocation time
 * (start_time_ns): measured on 6.18, 5014 of 5030 O_DIRECT reads issued
 * under a plug with a cached time, their io_start_time_ns equal to
 * start_time_ns and 515 ns on average before the issue.  Telling the
 * fresh stamps apart needs the current task's plug (a helper call, about
 * what the clock read it saves), so the kernel's stamp is used only where
 * struct blk_plug has no cur_ktime.
 */
static __always_inline bool ks_kernel_issue_stamps(void)
{
	return !bpf_core_field_exists(struct blk_plug, cur_ktime);
}

/*
 * QUEUE_FLAG_STATS before v6.9 (ks_kernel_issue_stamps()): bit 20 of
 * q->queue_flags, a #define from v4.10 until the flags became an enum
 * (v6.11, anonymous: CO-RE cannot name it), so the value is fixed here.
 */
#define KS_QUEUE_FLAG_STATS_PRE_6_9 20

/*
 * The record of tcp:tcp_retransmit_skb.  It was struct
 * trace_event_raw_tcp_event_sk_skb, shared with tcp_send_reset; newer
 * kernels give the event a class of its own,
 * trace_event_raw_tcp_retransmit_skb (the commit that split it is not
 * cited: not verified), which gained an err field in commit ad892e912b84
 * ("tcp: trace retransmit failures in tcp_retransmit_skb", v6.17; 6.18
 * here has it).  The one the kernel has is picked at load time.
 */
struct trace_event_raw_tcp_event_sk_skb {
	struct trace_entry ent;
	const void *skbaddr;
	const void *skaddr;
} __attribute__((preserve_access_index));

/* The socket, skb and error (0 where the kernel records none) of a classic tcp_retransmit_skb event. */
static __always_inline void ks_tp_retransmit_skb(void *ctx, const void **sk, const void **skb, int *err)
{
	if (bpf_core_type_exists(struct trace_event_raw_tcp_retransmit_skb)) {
		struct trace_event_raw_tcp_retransmit_skb *c = ctx;

		*sk = c->skaddr;
		*skb = c->skbaddr;
		*err = bpf_core_field_exists(c->err) ? c->err : 0;
	} else {
		struct trace_event_raw_tcp_event_sk_skb *c = ctx;

		*sk = c->skaddr;
		*skb = c->skbaddr;
		*err = 0;
	}
}

/*
 * The drop reason of a classic skb:kfree_skb event: a field since commit
 * c504e5c2f964 ("net: skb: introduce kfree_skb_reason()", v5.17); 0
 * (no reason) before.
 */
static __always_inline __u32 ks_tp_kfree_skb_reason(struct trace_event_raw_kfree_skb *ctx)
{
	return bpf_core_field_exists(ctx->reason) ? ctx->reason : 0;
}

/* The socket that received a dropped packet: a field since v6.11 ("net: add rx_sk to trace_kfree_skb"); NULL before. */
static __always_inline const void *ks_tp_kfree_skb_rx_sk(struct trace_event_raw_kfree_skb *ctx)
{
	return bpf_core_field_exists(ctx->rx_sk) ? ctx->rx_sk : NULL;
}

#endif /* KSIGHT_COMPAT_BPF_H */
