/* Environment capture: plain facts about kernel and machine from /proc and /sys (doctor, recording manifests). */
#ifndef KS_CORE_SYSINFO_H
#define KS_CORE_SYSINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* An integer setting that could not be read. */
#define KS_SI_UNKNOWN INT_MIN

#define KS_SI_MAX_GOVERNORS 4
#define KS_SI_MAX_CGROUP_V1 16

enum ks_cgroup_mode {
	KS_CG_NONE,
	KS_CG_V1,
	KS_CG_V2,
	KS_CG_HYBRID, /* a cgroup2 mount beside v1 controller mounts */
};

/* Kernel build options the doctor's fixes depend on. */
enum ks_kconfig {
	KS_KCFG_DEBUG_INFO_BTF,
	KS_KCFG_KPROBES,
	KS_KCFG_KPROBE_EVENTS,
	KS_KCFG_FUNCTION_TRACER,
	KS_KCFG_FTRACE_DIRECT_CALLS,
	KS_KCFG_BPF_EVENTS,
	KS_KCFG_UPROBE_EVENTS,
	KS_KCFG_PERF_EVENTS,
	KS_KCFG_COUNT,
};

/* Capability bits of CapEff (linux/capability.h). */
#define KS_CAP_DAC_READ_SEARCH 2
#define KS_CAP_SYS_ADMIN 21
#define KS_CAP_SYS_RESOURCE 24
#define KS_CAP_SYSLOG 34
#define KS_CAP_PERFMON 38
#define KS_CAP_BPF 39

/*
 * Every member is plain data, so the structure can be filled from a fixture
 * tree in tests and written into a recording's manifest.  Strings are ""
 * and integers KS_SI_UNKNOWN (or 0 for counts) when the fact is absent.
 */
struct ks_sysinfo {
	char release[65];  /* /proc/sys/kernel/osrelease */
	char version[128]; /* /proc/sys/kernel/version: build number, date */
	char machine[32];  /* x86_64, aarch64 */

	char kconfig_src[128];		 /* file the options were read from, "" when none */
	char kconfig[KS_KCFG_COUNT];	 /* 'y', 'm', 'n', or 0 when unknown */
	bool btf_vmlinux;		 /* /sys/kernel/btf/vmlinux is readable */

	bool caps_known;
	uint64_t cap_eff; /* effective capabilities: capget(2) live, CapEff of /proc/self/status in fixtures */
	unsigned int euid, egid; /* of this process (live only) */
	int kernel_major, kernel_minor; /* from the release, 0 when it does not parse */

	/* tracefs as this process finds it: mode and owner of its mount point, events readable */
	unsigned int tracefs_mode, tracefs_uid, tracefs_gid;
	bool tracefs_readable;

	int perf_event_paranoid;
	int kptr_restrict;
	int unprivileged_bpf_disabled;

	char securityfs[128]; /* mount point, "" when not mounted */
	char lockdown[32];    /* active mode ("none", "integrity", "confidentiality"), "" when unreadable */
	char tracefs[128];    /* mount point, "" when not mounted */

	char clocksource[32];
	char clocksources[128]; /* available_clocksource */
	bool tsc_clocksource;	/* "tsc" is among them */

	char cpu_model[96];
	bool cpu_flags_known; /* an x86 "flags" line was found in /proc/cpuinfo */
	bool tsc, constant_tsc, nonstop_tsc, tsc_reliable, hypervisor;

	int cpus_online, cpus_possible;
	int sockets, cores; /* 0 when topology is unreadable */
	int numa_nodes;	    /* 1 when the kernel has no NUMA support */

	int cpufreq_cpus; /* online CPUs with a cpufreq policy */
	char cpufreq_driver[32];
	int ngovernors;
	char governors[KS_SI_MAX_GOVERNORS][24]; /* distinct, in CPU order */

	enum ks_cgroup_mode cgroup;
	char cgroup2[128];
	int ncgroup_v1;
	char cgroup_v1[KS_SI_MAX_CGROUP_V1][64];
};

/*
 * Fills @si from the files under @root ("" or NULL for the live system; a
 * fixture directory in tests).  Missing files leave their facts unknown.
 * Returns 0, or negative errno when not even the kernel release is
 * readable (no /proc).  Never mounts or changes anything.
 */
int ks_sysinfo_gather(struct ks_sysinfo *si, const char *root);

/* This process's effective capabilities, from capget(2): 0 or negative errno. */
int ks_caps_effective(uint64_t *eff);
bool ks_sysinfo_has_cap(const struct ks_sysinfo *si, int cap);
const char *ks_cgroup_mode_name(enum ks_cgroup_mode m);
/* "CONFIG_KPROBES" */
const char *ks_kconfig_name(enum ks_kconfig k);

#endif
