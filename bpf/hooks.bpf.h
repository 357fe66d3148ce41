/* One way to write a collector's hook variants: the tp_btf and raw_tp programs of a tracepoint around one body. */
#ifndef KSIGHT_HOOKS_BPF_H
#define KSIGHT_HOOKS_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/*
 * Declares <base>__tp_btf and <base>__raw_tp on tracepoint @tp, both
 * given its arguments as BPF_PROG names them (@...), both returning
 * @call, in which `trusted` is true under tp_btf (pointers the verifier
 * trusts: plain loads) and false under raw_tp (probe reads; KS_RD reads
 * a field either way).  The loader enables one variant (ks_prog_select);
 * each is compiled with `trusted` a constant, so the other branch is gone.
 * Classic tracepoints (tp) and fentry/kprobe read their arguments their
 * own way and are written beside, as <base>__tp, <base>__fentry, ...
 */
#define KS_BTF_RAW_PROGS(base, tp, call, ...)                                               \
	SEC("tp_btf/" #tp) int BPF_PROG(base##__tp_btf, ##__VA_ARGS__) KS_VARIANT_BODY(true, call) \
	SEC("raw_tp/" #tp) int BPF_PROG(base##__raw_tp, ##__VA_ARGS__) KS_VARIANT_BODY(false, call)

/*
 * The same for a tracepoint whose arguments changed across kernels: @call
 * reads them from `ctx` (unsigned long long *, one slot per argument).
 */
#define KS_BTF_RAW_CTX_PROGS(base, tp, call)                                                   \
	SEC("tp_btf/" #tp) int base##__tp_btf(unsigned long long *ctx) KS_VARIANT_BODY(true, call) \
	SEC("raw_tp/" #tp) int base##__raw_tp(unsigned long long *ctx) KS_VARIANT_BODY(false, call)

/* A variant's body: @call with `trusted` the constant @t. */
#define KS_VARIANT_BODY(t, call)          \
	{                                 \
		const bool trusted = t;   \
                                          \
		(void)trusted;            \
		return call;              \
	}

#endif /* KSIGHT_HOOKS_BPF_H */
