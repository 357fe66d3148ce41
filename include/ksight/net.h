/* Map layouts of the net collector, shared by bpf/net.bpf.c and src/collectors/net.c. */
#ifndef KSIGHT_NET_H
#define KSIGHT_NET_H

#include "hist.h"
#include "filter.h"

enum ks_net_by {
	KS_NET_BY_STAGE = 0,
	KS_NET_BY_FLOW = 1,
	KS_NET_BY_DEV = 2,
	KS_NET_BY_CGROUP = 3,
	KS_NET_BY_PID = 4,
	KS_NET_BY_COMM = 5,
};

/*
 * Where a packet's time goes.  Each stage is the time from the event that
 * ends the one before it: a packet that skips a stage (no qdisc: noqueue,
 * or a qdisc that sent it on at once) is timed from the last event seen.
 */
enum ks_net_stage {
	KS_NET_SEND = 0,	/* send syscall entry -> net:net_dev_queue (the sending thread's own packets) */
	KS_NET_QDISC = 1,	/* net:net_dev_queue -> qdisc:qdisc_dequeue */
	KS_NET_XMIT = 2,	/* last of the two -> net:net_dev_xmit (the driver's hand-off; rc != 0 counted) */
	KS_NET_RX = 3,		/* net:netif_receive_skb -> sock:sk_data_ready (queued to a socket) */
	KS_NET_READ = 4,	/* queued -> skb:skb_copy_datagram_iovec (the application's read) */
	KS_NET_DROP = 5,	/* a stamped packet freed by skb:kfree_skb: time since its last stage, by reason */
	KS_NET_SOFTIRQ_RX = 6,	/* NET_RX softirq time per CPU */
	KS_NET_SOFTIRQ_TX = 7,	/* NET_TX softirq time per CPU */
	KS_NET_STAGES = 8,
};

/* Key flags: the row that takes the events of keys beyond --max-rows (or the memory budget). */
#define KS_NET_KEY_OTHER 1

/* Key of a row; gen selects the buffer half, the rest depends on the mode. */
struct ks_net_key {
	__u32 gen;
	__u16 stage; /* enum ks_net_stage */
	__u16 flags; /* KS_NET_KEY_OTHER */
	__u16 family; /* flow: AF_INET, AF_INET6, 0 for packets that are neither */
	__u8 proto;   /* flow: IPPROTO_* */
	__u8 _pad0;
	__u16 sport, dport; /* flow: host order, the packet's source and destination */
	__u32 id;	    /* pid: tgid */
	__u32 sub;	    /* drop: the reason; softirq: the CPU */
	__u64 cgroup;	    /* cgroup: cgroup v2 id */
	__u8 saddr[16];	    /* flow: IPv4 in the first four bytes */
	__u8 daddr[16];
	char name[KS_COMM_LEN]; /* dev: the device; comm: the task */
};

/* Histogram length: stage times below 2^36 ns (68 s) each; longer ones share the last slot. */
#define KS_NET_SLOTS KS_HIST_SLOTS_BELOW(36)

/*
 * One row, shared by all CPUs and updated with atomic adds (as tcp's:
 * many keys at a modest rate each; per-CPU copies would cost possible
 * CPUs times the memory).  Slots are u32: drained every interval.
 */
struct ks_net_stat {
	__u64 packets;
	__u64 bytes; /* as the device counts them: the L2 header included */
	__u64 errors; /* xmit: a driver's rc other than NETDEV_TX_OK */
	__u64 sum;
	__u64 max;
	__u64 _pad;
	__u32 slots[KS_NET_SLOTS];
};

/* Stamp stages: the last event that saw the packet. */
enum ks_net_mark {
	KS_NET_M_QUEUED = 1,   /* net_dev_queue */
	KS_NET_M_DEQUEUED = 2, /* qdisc_dequeue */
	KS_NET_M_RX = 3,       /* netif_receive_skb */
	KS_NET_M_SOCK = 4,     /* sk_data_ready */
};

/* What is known of a packet in flight, keyed by its skb's address. */
struct ks_net_stamp {
	__u64 ts; /* the last stage's end */
	__u64 cgroup;
	__u32 tgid;
	__u32 len; /* bytes as the device counts them */
	__u16 family;
	__u8 proto;
	__u8 mark; /* enum ks_net_mark */
	__u16 sport, dport;
	__u8 saddr[16], daddr[16];
	char dev[KS_COMM_LEN];
	char comm[KS_COMM_LEN];
};

/* Counters in .bss, reported after every run. */
struct ks_net_counts {
	__u64 to_other;	     /* events put in the "other" row: no room for their own */
	__u64 lost;	     /* not counted: no row could be made */
	__u64 stamps_full;   /* a packet not stamped: the stamp table was full; its later stages go uncounted */
	__u64 sends_full;    /* a send not stamped: no thread storage could be made; its send stage goes uncounted */
	__u64 update_failed; /* a row or stamp not stored or not removed: the hash map's lock refused */
	__u64 stale;	     /* stamps evicted by user space: older than the stale age, their packet lost from view */
};

_Static_assert(sizeof(struct ks_net_key) == 80, "ks_net_key layout");
_Static_assert(sizeof(struct ks_net_stamp) == 96, "ks_net_stamp layout");
_Static_assert(sizeof(struct ks_net_stat) % 8 == 0, "ks_net_stat layout");

#endif /* KSIGHT_NET_H */
