/* Kernel side of `ksight profile`: on-CPU stack samples from a perf_event, counted by (pid, kernel stack, user stack). */
#include "common.bpf.h"
#include "ksight/profile.h"

const volatile __u32 mode = KS_PROF_FP;
const volatile bool want_kernel = true;
const volatile bool want_user = true;

struct ks_prof_stats stats = {};

/* Sized by the loader from the memory budget. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, KS_PROF_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

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

/* -EFAULT (no stack of that kind at this sample) is not a loss: a sample in user mode has no kernel stack. */
static __always_inline void count_stack_err(__s32 id, __u64 *ctr)
{
	if (id < 0 && id != -14)
		__sync_fetch_and_add(ctr, 1);
}

/*
 * Copies the top of the user stack: as much of KS_PROF_STACK_BYTES as is
 * mapped (a read that crosses the stack's end fails whole, so shorter
 * lengths are tried; the verifier needs each length constant).
 */
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES, (void *)sp))
		return KS_PROF_STACK_BYTES;
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES / 2, (void *)sp))
		return KS_PROF_STACK_BYTES / 2;
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES / 4, (void *)sp))
		return KS_PROF_STACK_BYTES / 4;
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES / 8, (void *)sp))
		return KS_PROF_STACK_BYTES / 8;
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES / 16, (void *)sp))
		return KS_PROF_STACK_BYTES / 16;
	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES / 32, (void *)sp))
		return KS_PROF_STACK_BYTES / 32;
	return 0;
}

static __always_inline int dwarf_sample(void *ctx, __u64 pid_tgid, __s32 kstack)
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
	__u64 one = 1, *v;

	if (!ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	k.pid = pid_tgid >> 32;
	k.kstack = -14;
	k.ustack = -14;
	if (want_kernel) {
		k.kstack = bpf_get_stackid(ctx, &stacks, 0);
		count_stack_err(k.kstack, &stats.kstack_lost);
	}
	if (mode == KS_PROF_DWARF)
		return dwarf_sample(ctx, pid_tgid, k.kstack);
	if (want_user) {
		k.ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		count_stack_err(k.ustack, &stats.ustack_lost);
	}
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	v = bpf_map_lookup_elem(&counts, &k);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&counts, &k);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			__sync_fetch_and_add(&stats.counts_full, 1);
	}
	return 0;
}
