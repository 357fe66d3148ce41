/* Benchmark floor: empty programs on the syscall hooks `ksight syscalls` uses, so only the hook's own cost remains. */
/* not common.bpf.h: its filter would put rodata into the skeleton */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * Same section types and names as bpf/syscalls.bpf.c, so ks_prog_select()
 * picks the same variant; the bodies do nothing, not even read their
 * arguments, so one signature serves every hook type.
 */
#define KS_EMPTY_PROG(sec, name)      \
	SEC(sec) int name(void *ctx)  \
	{                             \
		return 0;             \
	}

KS_EMPTY_PROG("tp_btf/sys_enter", sys_enter__tp_btf)
KS_EMPTY_PROG("tp_btf/sys_exit", sys_exit__tp_btf)
KS_EMPTY_PROG("raw_tp/sys_enter", sys_enter__raw_tp)
KS_EMPTY_PROG("raw_tp/sys_exit", sys_exit__raw_tp)
KS_EMPTY_PROG("tracepoint/raw_syscalls/sys_enter", sys_enter__tp)
KS_EMPTY_PROG("tracepoint/raw_syscalls/sys_exit", sys_exit__tp)
