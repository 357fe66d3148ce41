/* ksight record --filter in the kernel: interprets the branch program of ksight/recfilter.h on the raw tracepoint record, before anything is copied or reserved. */
#ifndef KSIGHT_RECORD_FILTER_BPF_H
#define KSIGHT_RECORD_FILTER_BPF_H

#include "ksight/recfilter.h"

/* By filter slot (the attach cookie's high half, minus one); sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_flt_prog);
} evflt SEC(".maps");

struct flt_glob_ctx {
	struct ks_flt_glob g;
	const char *s;
	const struct ks_flt_pat *p;
};

static long flt_glob_cb(__u32 i, void *vctx)
{
	struct flt_glob_ctx *c = vctx;

	return ks_flt_glob_step(&c->g, c->s, c->p);
}

/* @v (at most KS_FLT_STR_MAX) bounded in the very register a helper is given (see bound() in record.bpf.c). */
static __always_inline __u32 flt_bound(__u32 v)
{
	asm volatile("%0 &= %1" : "+r"(v) : "i"(2 * KS_FLT_STR_MAX - 1));
	return v;
}

/*
 * Per-CPU scratch for the global functions below (a pointer of a sized type
 * is what they may be given): the raw record's address, as a number, and
 * room for a string field.  A global function takes no tracepoint context
 * on 6.1 (btf_get_prog_ctx_type: only pointers to structs), and on the
 * system-call path the record is a map value; the fields are read with
 * bpf_probe_read_kernel only, so the address will do.  Stored in a map
 * value, a pointer reads back as a number: tracing programs are loaded
 * with CAP_PERFMON, under which the verifier allows it (allow_ptr_leaks).
 */
struct ks_flt_buf {
	__u64 rec;
	char c[KS_FLT_STR_MAX];
};

/*
 * Instruction @pc of @prog: 1 when its comparison holds, on the record at
 * @buf->rec.  @common
 * stands for the record's first 8 bytes (common_type, _flags,
 * _preempt_count, _pid), which the kernel has overwritten by the time a
 * tracepoint program runs; the recorder rebuilds them the same way, so a
 * filter on them means the same in the kernel and in `report --filter`.
 *
 * A global function, as rec_flt_run: the verifier checks it once, alone.
 * Inlined into the interpreter's 32-step loop it was explored at every
 * step with every state of the steps before: 322k processed instructions
 * and a 2-5 s BPF_PROG_LOAD of the record program on a loaded machine.
 */
__noinline int rec_flt_test(const struct ks_flt_prog *prog, __u32 pc, __u64 common, struct ks_flt_buf *buf)
{
	struct flt_glob_ctx gc = {};
	const struct ks_flt_insn *in;
	__u32 off, n = 0, loc = 0;
	__u64 v = 0, val, ctx;

	if (!prog || !buf)
		return 0;
	ctx = buf->rec;
	in = &prog->insn[pc & (KS_FLT_MAX_INSNS - 1)];
	off = in->off;
	val = in->val;
	switch (in->src) {
	case KS_FLT_CPU:
		v = bpf_get_smp_processor_id();
		break;
	case KS_FLT_INT:
		if (off + in->size <= 8) {
			v = common >> ((off & 7) * 8);
		} else {
			/* the field's bytes into the low end of v (little endian) */
			n = in->size > 8 ? 8 : in->size;
			if (bpf_probe_read_kernel(&v, n, (void *)(ctx + off)))
				return 0;
		}
		if (in->size < 8) {
			__u32 bits = (in->size & 7) * 8;

			v &= (1ull << bits) - 1;
			if ((in->flags & KS_FLT_SIGNED) && bits && ((v >> (bits - 1)) & 1))
				v |= ~0ull << bits;
		}
		break;
	case KS_FLT_STR:
		n = in->size > KS_FLT_STR_MAX ? KS_FLT_STR_MAX : in->size;
		if (bpf_probe_read_kernel(buf->c, flt_bound(n), (void *)(ctx + off)))
			return 0;
		break;
	case KS_FLT_DSTR:
		if (bpf_probe_read_kernel(&loc, sizeof(loc), (void *)(ctx + off)))
			return 0;
		n = loc >> 16;
		if (n > KS_FLT_STR_MAX)
			n = KS_FLT_STR_MAX;
		off = (loc & 0xffff) + (in->flags & KS_FLT_REL ? off + 4 : 0);
		if (bpf_probe_read_kernel(buf->c, flt_bound(n), (void *)(ctx + off)))
			return 0;
		break;
	case KS_FLT_COMM:
		n = 16;
		bpf_get_current_comm(buf->c, 16);
		break;
	default:
		return 0;
	}
	switch (in->op) {
	case KS_FLT_EQ:
		return v == val;
	case KS_FLT_LT:
		return in->flags & KS_FLT_SIGNED ? (__s64)v < (__s64)val : v < val;
	case KS_FLT_LE:
		return in->flags & KS_FLT_SIGNED ? (__s64)v <= (__s64)val : v <= val;
	case KS_FLT_BAND:
		return (v & val) != 0;
	case KS_FLT_MATCH:
		/* the state from a map value, unknown to the verifier (see ks_flt_prog.zero) */
		gc.g.si = gc.g.pi = gc.g.star = gc.g.mark = gc.g.result = prog->zero;
		gc.g.n = n;
		gc.s = buf->c;
		gc.p = &prog->pat[val & (KS_FLT_MAX_PATS - 1)];
		bpf_loop(KS_FLT_GLOB_STEPS, flt_glob_cb, &gc, 0);
		return gc.g.result != 0;
	}
	return 0;
}

/* 1 when the event passes the filter in slot @idx (the cookie's high half, minus one); global, see rec_flt_test. */
__noinline int rec_flt_run(__u32 idx, __u64 common, struct ks_flt_buf *buf)
{
	const struct ks_flt_prog *prog = bpf_map_lookup_elem(&evflt, &idx);
	__u32 pc = 0;

	if (!prog || !prog->n)
		return 1;
	for (int step = 0; step < KS_FLT_MAX_INSNS; step++) {
		const struct ks_flt_insn *in = &prog->insn[pc & (KS_FLT_MAX_INSNS - 1)];
		__u8 next = rec_flt_test(prog, pc, common, buf) ? in->t : in->f;

		if (next == KS_FLT_ACCEPT)
			return 1;
		/* forward only (as compiled): anything else ends it */
		if (next <= pc || next >= KS_FLT_MAX_INSNS)
			return 0;
		pc = next;
	}
	return 0;
}

/*
 * Set by the loader when --filter is given.  Without it the calls below are
 * dead code, and kernels from 6.8 verify a global function only where it is
 * called: the record program then loads with a few hundred instructions
 * processed, not 11k.
 */
const volatile bool ks_flt_on = false;

/* True when the event passes filter slot @slot (0: none, the common case, decided without a call). */
static __always_inline bool ks_rec_filter_pass(void *ctx, __u32 slot, __u64 common, struct ks_flt_buf *buf)
{
	if (!ks_flt_on || !slot)
		return true;
	buf->rec = (__u64)ctx;
	return rec_flt_run(slot - 1, common, buf);
}

#endif
