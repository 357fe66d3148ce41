/* User side of `ksight netflow`: per-flow packets and bytes at XDP or tcx on one device, attached by links that end with the process. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/scaffold.h"
#include "core/sysinfo.h"
#include "ksight/netflow.h"
#include "netflow.skel.h"

/*
 * tcx (Linux 6.6, "bpf: Add fd-based tcx multi-prog infra with link
 * support", e420bed02507) postdates libbpf 1.1's headers: its attach types
 * and the mprog flag, by their uapi values.
 */
#define KS_BPF_TCX_INGRESS ((enum bpf_attach_type)46)
#define KS_BPF_TCX_EGRESS ((enum bpf_attach_type)47)
#define KS_BPF_F_BEFORE (1u << 3)
/* capability bit of CAP_NET_ADMIN (linux/capability.h) */
#define KS_CAP_NET_ADMIN 12

#define KS_HOOK_XDP "xdp"
#define KS_HOOK_TC "tc"

enum { OPT_ROWS = 300, OPT_XDP, OPT_TC, OPT_INGRESS, OPT_EGRESS, OPT_BOTH, OPT_PORT, OPT_PROTO };

#define NF_ROWS_DEFAULT 4096
#define NF_ROWS_MAX (1u << 20)
/* both halves of 128 flows and their "other" rows, one per direction */
#define NF_ROWS_LEAST (2 * (128 + 3))

struct nf_ctx {
	struct ks_scaffold sc; /* first: the lifecycle core runs */
	enum ks_netflow_by by;
	uint32_t max_rows, rows_fit;
	const char *dev;
	unsigned int ifindex;
	bool xdp, ingress, egress; /* where to count: XDP, or tcx in one or both directions */
	struct ks_netflow_filter filter;
	struct bpf_link *xdp_link;
	int tcx_fd[2]; /* tcx links (ingress, egress) as plain fds: libbpf 1.1 has no bpf_link for them */
};

static const struct ks_optdef nf_opts[] = {
	{ "xdp", OPT_XDP, "DEV", "count at XDP on DEV (ingress, before any socket buffer is made)" },
	{ "tc", OPT_TC, "DEV", "count at tcx on DEV (Linux 6.6), ingress unless --egress or --both" },
	{ "ingress", OPT_INGRESS, NULL, "with --tc: packets DEV receives (the default)" },
	{ "egress", OPT_EGRESS, NULL, "with --tc: packets DEV sends" },
	{ "both", OPT_BOTH, NULL, "with --tc: both directions, as rows of their own" },
	{ "port", OPT_PORT, "PORT", "only packets with PORT as source or destination port" },
	{ "proto", OPT_PROTO, "PROTO", "only IP packets of PROTO: tcp, udp, icmp, icmpv6, sctp or a number" },
	{ "max-rows", OPT_ROWS, "N", "distinct rows kept per interval (default 4096); the rest go to \"other\"" },
	{ 0 },
};

static int nf_init(void *vctx)
{
	struct nf_ctx *ctx = vctx;

	ctx->max_rows = NF_ROWS_DEFAULT;
	ctx->tcx_fd[0] = ctx->tcx_fd[1] = -1;
	return 0;
}

static const struct {
	const char *name;
	unsigned int num;
} nf_protos[] = { { "hopopt", 0 }, { "icmp", 1 }, { "tcp", 6 }, { "udp", 17 }, { "icmpv6", 58 }, { "sctp", 132 }, { "udplite", 136 } };

static const char *proto_name(unsigned int num, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(nf_protos) / sizeof(nf_protos[0]); i++)
		if (nf_protos[i].num == num)
			return nf_protos[i].name;
	snprintf(buf, len, "%u", num);
	return buf;
}

static int nf_parse_opt(void *vctx, int id, const char *arg)
{
	struct nf_ctx *ctx = vctx;
	uint64_t v;

	switch (id) {
	case OPT_XDP:
	case OPT_TC:
		if (ctx->dev) {
			p_err("netflow: one device, at one hook: '--%s %s' after '%s'", id == OPT_XDP ? "xdp" : "tc", arg,
			      ctx->dev);
			return -EINVAL;
		}
		ctx->dev = arg;
		ctx->xdp = id == OPT_XDP;
		return 0;
	case OPT_INGRESS:
	case OPT_EGRESS:
	case OPT_BOTH:
		ctx->ingress = id != OPT_EGRESS;
		ctx->egress = id != OPT_INGRESS;
		return 0;
	case OPT_PORT:
		if (ks_parse_u64(arg, 1, 65535, &v)) {
			p_err("invalid port '%s': expected 1 to 65535", arg);
			return -EINVAL;
		}
		ctx->filter.port = (__u16)v;
		return 0;
	case OPT_PROTO:
		for (size_t i = 0; i < sizeof(nf_protos) / sizeof(nf_protos[0]); i++)
			if (!strcmp(arg, nf_protos[i].name)) {
				ctx->filter.proto = nf_protos[i].num + 1;
				return 0;
			}
		if (ks_parse_u64(arg, 0, 255, &v)) {
			p_err("invalid protocol '%s': expected tcp, udp, icmp, icmpv6, sctp, udplite or 0 to 255", arg);
			return -EINVAL;
		}
		ctx->filter.proto = (__u16)(v + 1);
		return 0;
	case OPT_ROWS:
		if (ks_parse_u64(arg, 1, NF_ROWS_MAX, &v)) {
			p_err("invalid row count '%s': expected 1 to %u", arg, NF_ROWS_MAX);
			return -EINVAL;
		}
		ctx->max_rows = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

/* After every option, before anything is loaded: a device, and one that exists. */
static int nf_prepare(void *vctx, const struct ks_common *c)
{
	struct nf_ctx *ctx = vctx;

	(void)c;
	if (!ctx->dev) {
		p_err("netflow: no device: name one with --xdp DEV or --tc DEV");
		return -EINVAL;
	}
	if (ctx->xdp && (ctx->ingress || ctx->egress)) {
		p_err("netflow: --ingress, --egress and --both go with --tc (XDP sees ingress only)");
		return -EINVAL;
	}
	if (!ctx->xdp && !ctx->egress)
		ctx->ingress = true;
	ctx->ifindex = if_nametoindex(ctx->dev);
	if (!ctx->ifindex) {
		p_err("netflow: no network device '%s' in this namespace: %s", ctx->dev, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

static const struct ks_by_word nf_by_words[] = {
	{ "flow", KS_NETFLOW_BY_FLOW },
	{ "proto", KS_NETFLOW_BY_PROTO },
	{ "port", KS_NETFLOW_BY_PORT },
	{ "dev", KS_NETFLOW_BY_DEV },
	{ NULL, KS_NETFLOW_BY_FLOW },
};

/*
 * Map sizes from the memory budget: the rows take it all but 5% (the
 * small maps), as many as --max-rows asks for in each half, each row one
 * copy per possible CPU; fewer than 128 flows is refused.
 */
static void size_maps(struct nf_ctx *ctx, struct ks_netflow *s)
{
	struct ks_budget *b = &ctx->sc.budget;
	uint32_t want = 2 * (ctx->max_rows + 3), least = want < NF_ROWS_LEAST ? want : NF_ROWS_LEAST, rows;

	rows = ks_budget_rows(b, 0.95,
			      ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_HASH, sizeof(struct ks_netflow_key),
						  sizeof(struct ks_netflow_stat), BPF_F_NO_PREALLOC),
			      least, want, false);
	ctx->rows_fit = rows / 2 - 3;
	bpf_map__set_max_entries(s->maps.rows, rows);
}

static int configure(void *vctx, void *skel, const char *hook)
{
	struct nf_ctx *ctx = vctx;
	struct ks_netflow *s = skel;

	(void)hook;
	s->rodata->by_mode = ctx->by;
	s->rodata->nf_filter = ctx->filter;
	size_maps(ctx, s);
	if (!ctx->xdp) {
		bpf_program__set_autoload(s->progs.netflow_in__tc, ctx->ingress);
		bpf_program__set_autoload(s->progs.netflow_out__tc, ctx->egress);
	}
	return 0;
}

KS_SKEL_OPS(ks_netflow);

/* After load, before attach: the "other" row of each direction, in both halves. */
static int precreate(void *vctx, void *skel)
{
	struct nf_ctx *ctx = vctx;
	int fd = bpf_map__fd(((struct ks_netflow *)skel)->maps.rows);
	struct ks_netflow_key o = { .flags = KS_NETFLOW_KEY_OTHER };

	for (__u32 g = 0; g < 2; g++)
		for (__u8 d = KS_NETFLOW_XDP; d <= KS_NETFLOW_EGRESS; d++) {
			o.gen = g;
			o.dir = d;
			if (ks_map_add(fd, &o, ctx->sc.zero))
				p_warn("netflow: cannot make the \"other\" row: %s", strerror(errno));
		}
	return 0;
}

/* A tcx link of @prog on the device, first in its chain: a file descriptor that detaches when closed. */
static int tcx_attach(struct nf_ctx *ctx, const struct bpf_program *prog, enum bpf_attach_type type)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = KS_BPF_F_BEFORE);
	int fd = bpf_link_create(bpf_program__fd(prog), (int)ctx->ifindex, type, &o);

	if (fd >= 0)
		return fd;
	if (errno == EINVAL)
		p_err("netflow: cannot attach at tcx on '%s': this kernel has no tcx (Linux 6.6); use --xdp DEV", ctx->dev);
	else
		p_err("netflow: cannot attach at tcx on '%s': %s", ctx->dev, strerror(errno));
	return -ECANCELED; /* said: the driver adds nothing */
}

/*
 * Once loaded: the links.  Both kinds hold the program on the device only
 * as long as this process holds their file descriptors, so no exit, kill
 * -9 included, leaves a program, a link or a qdisc behind (tcx needs no
 * qdisc).
 */
static int nf_attach(void *vctx)
{
	struct nf_ctx *ctx = vctx;
	struct ks_netflow *s = ctx->sc.skel;

	if (ctx->xdp) {
		ctx->xdp_link = bpf_program__attach_xdp(s->progs.netflow__xdp, (int)ctx->ifindex);
		if (ctx->xdp_link)
			goto attached;
		if (errno == EBUSY || errno == EEXIST)
			p_err("netflow: '%s' already has an XDP program: one XDP program per device", ctx->dev);
		else
			p_err("netflow: cannot attach at XDP on '%s': %s", ctx->dev, strerror(errno));
		return -ECANCELED; /* said: the driver adds nothing */
	}
	if (ctx->ingress) {
		ctx->tcx_fd[0] = tcx_attach(ctx, s->progs.netflow_in__tc, KS_BPF_TCX_INGRESS);
		if (ctx->tcx_fd[0] < 0)
			return ctx->tcx_fd[0];
	}
	if (ctx->egress) {
		ctx->tcx_fd[1] = tcx_attach(ctx, s->progs.netflow_out__tc, KS_BPF_TCX_EGRESS);
		if (ctx->tcx_fd[1] < 0)
			return ctx->tcx_fd[1];
	}
attached:
	if (ctx->rows_fit < ctx->max_rows)
		p_info("netflow: %u rows per interval fit in the memory budget (--max-rows %u); the rest go to \"other\"",
		       ctx->rows_fit, ctx->max_rows);
	return 0;
}

/* The links first, so that no packet runs a program whose maps are going. */
static void nf_release(void *vctx)
{
	struct nf_ctx *ctx = vctx;

	bpf_link__destroy(ctx->xdp_link);
	ctx->xdp_link = NULL;
	for (int i = 0; i < 2; i++) {
		if (ctx->tcx_fd[i] >= 0)
			close(ctx->tcx_fd[i]);
		ctx->tcx_fd[i] = -1;
	}
}

static const struct ks_sc_def nf_def;

static int nf_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	static const char *const xdp_hooks[] = { KS_HOOK_XDP, NULL };
	static const char *const tc_hooks[] = { KS_HOOK_TC, NULL };
	struct nf_ctx *ctx = vctx;
	int by = ks_by_parse(nf_by_words, c->by);
	uint64_t eff;

	(void)f;
	if (by < 0)
		return by;
	ctx->by = (enum ks_netflow_by)by;
	if (!ks_caps_effective(&eff) && !(eff >> KS_CAP_NET_ADMIN & 1)) {
		p_err("netflow: attaching at XDP or tc needs CAP_NET_ADMIN, which this process lacks");
		return -ECANCELED; /* said here: not the loader's CAP_BPF message */
	}
	ctx->sc.hooks = ctx->xdp ? xdp_hooks : tc_hooks;
	return ks_sc_open(&ctx->sc, &nf_def, c);
}

/* "10.0.0.1:5201", "[fd00::1]:5201", or the address alone for protocols without ports. */
static void fmt_addr(char *buf, size_t len, bool v6, const __u8 *addr, __u16 port, bool ports)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	if (!ports)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", a, port);
}

static const char *l3_name(__u16 l3, char *buf, size_t len)
{
	if (l3 == 0x0800)
		return "ipv4";
	if (l3 == 0x86DD)
		return "ipv6";
	if (l3 == 0x0806)
		return "arp";
	if (!l3)
		return "-";
	snprintf(buf, len, "0x%04x", l3);
	return buf;
}

/*
 * At most four keys a row (the report's limit): the device only in the
 * dev mode (one device a run); a packet that is not IP is named by its
 * EtherType in "proto" ("arp").
 */
static void row_keys(struct nf_ctx *ctx, struct ks_row *row, const struct ks_netflow_key *k)
{
	static const char *const dirs[] = { "xdp", "ingress", "egress" };
	bool other = k->flags & KS_NETFLOW_KEY_OTHER, ip = k->l3 == 0x0800 || k->l3 == 0x86DD || !k->l3;
	char b[64];

	if (ctx->by == KS_NETFLOW_BY_DEV)
		ks_row_key_str(row, "dev", ctx->dev);
	ks_row_key_str(row, "dir", k->dir < 3 ? dirs[k->dir] : "?");
	if (ctx->by == KS_NETFLOW_BY_DEV)
		return;
	if (ctx->by == KS_NETFLOW_BY_PROTO)
		ks_row_key_str(row, "l3", other ? "other" : l3_name(k->l3, b, sizeof(b)));
	ks_row_key_str(row, "proto", other ? "other" : ip ? proto_name(k->proto, b, sizeof(b)) : l3_name(k->l3, b, sizeof(b)));
	if (ctx->by == KS_NETFLOW_BY_PORT)
		ks_row_key_num(row, "port", other ? -1 : (int64_t)k->sport);
	if (ctx->by != KS_NETFLOW_BY_FLOW)
		return;
	if (other || !ip) {
		ks_row_key_str(row, "src", other ? "other" : "-");
		ks_row_key_str(row, "dst", other ? "other" : "-");
		return;
	}
	fmt_addr(b, sizeof(b), k->l3 == 0x86DD, k->saddr, k->sport, k->sport || k->dport);
	ks_row_key_str(row, "src", b);
	fmt_addr(b, sizeof(b), k->l3 == 0x86DD, k->daddr, k->dport, k->sport || k->dport);
	ks_row_key_str(row, "dst", b);
}

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
static const struct ks_column nf_cols[] = {
	{ "packets", KS_COL_COUNTER, KS_UNIT_COUNT, "packets counted: frames at XDP, socket buffers at tc" },
	{ "bytes", KS_COL_COUNTER, KS_UNIT_BYTES, "their length from the Ethernet header on" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema nf_schema = { nf_cols, NULL, KS_UNIT_COUNT, NULL,
					    (const char *const[]){ "dev", "dir", "l3", "proto", "port", "src", "dst", NULL },
					    .keys_whole = true };

/* The sum of a row's per-CPU copies. */
static struct ks_netflow_stat row_sum(const void *value)
{
	const struct ks_netflow_stat *v = value;
	struct ks_netflow_stat s = { 0, 0 };

	for (int i = 0, n = ks_ncpus(); i < n; i++) {
		s.packets += v[i].packets;
		s.bytes += v[i].bytes;
	}
	return s;
}

/* Active rows and "other" are zeroed in place, for the half written after the next flip; idle rows go. */
static bool keep_row(const void *key, const void *value, void *varg)
{
	(void)varg;
	return row_sum(value).packets || (((const struct ks_netflow_key *)key)->flags & KS_NETFLOW_KEY_OTHER);
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_sc_drain *a = varg;
	struct ks_netflow_stat s = row_sum(value);
	struct ks_row *row;

	if (!s.packets)
		return 0;
	row = ks_report_add_row(a->r);
	if (!row)
		return -ENOMEM;
	row_keys(a->ctx, row, key);
	ks_row_col(row, &nf_cols[0], s.packets);
	ks_row_col(row, &nf_cols[1], s.bytes);
	row->sort = s.bytes;
	return 0;
}

/*
 * Before the rows: each CPU's cached flows of the retired half go into
 * their rows (made when missing; into "other" when the map is full, as the
 * programs would), then the slots are emptied.  No program writes the
 * retired half's slots any more (the flip and the wait before a drain).
 */
static int fold_slot(int cfd, int rfd, __u32 slot, __u32 gen, struct ks_netflow_cache *c,
		     struct ks_netflow_stat *row, int n, bool clear)
{
	if (bpf_map_lookup_elem(cfd, &slot, c))
		return -errno;
	for (int i = 0; i < n && !clear; i++) {
		struct ks_netflow_key k = c[i].key;

		if (!c[i].stat.packets)
			continue;
		if (bpf_map_lookup_elem(rfd, &k, row))
			memset(row, 0, (size_t)n * sizeof(*row));
		row[i].packets += c[i].stat.packets;
		row[i].bytes += c[i].stat.bytes;
		if (!bpf_map_update_elem(rfd, &k, row, BPF_ANY))
			continue;
		/* full: the "other" row of its direction, made ahead */
		memset(&k, 0, sizeof(k));
		k.gen = gen;
		k.dir = c[i].key.dir;
		k.flags = KS_NETFLOW_KEY_OTHER;
		if (bpf_map_lookup_elem(rfd, &k, row))
			return -errno;
		row[i].packets += c[i].stat.packets;
		row[i].bytes += c[i].stat.bytes;
		if (bpf_map_update_elem(rfd, &k, row, BPF_EXIST))
			return -errno;
	}
	memset(c, 0, (size_t)n * sizeof(*c));
	return bpf_map_update_elem(cfd, &slot, c, BPF_ANY) ? -errno : 0;
}

static int fold_cache(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct nf_ctx *ctx = vctx;
	struct ks_netflow *s = ctx->sc.skel;
	int cfd = bpf_map__fd(s->maps.cache), rfd = bpf_map__fd(s->maps.rows), n = ks_ncpus(), err = 0;
	struct ks_netflow_cache *c = calloc((size_t)n, sizeof(*c));
	struct ks_netflow_stat *row = calloc((size_t)n, sizeof(*row));

	(void)r;
	if (!c || !row)
		err = -ENOMEM;
	for (__u32 i = 0; i < KS_NETFLOW_CACHE_SETS && !err; i++)
		err = fold_slot(cfd, rfd, gen * KS_NETFLOW_CACHE_SETS + i, gen, c, row, n, mode == KS_DRAIN_CLEAR);
	free(c);
	free(row);
	return err;
}

static const struct ks_sc_map nf_maps[] = {
	{ .drain = fold_cache },
	{ "rows", sizeof(struct ks_netflow_key), sizeof(struct ks_netflow_stat), .percpu = true, .take = take_row,
	  .keep = keep_row },
};
static const struct ks_sc_counter nf_counters[] = {
	{ "lost", offsetof(struct ks_netflow__bss, counts.lost), KS_SC_LOSS },
	{ "map_update_failed", offsetof(struct ks_netflow__bss, counts.update_failed), KS_SC_LOSS },
	{ "to_other", offsetof(struct ks_netflow__bss, counts.to_other), KS_SC_COUNTER },
};
static const char *const nf_hooks[] = { KS_HOOK_XDP, KS_HOOK_TC, NULL };
static const struct ks_sc_def nf_def = {
	.name = "netflow", .hooks = nf_hooks, .skel = &ks_netflow_ops, .gen_at = offsetof(struct ks_netflow__bss, ks_gen),
	.maps = nf_maps, .nmaps = 2, .counters = nf_counters, .ncounters = sizeof(nf_counters) / sizeof(nf_counters[0]),
	.configure = configure, .loaded = precreate, .attached = nf_attach, .release = nf_release,
};

static int nf_drain(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	return ks_sc_drain(vctx, r, mode);
}

const struct ks_collector ks_netflow_collector = {
	.spec = {
		.name = "netflow",
		.summary = "Packets and bytes per flow, protocol, port or device at XDP or tcx on one device, every "
			   "packet let through unchanged.",
		/* packets have no task: the task filters and -- CMD do not apply, nor the heatmap (no histogram) */
		.common = KS_O_COLLECTOR & ~(KS_O_FILTERS | KS_O_CMD | KS_O_HEATMAP),
		.by_words = nf_by_words,
		.opts = nf_opts,
	},
	.ctx_size = sizeof(struct nf_ctx),
	.init = nf_init,
	.parse_opt = nf_parse_opt,
	.prepare = nf_prepare,
	.open = nf_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = nf_drain,
	.schema = &nf_schema,
	.close = ks_sc_close,
};
