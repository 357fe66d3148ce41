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
	KS_PROF_CFI = 2,   /* walk the user stack in the kernel with CFI tables (x86-64) */
};

/*
 * --call-graph cfi: one row of a module's unwind table, compiled from its
 * .eh_frame (or .debug_frame) by src/profile/cfi.c.  A row holds from @pc
 * (an ELF virtual address of the module, as in its CFI) to the next row's.
 * The return address is always at CFA - 8 (x86-64 calls push it there).
 */
enum ks_cfi_kind {
	KS_CFI_RSP = 0,	   /* CFA = rsp + cfa_off */
	KS_CFI_RBP = 1,	   /* CFA = rbp + cfa_off */
	KS_CFI_PLT = 2,	   /* the PLT's expression: rsp + cfa_off, + 8 more when (rip & 15) >= rbp_off */
	KS_CFI_END = 3,	   /* the return address is undefined: the outermost frame (_start, clone's child) */
	KS_CFI_NONE = 4,   /* no CFI covers this address */
	KS_CFI_UNSUP = 5,  /* a rule the walker cannot evaluate (an expression, a register rule) */
	/*
	 * A signal frame (the CIE's 'S' augmentation: glibc's __restore_rt): the
	 * interrupted registers are in the ucontext on the stack, at fixed offsets
	 * from the restorer's rsp: rsp at rsp + cfa_off, rip right after it (the
	 * kernel's gregs order: REG_RSP, REG_RIP), rbp at rsp + 8 * rbp_off.  The
	 * rip read is an exact pc, not a return address.
	 */
	KS_CFI_SIGNAL = 6,
};
struct ks_cfi_row {
	__u32 pc;
	__s16 cfa_off;
	__u8 kind;    /* enum ks_cfi_kind */
	__s8 rbp_off; /* rbp saved at CFA + 8 * rbp_off; 0: rbp keeps its value (KS_CFI_PLT: the threshold;
		       * KS_CFI_SIGNAL: rbp at rsp + 8 * rbp_off) */
};
_Static_assert(sizeof(struct ks_cfi_row) == 8, "ks_cfi_row layout");

/* Executable mappings of a process the walker knows, sorted by start; more are counted, not walked. */
#define KS_CFI_MAPS 64
/* A mapping: pc - bias is the module's ELF address; its rows are [row, row + nrows) of cfi_rows. */
struct ks_cfi_map {
	__u64 start, end, bias;
	__u32 row, nrows; /* nrows 0: no table (it did not fit): frame pointers there */
};
struct ks_cfi_proc {
	__u32 n;
	/*
	 * When its maps were last asked for again, in 2^20 ns of
	 * CLOCK_MONOTONIC: a walk that meets a pc in no mapping asks again (a
	 * library loaded since) at most once a second.
	 */
	__u32 asked;
	struct ks_cfi_map m[KS_CFI_MAPS];
};
/*
 * CFI stacks are stored by the program in a hash by the frames' hash, ids
 * in [cfi_base, cfi_base * (1 + KS_CFI_ID_SPREAD)) apart from the stack
 * maps' [0, cfi_base); the map's key is the id with the half (sgen) in bit 30.
 */
#define KS_CFI_GEN_BIT (1u << 30)
#define KS_CFI_ID_SPREAD 16
struct ks_cfi_stack {
	__u64 ips[KS_PROF_DEPTH];
	__u64 hash; /* of the frames: with @n, what the program compares to find a stack already stored */
	__u32 n;    /* frames in @ips */
	__u32 pad;
};
/*
 * Set in a CFI stack's frame that is an exact pc (the interrupted code past
 * a signal frame), not a return address: symbolized at the pc itself, not
 * the byte before.  User addresses never have bit 63.
 */
#define KS_CFI_IP_EXACT (1ull << 63)

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
	__u32 tid; /* the thread's, with --pprof (whose samples name it); 0 otherwise */
};
_Static_assert(sizeof(struct ks_prof_key) == 36, "ks_prof_key layout");

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
	__u32 kind; /* KS_NOTE_NEW: a new process or address space; KS_NOTE_CFI_MAPS: read its maps again (cfi) */
};
enum { KS_NOTE_NEW, KS_NOTE_CFI_MAPS };

/* Loss and health counters, in the program's .bss; all shown to the user. */
struct ks_prof_stats {
	__u64 samples;	     /* samples that passed the filters */
	__u64 kstack_lost;   /* kernel stack not stored: collision or full stack map */
	__u64 ustack_lost;   /* user stack not stored (frame-pointer mode) */
	__u64 counts_full;   /* counts map full */
	__u64 ring_lost;     /* dwarf samples the ring buffer had no room for */
	__u64 ustack_unread; /* dwarf: the user stack could not be read */
	__u64 map_errors;    /* other map updates and deletes that failed (seen, off_starts) */
	/* offcpu: intervals whose switch in went unreported (ks_sched_unseen_in), timed from sched_info, or lost */
	__u64 off_inferred_in, off_unseen_in;
	/* --call-graph cfi: samples walked, frames recovered, and why each walk ended */
	__u64 cfi_samples, cfi_frames;
	__u64 cfi_end;	     /* the outermost frame reached (return address undefined, or 0) */
	__u64 cfi_no_proc;   /* the process's tables not loaded yet (its first samples): frame pointers instead */
	__u64 cfi_no_map;    /* a pc in no executable mapping known, and no frame pointer to follow there */
	__u64 cfi_no_row;    /* a pc no CFI row covers */
	__u64 cfi_unsup;     /* a rule the walker cannot evaluate */
	__u64 cfi_fault;     /* a read of the stack failed */
	__u64 cfi_depth;     /* KS_PROF_DEPTH frames: cut there */
	__u64 cfi_fp_frames; /* frames walked by frame pointers, in modules whose table did not fit */
	__u64 cfi_reread;    /* a process's maps asked for again after a walk met a pc in no mapping */
	__u64 cfi_unmapped_frames; /* frames walked by frame pointers through code in no mapping (JIT) */
	__u64 cfi_signal_frames;   /* signal frames crossed into the interrupted code */
};

#endif /* KSIGHT_PROFILE_H */
