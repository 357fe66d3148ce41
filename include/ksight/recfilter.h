/* ksight record --filter: the compiled predicate program, shared by its compiler (src/events/filter.c) and the in-kernel interpreter (bpf/record_filter.bpf.h). */
#ifndef KSIGHT_RECFILTER_H
#define KSIGHT_RECFILTER_H

#include "types.h"

/*
 * A filter expression is compiled, per event format, into a branching
 * program: every instruction is one comparison of one field with one
 * constant, and names the instruction to go to when it holds (t) and when
 * it does not (f), or a verdict.  `&&`, `||` and `!` become those jumps,
 * so no stack is needed, and every jump goes forward: the interpreter's
 * loop ends within KS_FLT_MAX_INSNS steps, which the verifier can see.
 */
#define KS_FLT_MAX_INSNS 32 /* comparisons in one filter */
#define KS_FLT_MAX_PATS 4   /* string comparisons in one filter */
#define KS_FLT_PAT_MAX 64   /* bytes of a string constant or glob */
#define KS_FLT_STR_MAX 256  /* bytes of a string field compared: longer ones are compared on these */
#define KS_FLT_ACCEPT 0xfe
#define KS_FLT_REJECT 0xff

/* Tests; !=, >=, >, !~ are these with t and f swapped. */
enum ks_flt_op {
	KS_FLT_EQ = 1,
	KS_FLT_LT,
	KS_FLT_LE,
	KS_FLT_BAND,  /* (field & val) != 0 */
	KS_FLT_MATCH, /* string field matches pattern val (a glob, or plain for ==) */
};

/* Where the field comes from. */
enum ks_flt_src {
	KS_FLT_INT = 1, /* integer of size 1, 2, 4 or 8 bytes at off */
	KS_FLT_STR,	/* char array of size bytes at off, up to its first NUL */
	KS_FLT_DSTR,	/* __data_loc (or __rel_loc with KS_FLT_REL) char[] whose 32-bit locator is at off */
	KS_FLT_COMM,	/* the current task's comm (16 bytes), when the event has no field of that name */
	KS_FLT_CPU,	/* the CPU the event happened on */
};

#define KS_FLT_SIGNED 1
#define KS_FLT_REL 2

struct ks_flt_insn {
	__u8 op, src, flags, pad;
	__u8 t, f; /* next instruction (always a later one) or KS_FLT_ACCEPT / KS_FLT_REJECT */
	__u16 off;
	__u32 size;
	__u32 pad2;
	__u64 val; /* the constant (sign-extended for signed fields); for KS_FLT_MATCH the pattern's index */
};

/* A string constant; bits of star/any mark the positions that are the wildcards '*' and '?'. */
struct ks_flt_pat {
	__u64 star, any;
	__u32 len;
	__u32 pad;
	char c[KS_FLT_PAT_MAX];
};

struct ks_flt_prog {
	__u32 n; /* instructions; 0: no filter, every event passes */
	/*
	 * Always 0.  The kernel starts each glob's state from it rather than
	 * from constants: 6.1's verifier checks a bpf_loop callback once, with
	 * the caller's stack as it is at the call, so a state known to be zero
	 * made it drop the backtracking branch as dead code (kernels from 6.7
	 * verify callbacks as called any number of times).
	 */
	__u32 zero;
	struct ks_flt_insn insn[KS_FLT_MAX_INSNS];
	struct ks_flt_pat pat[KS_FLT_MAX_PATS];
};

_Static_assert(sizeof(struct ks_flt_insn) == 24, "ks_flt_insn layout");
_Static_assert(sizeof(struct ks_flt_pat) == 88, "ks_flt_pat layout");

/*
 * Glob matching one step at a time (the kernel runs it under bpf_loop, so
 * its body is verified once): '*' matches any run of bytes, '?' any one
 * byte, others themselves; the string ends at its first NUL or at @n
 * bytes.  Greedy with one backtracking point (the last '*'), so at most
 * (n + 1) * (len + 1) + len steps: KS_FLT_GLOB_STEPS.
 */
#define KS_FLT_GLOB_STEPS ((KS_FLT_STR_MAX + 2) * (KS_FLT_PAT_MAX + 2))

struct ks_flt_glob {
	__u32 si, pi;	    /* next string and pattern position */
	__u32 star, mark;   /* the last '*' seen (star > 0: at star - 1) and where its run ends in the string */
	__u32 n;	    /* string bytes available */
	__u32 result;
};

/* 1 when done (the verdict in g->result), 0 to be called again. */
static __always_inline int ks_flt_glob_step(struct ks_flt_glob *g, const char *s, const struct ks_flt_pat *p)
{
	__u32 si = g->si, pi = g->pi, len = p->len;
	char c = si < g->n && si < KS_FLT_STR_MAX ? s[si & (KS_FLT_STR_MAX - 1)] : 0;

	if (len > KS_FLT_PAT_MAX)
		len = KS_FLT_PAT_MAX;
	if (c) {
		if (pi < len) {
			if ((p->star >> (pi & 63)) & 1) {
				g->star = pi + 1;
				g->mark = si;
				g->pi = pi + 1;
				return 0;
			}
			if (((p->any >> (pi & 63)) & 1) || p->c[pi & (KS_FLT_PAT_MAX - 1)] == c) {
				g->si = si + 1;
				g->pi = pi + 1;
				return 0;
			}
		}
		if (g->star) {
			/* the last '*' takes one more byte; the rest of the pattern is tried after it */
			g->pi = g->star;
			g->mark++;
			g->si = g->mark;
			return 0;
		}
		g->result = 0;
		return 1;
	}
	/* the string has ended: what is left of the pattern must be all '*' */
	if (pi < len && ((p->star >> (pi & 63)) & 1)) {
		g->pi = pi + 1;
		return 0;
	}
	g->result = pi >= len;
	return 1;
}

#endif
