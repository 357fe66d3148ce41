/* Shared kernel-side helpers: includes, the filter every collector evaluates first, histogram updates. */
#ifndef KSIGHT_COMMON_BPF_H
#define KSIGHT_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hooks.bpf.h"
#include "ksight/hist.h"
#include "ksight/filter.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load; constant to the verifier. */
const volatile struct ks_filter ks_filter = {};

/*
 * The processes `-- CMD` follows when it cannot give the command a cgroup of
 * its own (no write access to one, no cgroup2 mount: KS_F_FOLLOW): the
 * command's tgid, put in by user space before the command runs, and every
 * tgid ks_follow_fork adds when a followed process forks.  Key 0 counts the
 * forks not followed because the map was full.  One map for the whole
 * process: the loader gives every object the same fd (ks_follow_prepare)
 * and sizes it from the budget; 1 entry here, where it is not used.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u32);
} ks_follow SEC(".maps");

/*
 * True when @tgid is followed: one hash lookup, the filter's cost in this mode (docs/cmd.md).
 * Never tgid 0: key 0 is the map's counter of forks not followed, and the idle task (swapper,
 * tgid 0) passed as followed: profile sampled swapper/N on an idle CPU (test_cmd_follow, CI).
 */
static __always_inline bool ks_followed(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&ks_follow, &tgid) != NULL;
}

/*
 * True when @cpu is in the -C list (only meaningful with KS_F_CPU set).
 * The bound is tested on the register that indexes, hidden from the
 * optimizer: clang otherwise tests one zero-extended copy, indexes with
 * another and drops the mask as redundant, which 6.1's verifier refuses
 * as an unbounded map access (it links no registers across the copies).
 */
static __always_inline bool ks_cpu_allowed(__u32 cpu)
{
	__u64 c = cpu;

	barrier_var(c);
	return c < KS_MAX_CPUS && (ks_filter.cpus[c / 64] & (1ull << (c % 64)));
}

/*
 * True when the current task passes every configured filter.  Cheap tests
 * (the pid_tgid the caller already holds) come first; each helper call is
 * only made when its filter is configured.
 */
static __always_inline bool ks_filter_is_self(__u64 pid_tgid)
{
	/* ksight itself: one compare on the pid_tgid at hand */
	return ks_filter.not_tgid && (__u32)(pid_tgid >> 32) == ks_filter.not_tgid;
}

/* ks_filter_pass but for the ksight-itself test: the configured pid/tid/cpu/cgroup/comm filters. */
static __always_inline bool ks_filter_pass_configured(__u64 pid_tgid)
{
	__u32 flags = ks_filter.flags;

	if (!flags)
		return true;
	if ((flags & KS_F_TGID) && (__u32)(pid_tgid >> 32) != ks_filter.tgid)
		return false;
	if ((flags & KS_F_TID) && (__u32)pid_tgid != ks_filter.tid)
		return false;
	if ((flags & KS_F_CPU) && !ks_cpu_allowed(bpf_get_smp_processor_id()))
		return false;
	if ((flags & KS_F_CGROUP) && bpf_get_current_cgroup_id() != ks_filter.cgroup_id)
		return false;
	if ((flags & KS_F_FOLLOW) && !ks_followed((__u32)(pid_tgid >> 32)))
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

static __always_inline bool ks_filter_pass(__u64 pid_tgid)
{
	return !ks_filter_is_self(pid_tgid) && ks_filter_pass_configured(pid_tgid);
}

/*
 * Command name of each process seen in pid mode, written when its row is
 * made and at its execs (KS_PID_COMM_EXEC; see ks_pid_comm_peek); LRU,
 * since rows are kept from one interval to the next.  Sized by the loader.  A write the map's lock refuses is
 * not counted as a loss: the name is a cache (user space names a live
 * process from /proc), and only a process gone before the report loses
 * its name ("?"), never a count.
 */
#define KS_PID_COMM_MAP(name)                                  \
	struct {                                               \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);           \
		__uint(max_entries, 1);                        \
		__type(key, __u32);                            \
		__type(value, char[KS_COMM_LEN]);              \
	} name SEC(".maps")

/*
 * Keeps @map's name of a process current across exec: a process whose
 * first event came before exec (a shell's fork child paging in the
 * binary) would otherwise be named after the shell once it exited.  At
 * sched_process_exec current is the new program, its comm already the new
 * name; in a multi-threaded process de_thread has already made the
 * exec'ing thread the group leader, and every thread has the process's
 * tgid anyway, so the key is right whichever thread exec'd.  Only a name
 * already there is rewritten, in place: the others are named when their
 * row is made, and an update would take a new LRU node, which on a full
 * map evicts another process's name.  A name read by user space while it
 * is written may be torn; it is one exec's moment.  Programs named by hook
 * (ks_prog_select: the collector's own hook, raw_tp included, which every
 * collector falls back to), loaded only in the modes that name pid rows
 * (ks_prog_disable otherwise).
 */
static __always_inline int ks_pid_comm_exec(void *map)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	char *comm = bpf_map_lookup_elem(map, &tgid);

	if (comm)
		bpf_get_current_comm(comm, KS_COMM_LEN);
	return 0;
}

#define KS_PID_COMM_EXEC(map)                                           \
	KS_BTF_RAW_PROGS(pid_comm_exec, sched_process_exec, ks_pid_comm_exec(&map)) \
	SEC("tracepoint/sched/sched_process_exec")             \
	int pid_comm_exec__tp(void *ctx)                       \
	{                                                      \
		return ks_pid_comm_exec(&map);                 \
	}

/* errno values the map helpers return (vmlinux.h has no errno.h) */
#define KS_ENOENT 2
#define KS_E2BIG 7
#define KS_ENOMEM 12
#define KS_EEXIST 17

/*
 * True when a map helper's @err is neither success nor one of the answers
 * a caller expects and handles: a full map (-E2BIG preallocated, -ENOMEM
 * not), a key already there or missing (BPF_NOEXIST, BPF_EXIST, delete).
 * What remains is a hash map's bucket lock giving up: since v6.15 an
 * rqspinlock ("bpf: Convert hashtab.c to rqspinlock") that returns
 * -EDEADLK when this CPU already holds it (a program in an interrupt on
 * the same map as the one it interrupted) or -ETIMEDOUT under contention;
 * before, -EBUSY on the same re-entry ("bpf: Avoid hashtab deadlock with
 * map_locked").  The entry is then neither stored nor removed: the event
 * it stood for must be counted as lost, not dropped in silence.
 * An int: before 6.4 (d7ba4cc900bf "bpf: return long from bpf_map_ops
 * funcs") the verifier calls the map's int-returning update or delete
 * directly, and an error reaches the program zero-extended (-EEXIST as
 * 0xffffffef), so only the low 32 bits are the errno.
 */
static __always_inline bool ks_map_failed(int err)
{
	return err && err != -KS_E2BIG && err != -KS_ENOMEM && err != -KS_EEXIST && err != -KS_ENOENT;
}

/*
 * bpf_map_update_elem, counting in *@failed a failure that is not a full
 * map or a key test (ks_map_failed); the error sign-extended from its low
 * 32 bits, so that callers can compare it with -KS_EEXIST on any kernel.
 */
static __always_inline long ks_map_update(void *map, const void *key, const void *value, __u64 flags, __u64 *failed)
{
	int err = (int)bpf_map_update_elem(map, key, value, flags);

	if (ks_map_failed(err))
		__sync_fetch_and_add(failed, 1);
	return err;
}

/* bpf_map_delete_elem, counting in *@failed a failure other than a missing key: the entry stays.  Error as ks_map_update's. */
static __always_inline long ks_map_delete(void *map, const void *key, __u64 *failed)
{
	int err = (int)bpf_map_delete_elem(map, key);

	if (ks_map_failed(err))
		__sync_fetch_and_add(failed, 1);
	return err;
}

/* What ks_map_lookup_or_init did when it returned NULL: the caller counts a full map its own way. */
enum ks_init_miss {
	KS_INIT_FULL = 1, /* no room (or an LRU map evicted the entry at once) */
	KS_INIT_FAILED,	  /* the bucket lock refused the insert (ks_map_failed): counted in *@failed */
};

/*
 * The value of @key in the hash @map, created from @init when absent;
 * *@created (may be NULL) tells whether this call made it.  NULL when the
 * map is full or the map's lock refused the insert; *@miss then says
 * which, and the refusal is already counted in *@failed, so that the
 * caller counts only the full map (as map_full, errno_full, to_other ...)
 * and a refused insert is never taken for one.  Two CPUs racing to create
 * it both get the one entry.  A hit returns at once: the hot path has no
 * more than the one lookup.
 */
static __always_inline void *ks_map_lookup_or_init(void *map, const void *key, const void *init, bool *created,
						   enum ks_init_miss *miss, __u64 *failed)
{
	void *v = bpf_map_lookup_elem(map, key);
	int err;

	if (v)
		return v;
	err = (int)bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (ks_map_failed(err)) {
		__sync_fetch_and_add(failed, 1);
		*miss = KS_INIT_FAILED;
		return NULL;
	}
	if (err == 0 && created)
		*created = true;
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		*miss = KS_INIT_FULL;
	return v;
}

/*
 * Reads a field of a task that is not current.  tp_btf hands trusted
 * pointers, whose fields are plain loads; raw_tp hands raw ones, read with
 * a probe read (a helper call).  @trusted must be a compile-time constant
 * so that the other branch is compiled away before the verifier sees it.
 */
#define KS_RD(trusted, t, field) ((trusted) ? (t)->field : BPF_CORE_READ((t), field))

/*
 * The cgroup v2 id of @t, as bpf_get_current_cgroup_id gives for current.
 * kernfs_node->id is a u64 since v5.5 ("kernfs: convert kernfs_node->id
 * from union kernfs_node_id to u64"); older kernels are not supported.
 */
static __always_inline __u64 ks_task_cgroup_id(struct task_struct *t, bool trusted)
{
	if (trusted)
		return t->cgroups->dfl_cgrp->kn->id;
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/*
 * ks_filter_pass for a task that is not current (the task being woken or
 * switched in): tests the configured filters that are also in @mask, so a
 * caller can test the CPU at one event and the task at another; ksight's
 * own threads are left out whatever the mask.  @cpu is
 * the CPU the event is attributed to.
 */
static __always_inline bool ks_filter_pass_task(struct task_struct *t, __u32 cpu, __u32 mask, bool trusted)
{
	__u32 flags = ks_filter.flags & mask;
	__u32 tgid;

	if (!flags && !ks_filter.not_tgid)
		return true;
	/* one load (tp_btf) or probe read (raw_tp) serves both tgid tests */
	tgid = (__u32)KS_RD(trusted, t, tgid);
	if (ks_filter.not_tgid && tgid == ks_filter.not_tgid)
		return false;
	if ((flags & KS_F_TGID) && tgid != ks_filter.tgid)
		return false;
	if ((flags & KS_F_TID) && (__u32)KS_RD(trusted, t, pid) != ks_filter.tid)
		return false;
	if ((flags & KS_F_CPU) && !ks_cpu_allowed(cpu))
		return false;
	if ((flags & KS_F_CGROUP) && ks_task_cgroup_id(t, trusted) != ks_filter.cgroup_id)
		return false;
	if ((flags & KS_F_FOLLOW) && !ks_followed(tgid))
		return false;
	if (flags & KS_F_COMM) {
		__u64 c[2];
		const volatile __u64 *b = (const volatile __u64 *)ks_filter.comm;

		if (trusted)
			__builtin_memcpy(c, t->comm, sizeof(c));
		else
			bpf_core_read(c, sizeof(c), &t->comm);
		if (c[0] != b[0] || c[1] != b[1])
			return false;
	}
	return true;
}

/*
 * The followed set's two programs, off unless the loader turns them on
 * (ks_follow_prepare: "?" keeps them from loading otherwise; no "__" in the
 * name, so ks_prog_select leaves them alone).  raw_tp: forks and exits are
 * rare, and raw_tp is where every collector's hooks fall back to.  At a
 * fork current is the parent; a new thread has its tgid and adds nothing.
 */
SEC("?raw_tp/sched_process_fork")
int BPF_PROG(ks_follow_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32, tgid = BPF_CORE_READ(child, tgid), one = 1, zero = 0;
	__u32 *full;
	int err;

	if (tgid == ptgid || !ks_followed(ptgid))
		return 0;
	err = (int)bpf_map_update_elem(&ks_follow, &tgid, &one, BPF_NOEXIST);
	/* EEXIST: another object's copy of this program was first */
	if (err && err != -KS_EEXIST && (full = bpf_map_lookup_elem(&ks_follow, &zero)))
		__sync_fetch_and_add(full, 1);
	return 0;
}

/*
 * A followed process's last thread leaves the set: its tgid may be given to
 * an unrelated process later, and the set holds only the living.  signal->live
 * is already decremented when the tracepoint fires (do_exit computes
 * group_dead first); what the process does after this point (its last
 * switch out) is not followed.
 */
SEC("?raw_tp/sched_process_exit")
int BPF_PROG(ks_follow_exit, struct task_struct *p)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tgid && !BPF_CORE_READ(t, signal, live.counter))
		bpf_map_delete_elem(&ks_follow, &tgid);
	return 0;
}

/* Adds one value to a BPF-side histogram (per-CPU: no atomics needed). */
static __always_inline void ks_hist_bpf_add(struct ks_hist_bpf *h, __u64 v)
{
	__u32 slot = ks_hist_slot(v);

	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (slot < KS_HIST_SLOTS)
		h->slots[slot]++;
}

#endif /* KSIGHT_COMMON_BPF_H */
