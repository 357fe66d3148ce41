/* Benchmark floor for the scheduler collectors: empty programs on the hooks runqlat uses, to price the dispatch alone. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup)
{
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_wakeup_new)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch)
{
	return 0;
}
