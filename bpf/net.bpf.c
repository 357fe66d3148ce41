/* Kernel side of `ksight net`: a packet's time stage by stage (send, qdisc, driver, receive, socket, read), softirq time and drops. */
#include "common.bpf.h"
#include <bpf/bpf_endian.h>
#include "ksight/net.h"

#define AF_INET 2
#define AF_INET6 10
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
/* softirq vectors (include/linux/interrupt.h, fixed since 2.6) */
#define NET_TX_SOFTIRQ 2
#define NET_RX_SOFTIRQ 3
/* an skb's transport_header not set (skb_transport_header_was_set) */
#define NO_HEADER 0xffff
/*
 * qdisc_dequeue hands a list of this many skbs at most (bulk dequeue):
 * try_bulk_dequeue_skb_slow makes 9 (the first and 8 more), BQL's
 * try_bulk_dequeue_skb as many as the device's byte limit allows; the
 * rest of a longer list are counted as lost.
 */
#define DEQ_BULK_MAX 16

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_NET_BY_STAGE;
/* --dev (empty: any), --port (0: any), --proto (0: any) */
const volatile char dev_filter[KS_COMM_LEN] = {};
const volatile __u16 port_filter = 0;
const volatile __u8 proto_filter = 0;
/* sock:sock_recv_length exists (6.4+): UDP packets move to their socket's queue to be matched with their read */
const volatile bool udp_reads = true;
/* sock:sk_data_ready exists (6.10+): else the rx stage is not split off, and a read is timed from the receive */
const volatile bool has_ready = true;

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_net_counts counts = {};

/* Zeroed source for new rows (too big for the BPF stack). */
static const struct ks_net_stat zero_stat = {};

/* Rows shared by all CPUs (struct ks_net_stat says why), made on first use; sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_net_key);
	__type(value, struct ks_net_stat);
} rows SEC(".maps");

/*
 * By stage (the default), the rows of every stage but drops: one copy per
 * CPU, element gen * KS_NET_STAGES + stage, summed by user space (softirq
 * rows split by the CPU that holds them).  An array element costs no key
 * hash and no lock, and no CPU writes another's: the shared rows' atomic
 * adds were most of what net cost a packet (bench/net.sh).  Plain adds:
 * each of these stages is ended in one context on a CPU (bottom halves
 * off, softirq, or a task's read), so no program interrupts another
 * adding to the same element.  Drops, ended anywhere, keep the hash.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * KS_NET_STAGES);
	__type(key, __u32);
	__type(value, struct ks_net_stat);
} stage_rows SEC(".maps");

/*
 * Packets in flight, by skb address: a plain hash, so that a full table
 * is counted (stamps_full) rather than silently evicting another
 * packet's stamp as an LRU would; stamps whose packet left by a path no
 * tracepoint shows are evicted by user space (counts.stale).
 * Preallocated, as sockq and sends are: an element allocated per packet
 * (BPF_F_NO_PREALLOC) cost a third of a packet's time (bench/net.sh).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct ks_net_stamp);
} stamps SEC(".maps");

/*
 * UDP packets queued to a socket, by (socket, place in its queue): UDP
 * copies a linear datagram without skb:skb_copy_datagram_iovec
 * (copy_linear_skb), so its read is the socket's next sock:sock_recv_length,
 * which names the socket only.  Its receive queue is FIFO: the n-th
 * datagram queued is the n-th read.
 */
struct sockq_key {
	__u64 sk;
	__u64 seq;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct sockq_key);
	__type(value, struct ks_net_stamp);
} sockq SEC(".maps");

/* Each UDP socket's queue ends: the next to read, the next to queue (an LRU: a closed socket's entry ages out). */
struct sockq_pos {
	__u64 head, tail;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct sockq_pos);
} sockpos SEC(".maps");

/*
 * Threads inside a send syscall: the entry time (0: not in one), and the
 * socket of the first packet it queued.  A softirq that runs at the end
 * of the send's own transmit (a veth peer's receive, answering with a TCP
 * ACK) queues packets in the same thread: only those of the sending
 * socket count.  Task storage, made at a thread's first send and gone
 * with the thread: a hash keyed by thread id cost its key hash, bucket
 * lock and element allocation at every send's entry and exit (bench/net.sh).
 */
struct send_stamp {
	__u64 ts;
	__u64 sk;
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct send_stamp);
} sends SEC(".maps");

/*
 * The packet this CPU's receive path works on, from netif_receive_skb
 * to the sk_data_ready that queues it: that tracepoint names the socket,
 * not the skb, and the two run in one softirq on one CPU.  With
 * sk_data_ready its stamp waits here, not in stamps: a UDP packet then
 * goes from here to its socket's queue, and never costs a hash update
 * and delete in stamps (a third of what ready and receive cost, bench/net.sh).
 */
struct rx_cur {
	__u64 skb;
	struct ks_net_stamp s;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rx_cur);
} rx_cur SEC(".maps");

/* Softirq entry times of this CPU: NET_TX, NET_RX. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} soft_ts SEC(".maps");

/*
 * The row of @k, made when missing; a full map sends the event to the
 * stage's "other" row (made ahead by user space in both halves), as in
 * bpf/tcp.bpf.c's row_get.
 */
static __always_inline struct ks_net_stat *row_get(struct ks_net_key *k)
{
	struct ks_net_stat *v = bpf_map_lookup_elem(&rows, k);
	struct ks_net_key o = { .flags = KS_NET_KEY_OTHER };
	long err;

	if (v)
		return v;
	err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (err == -KS_ENOMEM)
		err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (ks_map_failed(err))
		return NULL;
	if (!err || err == -KS_EEXIST) {
		v = bpf_map_lookup_elem(&rows, k);
		if (v)
			return v;
	}
	if (err == -KS_E2BIG || err == -KS_ENOMEM) {
		o.gen = k->gen;
		o.stage = k->stage;
		v = bpf_map_lookup_elem(&rows, &o);
		if (v) {
			__sync_fetch_and_add(&counts.to_other, 1);
			return v;
		}
	}
	__sync_fetch_and_add(&counts.lost, 1);
	return NULL;
}

/* Adds one packet of @s (may be NULL: softirq time) that spent @ns in @stage to its row. */
static __always_inline void account(const struct ks_net_stamp *s, __u16 stage, __u32 sub, __u64 ns, bool err)
{
	struct ks_net_key k = {};
	struct ks_net_stat *st;

	if (by_mode == KS_NET_BY_STAGE && stage != KS_NET_DROP) {
		__u32 idx = (ks_gen & 1) * KS_NET_STAGES + stage;

		st = bpf_map_lookup_elem(&stage_rows, &idx);
		if (!st)
			return;
		st->packets++;
		if (s)
			st->bytes += s->len;
		if (err)
			st->errors++;
		st->sum += ns;
		if (ns > st->max)
			st->max = ns;
		st->slots[ks_hist_slot_max(ns, KS_NET_SLOTS)]++;
		return;
	}
	k.gen = ks_gen & 1;
	k.stage = stage;
	/* the CPU and the drop reason split rows by stage only: a report row has room for 4 keys */
	if (by_mode == KS_NET_BY_STAGE)
		k.sub = sub;
	if (s) {
		switch (by_mode) {
		case KS_NET_BY_FLOW:
			k.family = s->family;
			k.proto = s->proto;
			k.sport = s->sport;
			k.dport = s->dport;
			__builtin_memcpy(k.saddr, s->saddr, 16);
			__builtin_memcpy(k.daddr, s->daddr, 16);
			break;
		case KS_NET_BY_DEV:
			__builtin_memcpy(k.name, s->dev, sizeof(k.name));
			break;
		case KS_NET_BY_CGROUP:
			k.cgroup = s->cgroup;
			break;
		case KS_NET_BY_PID:
			k.id = s->tgid;
			__builtin_memcpy(k.name, s->comm, sizeof(k.name));
			break;
		case KS_NET_BY_COMM:
			__builtin_memcpy(k.name, s->comm, sizeof(k.name));
			break;
		}
	}
	st = row_get(&k);
	if (!st)
		return;
	__sync_fetch_and_add(&st->packets, 1);
	if (s)
		__sync_fetch_and_add(&st->bytes, s->len);
	if (err)
		__sync_fetch_and_add(&st->errors, 1);
	__sync_fetch_and_add(&st->sum, ns);
	/* a plain compare and store: two CPUs raising it at once may keep the smaller (tcp's hist_add) */
	if (ns > st->max)
		st->max = ns;
	__sync_fetch_and_add(&st->slots[ks_hist_slot_max(ns, KS_NET_SLOTS)], 1);
}

/* The owner of a stamp: the current task, when it is the one the packet is for (send, read). */
static __always_inline void own(struct ks_net_stamp *s)
{
	__u64 id = bpf_get_current_pid_tgid();

	s->tgid = id >> 32;
	if (by_mode == KS_NET_BY_CGROUP)
		s->cgroup = bpf_get_current_cgroup_id();
	if (by_mode == KS_NET_BY_PID || by_mode == KS_NET_BY_COMM)
		bpf_get_current_comm(s->comm, sizeof(s->comm));
}

/*
 * Whether a stamp needs the packet's addressing: for a flow's key or a
 * --port/--proto filter only.  Other modes key a packet by its stage,
 * device or task and count its length, which the skb holds: the headers'
 * two probe reads were a fifth of what net cost a packet (bench/net.sh).
 */
static __always_inline bool want_headers(void)
{
	return by_mode == KS_NET_BY_FLOW || port_filter || proto_filter;
}

/*
 * Reads the length of @skb into @s and, where want_headers(), its
 * addressing: the IP header at @l3 (skb->data
 * on receive, where eth_type_trans left it; head + network_header on
 * send), the ports after it.  False when a --port/--proto/--dev filter
 * leaves the packet out.
 */
static __always_inline bool parse(struct sk_buff *skb, struct ks_net_stamp *s, bool rx, bool trusted)
{
	/* under tp_btf, plain loads (KS_RD): a probe read's helper call each cost more than the rest of parse */
	unsigned char *head = KS_RD(trusted, skb, head);
	unsigned char *l3, *l4 = NULL;
	__u16 proto = bpf_ntohs(KS_RD(trusted, skb, protocol));
	__u16 th = KS_RD(trusted, skb, transport_header);
	__u16 ports[2] = {};
	__u8 b0 = 0;

	/* the name only where --by dev or --dev needs it: a string read per packet costs */
	if (by_mode == KS_NET_BY_DEV || dev_filter[0]) {
		struct net_device *dev = KS_RD(trusted, skb, dev);

		bpf_probe_read_kernel_str(s->dev, sizeof(s->dev), dev->name);
	}
	if (dev_filter[0]) {
		for (int i = 0; i < KS_COMM_LEN; i++) {
			if (s->dev[i] != dev_filter[i])
				return false;
			if (!dev_filter[i])
				break;
		}
	}
	if (rx) {
		unsigned char *data = KS_RD(trusted, skb, data);

		l3 = data;
		/* the device counted the L2 header eth_type_trans pulled */
		s->len = KS_RD(trusted, skb, len) + (__u32)(data - head - KS_RD(trusted, skb, mac_header));
	} else {
		l3 = head + KS_RD(trusted, skb, network_header);
		s->len = KS_RD(trusted, skb, len);
		if (th != NO_HEADER)
			l4 = head + th;
	}
	if (!want_headers())
		return true;
	if (proto == ETH_P_IP) {
		struct iphdr ip = {};

		bpf_probe_read_kernel(&ip, sizeof(ip), l3);
		/* version and ihl share the first byte: a bit-field CO-RE would relocate for nothing */
		b0 = *(__u8 *)&ip;
		s->family = AF_INET;
		s->proto = ip.protocol;
		__builtin_memcpy(s->saddr, &ip.saddr, 4);
		__builtin_memcpy(s->daddr, &ip.daddr, 4);
		if (!l4 || rx)
			l4 = l3 + (b0 & 0xf) * 4;
	} else if (proto == ETH_P_IPV6) {
		struct ipv6hdr ip6 = {};

		bpf_probe_read_kernel(&ip6, sizeof(ip6), l3);
		s->family = AF_INET6;
		s->proto = ip6.nexthdr;
		__builtin_memcpy(s->saddr, &ip6.saddr, 16);
		__builtin_memcpy(s->daddr, &ip6.daddr, 16);
		if (!l4 || rx)
			l4 = l3 + sizeof(ip6);
	}
	if (l4 && (s->proto == IPPROTO_UDP || s->proto == IPPROTO_TCP)) {
		bpf_probe_read_kernel(ports, sizeof(ports), l4);
		s->sport = bpf_ntohs(ports[0]);
		s->dport = bpf_ntohs(ports[1]);
	}
	if (proto_filter && s->proto != proto_filter)
		return false;
	if (port_filter && s->sport != port_filter && s->dport != port_filter)
		return false;
	return true;
}

/* Stores stamp @s of @skb; a full table is counted, never evicting another packet's. */
static __always_inline void stamp_put(__u64 skb, struct ks_net_stamp *s)
{
	long err = ks_map_update(&stamps, &skb, s, BPF_ANY, &counts.update_failed);

	if (err == -KS_E2BIG || err == -KS_ENOMEM)
		__sync_fetch_and_add(&counts.stamps_full, 1);
}

/* net:net_dev_queue: the send stage of the sending thread's packet ends; the qdisc's begins. */
static __always_inline int on_queue(struct sk_buff *skb, bool trusted)
{
	struct ks_net_stamp s = {};
	__u64 now = bpf_ktime_get_ns(), key = (__u64)skb;
	struct send_stamp *sent = bpf_task_storage_get(&sends, bpf_get_current_task_btf(), 0, 0);
	__u64 sk = (__u64)KS_RD(trusted, skb, sk);

	if (sent && !sent->ts)
		sent = NULL;
	if (sent && !sent->sk)
		sent->sk = sk;
	if (sent && (!sk || sent->sk != sk))
		sent = NULL;
	/* with a task filter, only packets its threads send: others carry no owner to test */
	if (!sent && ks_filter.flags)
		return 0;
	if (!parse(skb, &s, false, trusted))
		return 0;
	s.ts = now;
	s.mark = KS_NET_M_QUEUED;
	if (sent) {
		own(&s);
		account(&s, KS_NET_SEND, 0, now - sent->ts, false);
	}
	stamp_put(key, &s);
	return 0;
}

/* qdisc:qdisc_dequeue: the qdisc let go of @skb and the @n - 1 behind it (skb->next), all at once. */
static __always_inline int on_dequeue(struct sk_buff *skb, int n, bool trusted)
{
	__u64 now = bpf_ktime_get_ns();

	/* their qdisc stage goes uncounted (their xmit is timed from the queue) */
	if (n > DEQ_BULK_MAX)
		__sync_fetch_and_add(&counts.lost, n - DEQ_BULK_MAX);

	for (int i = 0; i < DEQ_BULK_MAX && i < n && skb; i++) {
		__u64 key = (__u64)skb;
		struct ks_net_stamp *s = bpf_map_lookup_elem(&stamps, &key);

		if (s && s->mark == KS_NET_M_QUEUED) {
			account(s, KS_NET_QDISC, 0, now - s->ts, false);
			s->ts = now;
			s->mark = KS_NET_M_DEQUEUED;
		}
		skb = KS_RD(trusted, skb, next);
	}
	return 0;
}

/* net:net_dev_xmit: the driver took @skb (or refused it: @rc); its stamp ends here, the peer's receive starts anew. */
static __always_inline int on_xmit(struct sk_buff *skb, int rc)
{
	__u64 key = (__u64)skb;
	struct ks_net_stamp *s = bpf_map_lookup_elem(&stamps, &key);

	if (!s || (s->mark != KS_NET_M_QUEUED && s->mark != KS_NET_M_DEQUEUED))
		return 0;
	account(s, KS_NET_XMIT, 0, bpf_ktime_get_ns() - s->ts, rc != 0);
	ks_map_delete(&stamps, &key, &counts.update_failed);
	return 0;
}

/* net:netif_receive_skb: the stack takes a packet from the driver. */
static __always_inline int on_receive(struct sk_buff *skb, bool trusted)
{
	struct ks_net_stamp s = {};
	__u64 key = (__u64)skb;
	__u32 zero = 0;
	struct rx_cur *c;

	/* a packet the filters leave out still replaces the last one: its sk_data_ready is not the last's */
	c = bpf_map_lookup_elem(&rx_cur, &zero);
	if (c)
		c->skb = 0;
	if (!parse(skb, &s, true, trusted))
		return 0;
	s.ts = bpf_ktime_get_ns();
	s.mark = KS_NET_M_RX;
	if (!c)
		return 0;
	c->skb = key;
	if (has_ready)
		c->s = s;
	else
		stamp_put(key, &s);
	return 0;
}

/* The stamp of @skb when it waits in this CPU's rx_cur (received, not yet queued to a socket); NULL when not. */
static __always_inline struct rx_cur *rx_waiting(__u64 skb)
{
	__u32 zero = 0;
	struct rx_cur *c;

	if (!has_ready)
		return NULL;
	c = bpf_map_lookup_elem(&rx_cur, &zero);
	return c && c->skb == skb ? c : NULL;
}

/* A UDP packet's stamp @s moves from its skb to the tail of socket @sk's queue. */
static __always_inline void sockq_push(const struct sock *sk, struct ks_net_stamp *s)
{
	struct sockq_pos zero_pos = {}, *pos;
	struct sockq_key k = { .sk = (__u64)sk };
	long err;

	pos = bpf_map_lookup_elem(&sockpos, &k.sk);
	if (!pos) {
		bpf_map_update_elem(&sockpos, &k.sk, &zero_pos, BPF_NOEXIST);
		pos = bpf_map_lookup_elem(&sockpos, &k.sk);
		if (!pos) {
			__sync_fetch_and_add(&counts.stamps_full, 1);
			return;
		}
	}
	k.seq = __sync_fetch_and_add(&pos->tail, 1);
	err = ks_map_update(&sockq, &k, s, BPF_ANY, &counts.update_failed);
	if (err == -KS_E2BIG || err == -KS_ENOMEM)
		__sync_fetch_and_add(&counts.stamps_full, 1);
}

/* The read of a stamped packet @s by the current task ends its time in the socket's queue. */
static __always_inline void account_read(struct ks_net_stamp *s)
{
	if (!ks_filter_pass(bpf_get_current_pid_tgid()))
		return;
	own(s);
	account(s, KS_NET_READ, 0, bpf_ktime_get_ns() - s->ts, false);
}

/* sock:sock_recv_length: a read of @sk returned @ret; for UDP, the datagram at the head of its queue. */
static __always_inline int on_recv(const struct sock *sk, int ret, int flags)
{
	struct sockq_key k = { .sk = (__u64)sk };
	struct ks_net_stamp *s;
	struct sockq_pos *pos;

	/* MSG_PEEK (2) leaves the datagram queued; MSG_ERRQUEUE (0x2000) reads another queue */
	if (ret < 0 || (flags & 0x2002))
		return 0;
	pos = bpf_map_lookup_elem(&sockpos, &k.sk);
	if (!pos || pos->head >= pos->tail)
		return 0;
	k.seq = __sync_fetch_and_add(&pos->head, 1);
	s = bpf_map_lookup_elem(&sockq, &k);
	if (!s)
		return 0;
	account_read(s);
	ks_map_delete(&sockq, &k, &counts.update_failed);
	return 0;
}

/* sock:sk_data_ready (only where it exists: has_ready): the packet this CPU receives is queued to socket @sk. */
static __always_inline int on_ready(const struct sock *sk, bool trusted)
{
	__u32 zero = 0;
	struct rx_cur *c = bpf_map_lookup_elem(&rx_cur, &zero);
	struct ks_net_stamp *s;
	__u64 key, now;

	if (!c || !c->skb)
		return 0;
	key = c->skb;
	c->skb = 0;
	s = &c->s;
	now = bpf_ktime_get_ns();
	/* in softirq no task owns the packet yet: with a task filter it counts at its read only */
	if (!ks_filter.flags)
		account(s, KS_NET_RX, 0, now - s->ts, false);
	s->ts = now;
	s->mark = KS_NET_M_SOCK;
	/* UDP's read is its socket's next sock_recv_length; others' the copy of this skb */
	if (udp_reads && (!want_headers() || s->proto == IPPROTO_UDP) && KS_RD(trusted, sk, sk_protocol) == IPPROTO_UDP)
		sockq_push(sk, s);
	else
		stamp_put(key, s);
	return 0;
}

/* skb:skb_copy_datagram_iovec: the application reads the packet (TCP; UDP's that are not linear); its stamp ends. */
static __always_inline int on_copy(const struct sk_buff *skb)
{
	__u64 key = (__u64)skb;
	struct ks_net_stamp *s = bpf_map_lookup_elem(&stamps, &key);

	if (!s || (s->mark != KS_NET_M_SOCK && (has_ready || s->mark != KS_NET_M_RX)))
		return 0;
	account_read(s);
	ks_map_delete(&stamps, &key, &counts.update_failed);
	return 0;
}

/*
 * A packet freed, not dropped, while its stamp says it is still on its
 * way out (queued, or dequeued and not sent): its dequeue or its send
 * was never seen, so those stages miss it.  Counted as lost, not deleted
 * silently: a qdisc that splits a GSO skb (tbf_segment) frees the one
 * net_dev_queue stamped and sends its segments, which no stamp names;
 * and a packet whose qdisc_dequeue and net_dev_xmit reached no program
 * (seen on a loaded 2-CPU VM: 6-8 of 200, recursion 0) ends here too.
 */
static __always_inline void out_unseen(const struct ks_net_stamp *s)
{
	if (s->mark == KS_NET_M_QUEUED || s->mark == KS_NET_M_DEQUEUED)
		__sync_fetch_and_add(&counts.lost, 1);
}

/* skb:kfree_skb: a packet dropped with @reason (1, SKB_CONSUMED, is a normal end) after its last stage. */
static __always_inline int on_free(struct sk_buff *skb, __u32 reason)
{
	__u64 key = (__u64)skb;
	struct rx_cur *c = rx_waiting(key);
	struct ks_net_stamp *s;

	if (c) {
		c->skb = 0;
		if (reason > 1)
			account(&c->s, KS_NET_DROP, reason, bpf_ktime_get_ns() - c->s.ts, false);
		return 0;
	}
	s = bpf_map_lookup_elem(&stamps, &key);
	if (!s)
		return 0;
	if (reason > 1)
		account(s, KS_NET_DROP, reason, bpf_ktime_get_ns() - s->ts, false);
	else
		out_unseen(s);
	ks_map_delete(&stamps, &key, &counts.update_failed);
	return 0;
}

/* skb:consume_skb: a packet freed normally (a read that did not copy, a clone's end): its stamp goes. */
static __always_inline int on_consume(struct sk_buff *skb)
{
	__u64 key = (__u64)skb;
	struct rx_cur *c = rx_waiting(key);
	struct ks_net_stamp *s;

	if (c) {
		c->skb = 0;
		return 0;
	}
	s = bpf_map_lookup_elem(&stamps, &key);
	if (!s)
		return 0;
	out_unseen(s);
	ks_map_delete(&stamps, &key, &counts.update_failed);
	return 0;
}

/* irq:softirq_entry/exit: NET_RX and NET_TX time per CPU. */
static __always_inline int on_softirq(unsigned int vec, bool entry)
{
	__u32 idx = vec - NET_TX_SOFTIRQ, cpu;
	__u64 *ts, now;

	if (vec != NET_TX_SOFTIRQ && vec != NET_RX_SOFTIRQ)
		return 0;
	cpu = bpf_get_smp_processor_id();
	if ((ks_filter.flags & KS_F_CPU) && !ks_cpu_allowed(cpu))
		return 0;
	ts = bpf_map_lookup_elem(&soft_ts, &idx);
	if (!ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (entry) {
		*ts = now;
		return 0;
	}
	if (!*ts)
		return 0;
	account(NULL, vec == NET_RX_SOFTIRQ ? KS_NET_SOFTIRQ_RX : KS_NET_SOFTIRQ_TX, cpu, now - *ts, false);
	*ts = 0;
	return 0;
}

KS_BTF_RAW_PROGS(net_queue, net_dev_queue, on_queue(skb, trusted), struct sk_buff *skb)
KS_BTF_RAW_PROGS(net_dequeue, qdisc_dequeue, on_dequeue(skb, packets, trusted), struct Qdisc *q, const struct netdev_queue *txq,
		 int packets, struct sk_buff *skb)
KS_BTF_RAW_PROGS(net_xmit, net_dev_xmit, on_xmit(skb, rc), struct sk_buff *skb, int rc)
KS_BTF_RAW_PROGS(net_receive, netif_receive_skb, on_receive(skb, trusted), struct sk_buff *skb)
KS_BTF_RAW_PROGS(net_ready, sk_data_ready, on_ready(sk, trusted), const struct sock *sk)
KS_BTF_RAW_PROGS(net_recv, sock_recv_length, on_recv(sk, ret, flags), struct sock *sk, int ret, int flags)
KS_BTF_RAW_PROGS(net_copy, skb_copy_datagram_iovec, on_copy(skb), const struct sk_buff *skb)
KS_BTF_RAW_PROGS(net_free, kfree_skb, on_free(skb, reason), struct sk_buff *skb, void *location,
		 enum skb_drop_reason reason)
KS_BTF_RAW_PROGS(net_consume, consume_skb, on_consume(skb), struct sk_buff *skb)
KS_BTF_RAW_PROGS(net_soft_in, softirq_entry, on_softirq(vec, true), unsigned int vec)
KS_BTF_RAW_PROGS(net_soft_out, softirq_exit, on_softirq(vec, false), unsigned int vec)

/*
 * The send syscalls, classic tracepoints in every variant (no kprobe on
 * tcp_sendmsg/udp_sendmsg is needed): the thread's entry time, which the
 * packets it queues before the exit are timed from.
 */
static __always_inline int send_enter(void)
{
	struct send_stamp *st;

	if (!ks_filter_pass(bpf_get_current_pid_tgid()))
		return 0;
	st = bpf_task_storage_get(&sends, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		/* no memory for the thread's storage (or its lock busy): the send stage of this send goes uncounted */
		__sync_fetch_and_add(&counts.sends_full, 1);
		return 0;
	}
	st->ts = bpf_ktime_get_ns();
	st->sk = 0;
	return 0;
}

static __always_inline int send_exit(void)
{
	struct send_stamp *st = bpf_task_storage_get(&sends, bpf_get_current_task_btf(), 0, 0);

	if (st)
		st->ts = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_sendto")
int net_sendto_in(void *ctx)
{
	return send_enter();
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int net_sendto_out(void *ctx)
{
	return send_exit();
}

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int net_sendmsg_in(void *ctx)
{
	return send_enter();
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int net_sendmsg_out(void *ctx)
{
	return send_exit();
}

SEC("tracepoint/syscalls/sys_enter_sendmmsg")
int net_sendmmsg_in(void *ctx)
{
	return send_enter();
}

SEC("tracepoint/syscalls/sys_exit_sendmmsg")
int net_sendmmsg_out(void *ctx)
{
	return send_exit();
}
