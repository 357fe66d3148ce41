/* Socket tracker for BPF programs: which task opened or accepted a TCP socket, its role, when its connect began, its retransmits accounted. */
#ifndef KS_SOCK_OWNER_BPF_H
#define KS_SOCK_OWNER_BPF_H

/*
 * Include after common.bpf.h and ksight/tcp.h (struct ks_tcp_sock).  The
 * owner is learnt where the task is current: connect() (the state change
 * to SYN_SENT runs in the caller) and the return of accept(); a child of a
 * listener is made in softirq, so until accept() it has a role and no
 * owner.  Entries go at the state change to CLOSE; the LRU takes sockets
 * whose close was never seen (opened before the start).
 *
 * Each change counts in *@failed an update or delete the hash map's lock
 * refused (ks_map_failed): the socket's owner, role or retransmit count
 * is then not remembered, or a closed socket's entry stays and a new
 * socket at the same address would inherit it.  That is a loss of its
 * own, apart from a full map ("no room" below).
 */

#ifndef IPPROTO_TCP
#define IPPROTO_TCP 6
#endif

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* sized by the loader, from the memory budget */
	__type(key, __u64);	/* struct sock address */
	__type(value, struct ks_tcp_sock);
} socks SEC(".maps");

static __always_inline struct ks_tcp_sock *ks_sock_owner(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	return bpf_map_lookup_elem(&socks, &key);
}

static __always_inline void ks_sock_owner_fill(struct ks_tcp_sock *s, __u64 pid_tgid)
{
	s->tgid = pid_tgid >> 32;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
}

/*
 * connect(): the caller owns @sk from now, and its connect is timed from
 * @now; it has retransmitted nothing yet (tcp_disconnect() zeroes the
 * count of a reused socket).  True: no room.
 */
static __always_inline bool ks_sock_owner_connect(const struct sock *sk, __u64 pid_tgid, __u64 now, __u64 *failed)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct ks_tcp_sock n = { .role = KS_TCP_ACTIVE, .connect_ts = now, .flags = KS_TCP_SOCK_RETRANS };
	long err;

	ks_sock_owner_fill(&n, pid_tgid);
	err = ks_map_update(&socks, &key, &n, BPF_ANY, failed);
	return err && !ks_map_failed(err);
}

/*
 * A child of a listener (SYN_RECV, softirq): passive, owner unknown until
 * accept().  Its retransmit count is not known yet: the kernel sets it
 * after this state change, to the SYN-ACKs its request sock resent.
 */
static __always_inline void ks_sock_owner_child(const struct sock *sk, __u64 *failed)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct ks_tcp_sock n = { .role = KS_TCP_PASSIVE };

	ks_map_update(&socks, &key, &n, BPF_ANY, failed);
}

/* A socket first seen retransmitting (opened before the start): no owner, its count @seen from now. */
static __always_inline struct ks_tcp_sock *ks_sock_track(const struct sock *sk, __u32 seen, __u64 *failed)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct ks_tcp_sock n = { .flags = KS_TCP_SOCK_RETRANS, .retrans_seen = seen };

	ks_map_update(&socks, &key, &n, BPF_NOEXIST, failed);
	return bpf_map_lookup_elem(&socks, &key);
}

static __always_inline void ks_sock_owner_forget(const struct sock *sk, __u64 *failed)
{
	__u64 key = (__u64)(unsigned long)sk;

	ks_map_delete(&socks, &key, failed);
}

/*
 * accept() or accept4() returned @fd: the socket behind it belongs to the
 * caller.  Syscall events are classic tracepoints in every variant, so the
 * socket is found through the caller's file table with probe reads.
 * Returns 1 when the caller now owns a TCP socket, -1 when there was no
 * room to remember it, 0 when there is none (a failed accept, another
 * protocol, a task the filters leave out).
 */
static __always_inline int ks_sock_owner_accept(long fd, __u64 *failed)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid(), key;
	struct ks_tcp_sock n = { .role = KS_TCP_PASSIVE }, *s;
	struct file **fds, *f = NULL;
	struct socket *sock;
	struct sock *sk;
	long err;

	if (fd < 0 || fd >= BPF_CORE_READ(t, files, fdt, max_fds) || !ks_filter_pass(pid_tgid))
		return 0;
	fds = BPF_CORE_READ(t, files, fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	sock = f ? BPF_CORE_READ(f, private_data) : NULL;
	sk = sock ? BPF_CORE_READ(sock, sk) : NULL;
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	key = (__u64)(unsigned long)sk;
	/* known since SYN_RECV: keep its role and retransmit count, name its owner */
	s = bpf_map_lookup_elem(&socks, &key);
	if (s) {
		ks_sock_owner_fill(s, pid_tgid);
		return 1;
	}
	ks_sock_owner_fill(&n, pid_tgid);
	err = ks_map_update(&socks, &key, &n, BPF_ANY, failed);
	if (err && !ks_map_failed(err))
		return -1;
	return err ? 0 : 1;
}

#endif /* KS_SOCK_OWNER_BPF_H */
