/* Kernel side of `ksight funclat`: calls and latency of functions, from entry to return, per function (uprobe, kprobe, fentry; USDT probes counted). */
#include "common.bpf.h"
#include <bpf/usdt.bpf.h>
#include "ksight/funclat.h"

/* Set by the loader. */
const volatile __u32 nfuncs = 1;
const volatile bool percpu = true; /* rows are a per-CPU array: plain adds */
/* fentry/fexit: one object per kernel function (a trampoline program has one target), this one's index */
const volatile __u32 fn_idx = 0;
/*
 * Which targets the programs were attached to (a hash of each one's kind,
 * file, function and offset): unused here, in .rodata so that serve --pin
 * adopts pinned programs only for the same targets (core/pin.c compares
 * .rodata)
 */
const volatile __u64 targets_hash = 0;

/* The half of rows the programs write; user space flips it at each report. */
__u32 ks_gen = 0;
struct ks_fl_lost lost = {};

/* 2 x nfuncs rows; the loader makes it a plain array when a per-CPU copy would not fit the budget. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_fl_row);
} rows SEC(".maps");

/*
 * A thread's record of one function, kept between its calls (depth 0 when
 * none is in flight), so that a call costs one lookup at each end, where
 * creating and deleting it per call (lookup, insert, lookup, lookup,
 * delete) took 804 ns of BPF time per call against 421 (bench/funclat.sh).
 * LRU: the records of threads that exited, and of a call whose return is
 * never seen (a missed kretprobe, longjmp), age out; an in-flight call can
 * be evicted only when more than max_entries thread x function pairs were
 * used since its entry (its return is then counted in lost.no_entry).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct ks_fl_key);
	__type(value, struct ks_fl_start);
} starts SEC(".maps");

static __always_inline struct ks_fl_row *row_of(__u32 fn)
{
	__u32 idx = (ks_gen & 1) * nfuncs + fn;

	return bpf_map_lookup_elem(&rows, &idx);
}

static __always_inline void add(__u64 *p, __u64 v)
{
	if (percpu)
		*p += v;
	else
		__sync_fetch_and_add(p, v);
}

/*
 * The slot of nesting level @d.  The mask is kept from the optimizer,
 * which drops it where @d < KS_FL_NEST was tested, and the verifier,
 * which does not carry that test over to the index register, then sees
 * an unbounded access.
 */
static __always_inline __u64 lvl(__u32 d)
{
	__u64 i = d;

	barrier_var(i);
	return i & (KS_FL_NEST - 1);
}

/*
 * Forgets the frames at or below @sp on the stack (entered at an address
 * <= @sp, so already left): their returns were missed.  @sp 0: unknown.
 */
static __always_inline __u32 drop_left(struct ks_fl_start *s, __u32 d, __u64 sp)
{
	for (int i = 0; i < KS_FL_NEST; i++) {
		if (!sp || !d || d > KS_FL_NEST || s->sp[lvl(d - 1)] > sp)
			break;
		d--;
		__sync_fetch_and_add(&lost.missed_returns, 1);
	}
	return d;
}

static __always_inline void on_entry(__u32 fn, __u64 sp)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_fl_key k = { .tid = (__u32)pid_tgid, .fn = fn };
	static const struct ks_fl_start zero = {};
	enum ks_init_miss miss = 0;
	struct ks_fl_start *s;
	struct ks_fl_row *r;
	__u32 d;

	if (fn >= nfuncs || !ks_filter_pass(pid_tgid))
		return;
	r = row_of(fn);
	if (r)
		add(&r->calls, 1);
	s = ks_map_lookup_or_init(&starts, &k, &zero, NULL, &miss, &lost.update_failed);
	if (!s) {
		if (miss == KS_INIT_FULL)
			__sync_fetch_and_add(&lost.starts_full, 1);
		return;
	}
	d = drop_left(s, s->depth, sp);
	s->depth = d + 1;
	if (d >= KS_FL_NEST) {
		__sync_fetch_and_add(&lost.too_deep, 1);
		return;
	}
	s->sp[lvl(d)] = sp;
	/* last, so that the probe's own work is not in the latency */
	s->ts[lvl(d)] = bpf_ktime_get_ns();
}

/* @sp: the stack pointer after the return (the entry's + 8), 0 when unknown */
static __always_inline void on_return(__u32 fn, __u64 sp)
{
	__u64 now = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid(), delta;
	struct ks_fl_key k = { .tid = (__u32)pid_tgid, .fn = fn };
	struct ks_fl_start *s;
	struct ks_fl_row *r;
	__u32 d, slot;

	if (fn >= nfuncs || !ks_filter_pass(pid_tgid))
		return;
	s = bpf_map_lookup_elem(&starts, &k);
	if (!s || !s->depth) {
		__sync_fetch_and_add(&lost.no_entry, 1);
		return;
	}
	d = s->depth;
	if (sp) {
		/* frames deeper than this return's (entered below its entry sp) were left without their returns */
		d = drop_left(s, d, sp - 9);
		if (!d || (d <= KS_FL_NEST && s->sp[lvl(d - 1)] != sp - 8)) {
			s->depth = d;
			__sync_fetch_and_add(&lost.no_entry, 1);
			return;
		}
	}
	d--;
	s->depth = d;
	if (d >= KS_FL_NEST)
		return; /* counted as too deep at its entry */
	delta = now - s->ts[lvl(d)];
	r = row_of(fn);
	if (!r)
		return;
	slot = ks_hist_slot_max(delta, KS_FL_SLOTS);
	add(&r->sum_ns, delta);
	if (percpu) {
		r->slot[slot]++;
	} else {
		__sync_fetch_and_add(&r->slot[slot], 1);
	}
	if (delta > r->max_ns)
		r->max_ns = delta;
}

/* uprobes and kprobes carry the function's index in their attach cookie */
SEC("uprobe")
int fl_uentry(struct pt_regs *ctx)
{
	on_entry((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("uretprobe")
int fl_ureturn(struct pt_regs *ctx)
{
	on_return((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

/*
 * The same as one uprobe_multi link per file (the loader sets the attach
 * type: libbpf 1.1 knows no "uprobe.multi" section), the cookie again the
 * function's index
 */
SEC("uprobe")
int fl_umentry(struct pt_regs *ctx)
{
	on_entry((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("uretprobe")
int fl_umreturn(struct pt_regs *ctx)
{
	on_return((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("kprobe")
int fl_kentry(struct pt_regs *ctx)
{
	on_entry((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("kretprobe")
int fl_kreturn(struct pt_regs *ctx)
{
	on_return((__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("fentry")
int fl_fentry(void *ctx)
{
	on_entry(fn_idx, 0);
	return 0;
}

SEC("fexit")
int fl_fexit(void *ctx)
{
	on_return(fn_idx, 0);
	return 0;
}

/* a USDT probe is a point, not a call: counted */
SEC("usdt")
int fl_usdt(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 fn = (__u32)bpf_usdt_cookie(ctx);
	struct ks_fl_row *r;

	if (fn >= nfuncs || !ks_filter_pass(pid_tgid))
		return 0;
	r = row_of(fn);
	if (r)
		add(&r->calls, 1);
	return 0;
}
