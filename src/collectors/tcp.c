/* User side of `ksight tcp`: options, map sizes from the memory budget, load with hook fallback (fentry first), drain rows (retransmits, drops, listen overflows, RTT, cwnd) into a report. */
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
#include "core/log.h"
#include "core/parse.h"
#include "core/pin.h"
#include "core/scaffold.h"
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
	struct ks_scaffold sc; /* first: the lifecycle core runs */
	enum ks_tcp_by by;
	uint32_t max_rows;
	bool has_probe;	 /* tcp:tcp_probe exists: RTT from the tracepoint variants */
	bool probe_sk;	 /* its classic record carries the socket (skaddr; 6.1's has none) */
	bool has_accept; /* syscalls:sys_exit_accept* exist: owners of accepted sockets */
	bool retrans_err; /* tcp_retransmit_skb passes an error: failed retransmits too */
	bool has_synack;  /* tcp:tcp_retransmit_synack exists: SYN-ACK retransmits */
	bool has_ready;	  /* sock:sk_data_ready exists (6.18; not 6.1): listeners are learnt, refused SYNs counted */
	bool drop_rx_sk;  /* kfree_skb passes rx_sk (6.11+): dropped last ACKs of handshakes counted */
	const struct ks_filter *filter;
	uint32_t rows_fit;	/* rows per half the budget holds (<= max_rows) */
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

/* After load, before attach: rows made ahead, in both halves: "other", and the one a pid or comm filter pins down. */
static int precreate(void *vctx, void *skel)
{
	struct tcp_ctx *ctx = vctx;
	struct ks_tcp *s = skel;
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
		if (ks_map_add(fd, &o, ctx->sc.zero))
			p_warn("tcp: cannot make the \"other\" row: %s", strerror(errno));
		if (pinned)
			ks_map_add(fd, &f, ctx->sc.zero);
	}
	return 0;
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
	struct ks_budget *b = &ctx->sc.budget;
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
	s->rodata->drop_rx_sk_arg = ctx->drop_rx_sk;
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
	/* listeners have no owner to filter by, and no row by drop reason */
	if (!ctx->has_ready || ctx->filter->flags || ctx->by == KS_TCP_BY_REASON) {
		ks_prog_disable(s->obj, "tcp_syn");
		ks_prog_disable(s->obj, "tcp_ready");
	}
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

KS_SKEL_OPS(ks_tcp);

/* What the chosen hook leaves out, and what the budget allows, once loaded. */
static int loaded_notes(void *vctx)
{
	const struct tcp_ctx *ctx = vctx;
	const char *hook = ctx->sc.hook;

	if (ctx->by != KS_TCP_BY_REASON && no_rtt(ctx, variant_of(hook), hook)) {
		if (!ctx->has_probe)
			p_warn("tcp: tracepoint tcp:tcp_probe is not in this kernel; no RTT with hook %s", hook);
		else
			p_warn("tcp: tcp:tcp_probe records no socket address (skaddr) in this kernel; no RTT with hook %s", hook);
	}
	if (ctx->by != KS_TCP_BY_REASON && !ctx->filter->flags && !ctx->has_ready)
		p_info("tcp: no sock:sk_data_ready tracepoint (6.1 has none): no refused SYNs in listen_overflows and listen_drops");
	if (ctx->rows_fit < ctx->max_rows)
		p_info("tcp: %u rows per interval fit in the memory budget (--max-rows %u); the rest go to \"other\"",
		       ctx->rows_fit, ctx->max_rows);
	return 0;
}

/* What tcp asks of the kernel, probed once before its load (tcp_probed reads the answers). */
enum { P_PROBE = 3, P_PROBE_SK, P_RETRANS_NARGS, P_SYNACK, P_ACCEPT4, P_ACCEPT, P_READY, P_DROP_NARGS };
static const struct ks_sc_probe tcp_probes[] = {
	{ KS_SC_TP_NEEDED, "sock", "inet_sock_set_state", 0 },
	{ KS_SC_TP_NEEDED, "tcp", "tcp_retransmit_skb", 0 },
	{ KS_SC_TP_NEEDED, "skb", "kfree_skb", 0 },
	[P_PROBE] = { KS_SC_TP, "tcp", "tcp_probe", 0 },
	[P_PROBE_SK] = { KS_SC_BTF_MEMBER, "trace_event_raw_tcp_probe", "skaddr", 0 },
	[P_RETRANS_NARGS] = { KS_SC_TP_NARGS, "tcp_retransmit_skb", NULL, 0 },
	[P_SYNACK] = { KS_SC_TP, "tcp", "tcp_retransmit_synack", 0 },
	[P_ACCEPT4] = { KS_SC_TP, "syscalls", "sys_exit_accept4", 0 },
	[P_ACCEPT] = { KS_SC_TP, "syscalls", "sys_exit_accept", 0 },
	[P_READY] = { KS_SC_TP, "sock", "sk_data_ready", 0 },
	[P_DROP_NARGS] = { KS_SC_TP_NARGS, "kfree_skb", NULL, 0 },
};

static int tcp_probed(void *vctx)
{
	struct tcp_ctx *ctx = vctx;
	const int *p = ctx->sc.probed;
	int acc4 = p[P_ACCEPT4], acc = p[P_ACCEPT];

	ctx->has_probe = p[P_PROBE] != 0;
	/* unknown (no BTF) counts as present: the load then says what is wrong */
	ctx->probe_sk = p[P_PROBE_SK] != 0;
	ctx->retrans_err = p[P_RETRANS_NARGS] >= 3;
	ctx->has_synack = p[P_SYNACK] != 0;
	ctx->has_ready = p[P_READY] > 0;
	ctx->drop_rx_sk = p[P_DROP_NARGS] >= 4;
	ctx->has_accept = acc4 > 0 && acc > 0;
	if (acc4 < 0 || acc < 0) {
		char why[256];

		/* not told: syscall events are only in tracefs, which this process cannot read (doctor's tracefs line) */
		p_warn("tcp: cannot tell whether syscalls:sys_exit_accept* exist: %s; accepted sockets have no owner",
		       ks_tracefs_explain(acc4 < 0 ? acc4 : acc, why, sizeof(why)));
	} else if (!ctx->has_accept) {
		p_warn("tcp: no syscalls:sys_exit_accept* tracepoints (CONFIG_FTRACE_SYSCALLS); accepted sockets have no owner");
	}
	if (ctx->by == KS_TCP_BY_REASON && !ks_drop_reasons_load())
		p_info("tcp: no kernel BTF: drop reasons are shown as numbers");
	return 0;
}

static const struct ks_sc_def tcp_def;

static int tcp_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	/* drop reasons only: no RTT, so neither fentry nor kprobe has anything to add */
	static const char *const tp_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct tcp_ctx *ctx = vctx;
	int by = ks_by_parse(tcp_by_words, c->by);

	if (by < 0)
		return by;
	ctx->by = (enum ks_tcp_by)by;
	ctx->filter = f;
	if (ctx->by == KS_TCP_BY_REASON)
		ctx->sc.hooks = tp_hooks;
	return ks_sc_open(&ctx->sc, &tcp_def, c);
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
			ks_pid_comm_peek(bpf_map__fd(((struct ks_tcp *)ctx->sc.skel)->maps.pid_comm), k->id, b);
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
		ks_row_key_str(row, "reason", special ? special : ks_drop_reason_name(k->id, b, sizeof(b)));
		ks_row_key_num(row, "code", special ? -1 : (int64_t)k->id);
		break;
	}
}

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
enum {
	C_RETRANSMITS,
	C_RETRANS_SEGS,
	C_RETRANS_FAILED,
	C_DROPS,
	C_CONNECTS,
	C_CONNECT_FAILS,
	C_LISTEN_OVERFLOWS,
	C_LISTEN_DROPS,
	C_CWND_MIN,
	C_CWND_MAX,
	C_CWND_LAST,
	C_SSTHRESH_LAST,
};
static const struct ks_column tcp_cols[] = {
	[C_RETRANSMITS] = { "retransmits", KS_COL_COUNTER, KS_UNIT_COUNT, "retransmit events that reached RetransSegs" },
	[C_RETRANS_SEGS] = { "retrans_segs", KS_COL_COUNTER, KS_UNIT_COUNT,
			     "segments retransmitted, as RetransSegs counts them (SYN-ACKs and eventless ones too)" },
	[C_RETRANS_FAILED] = { "retrans_failed", KS_COL_COUNTER, KS_UNIT_COUNT,
			       "retransmits that did not go out (the tracepoint's error; 0 where it has none)" },
	[C_DROPS] = { "drops", KS_COL_COUNTER, KS_UNIT_COUNT, "TCP packets freed as dropped" },
	[C_CONNECTS] = { "connects", KS_COL_COUNTER, KS_UNIT_COUNT, "SYN_SENT to ESTABLISHED" },
	[C_CONNECT_FAILS] = { "connect_fails", KS_COL_COUNTER, KS_UNIT_COUNT, "SYN_SENT to CLOSE" },
	[C_LISTEN_OVERFLOWS] = { "listen_overflows", KS_COL_COUNTER, KS_UNIT_COUNT,
				 "SYNs and handshakes' last ACKs a full accept queue refused (ListenOverflows)" },
	[C_LISTEN_DROPS] = { "listen_drops", KS_COL_COUNTER, KS_UNIT_COUNT,
			     "SYNs and last ACKs the listener dropped, overflows included (ListenDrops, as far as seen)" },
	[C_CWND_MIN] = { "cwnd_min", KS_COL_GAUGE, KS_UNIT_COUNT, "smallest congestion window at tcp_probe, segments" },
	[C_CWND_MAX] = { "cwnd_max", KS_COL_GAUGE, KS_UNIT_COUNT, "largest congestion window at tcp_probe, segments" },
	[C_CWND_LAST] = { "cwnd_last", KS_COL_GAUGE, KS_UNIT_COUNT, "congestion window at the last tcp_probe, segments" },
	[C_SSTHRESH_LAST] = { "ssthresh_last", KS_COL_GAUGE, KS_UNIT_COUNT,
			      "slow-start threshold at the last tcp_probe (2147483647: not set yet)" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema tcp_schema = { tcp_cols, "rtt_ns", KS_UNIT_NS, "smoothed RTT per received segment",
					    (const char *const[]){ "local", "remote", "family", "pid", "comm", "port", "reason",
								   "code", NULL },
					    /* the text columns say what the percentiles are of; addresses are printed whole */
					    .hist_cols = "rtt_", .keys_whole = true };

/* Whether a row counted anything in its half. */
static bool row_active(const struct ks_tcp_stat *v)
{
	bool rtt = false;

	for (unsigned int i = 0; i < KS_TCP_RTT_SLOTS && !rtt; i++)
		rtt = v->rtt[i] != 0;
	return rtt || v->retransmits || v->retrans_failed || v->drops || v->connects || v->connect_fails ||
	       v->listen_drops;
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
	const struct ks_sc_drain *a = varg;
	struct ks_hist *rtt = ks_hist_of_u32(v->rtt, KS_TCP_RTT_SLOTS, v->rtt_sum, v->rtt_max);
	struct ks_hist *conn = ks_hist_of_u32(v->conn, KS_TCP_CONN_SLOTS, v->conn_sum, v->conn_max);
	bool active = row_active(v), probed;
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
	ks_row_col(row, &tcp_cols[C_LISTEN_OVERFLOWS], v->listen_overflows);
	ks_row_col(row, &tcp_cols[C_LISTEN_DROPS], v->listen_drops);
	/* a window is never 0 segments: 0 means no tcp_probe in this interval (only drops or retransmits),
	 * which must not overwrite the flow's last window in serve's and record --collect's totals */
	probed = v->cwnd_max != 0;
	ks_row_gauge(row, &tcp_cols[C_CWND_MIN], probed, v->cwnd_min, KS_GAUGE_MIN);
	ks_row_gauge(row, &tcp_cols[C_CWND_MAX], probed, v->cwnd_max, KS_GAUGE_MAX);
	ks_row_gauge(row, &tcp_cols[C_CWND_LAST], probed, v->cwnd_last, KS_GAUGE_LAST);
	ks_row_gauge(row, &tcp_cols[C_SSTHRESH_LAST], probed, v->ssthresh_last, KS_GAUGE_LAST);
	/* trouble first: retransmitted and dropped segments, refused connections, then activity */
	row->sort = ((v->retrans_segs + v->drops + v->listen_drops) << 24) + rtt->count + v->connects;
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

/* The row maps, counters and load of tcp, for core (core/scaffold.h). */
static const struct ks_sc_map tcp_maps[] = {
	{ "rows", sizeof(struct ks_tcp_key), sizeof(struct ks_tcp_stat), .take = take_row, .keep = keep_row },
};
enum { N_TO_OTHER = 4 };
static const struct ks_sc_counter tcp_counters[] = {
	{ "lost", offsetof(struct ks_tcp__bss, counts.lost), KS_SC_LOSS },
	{ "socks_full", offsetof(struct ks_tcp__bss, counts.socks_full), KS_SC_LOSS },
	{ "map_update_failed", offsetof(struct ks_tcp__bss, counts.update_failed), KS_SC_LOSS },
	{ "recursion", 0, KS_SC_RECURSION },
	[N_TO_OTHER] = { "to_other", offsetof(struct ks_tcp__bss, counts.to_other), KS_SC_COUNTER },
};
static const char *const tcp_hooks[] = { KS_HOOK_FENTRY, KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, KS_HOOK_KPROBE, NULL };
static const struct ks_sc_def tcp_def = {
	.name = "tcp", .hooks = tcp_hooks, .skel = &ks_tcp_ops, .gen_at = offsetof(struct ks_tcp__bss, ks_gen),
	.maps = tcp_maps, .nmaps = 1, .counters = tcp_counters, .ncounters = 5,
	.probes = tcp_probes, .nprobes = sizeof(tcp_probes) / sizeof(tcp_probes[0]),
	.probed = tcp_probed, .configure = configure, .loaded = precreate, .attached = loaded_notes,
};

/*
 * The retired half into @r (or one of the two, in @mode): core drains it
 * all.  A wrapper only for the type: .drain takes the collector's void *
 * ctx, ks_sc_drain the scaffold, and calling it through a cast pointer
 * is undefined behaviour (and a CFI trap).
 */
static int tcp_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	return ks_sc_drain(&((struct tcp_ctx *)vctx)->sc, r, mode);
}

/* --pin: to_other is cumulative in .bss; the restart reports it from the read its saved totals hold */
static const size_t tcp_cursor[] = { offsetof(struct tcp_ctx, sc.seen[N_TO_OTHER]) };

const struct ks_collector ks_tcp_collector = {
	.spec = {
		.name = "tcp",
		.summary = "TCP retransmits, drops by reason, listen overflows, smoothed RTT, cwnd and connect latency per flow, owner or port.",
		.common = KS_O_COLLECTOR,
		.by_words = tcp_by_words,
		.opts = tcp_opts,
	},
	.ctx_size = sizeof(struct tcp_ctx),
	.init = tcp_init,
	.parse_opt = tcp_parse_opt,
	.open = tcp_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = tcp_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct tcp_ctx, sc.skel), .cursor_u64 = { tcp_cursor, 1 } },
	.schema = &tcp_schema,
	.close = ks_sc_close,
};
