/* The netflow benchmark's floor: empty programs on the hooks `ksight netflow` uses, each letting every packet through. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int floor_xdp(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* TCX_NEXT, as netflow's own tc programs return */
SEC("tc")
int floor_tc(struct __sk_buff *ctx)
{
	return -1;
}
