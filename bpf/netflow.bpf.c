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
 * Copies @n bytes at @off of the packet into @dst: straight from the
 * linear data when they are in it (every header of a veth or NIC frame
 * in practice), else through the helper that walks the fragments.  Never
 * pulls or writes the packet.  0, or negative when the packet is shorter.
 */
#define PKT_LOAD(ctx, helper, off, dst, n)                                          \
	({                                                                          \
		void *data_ = (void *)(long)(ctx)->data;                            \
		void *end_ = (void *)(long)(ctx)->data_end;                         \
		long r_ = 0;                                                        \
		if (data_ + (off) + (n) <= end_)                                    \
			__builtin_memcpy((dst), data_ + (off), (n));                \
		else                                                                \
			r_ = helper((ctx), (off), (dst), (n));                      \
		r_;                                                                 \
	})

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
		__u16 l3 = 0, ports[2] = {};                                                     \
		__u32 off = ETH_HLEN;                                                            \
		__u8 eth[ETH_HLEN], ip[40];                                                      \
		bool pass = true, frag = false;                                                  \
                                                                                                 \
		k.dir = (direction);                                                             \
		if (!PKT_LOAD(ctx, load, 0, eth, ETH_HLEN)) {                                    \
			l3 = bpf_ntohs(*(__u16 *)&eth[12]);                                      \
			if (l3 == ETH_P_8021Q || l3 == ETH_P_8021AD) {                           \
				if (!PKT_LOAD(ctx, load, ETH_HLEN, eth, 4)) {                    \
					l3 = bpf_ntohs(*(__u16 *)&eth[2]);                       \
					off += 4;                                                \
				}                                                                \
			}                                                                        \
		}                                                                                \
		if (l3 == ETH_P_IP && !PKT_LOAD(ctx, load, off, ip, 20)) {                       \
			k.proto = ip[9];                                                         \
			__builtin_memcpy(k.saddr, &ip[12], 4);                                   \
			__builtin_memcpy(k.daddr, &ip[16], 4);                                   \
			/* fragments after the first carry no ports */                           \
			frag = (bpf_ntohs(*(__u16 *)&ip[6]) & 0x1fff) != 0;                      \
			off += (ip[0] & 0xf) * 4;                                                \
		} else if (l3 == ETH_P_IPV6 && !PKT_LOAD(ctx, load, off, ip, 40)) {              \
			k.proto = ip[6];                                                         \
			__builtin_memcpy(k.saddr, &ip[8], 16);                                   \
			__builtin_memcpy(k.daddr, &ip[24], 16);                                  \
			off += 40;                                                               \
		} else {                                                                         \
			pass = false; /* not IP, or cut short: counted by its EtherType alone */ \
		}                                                                                \
		if (pass && !frag && has_ports(k.proto) && off <= 18 + 60 &&                     \
		    !PKT_LOAD(ctx, load, off, ports, 4)) {                                       \
			k.sport = bpf_ntohs(ports[0]);                                           \
			k.dport = bpf_ntohs(ports[1]);                                           \
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

