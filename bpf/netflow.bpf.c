/* Kernel side of `ksight netflow`: packets and bytes per flow at XDP or tcx, every packet let through unchanged. */
#include "common.bpf.h"
#include <bpf/bpf_endian.h>
#include "ksight/netflow.h"

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_SCTP 132
#define IPPROTO_UDPLITE 136
/*
 * tcx's "no verdict" (TCX_NEXT, uapi linux/bpf.h; TC_ACT_UNSPEC of tc):
 * the packet goes on to the next program, the legacy tc filters and the
 * stack as if nothing had looked at it.  TCX_PASS would end the device's
 * chain and skip the programs attached after this one.
 */
#define KS_TCX_NEXT (-1)

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_NETFLOW_BY_FLOW;
const volatile struct ks_netflow_filter nf_filter = {};

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_netflow_counts counts = {};

static const struct ks_netflow_stat zero_stat = {};

/*
 * Per-CPU rows, made on a flow's first packet: the packet path adds to
 * its own CPU's copy without an atomic instruction.  Sized by the loader
 * from --max-rows and the memory budget (which counts every possible CPU).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_netflow_key);
	__type(value, struct ks_netflow_stat);
} rows SEC(".maps");

/* Each CPU's last flows, per half (struct ks_netflow_cache says why). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * KS_NETFLOW_CACHE_SETS);
	__type(key, __u32);
	__type(value, struct ks_netflow_cache);
} cache SEC(".maps");

/*
 * The header @buf's type at @off of the packet: a pointer straight into
 * the linear data when it is there (every header of a veth or NIC frame
 * in practice), else to @buf, which the helper that walks the fragments
 * filled; NULL when the packet is shorter.  Never pulls or writes the
 * packet.  The fields are then read where they are, one load each at
 * whatever alignment the packet has (the verifier allows unaligned packet
 * access where the CPU does: x86, arm64): the byte-wise copies clang made
 * of a __builtin_memcpy into stack buffers were a quarter of the program
 * (bench/netflow.sh).
 */
#define PKT_HDR(ctx, helper, off, buf)                                              \
	({                                                                          \
		void *data_ = (void *)(long)(ctx)->data;                            \
		void *end_ = (void *)(long)(ctx)->data_end;                         \
		const typeof(buf) *p_ = data_ + (off);                              \
		if ((void *)(p_ + 1) > end_)                                        \
			p_ = helper((ctx), (off), &(buf), sizeof(buf)) ? NULL : &(buf); \
		p_;                                                                 \
	})

/* The parts of the headers a key takes, laid out as on the wire (network order). */
struct ip4_hdr {
	__u8 ver_ihl, tos;
	__u16 tot_len, id, frag_off;
	__u8 ttl, proto;
	__u16 check;
	__u32 saddr, daddr;
};
struct ip6_hdr {
	__u32 ver_flow;
	__u16 payload_len;
	__u8 nexthdr, hop_limit;
	__u64 saddr[2], daddr[2];
};
struct l4_ports {
	__u16 sport, dport;
};
struct eth_type {
	__u16 type;
};

/*
 * The row of @k in this CPU's copy, made when missing, for @n packets.  A
 * full map sends them to "other", which user space makes ahead in both
 * halves; an allocation that fails (the allocator's per-CPU cache ran dry;
 * it refills asynchronously) is tried once more, then they count as lost.
 */
static __always_inline struct ks_netflow_stat *row_get(struct ks_netflow_key *k, __u64 n)
{
	struct ks_netflow_key o = { .flags = KS_NETFLOW_KEY_OTHER };
	struct ks_netflow_stat *v;
	long err;

	err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (err == -KS_ENOMEM)
		err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (!err || err == -KS_EEXIST) {
		v = bpf_map_lookup_elem(&rows, k);
		if (v)
			return v;
	}
	if (err == -KS_E2BIG || err == -KS_ENOMEM) {
		o.gen = k->gen;
		o.dir = k->dir;
		v = bpf_map_lookup_elem(&rows, &o);
		if (v) {
			__sync_fetch_and_add(&counts.to_other, n);
			return v;
		}
	}
	__sync_fetch_and_add(&counts.lost, n);
	return NULL;
}

/* Whether two keys are the same flow: six 8-byte compares. */
static __always_inline bool same_key(const struct ks_netflow_key *a, const struct ks_netflow_key *b)
{
	const __u64 *x = (const void *)a, *y = (const void *)b;

	return !((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]) | (x[4] ^ y[4]) | (x[5] ^ y[5]));
}

/* The cache slot of @k: its six words folded to KS_NETFLOW_CACHE_SETS, in its half. */
static __always_inline __u32 slot_of(const struct ks_netflow_key *k)
{
	const __u64 *x = (const void *)k;
	__u64 h = x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5];

	h ^= h >> 32;
	h ^= h >> 16;
	h ^= h >> 8;
	return k->gen * KS_NETFLOW_CACHE_SETS + (__u32)(h & (KS_NETFLOW_CACHE_SETS - 1));
}

/*
 * Adds one packet of @len bytes to flow @k: to this CPU's cache slot when
 * it holds @k, else the slot's counts go to their row and the slot takes @k.
 */
static __always_inline void count(struct ks_netflow_key *k, __u64 len)
{
	struct ks_netflow_cache *c;
	struct ks_netflow_stat *v;
	__u32 g = slot_of(k);

	c = bpf_map_lookup_elem(&cache, &g);
	if (!c)
		return;
	if (same_key(&c->key, k)) {
		c->stat.packets++;
		c->stat.bytes += len;
		return;
	}
	if (c->stat.packets) {
		v = bpf_map_lookup_elem(&rows, &c->key);
		if (!v)
			v = row_get(&c->key, c->stat.packets);
		if (v) {
			v->packets += c->stat.packets;
			v->bytes += c->stat.bytes;
		}
	}
	c->key = *k;
	c->stat.packets = 1;
	c->stat.bytes = len;
}

/* Whether an IP protocol carries ports in its first four bytes. */
static __always_inline bool has_ports(__u8 proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE;
}

/*
 * The body of every program: parse Ethernet (one VLAN tag), IPv4 or IPv6
 * and the ports into the key the mode asks for, then add @len bytes to
 * the row.  @ctx is a struct xdp_md or __sk_buff (both have data and
 * data_end), @load the matching bytes helper.
 */
#define NETFLOW_BODY(ctx, load, len, direction)                                                  \
	({                                                                                       \
		struct ks_netflow_key k = {};                                                    \
		const struct l4_ports *pp;                                                       \
		const struct ip4_hdr *ip4;                                                       \
		const struct ip6_hdr *ip6;                                                       \
		const struct eth_type *et;                                                       \
		struct l4_ports ports;                                                           \
		struct ip4_hdr ip4b;                                                             \
		struct ip6_hdr ip6b;                                                             \
		struct eth_type etb;                                                             \
		__u16 l3 = 0;                                                                    \
		__u32 off = ETH_HLEN;                                                            \
		bool pass = true, frag = false;                                                  \
                                                                                                 \
		k.dir = (direction);                                                             \
		et = PKT_HDR(ctx, load, 12, etb);                                                \
		if (et) {                                                                        \
			l3 = bpf_ntohs(et->type);                                                \
			if (l3 == ETH_P_8021Q || l3 == ETH_P_8021AD) {                           \
				et = PKT_HDR(ctx, load, ETH_HLEN + 2, etb);                      \
				if (et) {                                                        \
					l3 = bpf_ntohs(et->type);                                \
					off += 4;                                                \
				}                                                                \
			}                                                                        \
		}                                                                                \
		if (l3 == ETH_P_IP && (ip4 = PKT_HDR(ctx, load, off, ip4b))) {                   \
			k.proto = ip4->proto;                                                    \
			*(__u32 *)k.saddr = ip4->saddr;                                          \
			*(__u32 *)k.daddr = ip4->daddr;                                          \
			/* fragments after the first carry no ports */                           \
			frag = (bpf_ntohs(ip4->frag_off) & 0x1fff) != 0;                         \
			off += (ip4->ver_ihl & 0xf) * 4;                                         \
		} else if (l3 == ETH_P_IPV6 && (ip6 = PKT_HDR(ctx, load, off, ip6b))) {          \
			k.proto = ip6->nexthdr;                                                  \
			__builtin_memcpy(k.saddr, ip6->saddr, 16);                               \
			__builtin_memcpy(k.daddr, ip6->daddr, 16);                               \
			off += 40;                                                               \
		} else {                                                                         \
			pass = false; /* not IP, or cut short: counted by its EtherType alone */ \
		}                                                                                \
		if (pass && !frag && has_ports(k.proto) && off <= 18 + 60 &&                     \
		    (pp = PKT_HDR(ctx, load, off, ports))) {                                     \
			k.sport = bpf_ntohs(pp->sport);                                          \
			k.dport = bpf_ntohs(pp->dport);                                          \
		}                                                                                \
		if (nf_filter.proto && (!pass || k.proto != nf_filter.proto - 1))                \
			return KS_NF_VERDICT;                                                    \
		if (nf_filter.port && k.sport != nf_filter.port && k.dport != nf_filter.port)    \
			return KS_NF_VERDICT;                                                    \
		k.l3 = l3;                                                                       \
		if (by_mode != KS_NETFLOW_BY_FLOW) {                                             \
			__builtin_memset(k.saddr, 0, 32);                                        \
			if (by_mode == KS_NETFLOW_BY_PORT)                                       \
				k.sport = k.sport < k.dport ? k.sport : k.dport;                 \
			else                                                                     \
				k.sport = 0;                                                     \
			k.dport = 0;                                                             \
			if (by_mode == KS_NETFLOW_BY_PORT && pass)                               \
				k.l3 = 0;                                                        \
			if (by_mode == KS_NETFLOW_BY_DEV)                                        \
				k.l3 = k.proto = 0;                                              \
		}                                                                                \
		k.gen = ks_gen & 1;                                                              \
		count(&k, (len));                                                                \
	})

#define KS_NF_VERDICT XDP_PASS
SEC("xdp")
int netflow__xdp(struct xdp_md *ctx)
{
	/* not an xdp.frags program: drivers hand it single-buffer frames, whose length this is */
	NETFLOW_BODY(ctx, bpf_xdp_load_bytes, ctx->data_end - ctx->data, KS_NETFLOW_XDP);
	return XDP_PASS;
}
#undef KS_NF_VERDICT

#define KS_NF_VERDICT KS_TCX_NEXT
/* skb->len at tcx includes the Ethernet header on both sides: tcx pushes it back at ingress */
SEC("tc")
int netflow_in__tc(struct __sk_buff *ctx)
{
	NETFLOW_BODY(ctx, bpf_skb_load_bytes, ctx->len, KS_NETFLOW_INGRESS);
	return KS_TCX_NEXT;
}

SEC("tc")
int netflow_out__tc(struct __sk_buff *ctx)
{
	NETFLOW_BODY(ctx, bpf_skb_load_bytes, ctx->len, KS_NETFLOW_EGRESS);
	return KS_TCX_NEXT;
}
#undef KS_NF_VERDICT

