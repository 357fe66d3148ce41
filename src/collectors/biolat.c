/* User side of `ksight biolat`: options, load with hook fallback, drain per-CPU rows into a report. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/blockdev.h"
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/pin.h"
#include "core/rowkey.h"
#include "core/scaffold.h"
#include "core/tracefs.h"
#include "collectors/rows.h"
#include "ksight/biolat.h"
#include "biolat.skel.h"

enum { OPT_QUEUED = 'Q', OPT_DISK = 300, OPT_STACKS = 301 };

/*
 * Requests in flight without a tag slot (other modes, the classic
 * tracepoints, devices beyond KS_BL_TAG_SLOTS), all devices together;
 * more go untimed (inflight_full).  The default mode keeps its requests
 * in tag slots: its hash holds only the rest, and the flush-sequence
 * writes between their data step and their end.
 */
#define BL_INFLIGHT 32768
#define BL_INFLIGHT_AT_ISSUE 4096
/* Rows per interval at most; the memory budget may allow fewer (map_full counts the rest). */
#define BL_ROWS 4096
/* Disks known at start (ks_blockdev_scan), more are still traced. */
#define BL_DISKS 256

struct bl_ctx {
	struct ks_scaffold sc; /* first: the lifecycle core runs */
	enum ks_bl_by by;
	bool queued;
	bool submit_info;
	const struct ks_filter *filter;
	unsigned int nslots;		   /* row slots in use (arows, per buffer half) */
	unsigned int stride;		   /* row slots per buffer half in arows */
	__u32 slot_dev[KS_BL_ROW_SLOTS]; /* the disk of each, in the disk mode */
	__u32 disk;			   /* --disk's dev_t, 0: all */
	char disk_arg[32];
	bool classic;			   /* the variant being loaded is the classic tracepoints' */
	struct ks_blockdev disks[BL_DISKS];
	int ndisks;
	/* the stale check (bl_stale_check): slots and devs mapped, NULL when they cannot be */
	struct ks_bl_slot *slots_mm;
	struct ks_bl_dev *devs_mm;
	size_t slots_len, devs_len;
	__u32 nslots_mm; /* slots in slots_mm */
	bool precise_inflight; /* Linux 6.16+: see ks_blk_quiet.inflight */
};

/* The loaded skeleton (the scaffold holds it untyped). */
static struct ks_biolat *bl_skel(const struct bl_ctx *ctx)
{
	return ctx->sc.skel;
}

static const struct ks_optdef bl_opts[] = {
	{ "queued", OPT_QUEUED, NULL, "also measure queue time, insert to issue (queue_ns; needs an I/O scheduler)" },
	{ "disk", OPT_DISK, "NAME", "only the requests of whole disk NAME (sda, nvme0n1, loop0)" },
	/* a mode of its own (src/cli/profile.c: cmd_biolat); listed here for -h */
	{ "stacks", OPT_STACKS, NULL, "bytes submitted by the submitter's stack instead: see 'ksight biolat --stacks -h'" },
	{ 0 },
};

static const char *const op_names[KS_BL_NOPS] = { "read", "write", "flush", "discard", "other" };


static int bl_parse_opt(void *vctx, int id, const char *arg)
{
	struct bl_ctx *ctx = vctx;

	struct ks_blockdev d;
	int err;

	if (id == OPT_STACKS) {
		p_err("biolat: --stacks works with 'ksight biolat' alone, not in 'ksight run'");
		return -EINVAL;
	}
	if (id == OPT_QUEUED) {
		ctx->queued = true;
		return 0;
	}
	if (id != OPT_DISK)
		return -EINVAL;
	err = ks_blockdev_find(NULL, arg, &d);
	if (err == -EISDIR)
		p_err("biolat: '%s' is a partition; --disk takes a whole disk (requests name their disk)", arg);
	else if (err)
		p_err("biolat: no disk '%s' in /sys/block", arg);
	if (err)
		return -EINVAL;
	ctx->disk = d.dev;
	snprintf(ctx->disk_arg, sizeof(ctx->disk_arg), "%s", d.name);
	return 0;
}

/* The per-task mode of @by, 0 for disk and op. */
static enum ks_task_by task_by(enum ks_bl_by by)
{
	if (by == KS_BL_BY_PID || by == KS_BL_BY_PID_DISK)
		return KS_TASK_PID;
	if (by == KS_BL_BY_COMM || by == KS_BL_BY_COMM_OP)
		return KS_TASK_COMM;
	return by == KS_BL_BY_CGROUP ? KS_TASK_CGROUP : 0;
}

static const struct ks_by_word bl_by_words[] = {
	{ "disk", KS_BL_BY_DISK },
	{ "pid", KS_BL_BY_PID },
	{ "comm", KS_BL_BY_COMM },
	{ "op", KS_BL_BY_OP },
	{ "cgroup", KS_BL_BY_CGROUP },
	{ "pid,disk", KS_BL_BY_PID_DISK },
	{ "comm,op", KS_BL_BY_COMM_OP },
	{ NULL, KS_BL_BY_DISK },
};

enum { C_COUNT, C_BYTES, C_ERRORS, C_QUEUED, C_QUEUE_AVG, C_QUEUE_P99 };
static const struct ks_column bl_cols[] = {
	[C_COUNT] = { "count", KS_COL_COUNTER, KS_UNIT_COUNT,
		      "requests completed, as /proc/diskstats counts them (see below)" },
	[C_BYTES] = { "bytes", KS_COL_BYTES, KS_UNIT_BYTES, "their bytes" },
	[C_ERRORS] = { "errors", KS_COL_COUNTER, KS_UNIT_COUNT, "completions with an error status" },
	[C_QUEUED] = { "queued", KS_COL_COUNTER, KS_UNIT_COUNT,
		       "-Q only: requests inserted through an I/O scheduler" },
	/* gauges of the window, written as durations so the text shows them in time units */
	[C_QUEUE_AVG] = { "queue_avg_ns", KS_COL_GAUGE, KS_UNIT_NS, "-Q only: their mean insert-to-issue time" },
	[C_QUEUE_P99] = { "queue_p99_ns", KS_COL_GAUGE, KS_UNIT_NS, "-Q only: their p99 insert-to-issue time" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema bl_schema = {
	bl_cols, "latency_ns", KS_UNIT_NS,
	"issue to completion (a flush-sequence write: to its end, the postflush included; an fsync's data-less "
	"write: from its allocation)",
	(const char *const[]){ "disk", "dev", "op", KS_TASK_KEYS, NULL },
	.hist_cols = NULL,
};

static void add_part(uint32_t part, uint32_t disk, void *arg)
{
	bpf_map_update_elem(*(int *)arg, &part, &disk, BPF_ANY);
}

/*
 * The classic bio tracepoints name a partition, the request ones its disk:
 * tell the program which disk each partition of this moment belongs to.
 */
static int fill_part_disk(int fd)
{
	ks_blockdev_partitions(NULL, add_part, &fd); /* no sysfs: whole disks still match */
	return 0;
}

/*
 * Creates the row @k in both buffer halves, zeroed, unless it exists.
 * Rows made here spare the programs an allocation at completion time,
 * which can fail in interrupt context (see map_full in biolat.h).
 */
static void precreate(struct bl_ctx *ctx, int fd, struct ks_row_key *k)
{
	for (__u32 g = 0; g < 2; g++) {
		k->gen = g;
		if (ks_map_add(fd, k, ctx->sc.zero))
			p_dbg("cannot create a row ahead: %s", strerror(errno));
	}
}

/*
 * Gives each disk there is its devs slot, unless another disk has it, with
 * tag slots while KS_BL_TAG_SLOTS last (only the default mode uses them)
 * and, in the disk mode, a row slot while KS_BL_ROW_SLOTS last.
 */
static void assign_devs(struct bl_ctx *ctx, int fd)
{
	unsigned int tag_next = 0;

	for (int k = 0; k < ctx->ndisks && k < BL_DISKS; k++) {
		const struct ks_blockdev *b = &ctx->disks[k];
		struct ks_bl_dev v = { 0 };
		__u32 i = ks_bl_dev_slot(b->dev);

		if (bpf_map_lookup_elem(fd, &i, &v) || v.dev)
			continue;
		v.dev = b->dev;
		/* room for scheduler tags too (nr_requests): the programs index by either */
		unsigned int ntags = b->nr_tags > b->nr_requests ? b->nr_tags : b->nr_requests;

		if (b->nr_hw && b->nr_hw <= 0xffff && ntags <= 0xffff && tag_next + b->nr_hw * ntags <= KS_BL_TAG_SLOTS) {
			v.tag_base = tag_next;
			v.nr_hw = (__u16)b->nr_hw;
			v.nr_tags = (__u16)ntags;
			tag_next += b->nr_hw * ntags;
		}
		if (ctx->by == KS_BL_BY_DISK && ctx->nslots < ctx->stride && (!ctx->disk || ctx->disk == b->dev)) {
			ctx->slot_dev[ctx->nslots++] = b->dev;
			v.row = ctx->nslots;
		}
		bpf_map_update_elem(fd, &i, &v, BPF_ANY);
	}
	if (ctx->by == KS_BL_BY_OP)
		ctx->nslots = KS_BL_NOPS;
	p_dbg("biolat: %u tag slots, %u row slots", tag_next, ctx->nslots);
}

static bool has_row_slot(const struct bl_ctx *ctx, __u32 dev)
{
	for (unsigned int i = 0; ctx->by == KS_BL_BY_DISK && i < ctx->nslots; i++)
		if (ctx->slot_dev[i] == dev)
			return true;
	return false;
}

/* The rows known before any request: every op, every disk there is, the filtered task. */
static void precreate_rows(struct bl_ctx *ctx, struct ks_biolat *s)
{
	int fd = bpf_map__fd(task_by(ctx->by) ? s->maps.trows : s->maps.rows);
	struct ks_row_key k = {};

	switch (ctx->by) {
	case KS_BL_BY_OP:
		break; /* all in arows */
	case KS_BL_BY_DISK:
		for (int i = 0; i < ctx->ndisks && i < BL_DISKS; i++) {
			k.id = ctx->disks[i].dev;
			if (!has_row_slot(ctx, k.id) && (!ctx->disk || ctx->disk == k.id))
				precreate(ctx, fd, &k);
		}
		break;
	default:
		if (ks_row_key_of_filter(ctx->filter, task_by(ctx->by), &k))
			precreate(ctx, fd, &k);
		/* a row made here is not made by the programs, which name its process */
		if (k.id && task_by(ctx->by) == KS_TASK_PID)
			ks_pid_comm_seed(bpf_map__fd(s->maps.pid_comm), k.id);
		break;
	}
}

/*
 * Map sizes from the memory budget (issue 11), at the possible-CPU count:
 * - arows, per-CPU rows allocated at load, only where the rate demands
 *   them: the disk mode's busiest few disks and the op mode's five ops;
 *   the disk mode takes row slots within a fifth of the budget (6 disks at
 *   128 CPUs, 16 at 2), so the default mode stays under 16 MiB at load;
 * - rows, per-CPU, made on demand: the disks beyond the slots, within a
 *   third of the budget (map_full counts the rest);
 * - trows, shared rows with atomics, made on demand: the pid, comm and
 *   cgroup modes' many keys, within half of the budget;
 * - inflight, preallocated (its updates run in interrupts): 32768 requests
 *   where entries are made before issue, 4096 in the default mode, whose
 *   requests sit in the tag slots.
 */
static void size_maps(struct bl_ctx *ctx, struct ks_biolat *s)
{
	const struct ks_budget *b = &ctx->sc.budget;
	uint64_t pc = ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct ks_bl_stat), 0);
	uint64_t ph = ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_HASH, sizeof(struct ks_row_key),
					  sizeof(struct ks_bl_stat), BPF_F_NO_PREALLOC);
	uint64_t sh = ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_row_key), sizeof(struct ks_bl_stat),
					  BPF_F_NO_PREALLOC);
	bool task = task_by(ctx->by) != 0;

	if (ctx->by == KS_BL_BY_OP)
		ctx->stride = KS_BL_NOPS;
	else if (ctx->by == KS_BL_BY_DISK)
		ctx->stride = ctx->disk ? 1 : ks_budget_rows(b, 0.2, 2 * pc, 1, KS_BL_ROW_SLOTS, false);
	else
		ctx->stride = 0;
	s->rodata->row_stride = ctx->stride;
	bpf_map__set_max_entries(s->maps.arows, ctx->stride ? 2 * ctx->stride : 1);
	bpf_map__set_max_entries(s->maps.rows, ctx->by == KS_BL_BY_DISK && !ctx->disk
							? ks_budget_rows(b, 1.0 / 3, ph, 2, BL_ROWS, false) : 1);
	bpf_map__set_max_entries(s->maps.trows, task ? ks_budget_rows(b, 0.5, sh, 2, BL_ROWS, false) : 1);
	bpf_map__set_max_entries(s->maps.inflight, ctx->submit_info || ctx->queued ? BL_INFLIGHT : BL_INFLIGHT_AT_ISSUE);
	bpf_map__set_max_entries(s->maps.pid_comm, task_by(ctx->by) == KS_TASK_PID ? BL_ROWS : 1);
	/* tag slots serve the default mode only */
	if (ctx->submit_info || ctx->queued)
		bpf_map__set_max_entries(s->maps.slots, 1);
}

/*
 * Requests are named by their address where every event that makes or
 * finds an entry shows the request: tp_btf and raw_tp, in the default mode
 * (entries made at issue) or where block_io_start (v6.5+) replaces
 * block_getrq.  Elsewhere by device, op and first sector, which two
 * requests in flight can share (empty flushes: sector 0; key_collisions).
 */
static bool rq_keys(const char *hook, bool before_issue)
{
	if (!strcmp(hook, KS_HOOK_TP))
		return false;
	return !before_issue || ks_tp_nargs("block_io_start") > 0;
}

/* The rodata, map sizes and programs of one load (ks_load_spec). */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct bl_ctx *ctx = vctx;
	struct ks_biolat *s = skel;
	bool before_issue = ctx->submit_info || ctx->queued;

	ctx->classic = !strcmp(hook, KS_HOOK_TP);
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->submit_info = ctx->submit_info;
	s->rodata->queued = ctx->queued;
	s->rodata->disk_only = ctx->disk;
	size_maps(ctx, s);
	/* only the hooks the mode needs: each one costs on every request */
	if (!ctx->queued)
		ks_prog_disable(s->obj, "bl_insert");
	if (!before_issue) {
		/* entries are made at issue, after any merge */
		ks_prog_disable(s->obj, "bl_frontmerge");
		ks_prog_disable(s->obj, "bl_rq_merge");
		/*
		 * and an fsync's data-less write is timed from the kernel's own
		 * allocation stamp (flush_start() in biolat.bpf.c), which the
		 * classic tracepoints do not show
		 */
		if (strcmp(hook, KS_HOOK_TP))
			ks_prog_disable(s->obj, "bl_submit");
	}
	s->rodata->rq_keys = rq_keys(hook, before_issue);
	p_info("biolat: requests in flight named by %s", s->rodata->rq_keys ? "their address"
		: "disk, op and first sector (no block_io_start, or classic tracepoints): concurrent flushes may collide");
	if (before_issue && s->rodata->rq_keys) {
		/* block_io_start shows the request block_getrq makes: named by its address, merges move nothing */
		ks_prog_disable(s->obj, "bl_submit");
		ks_prog_disable(s->obj, "bl_frontmerge");
	} else {
		ks_prog_disable(s->obj, "bl_start");
	}
	/* names kept current across exec: only pid rows have names to keep */
	if (task_by(ctx->by) != KS_TASK_PID)
		ks_prog_disable(s->obj, "pid_comm_exec");
	return 0;
}

/* After load, before attach: partitions (classic tracepoints), devices and rows made ahead. */
static int loaded(void *vctx, void *skel)
{
	struct bl_ctx *ctx = vctx;
	struct ks_biolat *s = skel;
	int err = 0;

	if (ctx->classic)
		err = fill_part_disk(bpf_map__fd(s->maps.part_disk));
	if (err)
		return err;
	ctx->nslots = 0;
	assign_devs(ctx, bpf_map__fd(s->maps.devs));
	precreate_rows(ctx, s);
	return 0;
}

KS_SKEL_OPS(ks_biolat);

bool ks_bl_stale(uint32_t op, uint32_t bytes, uint64_t stamp, uint64_t t0, bool precise)
{
	if (!stamp || stamp >= t0 || op == KS_BL_OP_OTHER || op == KS_BL_OP_RQ)
		return false;
	if (precise)
		return true;
	/* only requests started in the driver count before 6.16: not a flush, fsync's empty write, a parked write */
	return op == KS_BL_OP_READ || op == KS_BL_OP_DISCARD || (op == KS_BL_OP_WRITE && bytes);
}

/* A request found in flight by the stale check: where it is, and what names it there. */
struct stale {
	__u32 dev;
	__u32 slot;		/* its tag slot, or UINT32_MAX: in the inflight hash under @key */
	struct ks_bl_rkey key;
	struct ks_bl_req req;	/* the entry as read (the hash); for a slot, issue_ts only */
};

#define BL_STALE_MAX 1024 /* taken per check at most; the rest at the next one */

/* The devs entry of @dev in the mapped devs, NULL when it has none. */
static struct ks_bl_dev *dev_mm(struct bl_ctx *ctx, __u32 dev)
{
	struct ks_bl_dev *d = ctx->devs_mm ? &ctx->devs_mm[ks_bl_dev_slot(dev)] : NULL;

	return d && d->dev == dev ? d : NULL;
}

/* The tag slots stamped before @t0 whose request is of a kind the in-flight count covers. */
static int scan_slots(struct bl_ctx *ctx, uint64_t t0, struct stale *c, int n)
{
	for (__u32 k = 0; ctx->slots_mm && ctx->devs_mm && k < KS_BL_DEV_SLOTS; k++) {
		const struct ks_bl_dev *d = &ctx->devs_mm[k];
		__u32 end = d->tag_base + (__u32)d->nr_hw * d->nr_tags;

		if (!d->dev || !d->nr_hw)
			continue;
		for (__u32 i = d->tag_base; i < end && i < ctx->nslots_mm && n < BL_STALE_MAX; i++) {
			const struct ks_bl_slot *t = &ctx->slots_mm[i];
			__u64 ts = __atomic_load_n(&t->issue_ts, __ATOMIC_ACQUIRE);
			/* a kernel-stamped issue: the allocation stamp is its name, and earlier than the issue */
			__u64 stamp = ts & KS_BL_TS_KERNEL ? ts & ~KS_BL_TS_KERNEL : ts;

			if (ts <= KS_BL_TS_SWEPT || !ks_bl_stale(t->k.op, t->bytes, stamp, t0, ctx->precise_inflight))
				continue;
			c[n] = (struct stale){ .dev = d->dev, .slot = i, .key = t->k };
			c[n].req.issue_ts = ts;
			n++;
		}
	}
	return n;
}

/* The inflight hash's entries as scan_slots finds slots. */
static int scan_hash(struct bl_ctx *ctx, uint64_t t0, struct stale *c, int n)
{
	int fd = bpf_map__fd(bl_skel(ctx)->maps.inflight);
	struct ks_bl_rkey k, next;
	void *prev = NULL;
	/* a key deleted under the walk restarts it from the first: bounded */
	__u32 steps = 2 * bpf_map__max_entries(bl_skel(ctx)->maps.inflight);

	while (n < BL_STALE_MAX && steps-- && !bpf_map_get_next_key(fd, prev, &next)) {
		struct ks_bl_req v;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		/* a parked flush-sequence write is named by its key; a request named by address, by its entry */
		if (!ks_bl_stale(k.op == KS_BL_OP_SEQ ? KS_BL_OP_SEQ : v.op, v.bytes, v.issue_ts, t0,
				 ctx->precise_inflight))
			continue;
		c[n++] = (struct stale){ .dev = k.dev, .slot = UINT32_MAX, .key = k, .req = v };
	}
	return n;
}

/*
 * Takes candidate @c out of its slot or entry, if it is still the same
 * request: a compare-and-swap on the slot against the programs' exchanges
 * (ks_bl_slot), an atomic lookup-and-delete of the entry, put back when
 * another request took the name since.  True when taken: the caller
 * counts it.  Its step of the disk's depth goes with it (devices without
 * a devs slot keep their depth in a hash user space cannot add to
 * atomically: theirs stays one too high, as it did until the reuse).
 */
static bool take(struct bl_ctx *ctx, const struct stale *c)
{
	struct ks_bl_dev *d = dev_mm(ctx, c->dev);
	int fd = bpf_map__fd(bl_skel(ctx)->maps.inflight);
	struct ks_bl_req v;

	if (c->slot != UINT32_MAX) {
		__u64 want = c->req.issue_ts;

		if (!__atomic_compare_exchange_n(&ctx->slots_mm[c->slot].issue_ts, &want, KS_BL_TS_SWEPT, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return false;
		if (d)
			__atomic_fetch_sub(&d->n, 1, __ATOMIC_RELAXED);
		return true;
	}
	if (bpf_map_lookup_and_delete_elem(fd, &c->key, &v))
		return false; /* gone: completed, or replaced and counted, meanwhile */
	if (v.issue_ts != c->req.issue_ts) {
		/* another request under that name since the scan, in flight: put back (lost only if it ends meanwhile) */
		if (bpf_map_update_elem(fd, &c->key, &v, BPF_NOEXIST))
			p_dbg("biolat: stale check: cannot put an entry back: %s", strerror(errno));
		return false;
	}
	/* as the completion would: a parked write left the depth at its data step, an empty flush never entered it */
	if (d && v.depth && c->key.op != KS_BL_OP_SEQ)
		__atomic_fetch_sub(&d->n, 1, __ATOMIC_RELAXED);
	return true;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The stale check.  About 1 in 10^4-10^5 block_rq_complete events never
 * reaches the programs on 6.18 (no recursion miss counted), and its
 * request stays in the maps: counted in collisions when its slot or name
 * is used again, never if not.  Here, at each drain: the requests in the
 * maps stamped before t0 (taken before the stat files are read) are
 * gathered; for each disk with some, its stat files (disk and partitions)
 * are read twice after the scan; when both show nothing in flight and
 * nothing started or ended in between (ks_blk_quiet_idle), every request
 * of that disk made before t0 has ended, so those still in the maps ended
 * unseen: each is taken out, atomically against the programs (take()),
 * and counted in unseen.  On a disk never idle at a drain they wait for
 * their reuse (collisions) or a later drain; on a disk idle at the last
 * drain, the final account is exact.  Costs a walk of the slots in use
 * and of the hash, and per disk with requests in the maps one read of its
 * stat file while it is busy, two of its and its partitions' when idle:
 * measured on 6.18 (2 CPUs, drains every 0.1 s, a loop device always
 * busy), 16-106 us median per drain, p90 under 180 us.
 */
static void bl_stale_check(struct bl_ctx *ctx)
{
	struct stale *c = malloc(BL_STALE_MAX * sizeof(*c));
	uint64_t t0 = mono_ns(), taken = 0;
	int n, disks = 0;

	if (!c)
		return;
	n = scan_slots(ctx, t0, c, 0);
	n = scan_hash(ctx, t0, c, n);
	for (int i = 0; i < n; i++) {
		struct ks_blk_quiet q0, q1;
		__u32 dev = c[i].dev;
		bool idle;

		if (!dev)
			continue; /* done with this disk (set below), or no disk */
		disks++;
		idle = !ks_blockdev_quiet(NULL, dev, &q0) && !ks_blockdev_quiet(NULL, dev, &q1) &&
		       ks_blk_quiet_idle(&q0, &q1);
		for (int j = i; j < n; j++) {
			if (c[j].dev != dev)
				continue;
			if (idle && take(ctx, &c[j])) {
				taken++;
				p_dbg("biolat: stale check: took %u:%u op %u sector %llu (%s), issued %llu ns before, op %u, %u bytes, depth %u",
				      dev >> 20, dev & 0xfffff, c[j].key.op, (unsigned long long)c[j].key.sector,
				      c[j].slot == UINT32_MAX ? "hash" : "slot",
				      (unsigned long long)(t0 - (c[j].req.issue_ts & ~KS_BL_TS_KERNEL)), c[j].req.op,
				      c[j].req.bytes, c[j].req.depth);
			}
			c[j].dev = 0;
		}
	}
	if (taken)
		__atomic_fetch_add(&bl_skel(ctx)->bss->counts.unseen, taken, __ATOMIC_RELAXED);
	p_dbg("biolat: stale check: %d in flight from before, %d disks read, %llu taken, %llu us", n, disks,
	      (unsigned long long)taken, (unsigned long long)(mono_ns() - t0) / 1000);
	free(c);
}

/* Maps slots and devs for the stale check; without them (a pinned map of an older build) it checks the hash only. */
static void map_for_stale(struct bl_ctx *ctx)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct bpf_map *sm = bl_skel(ctx)->maps.slots, *dm = bl_skel(ctx)->maps.devs;
	size_t sl = ((size_t)bpf_map__max_entries(sm) * sizeof(struct ks_bl_slot) + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	size_t dl = ((size_t)bpf_map__max_entries(dm) * sizeof(struct ks_bl_dev) + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	void *s = mmap(NULL, sl, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(sm), 0);
	void *d = mmap(NULL, dl, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(dm), 0);
	struct utsname u;
	unsigned int maj = 0, min = 0;

	if (!uname(&u) && sscanf(u.release, "%u.%u", &maj, &min) == 2)
		ctx->precise_inflight = maj > 6 || (maj == 6 && min >= 16);
	if (s == MAP_FAILED || d == MAP_FAILED) {
		p_dbg("biolat: stale check without tag slots: cannot map them: %s", strerror(errno));
		if (s != MAP_FAILED)
			munmap(s, sl);
		if (d != MAP_FAILED)
			munmap(d, dl);
		return;
	}
	ctx->slots_mm = s;
	ctx->devs_mm = d;
	ctx->slots_len = sl;
	ctx->devs_len = dl;
	ctx->nslots_mm = bpf_map__max_entries(sm);
}

/* -Q: queue time needs block_rq_insert, which a disk without an I/O scheduler never fires. */
static void warn_no_scheduler(const struct bl_ctx *ctx)
{
	char list[256] = "";
	size_t len = 0;

	for (int i = 0; i < ctx->ndisks && i < BL_DISKS; i++) {
		const struct ks_blockdev *d = &ctx->disks[i];

		if (!d->sched_none || (ctx->disk && ctx->disk != d->dev) || len + strlen(d->name) + 3 >= sizeof(list))
			continue;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "", d->name);
	}
	if (len)
		p_warn("biolat: -Q: no I/O scheduler on %s (queue/scheduler is \"none\"): their requests are never "
		       "inserted, so they show no queue time", list);
}

/* After the probes, before the load: the disks known now. */
static int bl_probed(void *vctx)
{
	struct bl_ctx *ctx = vctx;

	ctx->ndisks = ks_blockdev_scan(NULL, ctx->disks, BL_DISKS);
	if (ctx->ndisks < 0)
		ctx->ndisks = 0;
	if (ctx->queued)
		warn_no_scheduler(ctx);
	return 0;
}

static const struct ks_sc_def bl_def;

static int bl_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct bl_ctx *ctx = vctx;
	int by = ks_by_parse(bl_by_words, c->by);

	if (by < 0)
		return by;
	ctx->by = (enum ks_bl_by)by;
	ctx->filter = f;
	ctx->submit_info = f->flags || task_by(ctx->by);
	return ks_sc_open(&ctx->sc, &bl_def, c);
}

struct sums {
	struct ks_hist *lat, *queue, *size, *depth;
	uint64_t bytes, errors;
};

static void free_sums(struct sums *s)
{
	free(s->lat);
	free(s->queue);
	free(s->size);
	free(s->depth);
}

/* Sums the @ncopies copies (per CPU, or 1 for a shared row) of one row in @v into fresh histograms. */
static int sum_stat(const struct ks_bl_stat *v, int ncopies, struct sums *s)
{
	memset(s, 0, sizeof(*s));
	s->lat = calloc(1, sizeof(*s->lat));
	s->queue = calloc(1, sizeof(*s->queue));
	s->size = calloc(1, sizeof(*s->size));
	s->depth = calloc(1, sizeof(*s->depth));
	if (!s->lat || !s->queue || !s->size || !s->depth) {
		free_sums(s);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < ncopies; cpu++) {
		const struct ks_bl_stat *c = &v[cpu];

		ks_hist_add_u32(s->lat, c->lat, KS_BL_LAT_SLOTS);
		ks_hist_add_u32(s->queue, c->queue, KS_BL_LAT_SLOTS);
		ks_hist_add_u32(s->size, c->size, KS_HIST_SLOTS32);
		ks_hist_add_u32(s->depth, c->depth, KS_BL_DEPTH_SLOTS);
		s->lat->sum += c->lat_sum;
		s->size->sum += c->bytes;
		s->queue->sum += c->q_sum;
		if (c->lat_max > s->lat->max)
			s->lat->max = c->lat_max;
		if (c->q_max > s->queue->max)
			s->queue->max = c->q_max;
		if (c->depth_max > s->depth->max)
			s->depth->max = c->depth_max;
		if (c->size_max > s->size->max)
			s->size->max = c->size_max;
		s->depth->sum += c->depth_sum;
		s->bytes += c->bytes;
		s->errors += c->errors;
	}
	return 0;
}

static void disk_keys(struct ks_row *row, __u32 dev)
{
	char b[PATH_MAX];

	ks_blockdev_name(NULL, dev, b, sizeof(b));
	ks_row_key_str(row, "disk", b);
	snprintf(b, sizeof(b), "%u:%u", dev >> 20, dev & 0xfffff);
	ks_row_key_str(row, "dev", b);
}

static void op_key(struct ks_row *row, __u32 op)
{
	ks_row_key_str(row, "op", op_names[op < KS_BL_NOPS ? op : KS_BL_OP_OTHER]);
}

static void row_keys(struct bl_ctx *ctx, struct ks_row *row, const struct ks_row_key *k)
{
	switch (ctx->by) {
	case KS_BL_BY_DISK:
		disk_keys(row, k->id);
		break;
	case KS_BL_BY_OP:
		op_key(row, k->id);
		break;
	case KS_BL_BY_PID_DISK:
		ks_row_task_key(row, KS_TASK_PID, k, bpf_map__fd(bl_skel(ctx)->maps.pid_comm));
		disk_keys(row, (__u32)k->cgroup); /* the dev_t, in the field pid rows leave free */
		break;
	case KS_BL_BY_COMM_OP:
		ks_row_task_key(row, KS_TASK_COMM, k, -1);
		op_key(row, k->id); /* the op, in the field comm rows leave free */
		break;
	default:
		ks_row_task_key(row, task_by(ctx->by), k, bpf_map__fd(bl_skel(ctx)->maps.pid_comm));
		break;
	}
}

/*
 * A drained row stays, zeroed, in the same half, which the programs
 * write after the next flip: only keys never seen before are created by
 * them.  Rows of tasks fall away after an interval without requests;
 * rows of disks and ops stay, there are few of them.
 */
static bool keep_row(const void *key, const void *value, void *varg)
{
	const struct bl_ctx *ctx = ((const struct ks_sc_drain *)varg)->ctx;
	const struct ks_bl_stat *v = value;
	int ncopies = task_by(ctx->by) ? 1 : ks_ncpus();

	(void)key;
	if (ctx->by == KS_BL_BY_DISK || ctx->by == KS_BL_BY_OP)
		return true;
	for (int cpu = 0; cpu < ncopies; cpu++)
		for (unsigned int i = 0; i < KS_BL_LAT_SLOTS; i++)
			if (v[cpu].lat[i])
				return true;
	return false;
}

/* Adds the row @key of summed per-CPU @value to the report; 1 when it had data, 0 when not. */
static int emit_row(const struct ks_sc_drain *a, const struct ks_row_key *key, const void *value)
{
	struct bl_ctx *ctx = a->ctx;
	struct ks_row *row;
	struct sums s;
	int err = sum_stat(value, task_by(ctx->by) ? 1 : ks_ncpus(), &s);

	if (err)
		return err;
	if (!s.lat->count) {
		free_sums(&s);
		return 0;
	}
	row = ks_report_add_row(a->r);
	if (!row) {
		free_sums(&s);
		return -ENOMEM;
	}
	row_keys(ctx, row, key);
	ks_row_col(row, &bl_cols[C_COUNT], s.lat->count);
	ks_row_col(row, &bl_cols[C_BYTES], s.bytes);
	ks_row_col(row, &bl_cols[C_ERRORS], s.errors);
	row->sort = s.lat->sum;
	row->hist = s.lat;
	if (ctx->queued) {
		/* queue time in the summary table too: requests that had one, their mean and p99 */
		ks_row_col(row, &bl_cols[C_QUEUED], s.queue->count);
		ks_row_val(row, bl_cols[C_QUEUE_AVG].name, KS_VAL_NS, s.queue->count ? s.queue->sum / s.queue->count : 0);
		ks_row_val(row, bl_cols[C_QUEUE_P99].name, KS_VAL_NS, ks_hist_percentile(s.queue, 0.99));
		ks_row_xhist(row, "queue_ns", KS_UNIT_NS, s.queue);
	} else
		free(s.queue);
	ks_row_xhist(row, "size_bytes", KS_UNIT_BYTES, s.size);
	ks_row_xhist(row, "depth", KS_UNIT_COUNT, s.depth);
	return 1;
}

static int take_row(const void *key, const void *value, void *varg)
{
	int n = emit_row(varg, key, value);

	return n < 0 ? n : 0;
}

/* A row slot of arows; its key is the op, or the disk it was given. */
static int take_slot(uint32_t idx, const void *value, void *varg)
{
	const struct ks_sc_drain *a = varg;
	const struct bl_ctx *ctx = a->ctx;
	struct ks_row_key k = { .gen = a->gen };

	idx %= ctx->stride;
	k.id = ctx->by == KS_BL_BY_OP ? idx : ctx->slot_dev[idx];
	return emit_row(a, &k, value);
}

/*
 * The rows of the retired half: the row slots of arows (the disk and op
 * modes), then the hash of the others; then, before core reads the
 * counters, the stale check, so that what it finds counts in this report.
 */
static int drain_rows(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct bl_ctx *ctx = vctx;
	struct ks_biolat *s = bl_skel(ctx);
	struct ks_sc_drain a = { ctx, r, gen };
	struct ks_hash_half h = { .fd = bpf_map__fd(task_by(ctx->by) ? s->maps.trows : s->maps.rows),
				  .key_size = sizeof(struct ks_row_key), .match = ks_sc_key_in_gen, .cb = take_row,
				  .keep = keep_row, .zero = ctx->sc.zero, .arg = &a, .value_buf = ctx->sc.vbuf };
	int err;

	err = ks_array_drain_mode(bpf_map__fd(s->maps.arows), gen * ctx->stride, ctx->nslots, ctx->sc.vbuf,
				  (size_t)ks_ncpus() * sizeof(struct ks_bl_stat), take_slot, &a, mode);
	if (!err)
		err = ks_hash_drain_half(&h, mode);
	if (!err && mode != KS_DRAIN_CLEAR)
		bl_stale_check(ctx);
	return err;
}

/* The rows, counters and load of biolat, for core (core/scaffold.h). */
static const struct ks_sc_map bl_maps[] = {
	{ NULL, 0, sizeof(struct ks_bl_stat), .percpu = true, .drain = drain_rows },
};
/* The block tracepoints every variant attaches to; all date from before v4.0. */
static const struct ks_sc_probe bl_probes[] = {
	{ KS_SC_TP_NEEDED, "block", "block_rq_issue", 0 },	{ KS_SC_TP_NEEDED, "block", "block_rq_complete", 0 },
	{ KS_SC_TP_NEEDED, "block", "block_rq_insert", 0 },	{ KS_SC_TP_NEEDED, "block", "block_rq_requeue", 0 },
	{ KS_SC_TP_NEEDED, "block", "block_rq_merge", 0 },	{ KS_SC_TP_NEEDED, "block", "block_getrq", 0 },
	{ KS_SC_TP_NEEDED, "block", "block_bio_frontmerge", 0 },
};
#define BL_COUNT(name, field, kind) { name, offsetof(struct ks_biolat__bss, counts.field), kind }
enum { N_UNMATCHED = 7, N_REISSUED, N_UNSEEN_LATE, N_COUNTERS };
static const struct ks_sc_counter bl_counters[N_COUNTERS] = {
	BL_COUNT("inflight_full", inflight_full, KS_SC_LOSS),
	BL_COUNT("map_full", map_full, KS_SC_LOSS),
	BL_COUNT("key_collisions", collisions, KS_SC_LOSS),
	BL_COUNT("map_update_failed", update_failed, KS_SC_LOSS),
	BL_COUNT("stamp_missing", stamp_missing, KS_SC_LOSS),
	BL_COUNT("unseen_completions", unseen, KS_SC_LOSS),
	{ "recursion", 0, KS_SC_RECURSION },
	/* always present; with a filter other tasks' completions are unmatched by design, not counted */
	[N_UNMATCHED] = BL_COUNT("unmatched_completions", unmatched, KS_SC_COUNTER),
	[N_REISSUED] = BL_COUNT("reissued", reissued, KS_SC_COUNTER),
	[N_UNSEEN_LATE] = BL_COUNT("unseen_completed_later", unseen_late, KS_SC_COUNTER),
};
static const char *const bl_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
static void bl_release(void *vctx);
static int bl_attached(void *vctx)
{
	map_for_stale(vctx);
	return 0;
}
static const struct ks_sc_def bl_def = {
	.name = "biolat", .hooks = bl_hooks, .skel = &ks_biolat_ops, .gen_at = offsetof(struct ks_biolat__bss, ks_gen),
	.maps = bl_maps, .nmaps = 1, .counters = bl_counters, .ncounters = N_COUNTERS,
	.probes = bl_probes, .nprobes = sizeof(bl_probes) / sizeof(bl_probes[0]),
	.probed = bl_probed, .configure = configure, .loaded = loaded, .attached = bl_attached,
	.release = bl_release,
};

/* The retired half into @r (or one of the two, in @mode): core drains, biolat names its disk. */
static int bl_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct bl_ctx *ctx = vctx;
	int err = ks_sc_drain(&ctx->sc, r, mode);

	if (!err && mode != KS_DRAIN_CLEAR && ctx->disk)
		ks_report_meta_str(r, "disk", ctx->disk_arg);
	return err;
}

/* --pin: the three counters cumulative in .bss; the restart reports them from the read its saved totals hold */
static const size_t bl_cursor[] = { offsetof(struct bl_ctx, sc.seen[N_UNMATCHED]), offsetof(struct bl_ctx, sc.seen[N_REISSUED]),
				    offsetof(struct bl_ctx, sc.seen[N_UNSEEN_LATE]) };

static void bl_release(void *vctx)
{
	struct bl_ctx *ctx = vctx;

	if (ctx->slots_mm)
		munmap(ctx->slots_mm, ctx->slots_len);
	if (ctx->devs_mm)
		munmap(ctx->devs_mm, ctx->devs_len);
	ctx->slots_mm = NULL;
	ctx->devs_mm = NULL;
}

const struct ks_collector ks_biolat_collector = {
	.spec = {
		.name = "biolat",
		.summary = "Block I/O latency (issue to completion), queue time, request sizes and queue depth.",
		.common = KS_O_COLLECTOR,
		.by_words = bl_by_words,
		.opts = bl_opts,
	},
	.ctx_size = sizeof(struct bl_ctx),
	.parse_opt = bl_parse_opt,
	.open = bl_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = bl_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct bl_ctx, sc.skel), .cursor_u64 = { bl_cursor, sizeof(bl_cursor) / sizeof(bl_cursor[0]) } },
	.schema = &bl_schema,
	.close = ks_sc_close,
};
