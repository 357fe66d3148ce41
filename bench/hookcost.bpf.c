/* Cost probes for bench/hookcost.sh: one BPF operation (a helper call, cold or warm cache lines, a map lookup) on the syscall hooks, one object per PROBE_<name>. */
/* not common.bpf.h: its filter would put rodata into the object */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * Built once per probe (the Makefile's hookcost-<name>.bpf.o, -DPROBE_<name>);
 * PROBE_empty defines nothing: its programs are the floor.  Each probe
 * does one thing in the sys_enter program, the sys_exit program or both,
 * so that its cost is its program's run time (kernel.bpf_stats_enabled)
 * less that of the empty probe on the same hook:
 *
 *   clock    bpf_ktime_get_ns() at enter and at exit (a latency's two reads)
 *   clock2   two reads at each (the second read of a program)
 *   pid      bpf_get_current_pid_tgid() at each
 *   cpu      bpf_get_smp_processor_id() at each (inlined by the verifier)
 *   lines4   exit reads 4 cache lines of one page of .bss
 *   pages4   exit reads 4 lines, each in its own page
 *   warm4    enter and exit read the same 4 pages' lines (warm at exit)
 *   pcpu     exit increments a per-CPU array's value (inlined lookup)
 *   hash     exit increments a one-key hash map's value (a lookup helper)
 *   cgroup   bpf_get_current_cgroup_id() compared at each: the -c filter,
 *            which follows a `-- CMD` and its children in a cgroup of its own
 *   follow   a hash lookup of the current tgid at each (present after the
 *            first call): the alternative, a pid set that forks extend
 *
 * Between two syscalls of a loop the kernel runs its own paths, so what a
 * program touches has to be fetched again: lines4 against pages4 tells a
 * cache miss from a TLB miss, warm4 the same reads once fetched.
 */

/* keeps @v computed without storing it anywhere (a store would touch a line) */
#define KEEP(v) __asm__ volatile("" : : "r"(v))

__u8 data[8 * 4096] = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} hash SEC(".maps");

/* the followed processes: sized as a pid set for a command and its children would be */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} follow SEC(".maps");

/* the cgroup id compared with (one no task has: every event fails, as most do system-wide) */
const volatile __u64 cgroup_id = 0;

static __always_inline __attribute__((unused)) int read_lines(int n, int stride, int first)
{
	volatile __u8 *b = data;
	int s = 0;

#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < n)
			s += b[(first + i) * stride];
	return s & 1;
}

/* the probes that do the same at both ends */
static __always_inline void at_both(void)
{
#if defined(PROBE_clock) || defined(PROBE_clock2)
	KEEP(bpf_ktime_get_ns());
#endif
#ifdef PROBE_clock2
	KEEP(bpf_ktime_get_ns());
#endif
#ifdef PROBE_pid
	KEEP(bpf_get_current_pid_tgid());
#endif
#ifdef PROBE_cpu
	KEEP(bpf_get_smp_processor_id());
#endif
#ifdef PROBE_cgroup
	KEEP(bpf_get_current_cgroup_id() == cgroup_id);
#endif
#ifdef PROBE_follow
	{
		__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
		__u8 one = 1;

		if (!bpf_map_lookup_elem(&follow, &tgid))
			bpf_map_update_elem(&follow, &tgid, &one, BPF_NOEXIST);
	}
#endif
}

static __always_inline int on_enter(void)
{
	at_both();
#ifdef PROBE_warm4
	return read_lines(4, 4096, 0);
#endif
	return 0;
}

static __always_inline int on_exit(void)
{
	__u32 zero __attribute__((unused)) = 0;
	__u64 *v = NULL;

	at_both();
#ifdef PROBE_lines4
	return read_lines(4, 64, 0);
#endif
#ifdef PROBE_pages4
	return read_lines(4, 4096, 4);
#endif
#ifdef PROBE_warm4
	return read_lines(4, 4096, 0);
#endif
#ifdef PROBE_pcpu
	v = bpf_map_lookup_elem(&pcpu, &zero);
#endif
#ifdef PROBE_hash
	v = bpf_map_lookup_elem(&hash, &zero);
	if (!v) {
		__u64 one = 1;

		bpf_map_update_elem(&hash, &zero, &one, BPF_NOEXIST);
	}
#endif
	if (v)
		(*v)++;
	return 0;
}

/* The section types and names of bpf/syscalls.bpf.c, so objfloor picks the hook ksight does. */
#define KS_PROBE_PROGS(kind, v)                      \
	SEC(kind "/sys_enter") int sys_enter__##v(void *ctx) \
	{                                            \
		return on_enter();                   \
	}                                            \
	SEC(kind "/sys_exit") int sys_exit__##v(void *ctx) \
	{                                            \
		return on_exit();                    \
	}

KS_PROBE_PROGS("tp_btf", tp_btf)
KS_PROBE_PROGS("raw_tp", raw_tp)

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter__tp(void *ctx)
{
	return on_enter();
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit__tp(void *ctx)
{
	return on_exit();
}
