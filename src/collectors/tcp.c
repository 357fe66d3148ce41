/* User side of `ksight tcp`: options, load with hook fallback (fentry first), drain per-CPU rows into a report. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/tracefs.h"
#include "ksight/tcp.h"
#include "tcp.skel.h"

enum { OPT_ROWS = 300 };

#define TCP_ROWS_DEFAULT 4096
#define TCP_ROWS_MAX (1u << 20)

struct tcp_ctx {
	enum ks_tcp_by by;
	uint32_t max_rows;
	bool has_probe;	 /* tcp:tcp_probe exists: RTT from the tracepoint variants */
	bool probe_sk;	 /* its classic record carries the socket (skaddr; 6.1's has none) */
	bool has_accept; /* syscalls:sys_exit_accept* exist: owners of accepted sockets */
	bool retrans_err; /* tcp_retransmit_skb passes an error: failed retransmits too */
	const struct ks_filter *filter;
	struct ks_tcp *skel;
	const char *hook;
	unsigned int gen;
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

static enum ks_tcp_by parse_by(const char *by)
{
	static const char *const names[] = { "flow", "pid", "comm", "port", "reason" };

	for (unsigned int i = 0; by && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(by, names[i]))
			return (enum ks_tcp_by)i;
	return KS_TCP_BY_FLOW;
}

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

static int try_hook(void *vctx, const char *hook)
{
	struct tcp_ctx *ctx = vctx;
	bool tracepoint_rtt = strcmp(hook, KS_HOOK_FENTRY) && strcmp(hook, KS_HOOK_KPROBE);
	/* the classic record must name the socket: RTT is charged to its owner */
	bool no_rtt = tracepoint_rtt && (!ctx->has_probe || (!strcmp(hook, KS_HOOK_TP) && !ctx->probe_sk));
	struct ks_tcp *s;
	int err;

	s = ks_tcp__open();
	if (!s)
		return -errno;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->retrans_err_arg = ctx->retrans_err;
	/* one more for "other" in each half */
	bpf_map__set_max_entries(s->maps.rows, 2 * (ctx->max_rows + 1));
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_TCP_BY_PID ? ctx->max_rows : 1);
	/* the accept() events are classic tracepoints in every variant */
	ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
	/* owners of accepted sockets come from accept(); without syscall events they stay unknown */
	if (!ctx->has_accept) {
		bpf_program__set_autoload(s->progs.tcp_accept4, false);
		bpf_program__set_autoload(s->progs.tcp_accept, false);
	} else if (ctx->by == KS_TCP_BY_REASON && !ctx->filter->flags) {
		bpf_program__set_autoload(s->progs.tcp_accept4, false);
		bpf_program__set_autoload(s->progs.tcp_accept, false);
	}
	if (ctx->by == KS_TCP_BY_REASON) {
		/* drops only; state changes to know owners when a filter asks for them */
		ks_prog_disable(s->obj, "tcp_rtt");
		ks_prog_disable(s->obj, "tcp_retrans");
		if (!ctx->filter->flags)
			ks_prog_disable(s->obj, "tcp_state");
	} else if (no_rtt) {
		ks_prog_disable(s->obj, "tcp_rtt");
	}
	err = ks_tcp__load(s);
	if (!err) {
		precreate(ctx, s);
		err = ks_tcp__attach(s);
	}
	if (err) {
		ks_tcp__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	if (no_rtt && ctx->by != KS_TCP_BY_REASON) {
		if (!ctx->has_probe)
			p_warn("tcp: tracepoint tcp:tcp_probe is not in this kernel; no RTT with hook %s", hook);
		else
			p_warn("tcp: tcp:tcp_probe records no socket address (skaddr) in this kernel; no RTT with hook %s", hook);
	}
	ctx->skel = s;
	return 0;
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
	struct tcp_ctx *ctx = vctx;

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
	ctx->has_accept = ks_tracepoint_exists("syscalls", "sys_exit_accept4") > 0 &&
			  ks_tracepoint_exists("syscalls", "sys_exit_accept") > 0;
	if (!ctx->has_accept)
		p_warn("tcp: no syscalls:sys_exit_accept* tracepoints (CONFIG_FTRACE_SYSCALLS); accepted sockets have no owner");
	ctx->by = parse_by(c->by);
	ctx->filter = f;
	ctx->vbuf = calloc((size_t)ks_ncpus(), sizeof(struct ks_tcp_stat));
	ctx->zbuf = calloc((size_t)ks_ncpus(), sizeof(struct ks_tcp_stat));
	if (!ctx->vbuf || !ctx->zbuf)
		return -ENOMEM;
	if (ctx->by == KS_TCP_BY_REASON)
		load_reasons(ctx);
	return ks_load_first(ctx->by == KS_TCP_BY_REASON ? tp_hooks : hooks, try_hook, ctx, &ctx->hook);
}

static const char *tcp_hook(void *vctx)
{
	return ((struct tcp_ctx *)vctx)->hook;
}

/* "10.0.0.1:5201" or "[fd00::1]:5201" */
static void fmt_addr(char *buf, size_t len, __u16 family, const __u8 *addr, __u16 port)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(family == 10 ? AF_INET6 : AF_INET, addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, family == 10 ? "[%s]:%u" : "%s:%u", a, port);
}

static void row_keys(struct tcp_ctx *ctx, struct ks_row *row, const struct ks_tcp_key *k)
{
	bool other = k->flags & KS_TCP_KEY_OTHER;
	char b[64];

	switch (ctx->by) {
	case KS_TCP_BY_FLOW:
		if (other) {
			ks_row_key_str(row, "local", "other");
			ks_row_key_str(row, "remote", "other");
			ks_row_key_str(row, "family", "-");
			break;
		}
		fmt_addr(b, sizeof(b), k->family, k->laddr, k->lport);
		ks_row_key_str(row, "local", b);
		fmt_addr(b, sizeof(b), k->family, k->raddr, k->rport);
		ks_row_key_str(row, "remote", b);
		ks_row_key_str(row, "family", k->family == 10 ? "ipv6" : "ipv4");
		break;
	case KS_TCP_BY_PID:
		if (other) {
			ks_row_key_num(row, "pid", -1);
			ks_row_key_str(row, "comm", "other");
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
		ks_row_key_str(row, "comm", other ? "other" : b[0] ? b : "?");
		break;
	case KS_TCP_BY_PORT:
		ks_row_key_num(row, "port", other ? -1 : (int64_t)k->id);
		break;
	case KS_TCP_BY_REASON:
		ks_row_key_str(row, "reason", other ? "other" : reason_name(ctx, k->id, b, sizeof(b)));
		ks_row_key_num(row, "code", other ? -1 : (int64_t)k->id);
		break;
	}
}

struct drain_arg {
	struct tcp_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_tcp_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_tcp_key *k = key;
	const struct ks_tcp_stat *v = value;
	struct drain_arg *a = varg;
	struct ks_tcp_stat sum = { 0 };
	struct ks_hist *rtt = calloc(1, sizeof(*rtt)), *conn = calloc(1, sizeof(*conn));
	struct ks_row *row;

	if (!rtt || !conn) {
		free(rtt);
		free(conn);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		const struct ks_tcp_stat *c = &v[cpu];

		sum.retransmits += c->retransmits;
		sum.retrans_segs += c->retrans_segs;
		sum.retrans_failed += c->retrans_failed;
		sum.drops += c->drops;
		sum.connects += c->connects;
		sum.connect_fails += c->connect_fails;
		ks_hist_add_slots_n(rtt, c->rtt, KS_TCP_SLOTS);
		ks_hist_add_slots_n(conn, c->conn, KS_TCP_SLOTS);
		rtt->sum += c->rtt_sum;
		conn->sum += c->conn_sum;
		if (c->rtt_max > rtt->max)
			rtt->max = c->rtt_max;
		if (c->conn_max > conn->max)
			conn->max = c->conn_max;
	}
	/* active rows and "other" come back zeroed for the half written after the next flip */
	if (rtt->count || sum.retransmits || sum.retrans_failed || sum.drops || sum.connects || sum.connect_fails ||
	    (k->flags & KS_TCP_KEY_OTHER))
		ks_map_add(bpf_map__fd(a->ctx->skel->maps.rows), k, a->ctx->zbuf);
	if (!rtt->count && !sum.retransmits && !sum.retrans_failed && !sum.drops && !sum.connects && !sum.connect_fails) {
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
	ks_row_val(row, "retransmits", KS_VAL_COUNT, sum.retransmits);
	ks_row_val(row, "retrans_segs", KS_VAL_COUNT, sum.retrans_segs);
	ks_row_val(row, "retrans_failed", KS_VAL_COUNT, sum.retrans_failed);
	ks_row_val(row, "drops", KS_VAL_COUNT, sum.drops);
	ks_row_val(row, "connects", KS_VAL_COUNT, sum.connects);
	ks_row_val(row, "connect_fails", KS_VAL_COUNT, sum.connect_fails);
	/* trouble first: retransmitted and dropped segments, then activity */
	row->sort = ((sum.retrans_segs + sum.drops) << 24) + rtt->count + sum.connects;
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

static int tcp_collect(void *vctx, struct ks_report *r)
{
	struct tcp_ctx *ctx = vctx;
	unsigned int old = ks_gen_flip(&ctx->gen, &ctx->skel->bss->ks_gen);
	struct drain_arg a = { ctx, r, old };
	struct ks_tcp_counts now;
	int err;

	r->hist_name = "rtt_ns";
	err = ks_hash_drain(bpf_map__fd(ctx->skel->maps.rows), sizeof(struct ks_tcp_key), key_in_gen, take_row,
			    &a, ctx->vbuf);
	if (err)
		return err;
	now = ctx->skel->bss->counts;
	ks_report_lost(r, "lost", now.lost - ctx->seen.lost);
	ks_report_lost(r, "socks_full", now.socks_full - ctx->seen.socks_full);
	ks_report_lost(r, "recursion", ks_obj_missed_since(ctx->skel->obj, &ctx->missed_seen));
	ks_report_counter(r, "to_other", now.to_other - ctx->seen.to_other);
	ctx->seen = now;
	return 0;
}

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
		.by_keys = "flow|pid|comm|port|reason",
		.opts = tcp_opts,
	},
	.ctx_size = sizeof(struct tcp_ctx),
	.init = tcp_init,
	.parse_opt = tcp_parse_opt,
	.open = tcp_open,
	.hook = tcp_hook,
	.collect = tcp_collect,
	.close = tcp_close,
};
