/* Benchmark floor: empty programs on the hooks `ksight tcp` attaches by default, so only the hooks' own cost remains. */
/* not common.bpf.h: its filter would put rodata into the object */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * The tracepoints of bpf/tcp.bpf.c's tracepoint variants, same names, so
 * the same variant is picked; accept() events are classic tracepoints in
 * every variant.  The bodies do nothing, not even a helper call.
 */
#define FLOOR_TP(v, kind)                                                                    \
	SEC(kind "/inet_sock_set_state") int BPF_PROG(tcp_state__##v) { return 0; }          \
	SEC(kind "/tcp_retransmit_skb") int BPF_PROG(tcp_retrans__##v) { return 0; }         \
	SEC(kind "/tcp_retransmit_synack") int BPF_PROG(tcp_synack__##v) { return 0; }       \
	SEC(kind "/kfree_skb") int BPF_PROG(tcp_drop__##v) { return 0; }                     \
	SEC(kind "/tcp_probe") int BPF_PROG(tcp_rtt__##v) { return 0; }                     \
	SEC(kind "/consume_skb") int BPF_PROG(tcp_syn__##v) { return 0; }                   \
	SEC(kind "/sk_data_ready") int BPF_PROG(tcp_ready__##v) { return 0; }

FLOOR_TP(tp_btf, "tp_btf")
FLOOR_TP(raw_tp, "raw_tp")

SEC("tracepoint/sock/inet_sock_set_state") int tcp_state__tp(void *ctx) { return 0; }
SEC("tracepoint/tcp/tcp_retransmit_skb") int tcp_retrans__tp(void *ctx) { return 0; }
SEC("tracepoint/tcp/tcp_retransmit_synack") int tcp_synack__tp(void *ctx) { return 0; }
SEC("tracepoint/skb/kfree_skb") int tcp_drop__tp(void *ctx) { return 0; }
SEC("tracepoint/tcp/tcp_probe") int tcp_rtt__tp(void *ctx) { return 0; }
SEC("tracepoint/skb/consume_skb") int tcp_syn__tp(void *ctx) { return 0; }
SEC("tracepoint/sock/sk_data_ready") int tcp_ready__tp(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_accept4") int tcp_accept4(void *ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_accept") int tcp_accept(void *ctx) { return 0; }
