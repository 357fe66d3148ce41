/* Benchmark floor: empty programs on the tracepoints `ksight net` attaches, so bench/net.sh can take the hooks' own cost out. */
/* not common.bpf.h: its filter would put rodata into the object */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* bpf/net.bpf.c's hooks under its variant names' shape, bodies doing nothing, not even a helper call */
#define FLOOR(v, kind)                                                                  \
	SEC(kind "/net_dev_queue") int BPF_PROG(nf_queue__##v) { return 0; }            \
	SEC(kind "/qdisc_dequeue") int BPF_PROG(nf_dequeue__##v) { return 0; }          \
	SEC(kind "/net_dev_xmit") int BPF_PROG(nf_xmit__##v) { return 0; }              \
	SEC(kind "/netif_receive_skb") int BPF_PROG(nf_receive__##v) { return 0; }      \
	SEC(kind "/sk_data_ready") int BPF_PROG(nf_ready__##v) { return 0; }            \
	SEC(kind "/sock_recv_length") int BPF_PROG(nf_recv__##v) { return 0; }          \
	SEC(kind "/skb_copy_datagram_iovec") int BPF_PROG(nf_copy__##v) { return 0; }   \
	SEC(kind "/kfree_skb") int BPF_PROG(nf_free__##v) { return 0; }                 \
	SEC(kind "/consume_skb") int BPF_PROG(nf_consume__##v) { return 0; }            \
	SEC(kind "/softirq_entry") int BPF_PROG(nf_soft_in__##v) { return 0; }          \
	SEC(kind "/softirq_exit") int BPF_PROG(nf_soft_out__##v) { return 0; }

FLOOR(tp_btf, "tp_btf")
FLOOR(raw_tp, "raw_tp")

SEC("tracepoint/syscalls/sys_enter_sendto") int nf_sendto_in(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_sendto") int nf_sendto_out(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_enter_sendmsg") int nf_sendmsg_in(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_sendmsg") int nf_sendmsg_out(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_enter_sendmmsg") int nf_sendmmsg_in(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_sendmmsg") int nf_sendmmsg_out(void *ctx) { return 0; }
