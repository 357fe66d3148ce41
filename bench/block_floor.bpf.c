/* Benchmark floor: empty programs on the block tracepoints `ksight biolat` attaches by default, so only the hooks' own cost remains. */
/* not common.bpf.h: its filter would put rodata into the object */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * The tracepoints and variants of bpf/biolat.bpf.c's default mode (by
 * disk, no filter, no -Q): block_rq_issue, block_rq_requeue and
 * block_rq_complete, plus block_getrq for the classic tracepoints.  Same
 * names, so the same variant is picked; the bodies do nothing, not even a
 * helper call.
 */
#define FLOOR(v, kind)                                                                  \
	SEC(kind "/block_rq_issue") int BPF_PROG(bl_issue__##v) { return 0; }           \
	SEC(kind "/block_rq_requeue") int BPF_PROG(bl_requeue__##v) { return 0; }       \
	SEC(kind "/block_rq_complete") int BPF_PROG(bl_complete__##v) { return 0; }

FLOOR(tp_btf, "tp_btf")
FLOOR(raw_tp, "raw_tp")

SEC("tracepoint/block/block_getrq") int bl_submit__tp(void *ctx) { return 0; }
SEC("tracepoint/block/block_rq_issue") int bl_issue__tp(void *ctx) { return 0; }
SEC("tracepoint/block/block_rq_requeue") int bl_requeue__tp(void *ctx) { return 0; }
SEC("tracepoint/block/block_rq_complete") int bl_complete__tp(void *ctx) { return 0; }
