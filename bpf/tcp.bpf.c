/* Kernel side of `ksight tcp`: retransmits, drops with their reason, listen-queue overflows, RTT, cwnd and connect latency per flow or owner. */
#include "common.bpf.h"
#include "compat.bpf.h"
#include <bpf/bpf_endian.h>
#include "ksight/tcp.h"

#define AF_INET 2
#define AF_INET6 10
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_TCP 6
/* errno values of the early returns of __tcp_retransmit_skb() (uapi, fixed) */
#define EAGAIN 11
#define ENOMEM 12
#define EBUSY 16
#define EINVAL 22
#define EHOSTUNREACH 113

/* TCP states (include/net/tcp_states.h), fixed since Linux 2.2. */
enum {
	ST_ESTABLISHED = 1,
	ST_SYN_SENT = 2,
	ST_SYN_RECV = 3,
	ST_CLOSE = 7,
	ST_LISTEN = 10,
};

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_TCP_BY_FLOW;
/* tcp_retransmit_skb passes the retransmit's error as a third argument (6.18 does; 6.1 does not) */
const volatile bool retrans_err_arg;
/* kfree_skb passes the socket that received the packet (rx_sk: 6.11 has it; 6.1 does not) */
const volatile bool drop_rx_sk_arg;

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_tcp_counts counts = {};

/* Zeroed source for new rows (too big for the BPF stack). */
static const struct ks_tcp_stat zero_stat = {};

/*
 * Rows shared by all CPUs (see struct ks_tcp_stat), made on first use:
 * nothing is allocated for keys never seen, and the worst case is the
 * loader's max_entries (from --max-rows and the memory budget) times one
 * row, not times the possible CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_tcp_key);
	__type(value, struct ks_tcp_stat);
} rows SEC(".maps");

/* Listeners whose accept queue has held a child, by what a SYN names (struct ks_tcp_listen_key): the socket's address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KS_TCP_LISTENERS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_tcp_listen_key);
	__type(value, __u64);
} listeners SEC(".maps");

#include "sock_owner.bpf.h"

KS_PID_COMM_MAP(pid_comm);
KS_PID_COMM_EXEC(pid_comm)

/*
 * connect() or accept() made the current task a socket's owner: in the
 * pid mode its name goes into pid_comm now, in its own context, so that
 * the exec program keeps it current if the task execs with the socket
 * open (a shell's /dev/tcp, inetd) before any row of it is made.  Rows
 * made later, mostly in softirq, write the socket's copy of the name, from
 * connect or accept, only where pid_comm has none (row_get): it would
 * undo that exec's rename.  A name cache: a refusal loses no count.
 */
static __always_inline void name_owner(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;
	char comm[KS_COMM_LEN];

	if (by_mode != KS_TCP_BY_PID)
		return;
	bpf_get_current_comm(comm, sizeof(comm));
	bpf_map_update_elem(&pid_comm, &tgid, comm, BPF_ANY);
}

/* The addressing of a socket. */
struct flow {
	__u16 family, lport, rport, protocol;
	__u8 laddr[16], raddr[16];
};

/*
 * Reads the flow of @sk: by plain loads when @btf (the pointer is
 * trusted: tp_btf, fentry), else through probe reads.  @btf is a constant
 * at every call site, so only one of the two is compiled in each program.
 */
static __always_inline void sk_flow(const struct sock *sk, struct flow *f, bool btf)
{
	if (btf) {
		f->family = sk->__sk_common.skc_family;
		f->lport = sk->__sk_common.skc_num;
		f->rport = bpf_ntohs(sk->__sk_common.skc_dport);
		f->protocol = sk->sk_protocol;
		if (f->family == AF_INET6) {
			__builtin_memcpy(f->laddr, &sk->__sk_common.skc_v6_rcv_saddr, 16);
			__builtin_memcpy(f->raddr, &sk->__sk_common.skc_v6_daddr, 16);
		} else {
			*(__u32 *)f->laddr = sk->__sk_common.skc_rcv_saddr;
			*(__u32 *)f->raddr = sk->__sk_common.skc_daddr;
		}
		return;
	}
	f->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	f->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	f->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	f->protocol = BPF_CORE_READ(sk, sk_protocol);
	if (f->family == AF_INET6) {
		bpf_core_read(f->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(f->raddr, 16, &sk->__sk_common.skc_v6_daddr);
	} else {
		bpf_core_read(f->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(f->raddr, 4, &sk->__sk_common.skc_daddr);
	}
}

/* The listener key of @sk, a listening socket (its bound address; zero: any). */
static __always_inline void listen_key_of_sk(struct ks_tcp_listen_key *lk, const struct sock *sk)
{
	lk->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	lk->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	lk->port = BPF_CORE_READ(sk, __sk_common.skc_num);
	if (lk->family == AF_INET6)
		bpf_core_read(lk->addr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
	else
		bpf_core_read(lk->addr, 4, &sk->__sk_common.skc_rcv_saddr);
}

/* Builds the row key of an event on @sk (owner @s, may be NULL). */
static __always_inline void key_of(struct ks_tcp_key *k, const struct sock *sk, const struct ks_tcp_sock *s,
				   bool btf)
{
	struct flow f = {};

	k->gen = ks_gen & 1;
	if (by_mode == KS_TCP_BY_PID) {
		k->id = s ? s->tgid : 0;
		return;
	}
	if (by_mode == KS_TCP_BY_COMM) {
		if (s)
			__builtin_memcpy(k->comm, s->comm, sizeof(k->comm));
		return;
	}
	sk_flow(sk, &f, btf);
	if (by_mode == KS_TCP_BY_PORT) {
		/* the service's port: the remote one of a connect, the local one of an accept */
		if (s && s->role == KS_TCP_ACTIVE)
			k->id = f.rport;
		else if (s && s->role == KS_TCP_PASSIVE)
			k->id = f.lport;
		else
			k->id = f.lport < f.rport ? f.lport : f.rport;
		return;
	}
	k->family = f.family;
	k->lport = f.lport;
	k->rport = f.rport;
	__builtin_memcpy(k->laddr, f.laddr, 16);
	__builtin_memcpy(k->raddr, f.raddr, 16);
}

/*
 * The row of @k, made when missing.  A full map (the keys beyond
 * --max-rows, or beyond what the memory budget holds) sends the event to
 * the "other" row, which user space makes ahead in both halves; an
 * allocation that fails (the allocator's per-CPU cache ran dry; it
 * refills asynchronously) is tried once more, then counted as lost; an
 * insert the map's lock refused is counted as update_failed.
 */
static __always_inline struct ks_tcp_stat *row_get(struct ks_tcp_key *k, const struct ks_tcp_sock *s)
{
	struct ks_tcp_stat *v = bpf_map_lookup_elem(&rows, k);
	struct ks_tcp_key o = { .flags = KS_TCP_KEY_OTHER };
	long err;

	if (v)
		return v;
	err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (err == -ENOMEM)
		err = ks_map_update(&rows, k, &zero_stat, BPF_NOEXIST, &counts.update_failed);
	if (ks_map_failed(err))
		return NULL;
	if (!err || err == -KS_EEXIST) {
		v = bpf_map_lookup_elem(&rows, k);
		if (v) {
			/* a name cache: a refusal loses no count (see KS_PID_COMM_MAP, name_owner) */
			if (!err && by_mode == KS_TCP_BY_PID && s)
				bpf_map_update_elem(&pid_comm, &k->id, s->comm, BPF_NOEXIST);
			return v;
		}
	}
	if (err == -KS_E2BIG) {
		o.gen = k->gen;
		v = bpf_map_lookup_elem(&rows, &o);
		if (v) {
			__sync_fetch_and_add(&counts.to_other, 1);
			return v;
		}
	}
	__sync_fetch_and_add(&counts.lost, 1);
	return NULL;
}

/*
 * Adds @v to a histogram of @n u32 slots with its sum and max.  The max is
 * a plain compare and store: two CPUs raising it at once may keep the
 * smaller, the rare price of a row without per-CPU copies.
 */
static __always_inline void hist_add(__u32 *slots, __u64 *sum, __u64 *max, __u64 v, unsigned int n)
{
	__sync_fetch_and_add(sum, v);
	if (v > *max)
		*max = v;
	__sync_fetch_and_add(&slots[ks_hist_slot_max(v, n)], 1);
}

/*
 * The socket's owner, or NULL.  With a filter, only sockets whose owner
 * passed it are seen at all: *@skip says so.
 */
static __always_inline struct ks_tcp_sock *owner_of(const struct sock *sk, bool *skip)
{
	struct ks_tcp_sock *s;

	/* rows by flow without a filter need no owner: one hash lookup less per segment */
	if (by_mode == KS_TCP_BY_FLOW && !ks_filter.flags) {
		*skip = false;
		return NULL;
	}
	s = ks_sock_owner(sk);

	*skip = !s && ks_filter.flags;
	return s;
}

static __always_inline void account_connect(const struct sock *sk, struct ks_tcp_sock *s, __u64 now, bool ok,
					    bool btf)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_stat *st;
	__u64 lat = now - s->connect_ts;

	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (!st)
		return;
	if (!ok) {
		__sync_fetch_and_add(&st->connect_fails, 1);
		return;
	}
	__sync_fetch_and_add(&st->connects, 1);
	hist_add(st->conn, &st->conn_sum, &st->conn_max, lat, KS_TCP_CONN_SLOTS);
}

/* The segments @sk has retransmitted in its life: tcp_sock.total_retrans, raised with RetransSegs. */
static __always_inline __u32 sk_total_retrans(const struct sock *sk)
{
	__u32 n = 0;

	bpf_core_read(&n, sizeof(n), &((struct tcp_sock *)sk)->total_retrans);
	return n;
}

/* At close: the retransmits of @sk that fired no event since the last one. */
static __always_inline void retrans_at_close(const struct sock *sk, struct ks_tcp_sock *s, bool btf)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_stat *st;
	__u32 segs;

	if (!(s->flags & KS_TCP_SOCK_RETRANS))
		return;
	segs = sk_total_retrans(sk) - s->retrans_seen;
	if (!segs)
		return;
	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (st)
		__sync_fetch_and_add(&st->retrans_segs, segs);
}

/* sock:inet_sock_set_state: owners at connect, connect latency, clean-up at close. */
static __always_inline int on_state(const struct sock *sk, int old, int new, __u16 protocol, bool btf)
{
	struct ks_tcp_sock *s;
	__u64 pid_tgid;

	/* drop reasons need owners only to apply a filter */
	if (protocol != IPPROTO_TCP || (by_mode == KS_TCP_BY_REASON && !ks_filter.flags))
		return 0;
	if (new == ST_SYN_SENT) {
		/* in connect(), in the caller's context */
		pid_tgid = bpf_get_current_pid_tgid();
		if (!ks_filter_pass(pid_tgid))
			return 0;
		if (ks_sock_owner_connect(sk, pid_tgid, bpf_ktime_get_ns(), &counts.update_failed))
			__sync_fetch_and_add(&counts.socks_full, 1);
		else
			name_owner(pid_tgid);
		return 0;
	}
	if (new == ST_SYN_RECV) {
		/*
		 * A child of a listener, made in softirq: its owner is the task
		 * that accepts it (on_accept).  listen() itself sets its state
		 * without this tracepoint.
		 */
		if (ks_filter.flags)
			return 0;
		ks_sock_owner_child(sk, &counts.update_failed);
		return 0;
	}
	if (old == ST_SYN_SENT && (new == ST_ESTABLISHED || new == ST_CLOSE) && by_mode != KS_TCP_BY_REASON) {
		s = ks_sock_owner(sk);
		if (s && s->connect_ts) {
			account_connect(sk, s, bpf_ktime_get_ns(), new == ST_ESTABLISHED, btf);
			s->connect_ts = 0;
		}
	}
	if (old == ST_LISTEN && by_mode != KS_TCP_BY_REASON) {
		struct ks_tcp_listen_key lk = {};

		listen_key_of_sk(&lk, sk);
		ks_map_delete(&listeners, &lk, &counts.update_failed);
	}
	if (new == ST_CLOSE) {
		s = ks_sock_owner(sk);
		if (s && by_mode != KS_TCP_BY_REASON)
			retrans_at_close(sk, s, btf);
		ks_sock_owner_forget(sk, &counts.update_failed);
	}
	return 0;
}

/*
 * tcp:tcp_retransmit_skb: one event, as many segments as the skb carries.
 * Older kernels fire it for retransmits that went out only; since "tcp:
 * trace retransmit failures in tcp_retransmit_skb" (net-next, July 2025;
 * 6.18 has it) it fires on every return of __tcp_retransmit_skb() with
 * its error.
 * RetransSegs counts those that got as far as tcp_transmit_skb(), sent or
 * not; the returns before it (skb still in the host's queue, already
 * acked, no route, no window, no memory to split it) give the errors
 * below, which count as failed only.  tcp_transmit_skb() itself fails with
 * -ENOBUFS or a qdisc's verdict, so the two sets do not meet but for a
 * route lost between rebuild_header() and ip_queue_xmit().
 */
static __always_inline bool retrans_before_stats(int err)
{
	return err == -EBUSY || err == -EINVAL || err == -ENOMEM || err == -EHOSTUNREACH || err == -EAGAIN;
}

static __always_inline int on_retransmit(const struct sock *sk, const struct sk_buff *skb, int err, bool btf)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_sock *s;
	struct ks_tcp_stat *st;
	bool sent = !err || !retrans_before_stats(err);
	__u32 total, segs = 0;
	__u16 pcount = 0;

	if (by_mode == KS_TCP_BY_REASON)
		return 0;
	/* the socket's entry, owner or not: it keeps the retransmits accounted so far */
	s = ks_sock_owner(sk);
	if (!s && ks_filter.flags)
		return 0;
	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (!st)
		return 0;
	if (err)
		__sync_fetch_and_add(&st->retrans_failed, 1);
	if (sent)
		__sync_fetch_and_add(&st->retransmits, 1);
	/*
	 * Segments: the growth of the socket's own count since it was last
	 * accounted.  Some retransmits fire no event (6.1: those whose
	 * transmit failed after RetransSegs counted them; 6.18 on veth under
	 * loss: whole TSO skbs now and then, found by this very comparison),
	 * and are counted here with the next event or at close.  A socket
	 * without a count yet (opened before the start, or a listener's
	 * child) counts this event's segments: tcp_skb_pcount(), what
	 * __tcp_retransmit_skb() adds to RetransSegs.
	 */
	total = sk_total_retrans(sk);
	if (s && (s->flags & KS_TCP_SOCK_RETRANS)) {
		segs = total - s->retrans_seen;
	} else if (sent) {
		bpf_core_read(&pcount, sizeof(pcount), &((struct tcp_skb_cb *)&skb->cb[0])->tcp_gso_segs);
		segs = pcount ? pcount : 1;
	}
	if (s) {
		s->retrans_seen = total;
		s->flags |= KS_TCP_SOCK_RETRANS;
	} else {
		ks_sock_track(sk, total, &counts.update_failed);
	}
	if (segs)
		__sync_fetch_and_add(&st->retrans_segs, segs);
	return 0;
}

/*
 * tcp:tcp_retransmit_synack: a listener resent the SYN-ACK of a pending
 * connection (tcp_rtx_synack()).  RetransSegs counts it there, one
 * segment, and tcp_retransmit_skb never sees it: it goes out of a request
 * sock, not of a socket's retransmit queue.  Its row is the flow the
 * child socket will have (the request sock's addressing is a
 * sock_common, as a socket's); its owner is the listener's, which is not
 * tracked (listen() changes state without the tracepoint): pid 0, and not
 * seen at all under a filter.
 */
static __always_inline int on_synack(const void *req)
{
	struct ks_tcp_sock passive = { .role = KS_TCP_PASSIVE };
	struct ks_tcp_key k = {};
	struct ks_tcp_stat *st;

	if (by_mode == KS_TCP_BY_REASON || ks_filter.flags)
		return 0;
	key_of(&k, (const struct sock *)req, &passive, false);
	st = row_get(&k, NULL);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->retransmits, 1);
	__sync_fetch_and_add(&st->retrans_segs, 1);
	return 0;
}

/* tcp:tcp_probe (or tcp_rcv_established): a received segment on an established socket. */
static __always_inline int on_rtt(const struct sock *sk, bool btf)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_sock *s;
	struct ks_tcp_stat *st;
	__u32 srtt = 0, cwnd = 0, ssthresh = 0;
	__u64 ns;
	bool skip;

	if (by_mode == KS_TCP_BY_REASON)
		return 0;
	s = owner_of(sk, &skip);
	if (skip)
		return 0;
	/*
	 * srtt_us holds 8 times the smoothed RTT in microseconds; then the
	 * windows tcp_probe's record shows, before this segment's ACK is
	 * processed.  A trusted socket is cast by the helper, and the three
	 * read by plain loads (one call in place of three probe reads).
	 */
	if (btf) {
		const struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);

		if (!tp)
			return 0;
		srtt = tp->srtt_us;
		cwnd = tp->snd_cwnd;
		ssthresh = tp->snd_ssthresh;
	} else {
		bpf_core_read(&srtt, sizeof(srtt), &((struct tcp_sock *)sk)->srtt_us);
		bpf_core_read(&cwnd, sizeof(cwnd), &((struct tcp_sock *)sk)->snd_cwnd);
		bpf_core_read(&ssthresh, sizeof(ssthresh), &((struct tcp_sock *)sk)->snd_ssthresh);
	}
	if (!srtt)
		return 0;
	ns = (__u64)(srtt >> 3) * 1000;
	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (!st)
		return 0;
	hist_add(st->rtt, &st->rtt_sum, &st->rtt_max, ns, KS_TCP_RTT_SLOTS);
	/* plain stores, like hist_add's max: a row shared by flows (pid, port, other) keeps any flow's last */
	if (!st->cwnd_min || cwnd < st->cwnd_min)
		st->cwnd_min = cwnd;
	if (cwnd > st->cwnd_max)
		st->cwnd_max = cwnd;
	st->cwnd_last = cwnd;
	st->ssthresh_last = ssthresh;
	return 0;
}

/*
 * sock:sk_data_ready on a listener: a child joined its accept queue (or
 * left its SYN queue for it).  Remembered so that a SYN the queue refuses
 * finds its listener (on_syn); forgotten when it closes (on_state).
 */
static __always_inline int on_ready(const struct sock *sk, bool trusted)
{
	struct ks_tcp_listen_key lk = {};
	__u64 addr = (__u64)sk, *known;

	/* every socket's every readied packet comes here: plain loads where the pointer is trusted (tp_btf) */
	if (trusted ? sk->__sk_common.skc_state != ST_LISTEN || sk->sk_protocol != IPPROTO_TCP
		    : BPF_CORE_READ(sk, __sk_common.skc_state) != ST_LISTEN || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	listen_key_of_sk(&lk, sk);
	/*
	 * each child readies the listener: a store only for one not yet known,
	 * or in place of an entry left by a closed one (its removal refused)
	 */
	known = bpf_map_lookup_elem(&listeners, &lk);
	if (!known || *known != addr)
		ks_map_update(&listeners, &lk, &addr, BPF_ANY, &counts.update_failed);
	return 0;
}

/* Whether listener @sk's accept queue is full: tcp_conn_request()'s and tcp_v4_syn_recv_sock()'s sk_acceptq_is_full(). */
static __always_inline bool listen_full(const struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_ack_backlog) > BPF_CORE_READ(sk, sk_max_ack_backlog);
}

/* Charges a listen drop (an overflow too when @overflow) to listener @sk's row. */
static __always_inline void listen_drop(const struct sock *sk, bool overflow)
{
	struct ks_tcp_sock passive = { .role = KS_TCP_PASSIVE };
	struct ks_tcp_key k = {};
	struct ks_tcp_stat *st;

	key_of(&k, sk, &passive, false);
	st = row_get(&k, NULL);
	if (!st)
		return;
	__sync_fetch_and_add(&st->listen_drops, 1);
	if (overflow)
		__sync_fetch_and_add(&st->listen_overflows, 1);
}

#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

/*
 * skb:consume_skb: a received SYN is released after its listener handled
 * it (tcp_rcv_state_process(), accepted or not).  tcp_conn_request() drops
 * it, counting ListenOverflows and ListenDrops, when the accept queue is
 * full, and no drop reason or other event says so: the queue is read here
 * instead.  Exact unless accept() or another CPU's handshake changes the
 * queue between the two (a SYN accepted just before the queue filled, or
 * refused just before accept() made room).  A SYN this host sent has its
 * socket (skb->sk) until freed; a received one has none.
 */
static __always_inline int on_syn(const struct sk_buff *skb, bool trusted)
{
	struct ks_tcp_listen_key lk = {};
	unsigned char *head;
	__u16 proto, nh, th, dport = 0;
	__u8 l4 = 0, flags = 0;
	__u64 *lsk;
	const struct sock *sk;
	const struct dst_entry *dst;

	/*
	 * This runs for every packet the host releases: the exits come first
	 * and cheapest.  A packet with a socket (sent, or queued to one) is
	 * not a received SYN; then the protocols, read from the skb itself,
	 * with plain loads where the pointer is trusted (tp_btf), and only then
	 * two bytes of the headers through bpf_probe_read_kernel.
	 */
	if (trusted) {
		if (skb->sk)
			return 0;
		proto = bpf_ntohs(skb->protocol);
		if (proto != ETH_P_IP && proto != ETH_P_IPV6)
			return 0;
		head = skb->head;
		nh = skb->network_header;
		th = skb->transport_header;
	} else {
		if (BPF_CORE_READ(skb, sk))
			return 0;
		proto = bpf_ntohs(BPF_CORE_READ(skb, protocol));
		if (proto != ETH_P_IP && proto != ETH_P_IPV6)
			return 0;
		head = BPF_CORE_READ(skb, head);
		nh = BPF_CORE_READ(skb, network_header);
		th = BPF_CORE_READ(skb, transport_header);
	}
	bpf_probe_read_kernel(&l4, 1, head + nh + (proto == ETH_P_IP ? 9 : 6));
	if (l4 != IPPROTO_TCP)
		return 0;
	bpf_probe_read_kernel(&flags, 1, head + th + 13);
	if ((flags & (TH_SYN | TH_ACK | TH_RST)) != TH_SYN)
		return 0;
	bpf_probe_read_kernel(&dport, 2, head + th + 2);
	/*
	 * The namespace of its route: tcp_v4_rcv() and tcp_v6_rcv() have
	 * cleared skb->dev by now; _skb_refdst is the dst, its low bit the
	 * SKB_DST_NOREF flag.  No route (0): no listener is found.
	 */
	dst = (const struct dst_entry *)(BPF_CORE_READ(skb, _skb_refdst) & ~1UL);
	lk.netns = BPF_CORE_READ(dst, dev, nd_net.net, ns.inum);
	lk.port = bpf_ntohs(dport);
	if (proto == ETH_P_IP) {
		lk.family = AF_INET;
		bpf_probe_read_kernel(lk.addr, 4, head + nh + 16);
	} else {
		lk.family = AF_INET6;
		bpf_probe_read_kernel(lk.addr, 16, head + nh + 24);
	}
	/* the listener bound to the address, else to any address, else (IPv4) a dual-stack one */
	lsk = bpf_map_lookup_elem(&listeners, &lk);
	if (!lsk) {
		__builtin_memset(lk.addr, 0, sizeof(lk.addr));
		lsk = bpf_map_lookup_elem(&listeners, &lk);
	}
	if (!lsk && lk.family == AF_INET) {
		lk.family = AF_INET6;
		lsk = bpf_map_lookup_elem(&listeners, &lk);
	}
	if (!lsk)
		return 0;
	sk = (const struct sock *)*lsk;
	/* an entry whose socket closed unseen (its removal refused) may name memory reused since */
	if (BPF_CORE_READ(sk, __sk_common.skc_state) != ST_LISTEN || BPF_CORE_READ(sk, __sk_common.skc_num) != lk.port)
		return 0;
	if (listen_full(sk))
		listen_drop(sk, true);
	return 0;
}

/* skb:kfree_skb: a dropped packet; only TCP ones, by the IP header's protocol. */
static __always_inline int on_drop(const struct sk_buff *skb, __u32 reason, const struct sock *rx_sk)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_sock *s = NULL;
	struct ks_tcp_stat *st;
	const struct sock *sk;
	unsigned char *head;
	__u16 proto, nh;
	__u8 l4 = 0;
	bool skip = false;

	proto = bpf_ntohs(BPF_CORE_READ(skb, protocol));
	if (proto != ETH_P_IP && proto != ETH_P_IPV6)
		return 0;
	head = BPF_CORE_READ(skb, head);
	nh = BPF_CORE_READ(skb, network_header);
	/* IPv4: protocol at byte 9; IPv6: next header at byte 6 (no extension headers) */
	bpf_probe_read_kernel(&l4, 1, head + nh + (proto == ETH_P_IP ? 9 : 6));
	if (l4 != IPPROTO_TCP)
		return 0;
	/*
	 * The handshake's last ACK found the accept queue full, or no child
	 * could be made (tcp_check_req(): both are ListenDrops, the first a
	 * ListenOverflow too): dropped with the listener as rx_sk (6.11+).
	 * Drops stay counted as before, besides.
	 */
	if (rx_sk && by_mode != KS_TCP_BY_REASON && !ks_filter.flags &&
	    bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_TCP_LISTEN_OVERFLOW) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_LISTEN_OVERFLOW))
		listen_drop(rx_sk, listen_full(rx_sk));
	sk = BPF_CORE_READ(skb, sk);
	/* with a filter, a drop counts when it belongs to a socket of the filtered owner */
	if (sk)
		s = owner_of(sk, &skip);
	else
		skip = ks_filter.flags != 0;
	if (skip)
		return 0;
	if (by_mode == KS_TCP_BY_REASON) {
		k.gen = ks_gen & 1;
		k.id = reason;
	} else if (sk) {
		key_of(&k, sk, s, false);
	} else {
		/* no socket to name it by (dropped before socket lookup): a row of its own */
		k.gen = ks_gen & 1;
		k.flags = KS_TCP_KEY_UNATTRIBUTED;
	}
	st = row_get(&k, s);
	if (st)
		__sync_fetch_and_add(&st->drops, 1);
	return 0;
}

/*
 * --- variants ---
 * Programs are named <event>__<hook they attach with>; the loader's hook
 * variants combine them (src/collectors/tcp.c): tp_btf, raw_tp and tp use
 * that hook throughout; "fentry" is the tp_btf set with RTT taken at
 * tcp_rtt__fentry (tcp_rcv_established(), where tcp_probe fires, without
 * the tracepoint); "kprobe" is the tp set with RTT at tcp_rtt__kprobe.
 */

/*
 * The third argument where the kernel has one; the verifier drops the read
 * as dead code where it has not (the flag is read-only data), so that the
 * program loads against a two-argument tracepoint too.
 */
static __always_inline int retrans_err(const unsigned long long *ctx)
{
	return retrans_err_arg ? (int)ctx[2] : 0;
}

KS_BTF_RAW_PROGS(tcp_state, inet_sock_set_state, on_state(sk, old, new, KS_RD(trusted, sk, sk_protocol), trusted),
		 const struct sock *sk, const int old, const int new)
KS_BTF_RAW_PROGS(tcp_retrans, tcp_retransmit_skb, on_retransmit(sk, skb, retrans_err(ctx), trusted),
		 const struct sock *sk, const struct sk_buff *skb)
KS_BTF_RAW_PROGS(tcp_synack, tcp_retransmit_synack, on_synack(req), const struct sock *sk,
		 const struct request_sock *req)
/* rx_sk, the fourth argument where the kernel has one (as retrans_err) */
static __always_inline const struct sock *drop_rx_sk(const unsigned long long *ctx)
{
	return drop_rx_sk_arg ? (const struct sock *)ctx[3] : NULL;
}

KS_BTF_RAW_PROGS(tcp_drop, kfree_skb, on_drop(skb, reason, drop_rx_sk(ctx)), struct sk_buff *skb, void *location,
		 enum skb_drop_reason reason)
KS_BTF_RAW_PROGS(tcp_syn, consume_skb, on_syn(skb, trusted), struct sk_buff *skb)
KS_BTF_RAW_PROGS(tcp_ready, sk_data_ready, on_ready(sk, trusted), const struct sock *sk)
KS_BTF_RAW_PROGS(tcp_rtt, tcp_probe, on_rtt(sk, trusted), struct sock *sk)

SEC("fentry/tcp_rcv_established")
int BPF_PROG(tcp_rtt__fentry, struct sock *sk)
{
	return on_rtt(sk, true);
}

/*
 * Classic tracepoints: the socket and skb addresses the trace formats
 * record, read through probe reads like raw_tp; the records that changed
 * are read in compat.bpf.h.
 */
SEC("tracepoint/sock/inet_sock_set_state")
int tcp_state__tp(struct trace_event_raw_inet_sock_set_state *ctx)
{
	return on_state(ctx->skaddr, ctx->oldstate, ctx->newstate, ctx->protocol, false);
}

SEC("tracepoint/tcp/tcp_retransmit_skb")
int tcp_retrans__tp(void *ctx)
{
	const void *sk, *skb;
	int err;

	ks_tp_retransmit_skb(ctx, &sk, &skb, &err);
	return on_retransmit(sk, skb, err, false);
}

SEC("tracepoint/tcp/tcp_retransmit_synack")
int tcp_synack__tp(struct trace_event_raw_tcp_retransmit_synack *ctx)
{
	return on_synack(ctx->req);
}

SEC("tracepoint/skb/kfree_skb")
int tcp_drop__tp(struct trace_event_raw_kfree_skb *ctx)
{
	return on_drop(ctx->skbaddr, ks_tp_kfree_skb_reason(ctx), ks_tp_kfree_skb_rx_sk(ctx));
}

SEC("tracepoint/skb/consume_skb")
int tcp_syn__tp(struct trace_event_raw_consume_skb *ctx)
{
	return on_syn(ctx->skbaddr, false);
}

SEC("tracepoint/sock/sk_data_ready")
int tcp_ready__tp(struct trace_event_raw_sk_data_ready *ctx)
{
	return on_ready(ctx->skaddr, false);
}

SEC("tracepoint/tcp/tcp_probe")
int tcp_rtt__tp(struct trace_event_raw_tcp_probe *ctx)
{
	return on_rtt(ctx->skaddr, false);
}

SEC("kprobe/tcp_rcv_established")
int BPF_KPROBE(tcp_rtt__kprobe, struct sock *sk)
{
	return on_rtt(sk, false);
}

/* accept() and accept4() return: the new socket's owner is the caller (bpf/sock_owner.bpf.h). */
struct ks_sys_exit {
	struct trace_entry ent;
	int nr;
	long ret;
};

static __always_inline int on_accept(long fd)
{
	int r = ks_sock_owner_accept(fd, &counts.update_failed);

	if (r < 0)
		__sync_fetch_and_add(&counts.socks_full, 1);
	else if (r > 0)
		name_owner(bpf_get_current_pid_tgid());
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int tcp_accept4(struct ks_sys_exit *ctx)
{
	return on_accept(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int tcp_accept(struct ks_sys_exit *ctx)
{
	return on_accept(ctx->ret);
}
