/* Map and event layouts of `ksight profile`, shared by bpf/profile.bpf.c and src/profile/. */
#ifndef KSIGHT_PROFILE_H
#define KSIGHT_PROFILE_H

#include "filter.h"

/* Frames kept per stack in the stack-trace map (the kernel's PERF_MAX_STACK_DEPTH). */
#define KS_PROF_DEPTH 127
/* Bytes of user stack copied from sp in --call-graph dwarf mode (perf's default is 8 KiB). */
#define KS_PROF_STACK_BYTES 16384
/* x86-64 DWARF register numbers 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
#define KS_PROF_NREGS 17

/* What the program does with the user part of a sample. */
enum ks_prof_mode {
	KS_PROF_FP = 0,	   /* frame pointers: bpf_get_stackid(BPF_F_USER_STACK) */
	KS_PROF_DWARF = 1, /* copy registers and the top of the stack to the ring buffer */
};

/*
 * Count of samples by (pid, kernel stack, user stack); stack ids < 0 are the
 * helper's errno.  The stack and count maps are double-buffered: the program
 * counts into half ks_gen and user space drains the other.  A stack id means
 * something only in the stack map it came from, so the key names both halves:
 * @gen, the count's (which drain takes it), and @sgen, the stack map's ids.
 * They differ where an interval (offcpu, syscalls) began before a flip and
 * ended after it.
 */
struct ks_prof_key {
	__u32 pid; /* tgid */
	__s32 kstack;
	__s32 ustack;
	__u16 sc;  /* syscalls --stacks: the call's number + 1; 0 otherwise */
	__u8 gen;  /* half of the counts this row is in */
	__u8 sgen; /* half of the stack maps kstack and ustack are ids of */
	char comm[KS_COMM_LEN];
};
_Static_assert(sizeof(struct ks_prof_key) == 32, "ks_prof_key layout");

/*
 * offcpu and syscalls --stacks: an interval begun (off the CPU, or in a
 * syscall) by thread tid, the map's key; its time is counted at its end
 * under the stacks taken at its start.  User space reads @sgen and the ids
 * to keep those stacks while the interval lasts.
 */
struct ks_prof_start {
	__u64 ts;
	__s32 kstack, ustack;
	__u32 pid;
	__u16 sc;  /* as in ks_prof_key */
	__u8 sgen; /* half of the stack maps of kstack and ustack */
	__u8 pad;
	char comm[KS_COMM_LEN];
};
_Static_assert(sizeof(struct ks_prof_start) == 40, "ks_prof_start layout");

/* One --call-graph dwarf sample: registers and the stack bytes above sp. */
struct ks_prof_sample {
	__u32 pid, tid;
	__s32 kstack;
	__u32 stack_len; /* bytes of stack[] that were read (0: none) */
	char comm[KS_COMM_LEN];
	__u64 regs[KS_PROF_NREGS];
	__u32 sgen; /* half of the stack maps of kstack */
	__u32 pad;
	__u8 stack[KS_PROF_STACK_BYTES];
};

/*
 * Frame-pointer and off-CPU modes: a process seen for the first time, or
 * in a new address space (an exec), so that user space captures its
 * mappings at once (it may exit before the end).
 */
struct ks_prof_note {
	__u32 pid;
	__u32 pad;
};

/* Loss and health counters, in the program's .bss; all shown to the user. */
struct ks_prof_stats {
	__u64 samples;	     /* samples that passed the filters */
	__u64 kstack_lost;   /* kernel stack not stored: collision or full stack map */
	__u64 ustack_lost;   /* user stack not stored (frame-pointer mode) */
	__u64 counts_full;   /* counts map full */
	__u64 ring_lost;     /* dwarf samples the ring buffer had no room for */
	__u64 ustack_unread; /* dwarf: the user stack could not be read */
};

#endif /* KSIGHT_PROFILE_H */
