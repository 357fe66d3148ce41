/* Benchmark floor: empty programs on the syscall hooks `ksight syscalls` uses, so only the hook's own cost remains. */
/* not common.bpf.h: its filter would put rodata into the skeleton */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * Same section types and names as bpf/syscalls.bpf.c, so ks_prog_select()
 * picks the same variant; the bodies do nothing, not even a helper call.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter__tp_btf, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit__tp_btf, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter__raw_tp, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit__raw_tp, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter__tp(void *ctx)
{
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit__tp(void *ctx)
{
	return 0;
}
