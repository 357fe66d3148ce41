/* Map layouts of the tcp collector, shared by bpf/tcp.bpf.c and src/collectors/tcp.c. */
#ifndef KSIGHT_TCP_H
#define KSIGHT_TCP_H

#include "hist.h"
#include "filter.h"

enum ks_tcp_by {
	KS_TCP_BY_FLOW = 0,
	KS_TCP_BY_PID = 1,
	KS_TCP_BY_COMM = 2,
	KS_TCP_BY_PORT = 3,
	KS_TCP_BY_REASON = 4,
};

/* Which end opened the connection, as far as it was seen. */
enum ks_tcp_role {
	KS_TCP_UNKNOWN = 0,
	KS_TCP_ACTIVE = 1,  /* connect(): seen in SYN_SENT */
	KS_TCP_PASSIVE = 2, /* accepted: seen in SYN_RECV or accept() */
};

/* The row that takes the events of keys beyond --max-rows (or the memory budget). */
#define KS_TCP_KEY_OTHER 1
/* The row of drops that carry no socket (nothing to name a flow or owner by). */
#define KS_TCP_KEY_UNATTRIBUTED 2

/* Key of a row; gen selects the buffer half, the rest depends on the mode. */
struct ks_tcp_key {
	__u32 gen;
	__u16 family; /* flow: AF_INET or AF_INET6 */
	__u16 flags;  /* KS_TCP_KEY_OTHER */
	__u16 lport;  /* flow: host order */
	__u16 rport;
	__u32 id; /* pid: tgid; port: the service port; reason: the drop reason */
	__u8 laddr[16]; /* flow: IPv4 in the first four bytes */
	__u8 raddr[16];
	char comm[KS_COMM_LEN]; /* comm mode */
};

/*
 * Histogram lengths, the range each needs: smoothed RTTs below 2^36 ns
 * (68 s; the kernel caps RTO at 120 s and srtt far below), connect
 * latencies below 2^38 ns (4.6 min: beyond any SYN retry budget);
 * longer ones share the last slot.
 */
#define KS_TCP_RTT_SLOTS KS_HIST_SLOTS_BELOW(36)
#define KS_TCP_CONN_SLOTS KS_HIST_SLOTS_BELOW(38)

/*
 * One row of statistics, shared by all CPUs and updated with atomic adds:
 * flows, owners and ports are many keys at a low rate each, where per-CPU
 * copies would cost possible-CPUs times the memory (1.2 MiB a row at 128
 * CPUs) for contention that rarely happens.  Histogram slots are u32: a
 * row is drained every interval, and one slot of one row would need 4e9
 * samples within one interval to wrap.
 */
struct ks_tcp_stat {
	__u64 retransmits;  /* retransmits the kernel counts (RetransSegs' events) */
	__u64 retrans_segs; /* segments they carried, as RetransSegs counts */
	__u64 drops;	    /* TCP packets freed as dropped */
	__u64 connects;	    /* SYN_SENT -> ESTABLISHED */
	__u64 connect_fails; /* SYN_SENT -> CLOSE */
	__u64 rtt_sum;
	__u64 rtt_max;
	__u64 conn_sum;
	__u64 conn_max;
	__u64 retrans_failed; /* retransmits that did not go out (the tracepoint's err) */
	__u64 listen_overflows; /* a listener's accept queue was full: SYN or handshake's last ACK dropped */
	__u64 listen_drops;	/* SYNs or last ACKs a listener dropped (overflows and failed children) */
	__u32 cwnd_min;		/* congestion window, segments, at tcp:tcp_probe: smallest seen (0: none) */
	__u32 cwnd_max;
	__u32 cwnd_last;
	__u32 ssthresh_last; /* slow-start threshold at the last sample (0x7fffffff: still unset) */
	__u32 rtt[KS_TCP_RTT_SLOTS];   /* smoothed RTT, ns, one sample per received segment */
	__u32 conn[KS_TCP_CONN_SLOTS]; /* connect latency, ns */
};

/* What is known of a socket: who opened it, and since when it is connecting (bpf/sock_owner.bpf.h). */
struct ks_tcp_sock {
	__u64 connect_ts; /* SYN_SENT time, 0 once connected */
	__u32 tgid;
	__u16 role;
	__u16 flags;	    /* KS_TCP_SOCK_* */
	__u32 retrans_seen; /* the socket's total_retrans (segments) when last accounted */
	__u32 _pad;
	char comm[KS_COMM_LEN];
};

/*
 * A listener, as a received SYN names it: its namespace, family, port and
 * bound address (zero: any).  Listeners are learnt when a child joins
 * their accept queue (sock:sk_data_ready), the only way a queue fills.
 */
struct ks_tcp_listen_key {
	__u32 netns; /* the namespace's inode number */
	__u16 family;
	__u16 port; /* host order */
	__u8 addr[16];
};

/* listeners remembered: a host's listening sockets that ever had a queued child */
#define KS_TCP_LISTENERS 4096

/* retrans_seen holds the socket's count: later retransmits are its growth */
#define KS_TCP_SOCK_RETRANS 1

/* Counters in .bss, reported after every run. */
struct ks_tcp_counts {
	__u64 to_other;	   /* events put in the "other" row: no room for their own */
	__u64 lost;	   /* not counted: no row could be made (no memory) and no "other" row */
	__u64 socks_full;  /* no room to remember a socket: its connect goes untimed */
	__u64 update_failed; /* a row or a socket's entry not stored, or not removed: the hash map's lock refused */
};

_Static_assert(sizeof(struct ks_tcp_key) == 64, "ks_tcp_key layout");
_Static_assert(sizeof(struct ks_tcp_listen_key) == 24, "ks_tcp_listen_key layout");
_Static_assert(sizeof(struct ks_tcp_sock) == 40, "ks_tcp_sock layout");
_Static_assert(sizeof(struct ks_tcp_stat) % 8 == 0, "ks_tcp_stat layout");

#endif /* KSIGHT_TCP_H */
