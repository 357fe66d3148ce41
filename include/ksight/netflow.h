/* Map layouts of the netflow collector, shared by bpf/netflow.bpf.c and src/collectors/netflow.c. */
#ifndef KSIGHT_NETFLOW_H
#define KSIGHT_NETFLOW_H

#include "types.h"

enum ks_netflow_by {
	KS_NETFLOW_BY_FLOW = 0,	 /* direction, protocol, addresses and ports */
	KS_NETFLOW_BY_PROTO = 1, /* direction, network and transport protocol */
	KS_NETFLOW_BY_PORT = 2,	 /* direction, transport protocol and the lower of the two ports */
	KS_NETFLOW_BY_DEV = 3,	 /* direction only: the device's totals */
};

/* Where a packet was counted: the hook and its direction. */
enum ks_netflow_dir {
	KS_NETFLOW_XDP = 0,	   /* XDP, ingress before any skb */
	KS_NETFLOW_INGRESS = 1, /* tcx ingress */
	KS_NETFLOW_EGRESS = 2,  /* tcx egress */
};

/* The row that takes the packets of keys beyond --max-rows (or the memory budget). */
#define KS_NETFLOW_KEY_OTHER 1

/*
 * Key of a row; gen selects the buffer half.  l3 is the EtherType (host
 * order): 0x0800 and 0x86DD carry addresses, any other (ARP, LLDP) only
 * itself.  Ports are host order, 0 for protocols without them and for
 * IPv4 fragments after the first.  IPv4 addresses fill the first four
 * bytes.
 */
struct __attribute__((aligned(8))) ks_netflow_key {
	__u32 gen;
	__u16 flags; /* KS_NETFLOW_KEY_OTHER */
	__u16 l3;
	__u8 proto; /* IP protocol (IPv6: the first next header) */
	__u8 dir;   /* enum ks_netflow_dir */
	__u16 sport;
	__u16 dport;
	__u16 pad;
	__u8 saddr[16];
	__u8 daddr[16];
};
_Static_assert(sizeof(struct ks_netflow_key) == 48, "ks_netflow_key layout");

/* One CPU's counts of a row (the map is per-CPU: no atomic add on the packet path). */
struct ks_netflow_stat {
	__u64 packets; /* frames at XDP, skbs at tc (a GSO skb once, as the device counts it) */
	__u64 bytes;   /* their length from the Ethernet header on */
};
_Static_assert(sizeof(struct ks_netflow_stat) == 16, "ks_netflow_stat layout");

/*
 * A per-CPU cache of the flows a CPU counted last, in front of the rows:
 * KS_NETFLOW_CACHE_SETS slots a half (half g's at g * SETS), a flow in the
 * slot its key's folded bits pick.  A packet of the flow a slot holds adds
 * there, without the row's hash lookup; another flow's packet moves the
 * slot's counts into their row and takes the slot; user space moves what
 * is left at each drain.
 */
#define KS_NETFLOW_CACHE_SETS 64
struct ks_netflow_cache {
	struct ks_netflow_key key;
	struct ks_netflow_stat stat;
};
_Static_assert(sizeof(struct ks_netflow_cache) == 64, "ks_netflow_cache layout");

/* Filters set before load: 0 is "any". */
struct ks_netflow_filter {
	__u16 port;  /* either port */
	__u16 proto; /* IP protocol + 1 */
};

/* Drop counters in .bss, cumulative from load. */
struct ks_netflow_counts {
	__u64 lost;	     /* packets of no row: a new row's allocation failed */
	__u64 to_other;	     /* packets counted in "other" (map full) */
	__u64 update_failed; /* row inserts the map refused for another reason */
};

#endif
