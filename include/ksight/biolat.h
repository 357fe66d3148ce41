/* Map layouts of the biolat collector, shared by bpf/biolat.bpf.c and src/collectors/biolat.c. */
#ifndef KSIGHT_BIOLAT_H
#define KSIGHT_BIOLAT_H

#include "hist.h"
#include "filter.h"
#include "rowkey.h"

enum ks_bl_by {
	KS_BL_BY_DISK = 0,
	KS_BL_BY_PID = 1,
	KS_BL_BY_COMM = 2,
	KS_BL_BY_OP = 3,
	KS_BL_BY_CGROUP = 4,
	/* combined keys (shared rows): a process's requests per disk, a command's per operation */
	KS_BL_BY_PID_DISK = 5,
	KS_BL_BY_COMM_OP = 6,
};

/*
 * Operations.  The first four equal the kernel's REQ_OP_READ/WRITE/FLUSH/
 * DISCARD, which have kept these values since v4.10 (commit ef295ecf090d,
 * "block: better op and flags encoding").
 */
enum ks_bl_op {
	KS_BL_OP_READ = 0,
	KS_BL_OP_WRITE = 1,
	KS_BL_OP_FLUSH = 2,
	KS_BL_OP_DISCARD = 3,
	KS_BL_OP_OTHER = 4,
	KS_BL_NOPS = 5,
	/* not rows: the key of a request named by its address (sector: the address) */
	KS_BL_OP_RQ = 0xfe,
	/* and of a flush-sequence write between its data step and its end */
	KS_BL_OP_SEQ = 0xff,
};

/*
 * A request in flight, named by where it starts: device (the whole disk's
 * dev_t, as the request tracepoints report it), operation and first sector;
 * or, where every event that finds it shows the request (op KS_BL_OP_RQ),
 * by device and the request's address, unique while it is in flight.
 */
struct ks_bl_rkey {
	__u32 dev;
	__u32 op;
	__u64 sector;
};

/* What is known of a request in flight: who submitted it and when it moved. */
struct ks_bl_req {
	__u64 issue_ts;	 /* 0 until issued, and again after a requeue */
	__u64 insert_ts; /* 0 unless queue time is measured and it was inserted */
	__u64 cgroup;	 /* submitter's cgroup v2 id (cgroup mode) */
	__u32 tgid;	 /* submitter (pid mode) */
	__u32 bytes;	 /* still to complete, set at issue */
	__u32 depth;	 /* requests in flight on the device at issue, this one included */
	__u32 op;	 /* the request's operation (KS_BL_OP_*; its key may name it by address): for the stale check */
	char comm[KS_COMM_LEN]; /* submitter (pid and comm modes) */
};

/* Histogram lengths: latencies below 2^40 ns, depths below 2^16 (more share the last slot). */
#define KS_BL_LAT_SLOTS KS_HIST_SLOTS_BELOW(40)
#define KS_BL_DEPTH_SLOTS KS_HIST_SLOTS_BELOW(16)

/*
 * What the programs know of each device, in an array slot per device
 * known at start (no helper call to find it), first come first served at
 * the slot ks_bl_dev_slot() names; devices without one (hot-plugged, or
 * sharing a slot) keep their depth in a hash map and have no tag slots
 * and no row slot.
 */
#define KS_BL_DEV_SLOTS 256
struct ks_bl_dev {
	__u32 dev; /* 0: free */
	__u32 row; /* 1 + its row's index in the disk mode's row array; 0: none */
	__u32 tag_base; /* its first tag slot */
	__u16 nr_hw;	/* hardware queues; 0: no tag slots */
	__u16 nr_tags;	/* tags per hardware queue */
	/*
	 * The depth counter on a cache line of its own: issue and completion
	 * often run on different CPUs and move the line that their atomics
	 * write; the fields above, read by every event, then stay in every
	 * CPU's cache.
	 */
	__u8 pad_[48];
	__s64 n;   /* requests issued and not completed: the depth at issue */
	__u8 pad2_[56];
};

static __always_inline __u32 ks_bl_dev_slot(__u32 dev)
{
	return ((dev >> 20) * 31 + (dev & 0xfffff)) & (KS_BL_DEV_SLOTS - 1);
}

/*
 * Requests in flight in the default mode, by tag.  blk-mq gives every
 * request a tag of its hardware queue, held until the request is freed:
 * the scheduler tag (rq->internal_tag) where the disk has an I/O
 * scheduler, else the driver tag (rq->tag).  Not the driver tag under a
 * scheduler: that one is taken at dispatch and given back before
 * block_rq_requeue, or when a batch is refused, so the same request comes
 * back under another.  A slot per (device, hardware queue, tag) holds at
 * most one request at a time: written at issue, read back at completion,
 * with no hash and no lock.  The slot still records the request's name
 * (device, operation, first sector), which must match at completion.
 * Devices that do not fit, and the classic tracepoints, which show no
 * tag, use the inflight hash map instead.
 */
#define KS_BL_TAG_SLOTS 32768
/*
 * A slot's issue_ts when the kernel stamped the issue (see
 * ks_kernel_issue_stamps() in bpf/compat.bpf.h): this bit, and in the
 * others the request's allocation stamp (rq->start_time_ns), which names
 * the request to the stale check in user space (0: unnamed).
 */
#define KS_BL_TS_KERNEL (1ull << 63)
/*
 * A slot's issue_ts after user space's stale check took its request
 * (counted in unseen): free for the next issue; a completion that still
 * finds it counts in unseen_late.  A clock stamp is never this small.
 */
#define KS_BL_TS_SWEPT 1
/*
 * issue_ts moves by atomic exchange in the programs and by compare-and-
 * swap in user space (the map is mmapped), so that a request is taken
 * once: by its completion, by the next issue in its place (a collision),
 * or by the stale check.
 */
struct ks_bl_slot {
	struct ks_bl_rkey k;
	__u64 issue_ts; /* 0: free; above KS_BL_TS_SWEPT: in flight (a clock stamp, or KS_BL_TS_KERNEL's) */
	__u32 bytes;
	__u32 depth;
};

/*
 * Rows of the disk and op modes are per-CPU array slots; the disk mode has
 * at most this many per buffer half (fewer when the memory budget says so:
 * each is a per-CPU row), the op mode KS_BL_NOPS.
 */
#define KS_BL_ROW_SLOTS 16

/*
 * One row of statistics.  Per-CPU in the disk and op modes (summed by user
 * space), shared and updated with atomics in the pid, comm and cgroup
 * modes (many keys, each with a low rate).  Histogram slots are u32: a
 * slot wraps after 2^32 requests of one latency band on one CPU within one
 * interval (2.4 hours at 500k requests per second on one CPU, in one
 * band); counts and sums are u64 and exact.  7.3 KiB instead of 14.6: the
 * budget's largest lever at 128 possible CPUs.
 */
struct ks_bl_stat {
	__u64 count;
	__u64 bytes;
	__u64 errors;
	__u64 lat_sum;
	__u64 lat_max;
	__u64 q_sum;
	__u64 q_max;
	__u64 depth_sum;
	__u64 depth_max;
	__u64 size_max;
	__u32 lat[KS_BL_LAT_SLOTS];
	__u32 queue[KS_BL_LAT_SLOTS];
	__u32 size[KS_HIST_SLOTS32];
	__u32 depth[KS_BL_DEPTH_SLOTS];
};

/* Counters in .bss, reported after every run. */
struct ks_bl_counts {
	__u64 inflight_full; /* no room to remember a request: it goes untimed */
	/*
	 * No room for a row: the map is full, or the allocator had no element
	 * at hand (it keeps one per CPU for values this big, refilled by irq
	 * work, so a completion handler with interrupts off can create only
	 * one new row at a time; user space therefore creates rows ahead).
	 */
	__u64 map_full;
	__u64 collisions;    /* another request issued in the place of one never seen completing */
	__u64 unmatched;     /* completions of requests never seen issued (not a loss) */
	__u64 reissued;	     /* a request issued again without block_rq_requeue (not a loss) */
	/*
	 * An inflight entry neither stored nor removed: the map's lock gave up
	 * (see ks_map_failed in bpf/common.bpf.h).  A store: the request goes
	 * untimed; a removal: its stale entry is taken later by a collision.
	 */
	__u64 update_failed;
	/*
	 * A request whose issue the kernel was to stamp completed without
	 * the stamp (its queue stopped keeping statistics in between): untimed.
	 */
	__u64 stamp_missing;
	/*
	 * Written by user space, never by the programs: requests in flight
	 * whose completion the programs never saw, found by the stale check
	 * (src/collectors/biolat.c: bl_stale_check) on a disk with nothing in
	 * flight, and taken out.  A stale entry that is reused first counts
	 * in collisions instead: each is counted once.
	 */
	__u64 unseen;
	/*
	 * A completion of a request the stale check had taken (not a loss:
	 * that request is counted in unseen, not in a row; expected 0).
	 */
	__u64 unseen_late;
};

_Static_assert(sizeof(struct ks_bl_rkey) == 16, "ks_bl_rkey layout");
_Static_assert(sizeof(struct ks_bl_req) == 56, "ks_bl_req layout");
_Static_assert(sizeof(struct ks_bl_slot) == 32, "ks_bl_slot layout");
_Static_assert(sizeof(struct ks_bl_dev) == 128 && __builtin_offsetof(struct ks_bl_dev, n) == 64, "ks_bl_dev layout");
_Static_assert(sizeof(struct ks_bl_stat) % 8 == 0, "ks_bl_stat layout");

#endif /* KSIGHT_BIOLAT_H */
