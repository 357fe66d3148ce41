/* Kernel side of `ksight profile` and `offcpu --stacks`: on-CPU samples from a perf_event, or off-CPU time at sched_switch, by (pid, kernel stack, user stack). */
#include "common.bpf.h"
#include "ksight/profile.h"

const volatile __u32 mode = KS_PROF_FP;
const volatile bool want_kernel = true;
const volatile bool want_user = true;

struct ks_prof_stats stats = {};

/*
 * The half of the stack maps and counts samples go to; user space flips it
 * and drains the other half.  A stack map has no chaining: a stack whose
 * bucket another holds is lost (-EEXIST) until that one is deleted, so the
 * maps are emptied at every drain and a collision costs one period at most.
 */
volatile __u32 ks_gen = 0;

/* Sized by the loader from the memory budget. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, KS_PROF_DEPTH * sizeof(__u64));
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ks_prof_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} samples SEC(".maps");

/*
 * Pids already announced to user space (ks_prof_note), with the address
 * space (mm) they had: an exec makes a new one, whose mappings must be read
 * too (a shell's child, sampled as the shell, then as what it ran).  LRU: a
 * forgotten one is announced again, harmlessly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

/* Announces @pid once per address space, so that its mappings are read while it lives. */
static __always_inline void note_pid(__u32 pid)
{
	__u64 mm = (__u64)bpf_get_current_task_btf()->mm, *v;
	struct ks_prof_note *n;

	if (!pid)
		return;
	v = bpf_map_lookup_elem(&seen, &pid);
	if (v) {
		if (*v == mm)
			return;
		*v = mm; /* two CPUs may both announce it: read twice, harmlessly */
	} else if (bpf_map_update_elem(&seen, &pid, &mm, BPF_NOEXIST)) {
		return;
	}
	n = bpf_ringbuf_reserve(&samples, sizeof(*n), 0);
	if (!n) {
		__sync_fetch_and_add(&stats.ring_lost, 1);
		return;
	}
	n->pid = pid;
	n->pad = 0;
	bpf_ringbuf_submit(n, 0);
}

/* -EFAULT (no stack of that kind at this sample) is not a loss: a sample in user mode has no kernel stack. */
static __always_inline void count_stack_err(__s32 id, __u64 *ctr)
{
	if (id < 0 && id != -14)
		__sync_fetch_and_add(ctr, 1);
}

/* Adds @v to the count of @k (samples, or off-CPU nanoseconds); a full map is counted. */
static __always_inline void count_add(struct ks_prof_key *k, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&counts, k);

	if (c) {
		__sync_fetch_and_add(c, v);
		return;
	}
	if (!bpf_map_update_elem(&counts, k, &v, BPF_NOEXIST))
		return;
	c = bpf_map_lookup_elem(&counts, k); /* another CPU made it meanwhile */
	if (c)
		__sync_fetch_and_add(c, v);
	else
		__sync_fetch_and_add(&stats.counts_full, 1);
}

/* A stack's id in half @gen of the stack maps (the helper takes a map known at load, hence two calls). */
static __always_inline __s32 stackid(void *ctx, __u32 gen, __u64 flags)
{
	return gen ? bpf_get_stackid(ctx, &stacks1, flags) : bpf_get_stackid(ctx, &stacks0, flags);
}

/* The current task's kernel and (frame-pointer) user stack ids in half @gen, as wanted; -EFAULT for those not taken. */
static __always_inline void take_stacks(void *ctx, __u32 gen, __u32 pid, __s32 *kstack, __s32 *ustack, bool user)
{
	*kstack = -14;
	*ustack = -14;
	if (want_kernel) {
		*kstack = stackid(ctx, gen, 0);
		count_stack_err(*kstack, &stats.kstack_lost);
	}
	if (user && want_user) {
		*ustack = stackid(ctx, gen, BPF_F_USER_STACK);
		count_stack_err(*ustack, &stats.ustack_lost);
		if (*ustack >= 0)
			note_pid(pid);
	}
}

/*
 * Copies the top of the user stack: KS_PROF_STACK_BYTES, or all of it up to
 * the stack's end where that is nearer.  A read that crosses the end of the
 * mapping fails whole, and the end is a page boundary: so the reads that
 * follow a failed full one stop at each page end below sp + KS_PROF_STACK_BYTES
 * in turn, the largest first.  (Halving the length instead, as before, lost up
 * to half of what was there: the outer frames of a stack within 16 KiB of its
 * end, a thread's or a process started with a small environment.)
 */
#define KS_UPAGE 4096
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	__u64 end = (sp | (KS_UPAGE - 1)) + 1, len;

	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES, (void *)sp))
		return KS_PROF_STACK_BYTES;
#pragma unroll
	for (int k = KS_PROF_STACK_BYTES / KS_UPAGE - 1; k >= 0; k--) {
		/* 64 bits throughout: the verifier must see the bound on the very register passed */
		len = end + (__u64)k * KS_UPAGE - sp;
		if (len == 0 || len > KS_PROF_STACK_BYTES)
			continue;
		if (!bpf_probe_read_user(dst, len, (void *)sp))
			return (__u32)len;
	}
	return 0;
}

static __always_inline int dwarf_sample(void *ctx, __u64 pid_tgid, __s32 kstack, __u32 gen)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct ks_prof_sample *s;
	struct pt_regs *r;

	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&stats.ring_lost, 1);
		return 0;
	}
	s->pid = pid_tgid >> 32;
	s->tid = (__u32)pid_tgid;
	s->kstack = kstack;
	s->sgen = gen;
	s->pad = 0;
	s->stack_len = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	__builtin_memset(s->regs, 0, sizeof(s->regs));
	/* the user registers saved at kernel entry: the interrupted ones for a
	 * sample in user mode, those of the syscall for one in the kernel */
	if (want_user && !(t->flags & 0x00200000 /* PF_KTHREAD */)) {
		r = (struct pt_regs *)bpf_task_pt_regs(t);
		s->regs[0] = BPF_CORE_READ(r, ax);
		s->regs[1] = BPF_CORE_READ(r, dx);
		s->regs[2] = BPF_CORE_READ(r, cx);
		s->regs[3] = BPF_CORE_READ(r, bx);
		s->regs[4] = BPF_CORE_READ(r, si);
		s->regs[5] = BPF_CORE_READ(r, di);
		s->regs[6] = BPF_CORE_READ(r, bp);
		s->regs[7] = BPF_CORE_READ(r, sp);
		s->regs[8] = BPF_CORE_READ(r, r8);
		s->regs[9] = BPF_CORE_READ(r, r9);
		s->regs[10] = BPF_CORE_READ(r, r10);
		s->regs[11] = BPF_CORE_READ(r, r11);
		s->regs[12] = BPF_CORE_READ(r, r12);
		s->regs[13] = BPF_CORE_READ(r, r13);
		s->regs[14] = BPF_CORE_READ(r, r14);
		s->regs[15] = BPF_CORE_READ(r, r15);
		s->regs[16] = BPF_CORE_READ(r, ip);
		s->stack_len = copy_stack(s->stack, s->regs[7]);
		if (!s->stack_len)
			__sync_fetch_and_add(&stats.ustack_unread, 1);
	}
	bpf_ringbuf_submit(s, 0);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_prof_key k = {};

	if (!ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	k.pid = pid_tgid >> 32;
	/* read once: the stacks and their count go to one half */
	k.gen = k.sgen = ks_gen & 1;
	/* dwarf: the user stack is copied, not walked */
	take_stacks(ctx, k.gen, k.pid, &k.kstack, &k.ustack, mode != KS_PROF_DWARF);
	if (mode == KS_PROF_DWARF)
		return dwarf_sample(ctx, pid_tgid, k.kstack, k.gen);
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	count_add(&k, 1);
	return 0;
}

/* offcpu and syscalls --stacks: the interval each thread is in, by tid. */
/* LRU: a thread that exits while off the CPU never comes back to remove its entry */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_prof_start);
} off_starts SEC(".maps");

/*
 * Ends the interval @tid opened (off the CPU, or in a syscall): its time
 * to @now is added to the stacks taken when it began, in the current half
 * of the counts, naming the half of the stack maps those are in.  Counted
 * before the interval is deleted: a drain that no longer finds the interval
 * (whose stacks it would keep) finds its count instead (and keeps them).
 */
static __always_inline void end_interval(__u32 tid, __u64 now)
{
	struct ks_prof_start *st = bpf_map_lookup_elem(&off_starts, &tid);
	struct ks_prof_key k = {};

	if (!st)
		return;
	k.pid = st->pid;
	k.kstack = st->kstack;
	k.ustack = st->ustack;
	k.sc = st->sc;
	k.gen = ks_gen & 1;
	k.sgen = st->sgen;
	__builtin_memcpy(k.comm, st->comm, sizeof(k.comm));
	now = now > st->ts ? now - st->ts : 0;
	count_add(&k, now);
	bpf_map_delete_elem(&off_starts, &tid);
}

/*
 * At a blocking switch out, prev is current: its stacks are taken here
 * (kernel; user by frame pointers) and its off-CPU time added to them
 * when it is switched back in.  A preempted task is runnable, not blocked.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)pid_tgid, ntid = next->pid;
	struct ks_prof_start s = {};
	unsigned int state = 0;

	if (bpf_core_field_exists(prev->__state))
		state = prev->__state;
	if (tid && !preempt && state && !(state & 0x80 /* TASK_DEAD */) && ks_filter_pass(pid_tgid)) {
		__sync_fetch_and_add(&stats.samples, 1);
		s.ts = now;
		s.pid = pid_tgid >> 32;
		s.sgen = ks_gen & 1;
		take_stacks(ctx, s.sgen, s.pid, &s.kstack, &s.ustack, true);
		bpf_get_current_comm(s.comm, sizeof(s.comm));
		if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
			__sync_fetch_and_add(&stats.counts_full, 1);
	}
	end_interval(ntid, now);
	return 0;
}

/* syscalls --stacks: time in a syscall (sc_nr, or every one when < 0) by the caller's stacks, taken at entry. */
const volatile __s32 sc_nr = -1;

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct ks_prof_start s = {};

	if ((sc_nr >= 0 && id != sc_nr) || id < 0 || !ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	s.pid = pid_tgid >> 32;
	s.sc = (__u16)id + 1; /* the syscall, for its frame */
	s.sgen = ks_gen & 1;
	take_stacks(ctx, s.sgen, s.pid, &s.kstack, &s.ustack, true);
	bpf_get_current_comm(s.comm, sizeof(s.comm));
	s.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
		__sync_fetch_and_add(&stats.counts_full, 1);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	end_interval((__u32)bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	return 0;
}

/* biolat --stacks: bytes submitted, by the submitter's stacks (kernel and user) as the bio enters the block layer. */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio, struct bio *bio)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_prof_key k = {};
	__u32 size = BPF_CORE_READ(bio, bi_iter.bi_size);

	/* a flush carries no data: nothing to charge */
	if (!size || !ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	k.pid = pid_tgid >> 32;
	k.gen = k.sgen = ks_gen & 1;
	take_stacks(ctx, k.gen, k.pid, &k.kstack, &k.ustack, true);
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	count_add(&k, size);
	return 0;
}
