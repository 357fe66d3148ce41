/* Kernel side of `ksight biolat`: block request latency (issue to complete), queue time, size and depth. */
#include "common.bpf.h"
#include "ksight/biolat.h"
#include "blk_tracker.bpf.h"

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_BL_BY_DISK;
/* Entries are made at allocation, by the submitter (filters, pid/comm/cgroup modes). */
const volatile bool submit_info = false;
/* Row slots per buffer half in arows: KS_BL_NOPS in the op mode, KS_BL_ROW_SLOTS in the disk mode. */
const volatile __u32 row_stride = KS_BL_ROW_SLOTS;
/* Queue time (insert to issue) is measured. */
const volatile bool queued = false;
/* --disk: the only disk whose requests are seen (its dev_t as ks_bl_rkey.dev); 0: all. */
const volatile __u32 disk_only = 0;
/*
 * Requests in flight are named by their address (KS_BL_OP_RQ), not by
 * where they start: set by the loader for tp_btf and raw_tp where every
 * event that makes or finds an entry shows the request (the default mode,
 * whose entries are made at issue, or block_io_start, v6.5+, in place of
 * block_getrq).  Device, op and sector do not name a request alone: every
 * empty flush (fsync's) is a write at sector 0, so two fsyncs in flight on
 * one disk took one entry (key_collisions), and a sector rewritten while a
 * write to it is queued takes its entry too.
 */
const volatile bool rq_keys = false;

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_bl_counts counts = {};

/* Zeroed source for new rows (too big for the BPF stack). */
static const struct ks_bl_stat zero_stat = {};

/*
 * Requests in flight of the default mode, by device, hardware queue and
 * tag: see ks_bl_slot.  Mapped by user space, whose stale check swaps
 * issue_ts atomically (see ks_bl_slot).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_BL_TAG_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_bl_slot);
} slots SEC(".maps");

/* The other requests in flight, by device, operation and first sector. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_bl_rkey);
	__type(value, struct ks_bl_req);
} inflight SEC(".maps");

/*
 * The devices known at start: depth, tag slots, row slot (see ks_bl_dev).
 * Mapped by user space, whose stale check takes the requests it removes
 * off the depth with an atomic add.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_BL_DEV_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_bl_dev);
} devs SEC(".maps");

/* Requests issued and not yet completed on devices without a slot in devs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __s64);
} depths SEC(".maps");

/*
 * Last task that asked for a cache flush on each device.  A flush request
 * is made inside the block layer, never by a submitter, so it is charged
 * to the task whose empty flush bio started it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ks_bl_req);
} flushers SEC(".maps");

/*
 * Partition dev_t -> whole-disk dev_t, filled by the loader for the
 * classic tracepoints: bio events name the partition, request events the
 * disk.  Empty in the other variants, which read the disk from the bio.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} part_disk SEC(".maps");

/* Rows of the disks without a row slot in the disk mode: per-CPU, made on demand, few. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_row_key);
	__type(value, struct ks_bl_stat);
} rows SEC(".maps");

/*
 * Rows of the pid, comm and cgroup modes: one shared copy updated with
 * atomics, made on demand.  Many keys, each at a modest rate, so a per-CPU
 * copy (7 KiB x possible CPUs a row) would cost far more than the atomics.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_row_key);
	__type(value, struct ks_bl_stat);
} trows SEC(".maps");

/* Rows of the op mode, and of the disks with a row slot in the disk mode: [gen][slot]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_bl_stat);
} arows SEC(".maps");

KS_PID_COMM_MAP(pid_comm);
KS_PID_COMM_EXEC(pid_comm)

/* The default mode: nothing is known of a request before its issue, entries are made there. */
#define AT_ISSUE (!submit_info && !queued)
/*
 * The mode tests read by_mode once each: a volatile read is never merged
 * with another, and the verifier, though it knows the value and drops the
 * dead branches, keeps every load.  Tested as a mask, each is one read
 * and a few instructions, not five reads and five compares (an account()
 * made ~150 such instructions: measured, a fifth of its run time).
 */
#define MODE_BIT(m) (1u << (m))
static __always_inline bool mode_in(__u32 mask)
{
	__u32 m = by_mode;

	return m < 32 && (MODE_BIT(m) & mask);
}
/* Rows are shared between CPUs: updated with atomics. */
#define SHARED_ROWS mode_in(MODE_BIT(KS_BL_BY_PID) | MODE_BIT(KS_BL_BY_COMM) | MODE_BIT(KS_BL_BY_CGROUP) | \
			    MODE_BIT(KS_BL_BY_PID_DISK) | MODE_BIT(KS_BL_BY_COMM_OP))
/* Rows named by the submitter's pid (pid_comm names them). */
#define BY_TGID mode_in(MODE_BIT(KS_BL_BY_PID) | MODE_BIT(KS_BL_BY_PID_DISK))

/* --disk: true when @io is on another disk. */
static __always_inline bool other_disk(const struct io *io)
{
	return disk_only && io->k.dev != disk_only;
}

static __always_inline __u32 whole_disk(__u32 dev)
{
	__u32 *d = bpf_map_lookup_elem(&part_disk, &dev);

	return d ? *d : dev;
}

/* Who the current task is, as much as the mode needs. */
static __always_inline void fill_who(struct ks_bl_req *r, __u64 pid_tgid)
{
	r->tgid = pid_tgid >> 32;
	if (mode_in(MODE_BIT(KS_BL_BY_PID) | MODE_BIT(KS_BL_BY_PID_DISK) | MODE_BIT(KS_BL_BY_COMM) |
		    MODE_BIT(KS_BL_BY_COMM_OP)))
		bpf_get_current_comm(r->comm, sizeof(r->comm));
	if (by_mode == KS_BL_BY_CGROUP)
		r->cgroup = bpf_get_current_cgroup_id();
}

/*
 * A request met after its allocation without an entry: charged to the
 * task that asked for the flush, for a flush request, else to the task at
 * hand.  False when that task does not pass the filters.
 */
static __always_inline bool who_first_seen(struct ks_bl_req *r, const struct io *io)
{
	__u64 pid_tgid;

	if (io->k.op == KS_BL_OP_FLUSH) {
		struct ks_bl_req *f = bpf_map_lookup_elem(&flushers, &io->k.dev);

		if (f) {
			r->tgid = f->tgid;
			r->cgroup = f->cgroup;
			__builtin_memcpy(r->comm, f->comm, sizeof(r->comm));
			return true;
		}
	}
	pid_tgid = bpf_get_current_pid_tgid();
	if (!ks_filter_pass(pid_tgid))
		return false;
	fill_who(r, pid_tgid);
	return true;
}

/* The inflight name of @io, read from a request event when @is_rq. */
static __always_inline void set_id(struct io *io, bool is_rq)
{
	io->id = io->k;
	if (is_rq && rq_keys) {
		io->id.op = KS_BL_OP_RQ;
		io->id.sector = io->rq;
	}
}

static __always_inline bool key_eq(const struct ks_bl_rkey *a, const struct ks_bl_rkey *b)
{
	return a->sector == b->sector && a->dev == b->dev && a->op == b->op;
}

/*
 * True when request @io, issued in the place of a request of the same
 * name issued at @issue_ts and never seen completing, is that request
 * issued again (see issue_depth()).  The name alone does not tell: every
 * flush request of a disk is one structure (its flush queue's flush_rq),
 * reused for each flush with the same name (disk, flush, sector 0) and
 * address, and it borrows the tag of the request that asked for it.  The
 * kernel stamps a request when it is made (start_time_ns; for the flush,
 * blk_rq_init() in blk_kick_flush()), on the clock of issue_ts: one made
 * after the other's issue is another request, and the end of the other
 * was missed, a loss.  Seen on virtio-blk under fsync load (6.18): a
 * flush never seen completing, its tag's next flush counted as reissued
 * while diskstats counted one flush (and one fsync write) more than we
 * did.  Without a stamp (iostats off, classic tracepoints: 0) the name
 * decides; a stamp taken from a plug's cached time may predate the issue,
 * which then passes as a reissue as before.
 */
static __always_inline bool reissue(const struct io *io, __u64 issue_ts)
{
	return !io->alloc_ns || io->alloc_ns <= issue_ts;
}

/*
 * Stores a new entry; 0, 1 when it replaced one, or -1 after counting why
 * not.  @issue: the request being issued, whose entry already there may
 * be itself issued again (reissue()), not a collision; NULL elsewhere.
 */
static __always_inline int remember_as(const struct ks_bl_rkey *k, const struct ks_bl_req *r, const struct io *issue)
{
	long err = ks_map_update(&inflight, k, r, BPF_NOEXIST, &counts.update_failed);
	int replaced = 0;

	if (err == -KS_EEXIST) {
		struct ks_bl_req *e = bpf_map_lookup_elem(&inflight, k);

		/*
		 * A request still in flight at the same place: the newer one
		 * wins.  One gone since the refused insert (completed, or taken
		 * by the stale check, which counted it) is no collision.
		 */
		if (e)
			__sync_fetch_and_add(issue && reissue(issue, e->issue_ts) ? &counts.reissued : &counts.collisions, 1);
		err = ks_map_update(&inflight, k, r, BPF_ANY, &counts.update_failed);
		replaced = e != NULL;
	}
	if (err == -KS_E2BIG || err == -KS_ENOMEM)
		__sync_fetch_and_add(&counts.inflight_full, 1);
	return err ? -1 : replaced;
}

static __always_inline int remember(const struct ks_bl_rkey *k, const struct ks_bl_req *r)
{
	return remember_as(k, r, NULL);
}

/* The devs entry of @dev, NULL when it has none. */
static __always_inline struct ks_bl_dev *dev_of(__u32 dev)
{
	__u32 i = ks_bl_dev_slot(dev);
	/* an array lookup the verifier inlines: no helper call */
	struct ks_bl_dev *d = bpf_map_lookup_elem(&devs, &i);

	return d && dev && d->dev == dev ? d : NULL;
}

static __always_inline __s64 *depth_of(__u32 dev, struct ks_bl_dev *d)
{
	static const __s64 zero;
	enum ks_init_miss miss = 0;

	if (d)
		return &d->n;
	/* refused: this request's step of the depth is missed, and the depth drifts by one */
	return ks_map_lookup_or_init(&depths, &dev, &zero, NULL, &miss, &counts.update_failed);
}

static __always_inline void depth_dec(__u32 dev, struct ks_bl_dev *d)
{
	__s64 *n = depth_of(dev, d);

	if (n)
		__sync_fetch_and_add(n, -1);
}

/* The tag slot of request @io on device @d, NULL when it has none. */
static __always_inline struct ks_bl_slot *tag_slot(const struct ks_bl_dev *d, const struct io *io)
{
	__u32 i;

	if (!AT_ISSUE || !d || io->tag < 0 || io->tag >= d->nr_tags || io->hw >= d->nr_hw)
		return NULL;
	i = d->tag_base + io->hw * d->nr_tags + (__u32)io->tag;
	return bpf_map_lookup_elem(&slots, &i);
}

/*
 * The row of request @k submitted by @r on device @d in the current
 * buffer half, made when missing.  Ops and the disks with a row slot
 * have theirs in an array, found without a helper call.
 */
static __always_inline struct ks_bl_stat *row_of(const struct ks_bl_rkey *k, const struct ks_bl_req *r,
						  const struct ks_bl_dev *d)
{
	struct ks_row_key key = { .gen = ks_gen & 1 };
	enum ks_init_miss miss = 0;
	struct ks_bl_stat *s;
	bool created = false;

	if (by_mode == KS_BL_BY_OP || (by_mode == KS_BL_BY_DISK && d && d->row)) {
		__u32 i = key.gen * row_stride + (by_mode == KS_BL_BY_OP ? k->op : d->row - 1);

		s = bpf_map_lookup_elem(&arows, &i);
		if (!s)
			__sync_fetch_and_add(&counts.map_full, 1);
		return s;
	}
	if (by_mode == KS_BL_BY_DISK)
		key.id = k->dev;
	else if (BY_TGID)
		key.id = r->tgid;
	else if (by_mode == KS_BL_BY_COMM || by_mode == KS_BL_BY_COMM_OP)
		__builtin_memcpy(key.comm, r->comm, sizeof(key.comm));
	else
		key.cgroup = r->cgroup;
	/* the second key of the combined modes, in a field the first one leaves free */
	if (by_mode == KS_BL_BY_PID_DISK)
		key.cgroup = k->dev;
	else if (by_mode == KS_BL_BY_COMM_OP)
		key.id = k->op;
	s = ks_map_lookup_or_init(SHARED_ROWS ? (void *)&trows : (void *)&rows, &key, &zero_stat, &created, &miss,
				  &counts.update_failed);
	if (!s && miss == KS_INIT_FULL)
		__sync_fetch_and_add(&counts.map_full, 1);
	else if (created && BY_TGID) /* a name cache: a refusal loses no count (see KS_PID_COMM_MAP) */
		bpf_map_update_elem(&pid_comm, &key.id, r->comm, BPF_ANY);
	return s;
}

/*
 * block_getrq: a new request for this bio, in the submitter's context.
 * An empty flush (fsync's) is special: the flush machinery runs it
 * without issuing it, sends a flush request of its own to the device,
 * then completes it as a zero-byte write, which is how /proc/diskstats
 * counts it.  It is timed from here, so its latency is the whole flush.
 */
static __always_inline int on_submit(struct io *io)
{
	bool empty_flush = io->preflush && !io->bytes;
	struct ks_bl_req r = {};
	__u64 pid_tgid;

	if (!submit_info && !empty_flush)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!ks_filter_pass(pid_tgid))
		return 0;
	if (submit_info) {
		fill_who(&r, pid_tgid);
		if (io->preflush)
			ks_map_update(&flushers, &io->k.dev, &r, BPF_ANY, &counts.update_failed);
		/*
		 * Rows of tasks are made here, in process context: at completion,
		 * in an interrupt, the allocator may have nothing at hand.
		 */
		if (SHARED_ROWS)
			row_of(&io->k, &r, NULL);
	}
	if (empty_flush)
		r.issue_ts = bpf_ktime_get_ns(); /* depth 0: not in the device's queue */
	r.op = io->k.op;
	remember(&io->id, &r);
	return 0;
}

/*
 * block_io_start: the request made for a bio (block_getrq's moment, with
 * the request at hand), in the submitter's context.
 */
static __always_inline int on_start(struct io *io)
{
	return on_submit(io);
}

/* block_bio_frontmerge: the request grows downwards and now starts at the bio. */
static __always_inline int on_frontmerge(struct io *io)
{
	struct ks_bl_rkey old = io->k;
	struct ks_bl_req *e, r;

	old.sector += io->bytes >> 9;
	e = bpf_map_lookup_elem(&inflight, &old);
	if (!e)
		return 0;
	r = *e;
	ks_map_delete(&inflight, &old, &counts.update_failed);
	remember(&io->id, &r);
	return 0;
}

/* block_rq_merge: the request is merged into another and will never complete. */
static __always_inline int on_rq_merge(struct io *io)
{
	ks_map_delete(&inflight, &io->id, &counts.update_failed);
	return 0;
}

static __always_inline int on_insert(struct io *io)
{
	struct ks_bl_req *e = bpf_map_lookup_elem(&inflight, &io->id), r = {};

	if (e) {
		/* a requeued request keeps its first insert: queue time covers the retry */
		if (!e->insert_ts)
			e->insert_ts = bpf_ktime_get_ns();
		return 0;
	}
	if (submit_info && !who_first_seen(&r, io))
		return 0;
	r.insert_ts = bpf_ktime_get_ns();
	r.op = io->k.op;
	remember(&io->id, &r);
	return 0;
}

/*
 * The depth a request issued on a device with @d in flight sees, itself
 * included, counted in.  @busy: its slot or entry still holds an issued
 * request never seen completing, which this one replaces in the count.
 * @same: that one has this request's name: this request issued again.
 * blk-mq may do that without block_rq_requeue: a driver that refuses a
 * request handed over in a batch (virtio_queue_rqs(), ->queue_rqs) gets
 * it back re-dispatched, and with a scheduler under another driver tag;
 * seen on virtio-blk with mq-deadline (ext4 fsync, 6.18).  Only a
 * different request in the place is a loss (reissue() tells them apart).
 */
static __always_inline __u32 issue_depth(__s64 *d, __u64 busy, bool same)
{
	__u32 depth = (__u32)*d + 1;

	if (busy) {
		__sync_fetch_and_add(same ? &counts.reissued : &counts.collisions, 1);
		return depth - 1;
	}
	__sync_fetch_and_add(d, 1);
	return depth;
}

/*
 * The default mode's request with a tag slot: plain stores to the slot.
 * Apart from on_issue() so that its zeroed entry is not made on this path.
 */
static __always_inline void issue_to_slot(struct ks_bl_slot *t, __s64 *d, const struct io *io)
{
	struct ks_bl_rkey was = t->k;
	/*
	 * The kernel's stamp, where valid, spares a clock read
	 * (ks_kernel_issue_stamps()); the allocation stamp beside its bit
	 * names the request to the stale check.
	 */
	__u64 ts = io->kstamp ? KS_BL_TS_KERNEL | io->alloc_ns : bpf_ktime_get_ns(), last;

	t->k = io->k;
	t->bytes = io->bytes;
	/* one exchange: the stale check's compare-and-swap takes the old request, or this issue does */
	ts = __sync_lock_test_and_set(&t->issue_ts, ts);
	if (ts <= KS_BL_TS_SWEPT)
		ts = 0; /* free, or taken by the stale check, which took it off the depth */
	/* a kernel-stamped issue's time is in its request, until the kernel stamps this one */
	last = ts & KS_BL_TS_KERNEL ? io->kstart : ts;
	t->depth = issue_depth(d, ts, key_eq(&was, &io->k) && reissue(io, last));
}

static __always_inline int on_issue(struct io *io)
{
	struct ks_bl_dev *dv = dev_of(io->k.dev);
	struct ks_bl_req *e, r;
	__s64 *d;

	if (AT_ISSUE) {
		struct ks_bl_slot *t = tag_slot(dv, io);

		d = depth_of(io->k.dev, dv);
		if (!d)
			return 0;
		if (t) {
			issue_to_slot(t, d, io);
			return 0;
		}
		__builtin_memset(&r, 0, sizeof(r));
		r.depth = (__u32)*d + 1;
		r.issue_ts = bpf_ktime_get_ns();
		r.bytes = io->bytes;
		r.op = io->k.op;
		/* a replaced entry was counted in the depth already */
		if (remember_as(&io->id, &r, io) == 0)
			__sync_fetch_and_add(d, 1);
		return 0;
	}
	__builtin_memset(&r, 0, sizeof(r));
	e = bpf_map_lookup_elem(&inflight, &io->id);
	if (!e && submit_info && !who_first_seen(&r, io))
		return 0;
	d = depth_of(io->k.dev, dv);
	if (!d)
		return 0;
	if (!e) {
		r.depth = (__u32)*d + 1;
		r.issue_ts = bpf_ktime_get_ns();
		r.bytes = io->bytes;
		r.op = io->k.op;
		if (remember(&io->id, &r) == 0)
			__sync_fetch_and_add(d, 1);
		return 0;
	}
	e->depth = issue_depth(d, e->issue_ts, reissue(io, e->issue_ts));
	e->bytes = io->bytes;
	e->issue_ts = bpf_ktime_get_ns();
	return 0;
}

/* block_rq_requeue: back to the queue, to be issued again. */
static __always_inline int on_requeue(struct io *io)
{
	struct ks_bl_dev *dv = dev_of(io->k.dev);
	struct ks_bl_slot *t = tag_slot(dv, io);
	struct ks_bl_req *e;

	if (t && t->issue_ts > KS_BL_TS_SWEPT && key_eq(&t->k, &io->k)) {
		/* it gets a tag again when it is issued again */
		if (__sync_lock_test_and_set(&t->issue_ts, 0) > KS_BL_TS_SWEPT)
			depth_dec(io->k.dev, dv);
		return 0;
	}
	e = bpf_map_lookup_elem(&inflight, &io->id);
	if (!e)
		return 0;
	if (e->issue_ts)
		depth_dec(io->k.dev, dv);
	/* with nothing known before issue, the next issue makes a new entry */
	if (!submit_info && !queued)
		ks_map_delete(&inflight, &io->id, &counts.update_failed);
	else
		e->issue_ts = 0;
	return 0;
}

/*
 * Adds @v to *@p: atomically when rows are shared (@shared, a constant in
 * each copy of account_to()), by a plain add in a per-CPU row.
 */
#define ADD(p, v)                                          \
	do {                                               \
		if (shared)                                \
			__sync_fetch_and_add((p), (v));    \
		else                                       \
			*(p) += (v);                       \
	} while (0)
/* Raises *@p to @v; racy between CPUs on a shared row, where a lost race keeps a close maximum. */
#define MAX(p, v)                  \
	do {                               \
		if ((v) > *(p))            \
			*(p) = (v);        \
	} while (0)

static __always_inline void account_to(struct ks_bl_stat *s, const struct ks_bl_req *r, __u64 lat, bool error,
				       const bool shared)
{
	__u64 depth = r->depth;

	ADD(&s->count, 1);
	ADD(&s->bytes, r->bytes);
	if (error)
		ADD(&s->errors, 1);
	ADD(&s->lat_sum, lat);
	MAX(&s->lat_max, lat);
	ADD(&s->lat[ks_hist_slot_max(lat, KS_BL_LAT_SLOTS)], 1);
	ADD(&s->size[ks_hist_slot_max(r->bytes, KS_HIST_SLOTS32)], 1);
	/* the zero-byte write of an fsync never sits in the device queue */
	if (depth)
		ADD(&s->depth[ks_hist_slot_max(depth, KS_BL_DEPTH_SLOTS)], 1);
	ADD(&s->depth_sum, depth);
	MAX(&s->depth_max, depth);
	MAX(&s->size_max, (__u64)r->bytes);
	if (queued && r->insert_ts && r->issue_ts >= r->insert_ts) {
		__u64 q = r->issue_ts - r->insert_ts;

		ADD(&s->q_sum, q);
		MAX(&s->q_max, q);
		ADD(&s->queue[ks_hist_slot_max(q, KS_BL_LAT_SLOTS)], 1);
	}
}

/* Adds a request to its row: one copy of the updates per kind of row, no mode test in between. */
static __always_inline void account(const struct ks_bl_rkey *k, const struct ks_bl_req *r, const struct ks_bl_dev *d,
				    __u64 lat, bool error)
{
	struct ks_bl_stat *s = row_of(k, r, d);

	if (!s)
		return;
	if (SHARED_ROWS)
		account_to(s, r, lat, error, true);
	else
		account_to(s, r, lat, error, false);
}

/*
 * A write without data can only be the caller's part of a flush sequence
 * (an fsync's empty flush), whose preflush flag the flush machinery has
 * taken off (blk_insert_flush()).  The default mode of tp_btf and raw_tp
 * does without the block_getrq hook that would see it made: it is timed
 * from the kernel's own stamp of its allocation, which the kernel makes
 * when it keeps I/O statistics (iostats, on by default), 0 otherwise.
 */
static __always_inline __u64 flush_start(const struct io *io, __u32 done)
{
	if (!AT_ISSUE || io->k.op != KS_BL_OP_WRITE || io->bytes || done)
		return 0;
	return io->alloc_ns;
}

/*
 * A write in the flush machinery (a FUA write on a device without FUA, a
 * preflush with data) completes twice: its data step, with RQF_FLUSH_SEQ
 * set, then, after the postflush, its end with no bytes left
 * (blk_flush_complete_seq(), REQ_FSEQ_DONE).  /proc/diskstats counts it
 * once, at its end (blk_account_io_done() skips RQF_FLUSH_SEQ), and so do
 * we: the data step parks what is known of the request under its
 * address, the end takes it back, so the latency covers the postflush the
 * writer waits for.  The flush requests in between are counted apart, as
 * diskstats counts them.
 */
static __always_inline struct ks_bl_rkey seq_key(const struct io *io)
{
	struct ks_bl_rkey k = { .dev = io->k.dev, .op = KS_BL_OP_SEQ, .sector = io->rq };

	return k;
}

static __always_inline void park(const struct io *io, const struct ks_bl_req *r)
{
	struct ks_bl_rkey k = seq_key(io);

	remember(&k, r);
}

/* The end of a parked write: true when it was one, and is accounted. */
static __always_inline bool unpark(const struct io *io, const struct ks_bl_dev *dv, bool error)
{
	struct ks_bl_rkey k;
	struct ks_bl_req *e, r;

	if (!io->rq || io->k.op != KS_BL_OP_WRITE || io->bytes)
		return false;
	k = seq_key(io);
	e = bpf_map_lookup_elem(&inflight, &k);
	if (!e)
		return false;
	r = *e;
	/* gone since the lookup: the stale check took it, and counted it */
	if (ks_map_delete(&inflight, &k, &counts.update_failed) == -KS_ENOENT)
		__sync_fetch_and_add(&counts.unseen_late, 1);
	else
		account(&io->k, &r, dv, bpf_ktime_get_ns() - r.issue_ts, error);
	return true;
}

/* block_rq_complete: @done bytes of the request are finished. */
static __always_inline int on_complete(struct io *io, __u32 done, bool error)
{
	struct ks_bl_dev *dv = dev_of(io->k.dev);
	struct ks_bl_slot *t = tag_slot(dv, io);
	struct ks_bl_req *e, r = {};
	__u64 now, start;

	if (t && t->issue_ts > KS_BL_TS_SWEPT && key_eq(&t->k, &io->k)) {
		if ((done >> 9) < (t->bytes >> 9)) {
			/* a partial completion: the rest starts further on, with the same tag */
			t->k.sector += done >> 9;
			t->bytes -= (done >> 9) << 9;
			return 0;
		}
		now = bpf_ktime_get_ns();
		r.bytes = t->bytes;
		r.depth = t->depth;
		/* freed now: the postflush borrows this tag (blk_kick_flush()) */
		r.issue_ts = __sync_lock_test_and_set(&t->issue_ts, 0);
		if (r.issue_ts <= KS_BL_TS_SWEPT) {
			/* the stale check took it since the test above, and counted it */
			__sync_fetch_and_add(&counts.unseen_late, 1);
			return 0;
		}
		depth_dec(io->k.dev, dv);
		if (r.issue_ts & KS_BL_TS_KERNEL) {
			r.issue_ts = io->kstamp ? io->kstart : 0;
			if (!r.issue_ts || r.issue_ts > now) {
				__sync_fetch_and_add(&counts.stamp_missing, 1);
				return 0;
			}
		}
		if (io->flush_seq)
			park(io, &r);
		else
			account(&io->k, &r, dv, now - r.issue_ts, error);
		return 0;
	}
	if (t && t->issue_ts == KS_BL_TS_SWEPT && key_eq(&t->k, &io->k)) {
		/* the stale check took this request for lost: it counts there, not here */
		t->issue_ts = 0;
		__sync_fetch_and_add(&counts.unseen_late, 1);
		return 0;
	}
	e = bpf_map_lookup_elem(&inflight, &io->id);
	if (!e) {
		if (!done && unpark(io, dv, error))
			return 0;
		start = flush_start(io, done);
		if (start) {
			now = bpf_ktime_get_ns();
			if (now > start)
				account(&io->k, &r, dv, now - start, error);
			return 0;
		}
		/* not seen issued: in flight before the start, or filtered out */
		if (!ks_filter.flags)
			__sync_fetch_and_add(&counts.unmatched, 1);
		return 0;
	}
	r = *e;
	if (!r.issue_ts) {
		ks_map_delete(&inflight, &io->id, &counts.update_failed);
		return 0;
	}
	if ((done >> 9) < (r.bytes >> 9)) {
		/* a partial completion: the rest starts further on */
		struct ks_bl_rkey rest = io->k;

		if (rq_keys) {
			/* the same request, the same name */
			e->bytes -= (done >> 9) << 9;
			return 0;
		}

		rest.sector += done >> 9;
		r.bytes -= (done >> 9) << 9;
		ks_map_delete(&inflight, &io->id, &counts.update_failed);
		remember(&rest, &r);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (ks_map_delete(&inflight, &io->id, &counts.update_failed) == -KS_ENOENT) {
		/* gone since the lookup: the stale check took it (and its depth), and counted it */
		__sync_fetch_and_add(&counts.unseen_late, 1);
		return 0;
	}
	if (r.depth)
		depth_dec(io->k.dev, dv);
	if (io->flush_seq)
		park(io, &r);
	else
		account(&io->k, &r, dv, now - r.issue_ts, error);
	return 0;
}

/*
 * --- tp_btf and raw_tp: the same programs, reading the arguments by plain
 * loads (trusted pointers) or by probe reads ---
 */

/* The body of a bio event's programs: its io read by plain loads (@trusted) or probe reads, then on_<name>. */
#define BIO_BODY(name, bio, trusted)                                  \
	({                                                            \
		struct io io = {};                                    \
									\
		if (trusted)                                          \
			bio_io_btf(bio, &io);                         \
		else                                                  \
			bio_io_core(bio, &io);                        \
		set_id(&io, false);                                   \
		other_disk(&io) ? 0 : on_##name(&io);                 \
	})

/* The same for a request's events; @done: block_rq_complete's, with its bytes and error. */
#define RQ_READ(rq, io, done, trusted)                                \
	do {                                                          \
		if (trusted)                                          \
			rq_io_btf(rq, io, done, AT_ISSUE);            \
		else                                                  \
			rq_io_core(rq, io, done, AT_ISSUE);           \
		set_id(io, true);                                     \
	} while (0)
#define RQ_BODY(name, rq, trusted)                                    \
	({                                                            \
		struct io io = {};                                    \
									\
		RQ_READ(rq, &io, false, trusted);                     \
		other_disk(&io) ? 0 : on_##name(&io);                 \
	})

KS_BTF_RAW_PROGS(bl_submit, block_getrq, BIO_BODY(submit, bio, trusted), struct bio *bio)
KS_BTF_RAW_PROGS(bl_frontmerge, block_bio_frontmerge, BIO_BODY(frontmerge, bio, trusted), struct bio *bio)
KS_BTF_RAW_PROGS(bl_start, block_io_start, RQ_BODY(start, rq, trusted), struct request *rq)
KS_BTF_RAW_PROGS(bl_rq_merge, block_rq_merge, RQ_BODY(rq_merge, rq, trusted), struct request *rq)
KS_BTF_RAW_PROGS(bl_insert, block_rq_insert, RQ_BODY(insert, rq, trusted), struct request *rq)
KS_BTF_RAW_PROGS(bl_issue, block_rq_issue, RQ_BODY(issue, rq, trusted), struct request *rq)
KS_BTF_RAW_PROGS(bl_requeue, block_rq_requeue, RQ_BODY(requeue, rq, trusted), struct request *rq)
KS_BTF_RAW_PROGS(bl_complete, block_rq_complete, ({
			 struct io io = {};

			 RQ_READ(rq, &io, true, trusted);
			 other_disk(&io) ? 0 : on_complete(&io, nr_bytes, error != 0);
		 }),
		 struct request *rq, blk_status_t error, unsigned int nr_bytes)

/* --- classic tracepoints: the fields as the trace format records them --- */

/* A macro, not a function: the verifier refuses loads through a pointer derived from ctx. */
#define tp_rq_io(io, dev_, ctx)                                                     \
	do {                                                                        \
		(io)->k.dev = (dev_);                                               \
		(io)->k.sector = norm_sector((ctx)->sector);                        \
		(io)->k.op = rwbs_op((ctx)->rwbs[0], (ctx)->rwbs[1], (ctx)->rwbs[2], &(io)->preflush); \
		(io)->tag = -1;                                                     \
		(io)->id = (io)->k;                                                 \
	} while (0)

SEC("tracepoint/block/block_getrq")
int bl_submit__tp(struct trace_event_raw_block_bio *ctx)
{
	struct io io = {};

	tp_rq_io(&io, whole_disk(ctx->dev), ctx);
	io.bytes = ctx->nr_sector << 9;
	return other_disk(&io) ? 0 : on_submit(&io);
}

SEC("tracepoint/block/block_bio_frontmerge")
int bl_frontmerge__tp(struct trace_event_raw_block_bio *ctx)
{
	struct io io = {};

	tp_rq_io(&io, whole_disk(ctx->dev), ctx);
	io.bytes = ctx->nr_sector << 9;
	return other_disk(&io) ? 0 : on_frontmerge(&io);
}

SEC("tracepoint/block/block_rq_merge")
int bl_rq_merge__tp(struct trace_event_raw_block_rq *ctx)
{
	struct io io = {};

	tp_rq_io(&io, ctx->dev, ctx);
	return other_disk(&io) ? 0 : on_rq_merge(&io);
}

SEC("tracepoint/block/block_rq_insert")
int bl_insert__tp(struct trace_event_raw_block_rq *ctx)
{
	struct io io = {};

	tp_rq_io(&io, ctx->dev, ctx);
	io.bytes = ctx->bytes;
	return other_disk(&io) ? 0 : on_insert(&io);
}

SEC("tracepoint/block/block_rq_issue")
int bl_issue__tp(struct trace_event_raw_block_rq *ctx)
{
	struct io io = {};

	tp_rq_io(&io, ctx->dev, ctx);
	io.bytes = ctx->bytes;
	return other_disk(&io) ? 0 : on_issue(&io);
}

SEC("tracepoint/block/block_rq_requeue")
int bl_requeue__tp(struct trace_event_raw_block_rq_requeue *ctx)
{
	struct io io = {};

	tp_rq_io(&io, ctx->dev, ctx);
	return other_disk(&io) ? 0 : on_requeue(&io);
}

SEC("tracepoint/block/block_rq_complete")
int bl_complete__tp(struct trace_event_raw_block_rq_completion *ctx)
{
	struct io io = {};

	tp_rq_io(&io, ctx->dev, ctx);
	return other_disk(&io) ? 0 : on_complete(&io, ctx->nr_sector << 9, ctx->error != 0);
}
