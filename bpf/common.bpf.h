/* Shared kernel-side helpers: includes, the filter every collector evaluates first, histogram updates. */
#ifndef KSIGHT_COMMON_BPF_H
#define KSIGHT_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ksight/hist.h"
#include "ksight/filter.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load; constant to the verifier. */
const volatile struct ks_filter ks_filter = {};

/*
 * True when the current task passes every configured filter.  Cheap tests
 * (the pid_tgid the caller already holds) come first; each helper call is
 * only made when its filter is configured.
 */
static __always_inline bool ks_filter_pass(__u64 pid_tgid)
{
	__u32 flags = ks_filter.flags;

	if (!flags)
		return true;
	if ((flags & KS_F_TGID) && (__u32)(pid_tgid >> 32) != ks_filter.tgid)
		return false;
	if ((flags & KS_F_TID) && (__u32)pid_tgid != ks_filter.tid)
		return false;
	if (flags & KS_F_CPU) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= KS_MAX_CPUS ||
		    !(ks_filter.cpus[(cpu / 64) & (KS_MAX_CPUS / 64 - 1)] & (1ull << (cpu % 64))))
			return false;
	}
	if ((flags & KS_F_CGROUP) && bpf_get_current_cgroup_id() != ks_filter.cgroup_id)
		return false;
	if (flags & KS_F_COMM) {
		/* zeroed: before 6.4 (f3f213497797 "bpf: ensure all memory is
		 * initialized in bpf_get_current_comm") the helper leaves the
		 * bytes after the NUL as they were, and they are compared too */
		char comm[KS_COMM_LEN] = {};
		const __u64 *a = (const __u64 *)comm;
		const volatile __u64 *b = (const volatile __u64 *)ks_filter.comm;

		bpf_get_current_comm(comm, sizeof(comm));
		if (a[0] != b[0] || a[1] != b[1])
			return false;
	}
	return true;
}

#endif /* KSIGHT_COMMON_BPF_H */
