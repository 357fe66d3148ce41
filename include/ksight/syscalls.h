/* Map layouts of the syscalls collector, shared by bpf/syscalls.bpf.c and src/collectors/syscalls.c. */
#ifndef KSIGHT_SYSCALLS_H
#define KSIGHT_SYSCALLS_H

#include "hist.h"
#include "filter.h"
#include "rowkey.h"

/* Rows of the array-backed modes: syscall numbers, or errno values. */
#define KS_SC_ROWS 512
/* errno slots per syscall: 0..199 as is, 512..566 (ERESTART*) at 200.., rest at 255 */
#define KS_SC_ERRS 256
/*
 * Latency histograms cover 2^40 ns (18 minutes); longer calls share the
 * last slot.  592 slots instead of 976: the per-CPU histograms of the
 * syscall mode are most of the collector's memory at 128 CPUs.
 */
#define KS_SC_HSLOTS KS_HIST_SLOTS_BELOW(40)
/* hist_of[] value of a row that got no histogram of its own (budget spent) */
#define KS_SC_NOHIST 0xffffffffu

/* x86_64 numbers of the calls the collector treats specially (see account()). */
#define KS_SC_NR_RT_SIGRETURN 15
#define KS_SC_NR_CLONE 56
#define KS_SC_NR_FORK 57
#define KS_SC_NR_VFORK 58
#define KS_SC_NR_EXIT 60
#define KS_SC_NR_EXIT_GROUP 231
#define KS_SC_NR_CLONE3 435

enum ks_sc_by {
	KS_SC_BY_SYSCALL = 0,
	KS_SC_BY_PID = 1,
	KS_SC_BY_COMM = 2,
	KS_SC_BY_ERRNO = 3,
	/* combined keys: which task makes which calls (shared rows, as pid and comm) */
	KS_SC_BY_PID_SYSCALL = 4,
	KS_SC_BY_COMM_SYSCALL = 5,
	KS_SC_BY_CGROUP_SYSCALL = 6,
};

/* Counters of one row: per-CPU in the syscall and errno modes, shared (atomics) in pid and comm. */
struct ks_sc_cnt {
	__u64 count;
	__u64 errors;
	__u64 sum_ns;
	__u64 max_ns;
};

/*
 * Per-CPU latency histogram of one syscall (or errno) row, cumulative over
 * the run: user space reports the difference from its previous read, per
 * CPU and modulo 2^32, so u32 slots are exact while one CPU puts fewer
 * than 2^32 calls into one slot between two reports (over half an hour of
 * nothing but that call).  Half the bytes of u64 slots, and no zeroing.
 */
struct ks_sc_hist {
	__u32 slot[KS_SC_HSLOTS];
};

/* A row of the pid and comm modes, shared by all CPUs (atomic adds), u64 slots since all CPUs add to them. */
struct ks_sc_srow {
	struct ks_sc_cnt c;
	__u64 slot[KS_SC_HSLOTS];
};

/* Start of the syscall in flight on one thread, in an array indexed by tid. */
struct ks_sc_start {
	__u64 ts;
	__u32 tid;
	__u32 nr;
};

/*
 * Key of the hash-backed modes: the task part (t.gen selects the buffer
 * half; t.id the tgid, t.comm or t.cgroup as the mode says), the syscall
 * in the combined modes, and the flag of the "other" row, where the calls
 * of keys beyond the map's room go.
 */
struct ks_sc_key {
	struct ks_row_key t;
	__u32 nr;
	__u32 other;
};

/* errno breakdown of the hash-backed modes. */
struct ks_sc_err_key {
	struct ks_sc_key k;
	__u32 err;
	__u32 _pad;
};

/* errno breakdown of the syscall mode: (buffer half, syscall, errno) -> per-CPU count. */
struct ks_sc_nerr_key {
	__u32 gen;
	__u32 nr;
	__u32 err;
	__u32 _pad;
};

/* Loss counters in .bss, reported after every run. */
struct ks_sc_lost {
	__u64 start_collisions; /* two threads hashed to one start slot */
	__u64 map_full;	   /* row or errno map had no room */
	__u64 errno_full;  /* failing calls whose errno had no room in the breakdown (in "other") */
	__u64 to_other;	   /* calls of keys beyond the map's room, counted in the "other" row */
	__u64 update_failed; /* calls (or their errno) not counted: the hash map's lock refused their row (ks_map_failed) */
};

_Static_assert(sizeof(struct ks_sc_cnt) == 32, "ks_sc_cnt layout");
_Static_assert(sizeof(struct ks_sc_start) == 16, "ks_sc_start layout");
_Static_assert(sizeof(struct ks_sc_key) == 40, "ks_sc_key layout");
_Static_assert(sizeof(struct ks_sc_err_key) == 48, "ks_sc_err_key layout");
_Static_assert(sizeof(struct ks_sc_nerr_key) == 16, "ks_sc_nerr_key layout");

/*
 * A return value is an error when it is in [-4095, -1], the kernel's
 * IS_ERR_VALUE range (strace's rule too): rt_sigreturn "returns" the
 * interrupted context's rax, which is any value, and -EINTR when the
 * handler interrupted a syscall.
 */
static __always_inline __u64 ks_sc_errno(long ret)
{
	return ret < 0 && ret >= -4095 ? (__u64)-ret : 0;
}

/* Map a positive errno to its slot in the per-syscall errno array. */
static __always_inline __u32 ks_sc_err_slot(__u64 err)
{
	if (err < 200)
		return (__u32)err;
	if (err >= 512 && err < 567)
		return (__u32)(err - 512 + 200);
	return KS_SC_ERRS - 1;
}

/* Inverse of ks_sc_err_slot; the last slot stands for "other". */
static __always_inline __u32 ks_sc_slot_err(__u32 slot)
{
	if (slot < 200)
		return slot;
	if (slot < KS_SC_ERRS - 1)
		return slot - 200 + 512;
	return 0;
}
#endif /* KSIGHT_SYSCALLS_H */
