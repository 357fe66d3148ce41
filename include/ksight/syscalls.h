/* Map layouts of the syscalls collector, shared by bpf/syscalls.bpf.c and src/collectors/syscalls.c. */
#ifndef KSIGHT_SYSCALLS_H
#define KSIGHT_SYSCALLS_H

#include "hist.h"
#include "filter.h"

/* Rows of the array-backed modes: syscall numbers, or errno values. */
#define KS_SC_ROWS 512
/* errno slots per syscall: 0..199 as is, 512..566 (ERESTART*) at 200.., rest at 255 */
#define KS_SC_ERRS 256

enum ks_sc_by {
	KS_SC_BY_SYSCALL = 0,
	KS_SC_BY_PID = 1,
	KS_SC_BY_COMM = 2,
	KS_SC_BY_ERRNO = 3,
};

/* One row of statistics; per-CPU, summed by user space. */
struct ks_sc_stat {
	__u64 count;
	__u64 errors;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 hist[KS_HIST_SLOTS];
};

/* Start of the syscall in flight on one thread, in an array indexed by tid. */
struct ks_sc_start {
	__u64 ts;
	__u32 tid;
	__u32 nr;
};

/* Key of the hash-backed modes (pid, comm); gen selects the buffer half. */
struct ks_sc_key {
	__u32 gen;
	__u32 tgid;
	char comm[KS_COMM_LEN];
};

/* errno breakdown of the hash-backed modes. */
struct ks_sc_err_key {
	struct ks_sc_key k;
	__u32 err;
	__u32 _pad;
};

/* Loss counters in .bss, reported after every run. */
struct ks_sc_lost {
	__u64 start_collisions; /* two threads hashed to one start slot */
	__u64 map_full;	   /* row or errno map had no room */
};

_Static_assert(sizeof(struct ks_sc_start) == 16, "ks_sc_start layout");
_Static_assert(sizeof(struct ks_sc_key) == 24, "ks_sc_key layout");
_Static_assert(sizeof(struct ks_sc_err_key) == 32, "ks_sc_err_key layout");



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
