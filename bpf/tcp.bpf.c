/* Kernel side of `ksight tcp`: retransmits, drops with their reason, smoothed RTT and connect latency per flow or owner. */
#include "common.bpf.h"
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

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_tcp_counts counts = {};

/* Zeroed source for new rows (too big for the BPF stack). */
static const struct ks_tcp_stat zero_stat = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader: the cardinality bound */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_tcp_key);
	__type(value, struct ks_tcp_stat);
} rows SEC(".maps");

/* Sockets seen opening: owner, role and connect start, by struct sock address. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct ks_tcp_sock);
} socks SEC(".maps");

KS_PID_COMM_MAP(pid_comm);

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
 * The row of @k, made when missing; when there is no room for it (the
 * cardinality bound, or no element at hand), the "other" row, which user
 * space makes ahead in both halves.
 */
static __always_inline struct ks_tcp_stat *row_get(struct ks_tcp_key *k, const struct ks_tcp_sock *s)
{
	bool created = false;
	struct ks_tcp_stat *v = ks_map_lookup_or_init(&rows, k, &zero_stat, &created);
	struct ks_tcp_key o = { .flags = KS_TCP_KEY_OTHER };

	if (v) {
		if (created && by_mode == KS_TCP_BY_PID && s)
			bpf_map_update_elem(&pid_comm, &k->id, s->comm, BPF_ANY);
		return v;
	}
	o.gen = k->gen;
	v = bpf_map_lookup_elem(&rows, &o);
	__sync_fetch_and_add(v ? &counts.to_other : &counts.lost, 1);
	return v;
}

/*
 * The socket's owner, or NULL.  With a filter, only sockets whose owner
 * passed it are seen at all: *@skip says so.
 */
static __always_inline struct ks_tcp_sock *owner_of(const struct sock *sk, bool *skip)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct ks_tcp_sock *s;

	/* rows by flow without a filter need no owner: one hash lookup less per segment */
	if (by_mode == KS_TCP_BY_FLOW && !ks_filter.flags) {
		*skip = false;
		return NULL;
	}
	s = bpf_map_lookup_elem(&socks, &key);

	*skip = !s && ks_filter.flags;
	return s;
}

static __always_inline void fill_owner(struct ks_tcp_sock *s, __u64 pid_tgid)
{
	s->tgid = pid_tgid >> 32;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
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
		st->connect_fails++;
		return;
	}
	st->connects++;
	st->conn_sum += lat;
	if (lat > st->conn_max)
		st->conn_max = lat;
	st->conn[ks_hist_slot_max(lat, KS_TCP_SLOTS)]++;
}

/* sock:inet_sock_set_state: owners at connect, connect latency, clean-up at close. */
static __always_inline int on_state(const struct sock *sk, int old, int new, __u16 protocol, bool btf)
{
	__u64 key = (__u64)(unsigned long)sk, pid_tgid;
	struct ks_tcp_sock *s, n = {};

	/* drop reasons need owners only to apply a filter */
	if (protocol != IPPROTO_TCP || (by_mode == KS_TCP_BY_REASON && !ks_filter.flags))
		return 0;
	if (new == ST_SYN_SENT) {
		/* in connect(), in the caller's context */
		pid_tgid = bpf_get_current_pid_tgid();
		if (!ks_filter_pass(pid_tgid))
			return 0;
		fill_owner(&n, pid_tgid);
		n.role = KS_TCP_ACTIVE;
		n.connect_ts = bpf_ktime_get_ns();
		if (bpf_map_update_elem(&socks, &key, &n, BPF_ANY))
			__sync_fetch_and_add(&counts.socks_full, 1);
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
		n.role = KS_TCP_PASSIVE;
		bpf_map_update_elem(&socks, &key, &n, BPF_ANY);
		return 0;
	}
	if (old == ST_SYN_SENT && (new == ST_ESTABLISHED || new == ST_CLOSE) && by_mode != KS_TCP_BY_REASON) {
		s = bpf_map_lookup_elem(&socks, &key);
		if (s && s->connect_ts) {
			account_connect(sk, s, bpf_ktime_get_ns(), new == ST_ESTABLISHED, btf);
			s->connect_ts = 0;
		}
	}
	if (new == ST_CLOSE)
		bpf_map_delete_elem(&socks, &key);
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
	__u16 segs = 0;
	bool skip;

	if (by_mode == KS_TCP_BY_REASON)
		return 0;
	s = owner_of(sk, &skip);
	if (skip)
		return 0;
	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (!st)
		return 0;
	if (err)
		st->retrans_failed++;
	if (err && retrans_before_stats(err))
		return 0;
	/* tcp_skb_pcount(): what __tcp_retransmit_skb() adds to RetransSegs */
	bpf_core_read(&segs, sizeof(segs), &((struct tcp_skb_cb *)&skb->cb[0])->tcp_gso_segs);
	st->retransmits++;
	st->retrans_segs += segs ? segs : 1;
	return 0;
}

/* tcp:tcp_probe (or tcp_rcv_established): a received segment on an established socket. */
static __always_inline int on_rtt(const struct sock *sk, bool btf)
{
	struct ks_tcp_key k = {};
	struct ks_tcp_sock *s;
	struct ks_tcp_stat *st;
	__u32 srtt = 0;
	__u64 ns;
	bool skip;

	if (by_mode == KS_TCP_BY_REASON)
		return 0;
	s = owner_of(sk, &skip);
	if (skip)
		return 0;
	/* srtt_us holds 8 times the smoothed RTT in microseconds */
	bpf_core_read(&srtt, sizeof(srtt), &((struct tcp_sock *)sk)->srtt_us);
	if (!srtt)
		return 0;
	ns = (__u64)(srtt >> 3) * 1000;
	key_of(&k, sk, s, btf);
	st = row_get(&k, s);
	if (!st)
		return 0;
	st->rtt_sum += ns;
	if (ns > st->rtt_max)
		st->rtt_max = ns;
	st->rtt[ks_hist_slot_max(ns, KS_TCP_SLOTS)]++;
	return 0;
}

/* skb:kfree_skb: a dropped packet; only TCP ones, by the IP header's protocol. */
static __always_inline int on_drop(const struct sk_buff *skb, __u32 reason)
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
		/* no socket to name it by: the "other" row */
		k.gen = ks_gen & 1;
		k.flags = KS_TCP_KEY_OTHER;
	}
	st = row_get(&k, s);
	if (st)
		st->drops++;
	return 0;
}

/*
 * --- variants ---
 * fentry: RTT at tcp_rcv_established(), where tcp_probe fires, without the
 *   tracepoint; the rest on tp_btf.  kprobe: the same with a kprobe and
 *   classic tracepoints.  tp_btf, raw_tp, tp: tracepoints only.
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

#define BTF_SET(v)                                                                                       \
	SEC("tp_btf/inet_sock_set_state")                                                                \
	int BPF_PROG(tcp_state__##v, const struct sock *sk, const int old, const int new)                \
	{                                                                                                \
		return on_state(sk, old, new, sk->sk_protocol, true);                                    \
	}                                                                                                \
	SEC("tp_btf/tcp_retransmit_skb")                                                                 \
	int BPF_PROG(tcp_retrans__##v, const struct sock *sk, const struct sk_buff *skb)                 \
	{                                                                                                \
		return on_retransmit(sk, skb, retrans_err(ctx), true);                                   \
	}                                                                                                \
	SEC("tp_btf/kfree_skb")                                                                          \
	int BPF_PROG(tcp_drop__##v, struct sk_buff *skb, void *location, enum skb_drop_reason reason)    \
	{                                                                                                \
		return on_drop(skb, reason);                                                             \
	}

BTF_SET(fentry)
BTF_SET(tp_btf)

SEC("fentry/tcp_rcv_established")
int BPF_PROG(tcp_rtt__fentry, struct sock *sk)
{
	return on_rtt(sk, true);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_rtt__tp_btf, struct sock *sk)
{
	return on_rtt(sk, true);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(tcp_state__raw_tp, const struct sock *sk, const int old, const int new)
{
	return on_state(sk, old, new, BPF_CORE_READ(sk, sk_protocol), false);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retrans__raw_tp, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk, skb, retrans_err(ctx), false);
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(tcp_drop__raw_tp, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	return on_drop(skb, reason);
}

SEC("raw_tp/tcp_probe")
int BPF_PROG(tcp_rtt__raw_tp, struct sock *sk)
{
	return on_rtt(sk, false);
}

/*
 * Classic tracepoints: the socket and skb addresses the trace formats
 * record, read through probe reads like raw_tp.  tcp_retransmit_skb's
 * record was struct trace_event_raw_tcp_event_sk_skb, shared with
 * tcp_send_reset; recent kernels (6.18 here) give it a class of its own,
 * trace_event_raw_tcp_retransmit_skb, with an err field (the one in
 * vmlinux.h); the one the kernel has is picked at load time.
 */
struct trace_event_raw_tcp_event_sk_skb {
	struct trace_entry ent;
	const void *skbaddr;
	const void *skaddr;
} __attribute__((preserve_access_index));

static __always_inline int tp_retransmit(void *ctx)
{
	if (bpf_core_type_exists(struct trace_event_raw_tcp_retransmit_skb)) {
		struct trace_event_raw_tcp_retransmit_skb *c = ctx;

		return on_retransmit(c->skaddr, c->skbaddr, bpf_core_field_exists(c->err) ? c->err : 0, false);
	} else {
		struct trace_event_raw_tcp_event_sk_skb *c = ctx;

		return on_retransmit(c->skaddr, c->skbaddr, 0, false);
	}
}

#define TP_SET(v)                                                                                        \
	SEC("tracepoint/sock/inet_sock_set_state")                                                       \
	int tcp_state__##v(struct trace_event_raw_inet_sock_set_state *ctx)                              \
	{                                                                                                \
		return on_state(ctx->skaddr, ctx->oldstate, ctx->newstate, ctx->protocol, false);        \
	}                                                                                                \
	SEC("tracepoint/tcp/tcp_retransmit_skb")                                                         \
	int tcp_retrans__##v(void *ctx)                                                                  \
	{                                                                                                \
		return tp_retransmit(ctx);                                                               \
	}                                                                                                \
	SEC("tracepoint/skb/kfree_skb")                                                                  \
	int tcp_drop__##v(struct trace_event_raw_kfree_skb *ctx)                                         \
	{                                                                                                \
		return on_drop(ctx->skbaddr, bpf_core_field_exists(ctx->reason) ? ctx->reason : 0);      \
	}

TP_SET(tp)
TP_SET(kprobe)

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

/*
 * accept() and accept4() return: the new socket's owner is the caller.
 * Syscall events are classic tracepoints in every variant; the socket is
 * found through the caller's file table, as the returned descriptor.
 */
struct ks_sys_exit {
	struct trace_entry ent;
	int nr;
	long ret;
};

static __always_inline int on_accept(long fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid(), key;
	struct ks_tcp_sock n = { .role = KS_TCP_PASSIVE };
	struct file **fds, *f = NULL;
	struct socket *sock;
	struct sock *sk;

	if (fd < 0 || fd >= BPF_CORE_READ(t, files, fdt, max_fds) || !ks_filter_pass(pid_tgid))
		return 0;
	fds = BPF_CORE_READ(t, files, fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	sock = f ? BPF_CORE_READ(f, private_data) : NULL;
	sk = sock ? BPF_CORE_READ(sock, sk) : NULL;
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	key = (__u64)(unsigned long)sk;
	fill_owner(&n, pid_tgid);
	if (bpf_map_update_elem(&socks, &key, &n, BPF_ANY))
		__sync_fetch_and_add(&counts.socks_full, 1);
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
