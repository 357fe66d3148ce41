/* Benchmark floor: empty programs on the block tracepoints `ksight biolat` attaches by default, so only the hooks' own cost remains. */
/* not common.bpf.h: its filter would put rodata into the skeleton */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * The tracepoints and variants of bpf/biolat.bpf.c's default mode (by
 * disk, no filter, no -Q): block_getrq, block_rq_issue, block_rq_requeue
 * and block_rq_complete.  Same names, so ks_prog_select() picks the same
 * variant; the bodies do nothing, not even a helper call.
 */
SEC("tp_btf/block_getrq")
int BPF_PROG(bl_getrq__tp_btf, struct bio *bio)
{
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(bl_issue__tp_btf, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(bl_requeue__tp_btf, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(bl_complete__tp_btf, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return 0;
}

SEC("raw_tp/block_getrq")
int BPF_PROG(bl_getrq__raw_tp, struct bio *bio)
{
	return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(bl_issue__raw_tp, struct request *rq)
{
	return 0;
}

SEC("raw_tp/block_rq_requeue")
int BPF_PROG(bl_requeue__raw_tp, struct request *rq)
{
	return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(bl_complete__raw_tp, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return 0;
}

SEC("tracepoint/block/block_getrq")
int bl_getrq__tp(void *ctx)
{
	return 0;
}

SEC("tracepoint/block/block_rq_issue")
int bl_issue__tp(void *ctx)
{
	return 0;
}

SEC("tracepoint/block/block_rq_requeue")
int bl_requeue__tp(void *ctx)
{
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int bl_complete__tp(void *ctx)
{
	return 0;
}
