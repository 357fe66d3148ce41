/* User side of `ksight tcp`: options, map sizes from the memory budget, load with hook fallback (fentry first), drain rows into a report. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/pin.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/tracefs.h"
#include "ksight/tcp.h"
#include "tcp.skel.h"

enum { OPT_ROWS = 300 };

#define TCP_ROWS_DEFAULT 4096
#define TCP_ROWS_MAX (1u << 20)
/* rows each half holds besides the flows: "other" and "unattributed" */
#define TCP_ROWS_EXTRA 2
/* sockets remembered with their owner: enough for a busy host's open connections */
#define TCP_SOCKS_MAX 65536
#define TCP_SOCKS_MIN 4096
/* both halves of 128 flows and their extra rows */
#define TCP_ROWS_LEAST (2 * (128 + TCP_ROWS_EXTRA))

struct tcp_ctx {
	enum ks_tcp_by by;
	uint32_t max_rows;
	bool has_probe;	 /* tcp:tcp_probe exists: RTT from the tracepoint variants */
	bool probe_sk;	 /* its classic record carries the socket (skaddr; 6.1's has none) */
	bool has_accept; /* syscalls:sys_exit_accept* exist: owners of accepted sockets */
	bool retrans_err; /* tcp_retransmit_skb passes an error: failed retransmits too */
	bool has_synack;  /* tcp:tcp_retransmit_synack exists: SYN-ACK retransmits */
	const struct ks_filter *filter;
	struct ks_tcp *skel;
	const char *hook;
	struct ks_budget budget;
	uint32_t rows_fit;	/* rows per half the budget holds (<= max_rows) */
	unsigned int gen;
	unsigned int old; /* the half tcp_mark retired, for tcp_drain */
	struct ks_tcp_counts seen;
	unsigned long long missed_seen;
	void *vbuf, *zbuf;
	struct btf *btf;	      /* vmlinux, for drop reason names */
	const struct btf_type *reasons; /* enum skb_drop_reason, or NULL */
};

static const struct ks_optdef tcp_opts[] = {
	{ "max-rows", OPT_ROWS, "N", "distinct rows kept per interval (default 4096); the rest go to \"other\"" },
	{ 0 },
};

static int tcp_init(void *vctx)
{
	((struct tcp_ctx *)vctx)->max_rows = TCP_ROWS_DEFAULT;
	return 0;
}

static int tcp_parse_opt(void *vctx, int id, const char *arg)
{
	struct tcp_ctx *ctx = vctx;
	uint64_t v;

	if (id != OPT_ROWS)
		return -EINVAL;
	if (ks_parse_u64(arg, 1, TCP_ROWS_MAX, &v)) {
		p_err("invalid row count '%s': expected 1 to %u", arg, TCP_ROWS_MAX);
		return -EINVAL;
	}
	ctx->max_rows = (uint32_t)v;
	return 0;
}

static const struct ks_by_word tcp_by_words[] = {
	{ "flow", KS_TCP_BY_FLOW },
	{ "pid", KS_TCP_BY_PID },
	{ "comm", KS_TCP_BY_COMM },
	{ "port", KS_TCP_BY_PORT },
	{ "reason", KS_TCP_BY_REASON },
	{ NULL, KS_TCP_BY_FLOW },
};

/* Rows made ahead, in both halves: "other", and the one a pid or comm filter pins down. */
static void precreate(struct tcp_ctx *ctx, struct ks_tcp *s)
{
	int fd = bpf_map__fd(s->maps.rows);
	struct ks_tcp_key o = { .flags = KS_TCP_KEY_OTHER }, f = { 0 };
	bool pinned = false;

	if (ctx->by == KS_TCP_BY_PID && (ctx->filter->flags & KS_F_TGID)) {
		f.id = ctx->filter->tgid;
		pinned = true;
		ks_pid_comm_seed(bpf_map__fd(s->maps.pid_comm), f.id);
	} else if (ctx->by == KS_TCP_BY_COMM && (ctx->filter->flags & KS_F_COMM)) {
		memcpy(f.comm, ctx->filter->comm, sizeof(f.comm));
		pinned = true;
	}
	for (__u32 g = 0; g < 2; g++) {
		o.gen = f.gen = g;
		if (ks_map_add(fd, &o, ctx->zbuf))
			p_warn("tcp: cannot make the \"other\" row: %s", strerror(errno));
		if (pinned)
			ks_map_add(fd, &f, ctx->zbuf);
	}
}

/*
 * Hook variants: which hook each event's program uses.  Programs are named
 * <event>__<hook> (bpf/tcp.bpf.c); a variant takes its base set, with RTT
 * from its own hook where it has a better one than the tracepoint.
 */
struct tcp_variant {
	const char *name, *base, *rtt;
};

static const struct tcp_variant tcp_variants[] = {
	{ KS_HOOK_FENTRY, KS_HOOK_TP_BTF, KS_HOOK_FENTRY },
	{ KS_HOOK_TP_BTF, KS_HOOK_TP_BTF, KS_HOOK_TP_BTF },
	{ KS_HOOK_RAW_TP, KS_HOOK_RAW_TP, KS_HOOK_RAW_TP },
	{ KS_HOOK_TP, KS_HOOK_TP, KS_HOOK_TP },
	{ KS_HOOK_KPROBE, KS_HOOK_TP, KS_HOOK_KPROBE },
};

static const struct tcp_variant *variant_of(const char *hook)
{
	for (size_t i = 0; i < sizeof(tcp_variants) / sizeof(tcp_variants[0]); i++)
		if (!strcmp(tcp_variants[i].name, hook))
			return &tcp_variants[i];
	return NULL;
}

/* Enables the base set of @v, and its RTT program in place of the base one. */
static int select_variant(struct bpf_object *obj, const struct tcp_variant *v)
{
	char name[64];
	struct bpf_program *p;

	ks_prog_select(obj, v->base);
	if (!strcmp(v->rtt, v->base))
		return 0;
	ks_prog_disable(obj, "tcp_rtt");
	snprintf(name, sizeof(name), "tcp_rtt__%s", v->rtt);
	p = bpf_object__find_program_by_name(obj, name);
	return p ? bpf_program__set_autoload(p, true) : -ENOENT;
}

/*
 * Map sizes from the memory budget (struct ks_tcp_stat says why rows are
 * shared, not per-CPU): the socket table takes up to 12% of it (at most
 * 64 Ki sockets, 7 MiB with its buckets, the one map allocated at load), the rows
 * what is left, as many as --max-rows asks for in each half, and the
 * budget is refused when fewer than 128 flows would fit.
 */
static void size_maps(struct tcp_ctx *ctx, struct ks_tcp *s)
{
	struct ks_budget *b = &ctx->budget;
	uint32_t want = 2 * (ctx->max_rows + TCP_ROWS_EXTRA), rows, socks;
	/* fewer rows than this make no useful report: a budget that small is refused */
	uint32_t least = want < TCP_ROWS_LEAST ? want : TCP_ROWS_LEAST;
	double share;

	socks = ks_budget_rows(b, 0.12,
			       ks_budget_row_bytes(b, BPF_MAP_TYPE_LRU_HASH, sizeof(__u64), sizeof(struct ks_tcp_sock), 0),
			       TCP_SOCKS_MIN, TCP_SOCKS_MAX, true);
	/* drop reasons without a filter need no owners */
	if (ctx->by == KS_TCP_BY_REASON && !ctx->filter->flags)
		socks = 1;
	/* the rows take what the sockets leave, less 5% for the small maps (.bss, .rodata, pid names) */
	share = 0.95 - (double)ks_map_bytes(BPF_MAP_TYPE_LRU_HASH, sizeof(__u64), sizeof(struct ks_tcp_sock), socks, 0,
					    b->ncpus) / (double)b->limit;
	rows = ks_budget_rows(b, share > 0.01 ? share : 0.01,
			      ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_tcp_key),
						  sizeof(struct ks_tcp_stat), BPF_F_NO_PREALLOC),
			      least, want, false);
	ctx->rows_fit = rows / 2 - TCP_ROWS_EXTRA;
	bpf_map__set_max_entries(s->maps.rows, rows);
	bpf_map__set_max_entries(s->maps.socks, socks);
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_TCP_BY_PID ? ctx->rows_fit : 1);
}

/* Whether hook @hook leaves tcp without RTT: its variant times RTT at tcp:tcp_probe, which this kernel lacks or cannot charge. */
static bool no_rtt(const struct tcp_ctx *ctx, const struct tcp_variant *v, const char *hook)
{
	/* the classic record must name the socket: RTT is charged to its owner */
	return !strcmp(v->rtt, v->base) && (!ctx->has_probe || (!strcmp(hook, KS_HOOK_TP) && !ctx->probe_sk));
}

/* The rodata, map sizes and programs of one load (ks_load_spec). */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct tcp_ctx *ctx = vctx;
	const struct tcp_variant *v = variant_of(hook);
	struct ks_tcp *s = skel;
	int err;

	if (!v)
		return -ENOENT;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->retrans_err_arg = ctx->retrans_err;
	size_maps(ctx, s);
	/* the accept() events are classic tracepoints in every variant */
	ks_tracefs_dir(NULL);
	err = select_variant(s->obj, v);
	/* owners of accepted sockets come from accept(); without syscall events they stay unknown */
	if (!ctx->has_accept || (ctx->by == KS_TCP_BY_REASON && !ctx->filter->flags)) {
		bpf_program__set_autoload(s->progs.tcp_accept4, false);
		bpf_program__set_autoload(s->progs.tcp_accept, false);
	}
	if (!ctx->has_synack)
		ks_prog_disable(s->obj, "tcp_synack");
	if (ctx->by == KS_TCP_BY_REASON) {
		/* drops only; state changes to know owners when a filter asks for them */
		ks_prog_disable(s->obj, "tcp_rtt");
		ks_prog_disable(s->obj, "tcp_retrans");
		ks_prog_disable(s->obj, "tcp_synack");
		if (!ctx->filter->flags)
			ks_prog_disable(s->obj, "tcp_state");
	} else if (no_rtt(ctx, v, hook)) {
		ks_prog_disable(s->obj, "tcp_rtt");
	}
	/* names kept current across exec: only pid rows have names to keep */
	if (ctx->by != KS_TCP_BY_PID)
		ks_prog_disable(s->obj, "pid_comm_exec");
	return err;
}

/* The budget configure sizes from (ks_load_spec: fitted to a shared one). */
static struct ks_budget *budget_of(void *vctx)
{
	return &((struct tcp_ctx *)vctx)->budget;
}

static int budget_check(void *vctx, struct bpf_object *obj)
{
	return ks_budget_check(&((struct tcp_ctx *)vctx)->budget, obj);
}

/* After load, before attach: the rows made ahead. */
static int loaded(void *vctx, void *skel)
{
	precreate(vctx, skel);
	return 0;
}

KS_SKEL_OPS(ks_tcp);

/* What the chosen hook leaves out, and what the budget allows, once loaded. */
static void loaded_notes(const struct tcp_ctx *ctx)
{
	const char *hook = ctx->hook;

	if (ctx->by != KS_TCP_BY_REASON && no_rtt(ctx, variant_of(hook), hook)) {
		if (!ctx->has_probe)
			p_warn("tcp: tracepoint tcp:tcp_probe is not in this kernel; no RTT with hook %s", hook);
		else
			p_warn("tcp: tcp:tcp_probe records no socket address (skaddr) in this kernel; no RTT with hook %s", hook);
	}
	if (ctx->rows_fit < ctx->max_rows)
		p_info("tcp: %u rows per interval fit in the memory budget (--max-rows %u); the rest go to \"other\"",
		       ctx->rows_fit, ctx->max_rows);
	if (ks_verbose)
		ks_budget_print(&ctx->budget, "tcp");
}

/* The kernel's names of drop reasons, from its BTF: enum skb_drop_reason. */
static void load_reasons(struct tcp_ctx *ctx)
{
	int id;

	ctx->btf = btf__load_vmlinux_btf();
	if (!ctx->btf) {
		p_info("tcp: no kernel BTF: drop reasons are shown as numbers");
		return;
	}
	id = btf__find_by_name_kind(ctx->btf, "skb_drop_reason", BTF_KIND_ENUM);
	if (id > 0)
		ctx->reasons = btf__type_by_id(ctx->btf, id);
}

static const char *reason_name(const struct tcp_ctx *ctx, __u32 code, char *buf, size_t len)
{
	static const char prefix[] = "SKB_DROP_REASON_";

	if (ctx->reasons) {
		const struct btf_enum *e = btf_enum(ctx->reasons);

		for (int i = 0; i < btf_vlen(ctx->reasons); i++, e++) {
			const char *n = btf__name_by_offset(ctx->btf, e->name_off);

			if ((__u32)e->val != code || !n)
				continue;
			if (!strncmp(n, prefix, sizeof(prefix) - 1))
				n += sizeof(prefix) - 1;
			snprintf(buf, len, "%s", n);
			return buf;
		}
	}
	snprintf(buf, len, "%u", code);
	return buf;
}

static int tcp_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	static const char *const hooks[] = { KS_HOOK_FENTRY, KS_HOOK_TP_BTF, KS_HOOK_RAW_TP,
					     KS_HOOK_TP, KS_HOOK_KPROBE, NULL };
	static const char *const needed[][2] = {
		{ "sock", "inet_sock_set_state" },
		{ "tcp", "tcp_retransmit_skb" },
		{ "skb", "kfree_skb" },
	};
	/* drop reasons only: no RTT, so neither fentry nor kprobe has anything to add */
	static const char *const tp_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct ks_load_spec spec = {
		.hooks = hooks, .skel = &ks_tcp_ops, .configure = configure, .budget_check = budget_check, .budget = budget_of,
		.loaded = loaded,
	};
	struct tcp_ctx *ctx = vctx;
	int by = ks_by_parse(tcp_by_words, c->by);
	int err, acc4, acc;

	if (by < 0)
		return by;
	ctx->by = (enum ks_tcp_by)by;
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (ks_tracepoint_exists(needed[i][0], needed[i][1]) == 0) {
			p_err("tcp: tracepoint %s:%s is not in this kernel", needed[i][0], needed[i][1]);
			return -ENOENT;
		}
	}
	ctx->has_probe = ks_tracepoint_exists("tcp", "tcp_probe") != 0;
	/* unknown (no BTF) counts as present: the load then says what is wrong */
	ctx->probe_sk = ks_btf_has_member("trace_event_raw_tcp_probe", "skaddr") != 0;
	ctx->retrans_err = ks_tp_nargs("tcp_retransmit_skb") >= 3;
	ctx->has_synack = ks_tracepoint_exists("tcp", "tcp_retransmit_synack") != 0;
	acc4 = ks_tracepoint_exists("syscalls", "sys_exit_accept4");
	acc = ks_tracepoint_exists("syscalls", "sys_exit_accept");
	ctx->has_accept = acc4 > 0 && acc > 0;
	if (acc4 < 0 || acc < 0) {
		char why[256];

		/* not told: syscall events are only in tracefs, which this process cannot read (doctor's tracefs line) */
		p_warn("tcp: cannot tell whether syscalls:sys_exit_accept* exist: %s; accepted sockets have no owner",
		       ks_tracefs_explain(acc4 < 0 ? acc4 : acc, why, sizeof(why)));
	} else if (!ctx->has_accept) {
		p_warn("tcp: no syscalls:sys_exit_accept* tracepoints (CONFIG_FTRACE_SYSCALLS); accepted sockets have no owner");
	}
	ctx->filter = f;
	ks_budget_init_for(&ctx->budget, c);
	ctx->vbuf = calloc(1, sizeof(struct ks_tcp_stat));
	ctx->zbuf = calloc(1, sizeof(struct ks_tcp_stat));
	if (!ctx->vbuf || !ctx->zbuf)
		return -ENOMEM;
	if (ctx->by == KS_TCP_BY_REASON)
		load_reasons(ctx);
	if (ctx->by == KS_TCP_BY_REASON)
		spec.hooks = tp_hooks;
	err = ks_load_spec(&spec, ctx, (void **)&ctx->skel, &ctx->hook);
	if (err)
		return err;
	loaded_notes(ctx);
	if (ks_pin_adopted(ctx->skel->obj)) {
		/* adopted programs kept counting: report from where they are, not from zero */
		ctx->gen = ctx->skel->bss->ks_gen & 1;
		ctx->old = ctx->gen ^ 1; /* what a KS_DRAIN_CLEAR empties */
		ctx->seen.to_other = ctx->skel->bss->counts.to_other;
		/* losses from the programs' load on: serve takes off what its saved totals hold (ks_report_lost_less) */
	}
	return 0;
}

static const char *tcp_hook(void *vctx)
{
	return ((struct tcp_ctx *)vctx)->hook;
}

/* An IPv6 socket talking IPv4 (dual-stack): ::ffff:a.b.c.d */
static bool v4_mapped(__u16 family, const __u8 *a)
{
	static const __u8 prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return family == 10 && !memcmp(a, prefix, sizeof(prefix));
}

/*
 * "10.0.0.1:5201" or "[fd00::1]:5201"; an IPv4-mapped address as the IPv4
 * one it stands for ("10.0.0.1:5201": the packets are IPv4), so the two
 * ends of one connection read alike whichever socket family each has.
 */
static void fmt_addr(char *buf, size_t len, __u16 family, const __u8 *addr, __u16 port)
{
	char a[INET6_ADDRSTRLEN];
	bool v6 = family == 10 && !v4_mapped(family, addr);

	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, v6 || family != 10 ? addr : addr + 12, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", a, port);
}

static void row_keys(struct tcp_ctx *ctx, struct ks_row *row, const struct ks_tcp_key *k)
{
	/* "other": beyond --max-rows; "unattributed": drops of packets with no socket */
	const char *special = k->flags & KS_TCP_KEY_OTHER ? "other" : k->flags & KS_TCP_KEY_UNATTRIBUTED ? "unattributed" : NULL;
	char b[64];

	switch (ctx->by) {
	case KS_TCP_BY_FLOW:
		if (special) {
			ks_row_key_str(row, "local", special);
			ks_row_key_str(row, "remote", special);
			ks_row_key_str(row, "family", "-");
			break;
		}
		fmt_addr(b, sizeof(b), k->family, k->laddr, k->lport);
		ks_row_key_str(row, "local", b);
		fmt_addr(b, sizeof(b), k->family, k->raddr, k->rport);
		ks_row_key_str(row, "remote", b);
		ks_row_key_str(row, "family", k->family == 10 && !v4_mapped(k->family, k->raddr) ? "ipv6" : "ipv4");
		break;
	case KS_TCP_BY_PID:
		if (special) {
			ks_row_key_num(row, "pid", -1);
			ks_row_key_str(row, "comm", special);
		} else if (!k->id) {
			/* sockets opened before the start, or by the kernel */
			ks_row_key_num(row, "pid", 0);
			ks_row_key_str(row, "comm", "?");
		} else {
			ks_pid_comm_peek(bpf_map__fd(ctx->skel->maps.pid_comm), k->id, b);
			ks_row_key_num(row, "pid", k->id);
			ks_row_key_str(row, "comm", b);
		}
		break;
	case KS_TCP_BY_COMM:
		memcpy(b, k->comm, KS_COMM_LEN);
		b[KS_COMM_LEN - 1] = 0;
		ks_row_key_str(row, "comm", special ? special : b[0] ? b : "?");
		break;
	case KS_TCP_BY_PORT:
		ks_row_key_num(row, "port", special ? -1 : (int64_t)k->id);
		break;
	case KS_TCP_BY_REASON:
		ks_row_key_str(row, "reason", special ? special : reason_name(ctx, k->id, b, sizeof(b)));
		ks_row_key_num(row, "code", special ? -1 : (int64_t)k->id);
		break;
	}
}

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
enum { C_RETRANSMITS, C_RETRANS_SEGS, C_RETRANS_FAILED, C_DROPS, C_CONNECTS, C_CONNECT_FAILS };
static const struct ks_column tcp_cols[] = {
	[C_RETRANSMITS] = { "retransmits", KS_COL_COUNTER, KS_UNIT_COUNT, "retransmit events that reached RetransSegs" },
	[C_RETRANS_SEGS] = { "retrans_segs", KS_COL_COUNTER, KS_UNIT_COUNT,
			     "segments retransmitted, as RetransSegs counts them (SYN-ACKs and eventless ones too)" },
	[C_RETRANS_FAILED] = { "retrans_failed", KS_COL_COUNTER, KS_UNIT_COUNT,
			       "retransmits that did not go out (the tracepoint's error; 0 where it has none)" },
	[C_DROPS] = { "drops", KS_COL_COUNTER, KS_UNIT_COUNT, "TCP packets freed as dropped" },
	[C_CONNECTS] = { "connects", KS_COL_COUNTER, KS_UNIT_COUNT, "SYN_SENT to ESTABLISHED" },
	[C_CONNECT_FAILS] = { "connect_fails", KS_COL_COUNTER, KS_UNIT_COUNT, "SYN_SENT to CLOSE" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema tcp_schema = { tcp_cols, "rtt_ns", KS_UNIT_NS, "smoothed RTT per received segment",
					    (const char *const[]){ "local", "remote", "family", "pid", "comm", "port", "reason",
								   "code", NULL } };

struct drain_arg {
	struct tcp_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_tcp_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

/* A histogram of u32 slots (struct ks_tcp_stat) with its sum and max. */
static struct ks_hist *hist_of(const __u32 *slots, unsigned int n, __u64 sum, __u64 max)
{
	struct ks_hist *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	for (unsigned int i = 0; i < n && i < KS_HIST_SLOTS; i++) {
		h->slots[i] = slots[i];
		h->count += slots[i];
	}
	h->sum = sum;
	h->max = max;
	return h;
}

/* Whether a row counted anything in its half. */
static bool row_active(const struct ks_tcp_stat *v)
{
	bool rtt = false;

	for (unsigned int i = 0; i < KS_TCP_RTT_SLOTS && !rtt; i++)
		rtt = v->rtt[i] != 0;
	return rtt || v->retransmits || v->retrans_failed || v->drops || v->connects || v->connect_fails;
}

/* Active rows and "other" are zeroed in place, for the half written after the next flip; idle rows go. */
static bool keep_row(const void *key, const void *value, void *varg)
{
	(void)varg;
	return row_active(value) || (((const struct ks_tcp_key *)key)->flags & KS_TCP_KEY_OTHER);
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_tcp_key *k = key;
	const struct ks_tcp_stat *v = value;
	struct drain_arg *a = varg;
	struct ks_hist *rtt = hist_of(v->rtt, KS_TCP_RTT_SLOTS, v->rtt_sum, v->rtt_max);
	struct ks_hist *conn = hist_of(v->conn, KS_TCP_CONN_SLOTS, v->conn_sum, v->conn_max);
	bool active = row_active(v);
	struct ks_row *row;

	if (!rtt || !conn) {
		free(rtt);
		free(conn);
		return -ENOMEM;
	}
	if (!active) {
		free(rtt);
		free(conn);
		return 0;
	}
	row = ks_report_add_row(a->r);
	if (!row) {
		free(rtt);
		free(conn);
		return -ENOMEM;
	}
	row_keys(a->ctx, row, k);
	ks_row_col(row, &tcp_cols[C_RETRANSMITS], v->retransmits);
	ks_row_col(row, &tcp_cols[C_RETRANS_SEGS], v->retrans_segs);
	ks_row_col(row, &tcp_cols[C_RETRANS_FAILED], v->retrans_failed);
	ks_row_col(row, &tcp_cols[C_DROPS], v->drops);
	ks_row_col(row, &tcp_cols[C_CONNECTS], v->connects);
	ks_row_col(row, &tcp_cols[C_CONNECT_FAILS], v->connect_fails);
	/* trouble first: retransmitted and dropped segments, then activity */
	row->sort = ((v->retrans_segs + v->drops) << 24) + rtt->count + v->connects;
	/* a row without samples carries no histogram: "-" in text, absent in JSON */
	if (rtt->count)
		row->hist = rtt;
	else
		free(rtt);
	if (conn->count)
		ks_row_xhist(row, "connect_ns", KS_UNIT_NS, conn);
	else
		free(conn);
	return 0;
}

/* Phase one (core/instance.h): flip the halves; the driver waits for the kernel once for every instance. */
static int tcp_mark(void *vctx)
{
	struct tcp_ctx *ctx = vctx;

	ctx->old = ks_gen_mark(&ctx->gen, &ctx->skel->bss->ks_gen);
	return 0;
}

/* Phase two: the retired half is quiet now; move it into @r (or one of the two, in @mode). */
static int tcp_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct tcp_ctx *ctx = vctx;
	struct drain_arg a = { ctx, r, ctx->old };
	struct ks_hash_half h = { .fd = bpf_map__fd(ctx->skel->maps.rows), .key_size = sizeof(struct ks_tcp_key),
				  .match = key_in_gen, .cb = take_row, .keep = keep_row, .zero = ctx->zbuf, .arg = &a,
				  .value_buf = ctx->vbuf };
	struct ks_tcp_counts now;
	int err;

	if (mode == KS_DRAIN_CLEAR)
		return ks_hash_drain_half(&h, mode);
	r->hist_name = tcp_schema.hist_name;
	/* the text columns say what the percentiles are of; addresses are printed whole */
	r->hist_cols = "rtt_";
	r->keys_whole = true;
	ks_budget_report(&ctx->budget, r);
	err = ks_hash_drain_half(&h, mode);
	if (err)
		return err;
	now = ctx->skel->bss->counts;
	ks_report_lost(r, "lost", now.lost - ctx->seen.lost);
	ks_report_lost(r, "socks_full", now.socks_full - ctx->seen.socks_full);
	ks_report_lost(r, "map_update_failed", now.update_failed - ctx->seen.update_failed);
	ks_report_lost(r, "recursion", ks_obj_missed_since(ctx->skel->obj, &ctx->missed_seen));
	ks_report_counter(r, "to_other", now.to_other - ctx->seen.to_other);
	ctx->seen = now;
	return 0;
}

/* --pin: to_other is cumulative in .bss; the restart reports it from the read its saved totals hold */
static const size_t tcp_cursor[] = { offsetof(struct tcp_ctx, seen.to_other) };

static void tcp_close(void *vctx)
{
	struct tcp_ctx *ctx = vctx;

	ks_tcp__destroy(ctx->skel);
	ctx->skel = NULL;
	btf__free(ctx->btf);
	ctx->btf = NULL;
	free(ctx->vbuf);
	free(ctx->zbuf);
	ctx->vbuf = ctx->zbuf = NULL;
}

const struct ks_collector ks_tcp_collector = {
	.spec = {
		.name = "tcp",
		.summary = "TCP retransmits, drops by reason, smoothed RTT and connect latency per flow, owner or port.",
		.common = KS_O_COLLECTOR,
		.by_words = tcp_by_words,
		.opts = tcp_opts,
	},
	.ctx_size = sizeof(struct tcp_ctx),
	.init = tcp_init,
	.parse_opt = tcp_parse_opt,
	.open = tcp_open,
	.hook = tcp_hook,
	.mark = tcp_mark,
	.drain = tcp_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct tcp_ctx, skel),
					   .cursor_u64 = { tcp_cursor, 1 } },
	.schema = &tcp_schema,
	.close = tcp_close,
};
