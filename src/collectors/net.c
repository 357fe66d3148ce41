/* User side of `ksight net`: options, map sizes from the memory budget, load (tp_btf, else raw_tp), drain stage rows into a report. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/cgroup.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/pin.h"
#include "core/scaffold.h"
#include "core/tracefs.h"
#include "ksight/net.h"
#include "net.skel.h"

enum { OPT_ROWS = 300, OPT_DEV, OPT_PORT, OPT_PROTO };

#define NET_ROWS_DEFAULT 4096
#define NET_ROWS_MAX (1u << 20)
/* both halves of 128 rows and each stage's "other" */
#define NET_ROWS_LEAST (2 * (128 + KS_NET_STAGES))
/* packets in flight remembered: a few socket buffers' worth on a busy host */
#define NET_STAMPS_MIN 4096
#define NET_STAMPS_MAX (1u << 18)
/* UDP sockets with packets queued at one moment */
#define NET_SOCKS 16384
/* a stamp this old lost its packet to a path no tracepoint shows (a driver's own free, a TCP coalesce) */
#define NET_STALE_NS (10ull * 1000000000ull)

struct net_ctx {
	struct ks_scaffold sc; /* first: the lifecycle core runs */
	enum ks_net_by by;
	uint32_t max_rows;
	uint32_t rows_fit; /* rows per half the budget holds (<= max_rows) */
	char dev[KS_COMM_LEN];
	uint16_t port;
	uint8_t proto;
	bool has_send; /* syscalls:sys_enter_send* exist: the send stage */
	bool has_ready; /* sock:sk_data_ready exists (6.10+): the rx stage */
	bool has_recv_len; /* sock:sock_recv_length exists (6.4+): UDP's reads */
	const struct ks_filter *filter;
};

static const struct ks_optdef net_opts[] = {
	{ "dev", OPT_DEV, "NAME", "only packets on device NAME (any namespace's)" },
	{ "port", OPT_PORT, "N", "only packets from or to port N" },
	{ "proto", OPT_PROTO, "tcp|udp", "only TCP or UDP packets" },
	{ "max-rows", OPT_ROWS, "N", "distinct rows kept per interval (default 4096); the rest go to \"other\"" },
	{ 0 },
};

static int net_init(void *vctx)
{
	((struct net_ctx *)vctx)->max_rows = NET_ROWS_DEFAULT;
	return 0;
}

static int net_parse_opt(void *vctx, int id, const char *arg)
{
	struct net_ctx *ctx = vctx;
	uint64_t v;

	switch (id) {
	case OPT_ROWS:
		if (ks_parse_u64(arg, 1, NET_ROWS_MAX, &v)) {
			p_err("invalid row count '%s': expected 1 to %u", arg, NET_ROWS_MAX);
			return -EINVAL;
		}
		ctx->max_rows = (uint32_t)v;
		return 0;
	case OPT_DEV:
		if (!arg[0] || strlen(arg) >= sizeof(ctx->dev) || strchr(arg, '/')) {
			p_err("invalid device name '%s': 1 to %zu characters, no '/'", arg, sizeof(ctx->dev) - 1);
			return -EINVAL;
		}
		snprintf(ctx->dev, sizeof(ctx->dev), "%s", arg);
		return 0;
	case OPT_PORT:
		if (ks_parse_u64(arg, 1, 65535, &v)) {
			p_err("invalid port '%s': expected 1 to 65535", arg);
			return -EINVAL;
		}
		ctx->port = (uint16_t)v;
		return 0;
	case OPT_PROTO:
		if (!strcmp(arg, "tcp")) {
			ctx->proto = 6;
		} else if (!strcmp(arg, "udp")) {
			ctx->proto = 17;
		} else {
			p_err("invalid protocol '%s': expected tcp or udp", arg);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

static const struct ks_by_word net_by_words[] = {
	{ "stage", KS_NET_BY_STAGE }, { "flow", KS_NET_BY_FLOW }, { "dev", KS_NET_BY_DEV },
	{ "cgroup", KS_NET_BY_CGROUP }, { "pid", KS_NET_BY_PID }, { "comm", KS_NET_BY_COMM },
	{ NULL, KS_NET_BY_STAGE },
};

/* After load, before attach: each stage's "other" row, in both halves. */
static int precreate(void *vctx, void *skel)
{
	struct net_ctx *ctx = vctx;
	int fd = bpf_map__fd(((struct ks_net *)skel)->maps.rows);
	struct ks_net_key o = { .flags = KS_NET_KEY_OTHER };

	for (__u32 g = 0; g < 2; g++)
		for (__u16 st = 0; st < KS_NET_STAGES; st++) {
			o.gen = g;
			o.stage = st;
			if (ks_map_add(fd, &o, ctx->sc.zero)) {
				p_err("net: cannot make the \"other\" rows: %s", strerror(errno));
				return -errno;
			}
		}
	return 0;
}

/*
 * Map sizes from the memory budget: the stamps of packets in flight take
 * up to a quarter of it, half by skb and half by socket queue (at most
 * 256 Ki packets each), less the per-CPU stage rows (by stage: 16
 * elements a CPU), the rows what is left, as many as --max-rows asks for in
 * each half, refused below 128 rows (the send stamps are task storage,
 * one per sending thread, made as it sends).
 */
static void size_maps(struct net_ctx *ctx, struct ks_net *s)
{
	struct ks_budget *b = &ctx->sc.budget;
	uint32_t want = 2 * (ctx->max_rows + KS_NET_STAGES), rows, stamps;
	uint32_t least = want < NET_ROWS_LEAST ? want : NET_ROWS_LEAST;
	uint64_t taken, stage_bytes;
	double share;

	stage_bytes = ks_map_bytes(BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32), sizeof(struct ks_net_stat),
				   ctx->by == KS_NET_BY_STAGE ? 2 * KS_NET_STAGES : 1, 0, b->ncpus);
	/* the per-CPU stage rows, allocated at load like the stamps, come out of the stamps' eighth (4.4 MiB at 128 CPUs) */
	share = 0.125 - (double)stage_bytes / (double)b->limit;
	stamps = ks_budget_rows(b, share > 0.03 ? share : 0.03,
				ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(__u64), sizeof(struct ks_net_stamp), 0),
				NET_STAMPS_MIN, NET_STAMPS_MAX, true);
	/* stamps twice: by skb, and by socket queue (UDP) */
	taken = 2 * ks_map_bytes(BPF_MAP_TYPE_HASH, 2 * sizeof(__u64), sizeof(struct ks_net_stamp), stamps, 0,
				 b->ncpus) +
		ks_map_bytes(BPF_MAP_TYPE_LRU_HASH, sizeof(__u64), 2 * sizeof(__u64), NET_SOCKS, 0, b->ncpus) +
		stage_bytes;
	share = 0.95 - (double)taken / (double)b->limit;
	rows = ks_budget_rows(b, share > 0.01 ? share : 0.01,
			      ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_net_key),
						  sizeof(struct ks_net_stat), BPF_F_NO_PREALLOC),
			      least, want, false);
	ctx->rows_fit = rows / 2 - KS_NET_STAGES;
	bpf_map__set_max_entries(s->maps.rows, rows);
	bpf_map__set_max_entries(s->maps.stamps, stamps);
	bpf_map__set_max_entries(s->maps.sockq, stamps);
	bpf_map__set_max_entries(s->maps.sockpos, NET_SOCKS);
	/* the per-CPU stage rows serve the default mode only */
	if (ctx->by != KS_NET_BY_STAGE)
		bpf_map__set_max_entries(s->maps.stage_rows, 1);
}

/* The rodata, map sizes and programs of one load (ks_load_spec). */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct net_ctx *ctx = vctx;
	struct ks_net *s = skel;

	(void)hook;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	memcpy((char *)s->rodata->dev_filter, ctx->dev, sizeof(ctx->dev));
	s->rodata->port_filter = ctx->port;
	s->rodata->proto_filter = ctx->proto;
	s->rodata->has_ready = ctx->has_ready;
	s->rodata->udp_reads = ctx->has_ready && ctx->has_recv_len;
	if (!ctx->has_ready)
		ks_prog_disable(s->obj, "net_ready");
	if (!ctx->has_recv_len)
		ks_prog_disable(s->obj, "net_recv");
	size_maps(ctx, s);
	/* the send syscalls are classic tracepoints in every variant */
	ks_tracefs_dir(NULL);
	if (!ctx->has_send) {
		bpf_program__set_autoload(s->progs.net_sendto_in, false);
		bpf_program__set_autoload(s->progs.net_sendto_out, false);
		bpf_program__set_autoload(s->progs.net_sendmsg_in, false);
		bpf_program__set_autoload(s->progs.net_sendmsg_out, false);
		bpf_program__set_autoload(s->progs.net_sendmmsg_in, false);
		bpf_program__set_autoload(s->progs.net_sendmmsg_out, false);
	}
	return 0;
}

KS_SKEL_OPS(ks_net);

static int loaded_notes(void *vctx)
{
	const struct net_ctx *ctx = vctx;

	if (ctx->rows_fit < ctx->max_rows)
		p_info("net: %u rows per interval fit in the memory budget (--max-rows %u); the rest go to \"other\"",
		       ctx->rows_fit, ctx->max_rows);
	return 0;
}

/* What net asks of the kernel, probed once before its load. */
enum { P_READY = 7, P_RECV_LEN, P_SEND, P_SEND_OUT, P_SENDMSG, P_SENDMMSG };
static const struct ks_sc_probe net_probes[] = {
	{ KS_SC_TP_NEEDED, "net", "net_dev_queue", 0 },
	{ KS_SC_TP_NEEDED, "net", "net_dev_xmit", 0 },
	{ KS_SC_TP_NEEDED, "qdisc", "qdisc_dequeue", 0 },
	{ KS_SC_TP_NEEDED, "net", "netif_receive_skb", 0 },
	{ KS_SC_TP_NEEDED, "skb", "skb_copy_datagram_iovec", 0 },
	{ KS_SC_TP_NEEDED, "skb", "kfree_skb", 0 },
	{ KS_SC_TP_NEEDED, "irq", "softirq_entry", 0 },
	[P_READY] = { KS_SC_TP, "sock", "sk_data_ready", 0 },
	[P_RECV_LEN] = { KS_SC_TP, "sock", "sock_recv_length", 0 },
	[P_SEND] = { KS_SC_TP, "syscalls", "sys_enter_sendto", 0 },
	[P_SEND_OUT] = { KS_SC_TP, "syscalls", "sys_exit_sendto", 0 },
	[P_SENDMSG] = { KS_SC_TP, "syscalls", "sys_enter_sendmsg", 0 },
	[P_SENDMMSG] = { KS_SC_TP, "syscalls", "sys_enter_sendmmsg", 0 },
};

static int net_probed(void *vctx)
{
	struct net_ctx *ctx = vctx;
	const int *p = ctx->sc.probed;

	ctx->has_send = p[P_SEND] > 0 && p[P_SEND_OUT] > 0 && p[P_SENDMSG] > 0 && p[P_SENDMMSG] > 0;
	if (!ctx->has_send)
		p_warn("net: no syscalls:sys_enter_send* tracepoints (CONFIG_FTRACE_SYSCALLS, or tracefs unreadable); "
		       "no send stage");
	if (!ctx->has_send && ctx->filter->flags)
		p_warn("net: a task filter sees sent packets through the send syscalls only: no egress rows");
	ctx->has_ready = p[P_READY] > 0;
	ctx->has_recv_len = p[P_RECV_LEN] > 0;
	if (!ctx->has_ready)
		p_warn("net: no sock:sk_data_ready tracepoint (before 6.10): no rx stage; reads are timed from the driver's receive");
	if (!ctx->has_recv_len)
		p_warn("net: no sock:sock_recv_length tracepoint (before 6.4): no read stage for UDP's linear datagrams");
	if (!ks_drop_reasons_load())
		p_info("net: no kernel BTF: drop reasons are shown as numbers");
	return 0;
}

static const struct ks_sc_def net_def;

static int net_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct net_ctx *ctx = vctx;
	int by = ks_by_parse(net_by_words, c->by);

	if (by < 0)
		return by;
	ctx->by = (enum ks_net_by)by;
	ctx->filter = f;
	return ks_sc_open(&ctx->sc, &net_def, c);
}

static const char *const stage_names[KS_NET_STAGES] = {
	[KS_NET_SEND] = "send",	  [KS_NET_QDISC] = "qdisc",	    [KS_NET_XMIT] = "xmit",
	[KS_NET_RX] = "rx",	  [KS_NET_READ] = "read",	    [KS_NET_DROP] = "drop",
	[KS_NET_SOFTIRQ_RX] = "softirq_rx", [KS_NET_SOFTIRQ_TX] = "softirq_tx",
};

/* "10.0.0.1:5201" or "[fd00::1]:5201"; "-" for a packet that is not IP. */
static void fmt_addr(char *buf, size_t len, __u16 family, const __u8 *addr, __u16 port)
{
	char a[INET6_ADDRSTRLEN];

	if (family != 2 && family != 10) {
		snprintf(buf, len, "-");
		return;
	}
	if (!inet_ntop(family == 10 ? AF_INET6 : AF_INET, addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, family == 10 ? "[%s]:%u" : "%s:%u", a, port);
}

static const char *proto_name(__u8 p, char *buf, size_t len)
{
	if (p == 6)
		return "tcp";
	if (p == 17)
		return "udp";
	snprintf(buf, len, "%u", p);
	return buf;
}

/* The keys of a row: its stage and the mode's; by stage, the CPU (softirq rows) and reason (drop rows), "-" elsewhere. */
static void row_keys(struct net_ctx *ctx, struct ks_row *row, const struct ks_net_key *k)
{
	bool other = k->flags & KS_NET_KEY_OTHER, pkt = k->stage < KS_NET_SOFTIRQ_RX;
	const char *blank = other ? "other" : "-";
	char b[160];

	ks_row_key_str(row, "stage", k->stage < KS_NET_STAGES ? stage_names[k->stage] : "?");
	switch (ctx->by) {
	case KS_NET_BY_STAGE:
		/* only here: a report row has room for 4 keys, and a flow takes 3 */
		ks_row_key_num(row, "cpu", k->stage >= KS_NET_SOFTIRQ_RX && !other ? (int64_t)k->sub : -1);
		ks_row_key_str(row, "reason",
			       k->stage == KS_NET_DROP && !other ? ks_drop_reason_name(k->sub, b, sizeof(b)) : "-");
		break;
	case KS_NET_BY_FLOW:
		if (other || !pkt) {
			ks_row_key_str(row, "src", blank);
			ks_row_key_str(row, "dst", blank);
			ks_row_key_str(row, "proto", blank);
			break;
		}
		fmt_addr(b, sizeof(b), k->family, k->saddr, k->sport);
		ks_row_key_str(row, "src", b);
		fmt_addr(b, sizeof(b), k->family, k->daddr, k->dport);
		ks_row_key_str(row, "dst", b);
		ks_row_key_str(row, "proto", k->family ? proto_name(k->proto, b, sizeof(b)) : "-");
		break;
	case KS_NET_BY_DEV:
		memcpy(b, k->name, KS_COMM_LEN);
		b[KS_COMM_LEN - 1] = 0;
		ks_row_key_str(row, "dev", other || !pkt ? blank : b);
		break;
	case KS_NET_BY_CGROUP:
		ks_row_key_num(row, "cgroup_id", other || !pkt ? -1 : (int64_t)k->cgroup);
		if (other || !pkt || !k->cgroup)
			snprintf(b, sizeof(b), "%s", other ? "other" : "-");
		else if (ks_cgroup_path(k->cgroup, b, sizeof(b)))
			snprintf(b, sizeof(b), "?");
		ks_row_key_str(row, "cgroup", b);
		break;
	case KS_NET_BY_PID:
	case KS_NET_BY_COMM:
		/* a stage in softirq before any read (rx, qdisc of another's packet): no task, pid 0 */
		if (ctx->by == KS_NET_BY_PID)
			ks_row_key_num(row, "pid", other || !pkt ? -1 : (int64_t)k->id);
		memcpy(b, k->name, KS_COMM_LEN);
		b[KS_COMM_LEN - 1] = 0;
		ks_row_key_str(row, "comm", other || !pkt ? blank : b[0] ? b : "?");
		break;
	}
}

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
enum { C_PACKETS, C_BYTES, C_ERRORS };
static const struct ks_column net_cols[] = {
	[C_PACKETS] = { "packets", KS_COL_COUNTER, KS_UNIT_COUNT,
			"packets that ended the stage (softirq rows: the softirq's runs)" },
	[C_BYTES] = { "bytes", KS_COL_COUNTER, KS_UNIT_BYTES, "their bytes as the device counts them, L2 header included" },
	[C_ERRORS] = { "errors", KS_COL_COUNTER, KS_UNIT_COUNT, "xmit: the driver refused the packet (rc != NETDEV_TX_OK)" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema net_schema = { net_cols, "time_ns", KS_UNIT_NS, "the time each packet spent in the stage",
					    (const char *const[]){ "stage", "src", "dst", "proto", "dev", "cgroup_id", "cgroup",
								   "pid", "comm", "cpu", "reason", NULL },
					    /* the text columns say what the percentiles are of; addresses are printed whole */
					    .hist_cols = "time_", .keys_whole = true };

/* Active rows and "other" are zeroed in place, for the half written after the next flip; idle rows go. */
static bool keep_row(const void *key, const void *value, void *varg)
{
	(void)varg;
	return ((const struct ks_net_stat *)value)->packets || (((const struct ks_net_key *)key)->flags & KS_NET_KEY_OTHER);
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_net_key *k = key;
	const struct ks_net_stat *v = value;
	const struct ks_sc_drain *a = varg;
	struct ks_hist *h;
	struct ks_row *row;

	if (!v->packets)
		return 0;
	h = ks_hist_of_u32(v->slots, KS_NET_SLOTS, v->sum, v->max);
	if (!h)
		return -ENOMEM;
	row = ks_report_add_row(a->r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	row_keys(a->ctx, row, k);
	ks_row_col(row, &net_cols[C_PACKETS], v->packets);
	ks_row_col(row, &net_cols[C_BYTES], v->bytes);
	ks_row_col(row, &net_cols[C_ERRORS], v->errors);
	/* the stages in their order, the most time first within one */
	row->sort = ((uint64_t)(KS_NET_STAGES - k->stage) << 56) | (v->sum >> 8);
	row->hist = h;
	return 0;
}

/*
 * One element of the per-CPU stage rows (by stage): the CPUs' copies
 * summed into one row, or for a softirq stage one row per CPU; 1 when
 * any CPU counted, for ks_array_drain_mode to zero it.
 */
static int take_stage(uint32_t idx, const void *value, void *varg)
{
	const struct ks_net_stat *v = value;
	const struct ks_sc_drain *a = varg;
	struct ks_net_key k = { .gen = a->gen, .stage = (__u16)(idx % KS_NET_STAGES) };
	struct ks_net_stat sum = { 0 };
	bool soft = k.stage >= KS_NET_SOFTIRQ_RX;
	int took = 0, err;

	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		const struct ks_net_stat *c = &v[cpu];

		if (!c->packets)
			continue;
		took = 1;
		if (soft) {
			k.sub = (__u32)cpu;
			err = take_row(&k, c, varg);
			if (err)
				return err;
			continue;
		}
		sum.packets += c->packets;
		sum.bytes += c->bytes;
		sum.errors += c->errors;
		sum.sum += c->sum;
		if (c->max > sum.max)
			sum.max = c->max;
		for (unsigned int i = 0; i < KS_NET_SLOTS; i++)
			sum.slots[i] += c->slots[i];
	}
	if (took && !soft) {
		err = take_row(&k, &sum, varg);
		if (err)
			return err;
	}
	return took;
}

static int drain_stages(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct net_ctx *ctx = vctx;
	struct ks_sc_drain a = { ctx, r, gen };

	if (ctx->by != KS_NET_BY_STAGE)
		return 0;
	return ks_array_drain_mode(bpf_map__fd(((struct ks_net *)ctx->sc.skel)->maps.stage_rows), gen * KS_NET_STAGES,
				   KS_NET_STAGES, ctx->sc.vbuf, (size_t)ks_ncpus() * sizeof(struct ks_net_stat), take_stage,
				   &a, mode);
}

/*
 * Evicts the stamps of map @fd (keys of at most 16 bytes) older than
 * NET_STALE_NS: their packet left by a path none of the tracepoints
 * shows, and the slot would be lost for good.  Returns how many.
 */
static uint64_t evict_map(int fd, uint64_t now)
{
	unsigned char key[16], next[16];
	struct ks_net_stamp st;
	uint64_t n = 0;
	bool first = true;

	while (!bpf_map_get_next_key(fd, first ? NULL : key, next)) {
		first = false;
		memcpy(key, next, sizeof(key));
		if (bpf_map_lookup_elem(fd, key, &st) || st.ts + NET_STALE_NS > now)
			continue;
		if (!bpf_map_delete_elem(fd, key))
			n++;
	}
	return n;
}

/* Both stamp tables' stale entries, counted in the programs' stale counter (reported as a loss). */
static void evict_stale(struct net_ctx *ctx)
{
	struct ks_net *s = ctx->sc.skel;
	struct timespec ts;
	uint64_t now, n;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		return;
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	n = evict_map(bpf_map__fd(s->maps.stamps), now) + evict_map(bpf_map__fd(s->maps.sockq), now);
	if (n)
		__sync_fetch_and_add(&s->bss->counts.stale, n);
}

/* The row maps, counters and load of net, for core (core/scaffold.h). */
static const struct ks_sc_map net_maps[] = {
	{ "rows", sizeof(struct ks_net_key), sizeof(struct ks_net_stat), .take = take_row, .keep = keep_row },
	{ NULL, 0, sizeof(struct ks_net_stat), .percpu = true, .drain = drain_stages },
};
enum { N_TO_OTHER = 6 };
static const struct ks_sc_counter net_counters[] = {
	{ "lost", offsetof(struct ks_net__bss, counts.lost), KS_SC_LOSS },
	{ "stamps_full", offsetof(struct ks_net__bss, counts.stamps_full), KS_SC_LOSS },
	{ "sends_full", offsetof(struct ks_net__bss, counts.sends_full), KS_SC_LOSS },
	{ "stale", offsetof(struct ks_net__bss, counts.stale), KS_SC_LOSS },
	{ "map_update_failed", offsetof(struct ks_net__bss, counts.update_failed), KS_SC_LOSS },
	{ "recursion", 0, KS_SC_RECURSION },
	[N_TO_OTHER] = { "to_other", offsetof(struct ks_net__bss, counts.to_other), KS_SC_COUNTER },
};
static const char *const net_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, NULL };
static const struct ks_sc_def net_def = {
	.name = "net", .hooks = net_hooks, .skel = &ks_net_ops, .gen_at = offsetof(struct ks_net__bss, ks_gen),
	.maps = net_maps, .nmaps = 2, .counters = net_counters,
	.ncounters = sizeof(net_counters) / sizeof(net_counters[0]),
	.probes = net_probes, .nprobes = sizeof(net_probes) / sizeof(net_probes[0]),
	.probed = net_probed, .configure = configure, .loaded = precreate, .attached = loaded_notes,
};

static int net_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	if (mode != KS_DRAIN_CLEAR)
		evict_stale(vctx);
	return ks_sc_drain(vctx, r, mode);
}

/* --pin: to_other is cumulative in .bss; the restart reports it from the read its saved totals hold */
static const size_t net_cursor[] = { offsetof(struct net_ctx, sc.seen[N_TO_OTHER]) };

const struct ks_collector ks_net_collector = {
	.spec = {
		.name = "net",
		.summary = "Where a packet's time goes, stage by stage: send, qdisc, driver, receive, socket queue, read; "
			   "softirq time and drops by reason.",
		.common = KS_O_COLLECTOR,
		.by_words = net_by_words,
		.opts = net_opts,
	},
	.ctx_size = sizeof(struct net_ctx),
	.init = net_init,
	.parse_opt = net_parse_opt,
	.open = net_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = net_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct net_ctx, sc.skel), .cursor_u64 = { net_cursor, 1 } },
	.schema = &net_schema,
	.close = ks_sc_close,
};
