/* Kernel-side filter configuration, shared by every collector's BPF program and the loader. */
#ifndef KSIGHT_FILTER_H
#define KSIGHT_FILTER_H

#include "types.h"

#define KS_COMM_LEN 16
#define KS_MAX_CPUS 1024

enum ks_filter_flags {
	KS_F_TGID = 1u << 0,
	KS_F_TID = 1u << 1,
	KS_F_CGROUP = 1u << 2,
	KS_F_COMM = 1u << 3,
	KS_F_CPU = 1u << 4,
	/* -- CMD without a cgroup of its own: the tgid is in the followed set (ks_follow, bpf/common.bpf.h) */
	KS_F_FOLLOW = 1u << 5,
};

/*
 * Lives in each program's .rodata, so the verifier sees constant flags and
 * drops every test that is not asked for: an unused filter costs nothing.
 */
struct ks_filter {
	__u32 flags;
	__u32 tgid;
	__u32 tid;
	/*
	 * ksight's own tgid, whose events are left out (0: kept, --include-self).
	 * Not a flag: collectors choose cheaper modes when flags is 0, and this
	 * is set on every run.
	 */
	__u32 not_tgid;
	__u64 cgroup_id;
	char comm[KS_COMM_LEN];
	__u64 cpus[KS_MAX_CPUS / 64];
};

#endif /* KSIGHT_FILTER_H */
