/* ksight record: one classic tracepoint program for every recorded event; copies the raw record (bounded) into the CPU's ring buffer. */
#include "common.bpf.h"
#include "ksight/record.h"
#include "record_filter.bpf.h"

/* Inner map template: user space creates one ring per CPU (or one shared) and puts them in rbs. */
struct rb_inner {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* CPUs, or 1 for a shared ring: set by the loader */
	__type(key, __u32);
	__array(values, struct rb_inner);
} rbs SEC(".maps");

/* By tracepoint id (common_type); sized by the loader to the largest id recorded + 1. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_rec_evcfg);
} evcfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_rec_counts);
} counts SEC(".maps");

struct scratch {
	struct ks_rec_event h;
	/* twice the largest record: the copy length is masked, not compared, for the verifier */
	char data[2 * KS_REC_MAX_RAW + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

const volatile __u32 sample_n = 0;  /* keep one in N per CPU; 0 or 1: all */
const volatile bool shared_ring = false;
const volatile __u64 wake_bytes = 0; /* wake the reader as each multiple of this (a power of two) fills (0: on every event) */
/*
 * 1 from when every tracepoint is attached until the recording ends: the
 * window that -d measures.  Attaching hundreds of tracepoints takes a
 * while and detaching them longer (a grace period each), and events in
 * either, with no reader yet or any more, were lost by the million.
 */
__u32 ks_armed = 0;

/*
 * @v masked in the very register a helper is given: clang otherwise tests
 * one copy of a length and passes another, whose bounds the verifier does
 * not know.  The scratch buffer is twice the largest record, so the mask
 * (not a compare) is enough.
 */
static __always_inline __u32 bound(__u32 v)
{
	asm volatile("%0 &= %1" : "+r"(v) : "i"(2 * KS_REC_MAX_RAW - 1));
	return v;
}

/* The end of the raw record: past the fixed part and every dynamic field's payload. */
static __always_inline __u32 raw_len(void *ctx, const struct ks_rec_evcfg *cfg)
{
	__u32 len = cfg->fixed;

	for (int i = 0; i < KS_REC_MAX_DLOC; i++) {
		__u32 loc = 0, off, end;
		__u16 at;

		if (i >= cfg->ndloc)
			break;
		at = cfg->dloc[i];
		if (bpf_probe_read_kernel(&loc, sizeof(loc), ctx + (at & ~KS_REC_DLOC_REL)))
			continue;
		off = loc & 0xffff;
		/* __rel_loc counts from the end of its own 4-byte field */
		if (at & KS_REC_DLOC_REL)
			off += (at & ~KS_REC_DLOC_REL) + 4;
		end = off + (loc >> 16);
		if (end > len)
			len = end;
	}
	return len;
}

/* Bytes of a raw record up to which it is read straight into its ring reservation (longer ones: through scratch). */
#define KS_REC_DIRECT_MAX 256

/*
 * The record's bytes read straight into its reservation in @rb, with no
 * copy in scratch first (bpf_ringbuf_output's memcpy: about 50 ns of the
 * ~300 an event cost, bench/record_filter.sh).  A reservation's size must
 * be a constant for the verifier, so there is one per 8 bytes of record,
 * exactly the stride the reader expects (no ring space wasted); each made
 * opaque to clang, which would otherwise compute it from @len.  The
 * padding read past the record (within the kernel's 8-byte aligned trace
 * buffer, or sys_record's) is zeroed.  0, or -1 when the ring is full or
 * the record cannot be read.
 */
static __always_inline int emit_direct(void *rb, void *ctx, __u32 len, __u64 common, __u32 tgid, __u32 cpu,
				       __u64 flags)
{
	struct ks_rec_event *e;
	__u64 size, *last;

	switch ((len + 7) / 8) {
#define KS_REC_SIZE(k)                                                                          \
	case k:                                                                                 \
		asm volatile("%0 = %1" : "=r"(size) : "i"(sizeof(struct ks_rec_event) + 8 * (k))); \
		break;
		KS_REC_SIZE(1) KS_REC_SIZE(2) KS_REC_SIZE(3) KS_REC_SIZE(4) KS_REC_SIZE(5) KS_REC_SIZE(6)
		KS_REC_SIZE(7) KS_REC_SIZE(8) KS_REC_SIZE(9) KS_REC_SIZE(10) KS_REC_SIZE(11) KS_REC_SIZE(12)
		KS_REC_SIZE(13) KS_REC_SIZE(14) KS_REC_SIZE(15) KS_REC_SIZE(16) KS_REC_SIZE(17) KS_REC_SIZE(18)
		KS_REC_SIZE(19) KS_REC_SIZE(20) KS_REC_SIZE(21) KS_REC_SIZE(22) KS_REC_SIZE(23) KS_REC_SIZE(24)
		KS_REC_SIZE(25) KS_REC_SIZE(26) KS_REC_SIZE(27) KS_REC_SIZE(28) KS_REC_SIZE(29) KS_REC_SIZE(30)
		KS_REC_SIZE(31) KS_REC_SIZE(32)
#undef KS_REC_SIZE
	default:
		return -1; /* not called so */
	}
	e = bpf_ringbuf_reserve(rb, size, 0);
	if (!e)
		return -1;
	if (bpf_probe_read_kernel(e + 1, size - sizeof(*e), ctx)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return -1;
	}
	e->ts = bpf_ktime_get_ns();
	e->tgid = tgid;
	e->len = len;
	e->cpu = cpu;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* the bytes past the record in its last 8 (little endian: the high ones) */
	last = (void *)e + size - 8;
	if (len & 7)
		*last &= (1ull << ((len & 7) * 8)) - 1;
	*(__u64 *)(e + 1) = common;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

/*
 * Where this CPU's preempt count is from its runqueue, in bytes: x86's
 * per-CPU __preempt_count less per-CPU runqueues, both in .data..percpu
 * (the loader reads them from vmlinux BTF: a typed ksym needs the
 * symbol in kallsyms, which CONFIG_KALLSYMS_ALL=n leaves out); 0: unknown.
 */
const volatile __s64 pc_rq_delta = 0;

/*
 * common_flags and common_preempt_count, as the kernel's trace file has
 * them (tracing_gen_ctx_irq_test, kernel/trace/trace.h's trace_flag_type),
 * in bits 16-31 of the common word, from the preempt count: NMI, hardirq
 * (where interrupts are off too), softirq served, bottom halves off, the
 * folded need-resched bit, the preempt depth less the tracepoint's own
 * disable (@own), and the task's migrate-disable depth less the BPF
 * run's own (@own_mig).  Interrupts off
 * outside hardirq and NMI and TIF_NEED_RESCHED are not readable here:
 * the manifest's irq_info says which columns hold (the text writer prints
 * 'X' for irqs-off where it cannot tell).
 */
static __always_inline __u64 irq_ctx(__u32 own, __u32 own_mig)
{
	struct task_struct *t;
	__u32 pc = 0, fl = 0, depth, mig;
	void *rq;

	if (!pc_rq_delta || !bpf_core_field_exists(struct cfs_rq, rq))
		return 0;
	t = (struct task_struct *)bpf_get_current_task();
	/* the running task's runqueue is this CPU's */
	rq = BPF_CORE_READ(t, se.cfs_rq, rq);
	if (!rq || bpf_probe_read_kernel(&pc, sizeof(pc), rq + pc_rq_delta))
		return 0;
	if (pc & 0x00f00000) /* NMI_MASK */
		fl |= 0x40 | 0x01; /* TRACE_FLAG_NMI, IRQS_OFF */
	if (pc & 0x000f0000) /* HARDIRQ_MASK */
		fl |= 0x08 | 0x01; /* TRACE_FLAG_HARDIRQ, IRQS_OFF */
	if (pc & 0x100) /* SOFTIRQ_OFFSET: serving a softirq */
		fl |= 0x10;
	if ((pc & 0xff00) >> 9) /* softirq_count() >> (SOFTIRQ_SHIFT + 1): bottom halves disabled */
		fl |= 0x80;
	if (!(pc & 0x80000000)) /* PREEMPT_NEED_RESCHED, inverted on x86 */
		fl |= 0x20;
	depth = pc & 0xff;
	depth = depth > own ? depth - own : 0;
	mig = BPF_CORE_READ(t, migration_disabled);
	mig = mig > own_mig ? mig - own_mig : 0;
	return ((__u64)fl << 16) | ((__u64)((depth > 15 ? 15 : depth) | ((mig > 15 ? 15 : mig) << 4)) << 24);
}

/*
 * One event: @ctx is the raw record (the classic tracepoint's, or one
 * built for a system call, see sys_record), @cookie which event it is.
 */
static __always_inline int record_one(void *ctx, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct ks_rec_evcfg *cfg;
	struct ks_rec_counts *cnt;
	struct scratch *s;
	__u32 zero = 0, type, cpu, len;
	__u64 flags = 0, common;
	void *rb;

	if (ks_filter_is_self(id)) {
		/*
		 * ksight's own hits: left out of the events its own work would feed
		 * (its system calls), kept where the event is another task's as much
		 * as its own (a switch from ksight is the next task's switch-in)
		 */
		type = (__u32)cookie;
		cfg = bpf_map_lookup_elem(&evcfg, &type);
		if (!cfg || !(cfg->on & KS_REC_ON_SELF) || !ks_filter_pass_configured(id))
			return 1;
	} else if (!ks_filter_pass_configured(id)) {
		return 1;
	}
	cnt = bpf_map_lookup_elem(&counts, &zero);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!cnt || !s)
		return 1;
	cnt->produced++;
	/* the cookie: the tracepoint id (low half), the --filter slot + 1 (high half, 0: none) */
	if (!ks_rec_filter_pass(ctx, cookie >> 32, (__u64)(__u16)cookie | ((__u64)(__u32)id << 32),
				(struct ks_flt_buf *)s->data)) {
		cnt->filtered++;
		return 1;
	}
	if (sample_n > 1 && (cnt->produced - cnt->filtered) % sample_n) {
		cnt->sampled_out++;
		return 1;
	}
	/*
	 * The kernel overwrites the first 8 bytes of the record (the common
	 * fields) with a pt_regs pointer before a tracepoint program runs
	 * (perf_trace_run_bpf_submit), so which event this is comes from the
	 * attach cookie, and the common fields are rebuilt below.
	 */
	type = (__u32)cookie;
	cfg = bpf_map_lookup_elem(&evcfg, &type);
	if (!cfg || !cfg->on) {
		cnt->lost++; /* attached but not configured: cannot happen, but never silent */
		return 1;
	}
	len = raw_len(ctx, cfg);
	if (len > KS_REC_MAX_RAW) {
		len = KS_REC_MAX_RAW;
		cnt->cut++;
	}
	cpu = bpf_get_smp_processor_id();
	rb = bpf_map_lookup_elem(&rbs, shared_ring ? &zero : &cpu);
	if (!rb) {
		cnt->lost++;
		return 1;
	}
	if (wake_bytes) {
		/*
		 * The reader is woken once as the bytes waiting cross each
		 * multiple of wake_bytes (a power of two: a quarter ring), not
		 * on every event while they are above it: that was an irq_work
		 * (a self-IPI, a VM exit here) per event all the while the reader
		 * caught up, and the program's time rose with the rate (2-thread
		 * getppid storm, 100-400k calls/s, alternating rounds: 225-392
		 * -> 164-225 ns a run, bench/record.sh).  A crossing missed as
		 * another producer of a shared ring raced is made up at the
		 * next multiple, or by the reader's tick.
		 */
		__u64 avail = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA);
		__u64 stride = BPF_RINGBUF_HDR_SZ + sizeof(struct ks_rec_event) + ((len + 7) & ~7u);

		flags = (avail & -wake_bytes) != ((avail + stride) & -wake_bytes) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	}
	/* common_type, common_flags and common_preempt_count (irq_ctx), common_pid;
	 * this also keeps the kernel pointer out of the file */
	common = (__u64)(__u16)type | irq_ctx(1, 1) | ((__u64)(__u32)id << 32);
	if (len <= KS_REC_DIRECT_MAX) {
		if (emit_direct(rb, ctx, len, common, id >> 32, cpu, flags))
			cnt->lost++;
		return 1;
	}
	s->h.ts = bpf_ktime_get_ns();
	s->h.tgid = id >> 32;
	s->h.len = len;
	s->h.cpu = cpu;
	bpf_get_current_comm(s->h.comm, sizeof(s->h.comm));
	if (bpf_probe_read_kernel(s->data, bound(len), ctx))
		len = 0;
	/* the padding to 8 bytes zeroed, as emit_direct's: scratch holds earlier events' bytes */
	if (len & 7)
		*(__u64 *)(s->data + bound(len & ~7u)) &= (1ull << ((len & 7) * 8)) - 1;
	*(__u64 *)s->data = common;
	if (bpf_ringbuf_output(rb, s, (sizeof(s->h) + bound(len) + 7) & ~7u, flags))
		cnt->lost++;
	return 1;
}

SEC("tracepoint")
int ks_record(void *ctx)
{
	/* always 1: 0 would hide the event from perf and ftrace users of the same tracepoint */
	if (!ks_armed)
		return 1;
	return record_one(ctx, bpf_get_attach_cookie(ctx));
}

/*
 * System-call events (syscalls:sys_enter_X, sys_exit_X) from the two raw
 * tracepoints they are made from: two attachments for all of them, where
 * a classic tracepoint each costs a grace period at detach (720 took a
 * minute, and held the kernel's event_mutex, which every other tracer's
 * attach waits for, as long).  The record is built as the kernel's perf
 * path builds it (kernel/trace/trace_syscalls.c: __syscall_nr at 8, the
 * arguments or the return value from 16), and the same program body then
 * reads it as it reads a tracepoint's.  By number: the event's cookie
 * (entries at the number, exits at KS_REC_SYS_NR + number).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * KS_REC_SYS_NR);
	__type(key, __u32);
	__type(value, struct ks_rec_sysev);
} sysev SEC(".maps");

struct sys_rec {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__u64 args[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sys_rec);
} sysbuf SEC(".maps");

/* TS_COMPAT of arch/x86/include/asm/thread_info.h: a 32-bit system call, which the syscall events leave out */
#define KS_TS_COMPAT 0x0002

static __always_inline int sys_record(struct pt_regs *regs, __u32 nr, bool exit, long ret)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	const struct ks_rec_sysev *ev;
	struct sys_rec *r;
	__u32 zero = 0, key;

	if (!ks_armed || nr >= KS_REC_SYS_NR)
		return 0;
	key = exit ? KS_REC_SYS_NR + nr : nr;
	ev = bpf_map_lookup_elem(&sysev, &key);
	if (!ev || !ev->cookie)
		return 0;
	if (bpf_core_field_exists(t->thread_info.status) && (BPF_CORE_READ(t, thread_info.status) & KS_TS_COMPAT))
		return 0;
	r = bpf_map_lookup_elem(&sysbuf, &zero);
	if (!r)
		return 0;
	r->common = 0;
	r->nr = (__s32)nr;
	r->pad = 0;
	if (exit) {
		r->args[0] = (__u64)ret;
	} else {
		r->args[0] = BPF_CORE_READ(regs, di);
		r->args[1] = BPF_CORE_READ(regs, si);
		r->args[2] = BPF_CORE_READ(regs, dx);
		r->args[3] = BPF_CORE_READ(regs, r10);
		r->args[4] = BPF_CORE_READ(regs, r8);
		r->args[5] = BPF_CORE_READ(regs, r9);
	}
	record_one(r, ev->cookie);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(ks_record_sys_enter, struct pt_regs *regs, long id)
{
	return sys_record(regs, (__u32)id, false, 0);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(ks_record_sys_exit, struct pt_regs *regs, long ret)
{
	return sys_record(regs, (__u32)BPF_CORE_READ(regs, orig_ax), true, ret);
}
