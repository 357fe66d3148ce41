/* User side of `ksight biolat`: options, load with hook fallback, drain per-CPU rows into a report. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/rowkey.h"
#include "core/tracefs.h"
#include "ksight/biolat.h"
#include "biolat.skel.h"

enum { OPT_QUEUED = 'Q' };

/*
 * Requests in flight without a tag slot (other modes, the classic
 * tracepoints, devices beyond KS_BL_TAG_SLOTS), all devices together;
 * more go untimed (inflight_full).
 */
#define BL_INFLIGHT 32768
/* Rows per interval; more are counted as map_full. */
#define BL_ROWS 4096

struct bl_ctx {
	enum ks_bl_by by;
	bool queued;
	bool submit_info;
	const struct ks_filter *filter;
	struct ks_biolat *skel;
	const char *hook;
	unsigned int gen;
	struct ks_bl_counts seen; /* .bss counters already reported */
	unsigned long long missed_seen;
	void *vbuf; /* one per-CPU row value */
	void *zbuf; /* a zeroed one, to create rows ahead of the programs */
	unsigned int nslots;		   /* row slots in use (arows, per buffer half) */
	__u32 slot_dev[KS_BL_ROW_SLOTS]; /* the disk of each, in the disk mode */
};

static const struct ks_optdef bl_opts[] = {
	{ "queued", OPT_QUEUED, NULL, "also measure queue time, insert to issue (queue_ns)" },
	{ 0 },
};

static const char *const op_names[KS_BL_NOPS] = { "read", "write", "flush", "discard", "other" };

/* The block tracepoints every variant attaches to; all date from before v4.0. */
static const char *const bl_events[] = { "block_rq_issue", "block_rq_complete", "block_rq_insert",
					 "block_rq_requeue", "block_rq_merge", "block_getrq",
					 "block_bio_frontmerge", NULL };

static int bl_parse_opt(void *vctx, int id, const char *arg)
{
	struct bl_ctx *ctx = vctx;

	(void)arg;
	if (id != OPT_QUEUED)
		return -EINVAL;
	ctx->queued = true;
	return 0;
}

/* The per-task mode of @by, 0 for disk and op. */
static enum ks_task_by task_by(enum ks_bl_by by)
{
	return by == KS_BL_BY_PID ? KS_TASK_PID : by == KS_BL_BY_COMM ? KS_TASK_COMM
					 : by == KS_BL_BY_CGROUP ? KS_TASK_CGROUP : 0;
}

static enum ks_bl_by parse_by(const char *by)
{
	static const char *const names[] = { "disk", "pid", "comm", "op", "cgroup" };

	for (unsigned int i = 0; by && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(by, names[i]))
			return (enum ks_bl_by)i;
	return KS_BL_BY_DISK;
}

static int read_devt(const char *path, __u32 *dev)
{
	unsigned int maj, min;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%u:%u", &maj, &min);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*dev = (maj << 20) | min;
	return 0;
}

/*
 * The classic bio tracepoints name a partition, the request ones its disk:
 * tell the program which disk each partition of this moment belongs to.
 */
static int fill_part_disk(int fd)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *de;

	if (!d)
		return 0; /* no sysfs: whole disks still match */
	while ((de = readdir(d))) {
		char p[PATH_MAX + 8], real[PATH_MAX];
		__u32 part, disk;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/class/block/%s/partition", de->d_name);
		if (access(p, F_OK))
			continue;
		snprintf(p, sizeof(p), "/sys/class/block/%s", de->d_name);
		if (!realpath(p, real))
			continue;
		snprintf(p, sizeof(p), "%s/dev", real);
		if (read_devt(p, &part))
			continue;
		snprintf(p, sizeof(p), "%s/dev", dirname(real));
		if (read_devt(p, &disk))
			continue;
		bpf_map_update_elem(fd, &part, &disk, BPF_ANY);
	}
	closedir(d);
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
		if (ks_map_add(fd, k, ctx->zbuf))
			p_dbg("cannot create a row ahead: %s", strerror(errno));
	}
}

/* Hardware queues of blk-mq disk @name and tags per queue (the largest); 0 when it is not blk-mq. */
static unsigned int mq_geometry(const char *name, unsigned int *nr_tags)
{
	char p[PATH_MAX];
	unsigned int nhw = 0;
	struct dirent *de;
	DIR *d;

	*nr_tags = 0;
	snprintf(p, sizeof(p), "/sys/block/%s/mq", name);
	d = opendir(p);
	while (d && (de = readdir(d))) {
		unsigned int n = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/mq/%s/nr_tags", name, de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fscanf(f, "%u", &n) == 1 && n > *nr_tags)
			*nr_tags = n;
		fclose(f);
		nhw++;
	}
	if (d)
		closedir(d);
	return *nr_tags ? nhw : 0;
}

/*
 * Gives each disk there is its devs slot, unless another disk has it, with
 * tag slots while KS_BL_TAG_SLOTS last (only the default mode uses them)
 * and, in the disk mode, a row slot while KS_BL_ROW_SLOTS last.
 */
static void assign_devs(struct bl_ctx *ctx, int fd)
{
	unsigned int tag_next = 0;
	struct dirent *de;
	DIR *d = opendir("/sys/block");

	while (d && (de = readdir(d))) {
		struct ks_bl_dev v = { 0 };
		unsigned int nhw, ntags;
		char p[PATH_MAX];
		__u32 dev, i;

		snprintf(p, sizeof(p), "/sys/block/%s/dev", de->d_name);
		if (de->d_name[0] == '.' || read_devt(p, &dev) || !dev)
			continue;
		i = ks_bl_dev_slot(dev);
		if (bpf_map_lookup_elem(fd, &i, &v) || v.dev)
			continue;
		v.dev = dev;
		nhw = mq_geometry(de->d_name, &ntags);
		if (nhw && nhw <= 0xffff && ntags <= 0xffff && tag_next + nhw * ntags <= KS_BL_TAG_SLOTS) {
			v.tag_base = tag_next;
			v.nr_hw = (__u16)nhw;
			v.nr_tags = (__u16)ntags;
			tag_next += nhw * ntags;
		}
		if (ctx->by == KS_BL_BY_DISK && ctx->nslots < KS_BL_ROW_SLOTS) {
			ctx->slot_dev[ctx->nslots++] = dev;
			v.row = ctx->nslots;
		}
		bpf_map_update_elem(fd, &i, &v, BPF_ANY);
	}
	if (d)
		closedir(d);
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
	int fd = bpf_map__fd(s->maps.rows);
	struct ks_row_key k = {};
	struct dirent *de;
	DIR *d;

	switch (ctx->by) {
	case KS_BL_BY_OP:
		break; /* all in arows */
	case KS_BL_BY_DISK:
		d = opendir("/sys/block");
		while (d && (de = readdir(d))) {
			char p[PATH_MAX];

			snprintf(p, sizeof(p), "/sys/block/%s/dev", de->d_name);
			if (de->d_name[0] != '.' && !read_devt(p, &k.id) && !has_row_slot(ctx, k.id))
				precreate(ctx, fd, &k);
		}
		if (d)
			closedir(d);
		break;
	default:
		if (ks_row_key_of_filter(ctx->filter, task_by(ctx->by), &k))
			precreate(ctx, fd, &k);
		/* a row made here is not made by the programs, which name its process */
		if (k.id && ctx->by == KS_BL_BY_PID)
			ks_pid_comm_seed(bpf_map__fd(s->maps.pid_comm), k.id);
		break;
	}
}

/* Row slots per buffer half in arows for mode @by; 0: none, its rows are in the hash map. */
static unsigned int row_stride(enum ks_bl_by by)
{
	return by == KS_BL_BY_OP ? KS_BL_NOPS : by == KS_BL_BY_DISK ? KS_BL_ROW_SLOTS : 0;
}

static int try_hook(void *vctx, const char *hook)
{
	struct bl_ctx *ctx = vctx;
	bool before_issue = ctx->submit_info || ctx->queued;
	struct ks_biolat *s;
	int err;

	s = ks_biolat__open();
	if (!s)
		return -errno;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->submit_info = ctx->submit_info;
	s->rodata->queued = ctx->queued;
	bpf_map__set_max_entries(s->maps.inflight, BL_INFLIGHT);
	bpf_map__set_max_entries(s->maps.rows, BL_ROWS);
	/* per-CPU rows of a dozen KiB each: only as many as the mode can use */
	s->rodata->row_stride = row_stride(ctx->by);
	bpf_map__set_max_entries(s->maps.arows, row_stride(ctx->by) ? 2 * row_stride(ctx->by) : 1);
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_BL_BY_PID ? BL_ROWS : 1);

	if (!strcmp(hook, KS_HOOK_TP))
		ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
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
	err = ks_biolat__load(s);
	if (!err && !strcmp(hook, KS_HOOK_TP))
		err = fill_part_disk(bpf_map__fd(s->maps.part_disk));
	if (!err) {
		ctx->nslots = 0;
		assign_devs(ctx, bpf_map__fd(s->maps.devs));
		precreate_rows(ctx, s);
	}
	if (!err)
		err = ks_biolat__attach(s);
	if (err) {
		ks_biolat__destroy(s);
		ctx->skel = NULL;
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	return 0;
}

static int bl_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct bl_ctx *ctx = vctx;

	for (int i = 0; bl_events[i]; i++) {
		if (ks_tracepoint_exists("block", bl_events[i]) == 0) {
			p_err("biolat: tracepoint block:%s is not in this kernel", bl_events[i]);
			return -ENOENT;
		}
	}
	ctx->by = parse_by(c->by);
	ctx->filter = f;
	ctx->submit_info = f->flags || ctx->by == KS_BL_BY_PID || ctx->by == KS_BL_BY_COMM ||
			   ctx->by == KS_BL_BY_CGROUP;
	ctx->vbuf = calloc((size_t)ks_ncpus(), sizeof(struct ks_bl_stat));
	ctx->zbuf = calloc((size_t)ks_ncpus(), sizeof(struct ks_bl_stat));
	if (!ctx->vbuf || !ctx->zbuf)
		return -ENOMEM;
	return ks_load_first(hooks, try_hook, ctx, &ctx->hook);
}

static const char *bl_hook(void *vctx)
{
	return ((struct bl_ctx *)vctx)->hook;
}

/* "sda" for 8:0, from sysfs; "?" when the device is gone. */
static void disk_name(__u32 dev, char *buf, size_t len)
{
	char p[64], link[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", dev >> 20, dev & 0xfffff);
	n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	link[n] = 0;
	snprintf(buf, len, "%s", basename(link));
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

/* Sums the per-CPU copies of one row in @v into fresh histograms. */
static int sum_stat(const struct ks_bl_stat *v, struct sums *s)
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
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		const struct ks_bl_stat *c = &v[cpu];

		ks_hist_add_slots_n(s->lat, c->lat, KS_BL_LAT_SLOTS);
		ks_hist_add_slots_n(s->queue, c->queue, KS_BL_LAT_SLOTS);
		ks_hist_add_slots_n(s->size, c->size, KS_HIST_SLOTS32);
		ks_hist_add_slots_n(s->depth, c->depth, KS_BL_DEPTH_SLOTS);
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

struct drain_arg {
	struct bl_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_row_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

static void row_keys(struct bl_ctx *ctx, struct ks_row *row, const struct ks_row_key *k)
{
	char b[PATH_MAX];

	switch (ctx->by) {
	case KS_BL_BY_DISK:
		disk_name(k->id, b, sizeof(b));
		ks_row_key_str(row, "disk", b);
		snprintf(b, sizeof(b), "%u:%u", k->id >> 20, k->id & 0xfffff);
		ks_row_key_str(row, "dev", b);
		break;
	case KS_BL_BY_OP:
		ks_row_key_str(row, "op", op_names[k->id < KS_BL_NOPS ? k->id : KS_BL_OP_OTHER]);
		break;
	default:
		ks_row_task_key(row, task_by(ctx->by), k, bpf_map__fd(ctx->skel->maps.pid_comm));
		break;
	}
}

/*
 * A drained row comes back, zeroed, in the same half, which the programs
 * write after the next flip: only keys never seen before are created by
 * them.  Rows of tasks fall away after an interval without requests;
 * rows of disks and ops stay, there are few of them.
 */
static void keep_row(struct bl_ctx *ctx, const struct ks_row_key *k, uint64_t count)
{
	if (count || ctx->by == KS_BL_BY_DISK || ctx->by == KS_BL_BY_OP)
		ks_map_add(bpf_map__fd(ctx->skel->maps.rows), k, ctx->zbuf);
}

/* Adds the row @key of summed per-CPU @value to the report; 1 when it had data, 0 when not. */
static int emit_row(struct drain_arg *a, const struct ks_row_key *key, const void *value, bool keep)
{
	struct ks_row *row;
	struct sums s;
	int err = sum_stat(value, &s);

	if (err)
		return err;
	if (keep)
		keep_row(a->ctx, key, s.lat->count);
	if (!s.lat->count) {
		free_sums(&s);
		return 0;
	}
	row = ks_report_add_row(a->r);
	if (!row) {
		free_sums(&s);
		return -ENOMEM;
	}
	row_keys(a->ctx, row, key);
	ks_row_val(row, "count", KS_VAL_COUNT, s.lat->count);
	ks_row_val(row, "bytes", KS_VAL_COUNT, s.bytes);
	ks_row_val(row, "errors", KS_VAL_COUNT, s.errors);
	row->sort = s.lat->sum;
	row->hist = s.lat;
	if (a->ctx->queued)
		ks_row_xhist(row, "queue_ns", KS_UNIT_NS, s.queue);
	else
		free(s.queue);
	ks_row_xhist(row, "size_bytes", KS_UNIT_BYTES, s.size);
	ks_row_xhist(row, "depth", KS_UNIT_COUNT, s.depth);
	return 1;
}

static int take_row(const void *key, const void *value, void *varg)
{
	int n = emit_row(varg, key, value, true);

	return n < 0 ? n : 0;
}

/* A row slot of arows; its key is the op, or the disk it was given. */
static int take_slot(uint32_t idx, const void *value, void *varg)
{
	struct drain_arg *a = varg;
	struct ks_row_key k = { .gen = a->gen };

	idx %= row_stride(a->ctx->by);
	k.id = a->ctx->by == KS_BL_BY_OP ? idx : a->ctx->slot_dev[idx];
	return emit_row(a, &k, value, false);
}

static int bl_collect(void *vctx, struct ks_report *r)
{
	struct bl_ctx *ctx = vctx;
	unsigned int old = ks_gen_flip(&ctx->gen, &ctx->skel->bss->ks_gen);
	struct drain_arg a = { ctx, r, old };
	struct ks_bl_counts now;
	int err;

	err = ks_array_drain(bpf_map__fd(ctx->skel->maps.arows), old * row_stride(ctx->by), ctx->nslots, ctx->vbuf,
			     (size_t)ks_ncpus() * sizeof(struct ks_bl_stat), take_slot, &a);
	if (!err)
		err = ks_hash_drain(bpf_map__fd(ctx->skel->maps.rows), sizeof(struct ks_row_key), key_in_gen,
				    take_row, &a, ctx->vbuf);
	if (err)
		return err;
	now = ctx->skel->bss->counts;
	ks_report_lost(r, "inflight_full", now.inflight_full - ctx->seen.inflight_full);
	ks_report_lost(r, "map_full", now.map_full - ctx->seen.map_full);
	ks_report_lost(r, "key_collisions", now.collisions - ctx->seen.collisions);
	ks_report_lost(r, "recursion", ks_obj_missed_since(ctx->skel->obj, &ctx->missed_seen));
	/* with a filter, other tasks' completions are unmatched by design */
	if (!ctx->filter->flags)
		ks_report_counter(r, "unmatched_completions", now.unmatched - ctx->seen.unmatched);
	ctx->seen = now;
	return 0;
}

static void bl_close(void *vctx)
{
	struct bl_ctx *ctx = vctx;

	ks_biolat__destroy(ctx->skel);
	ctx->skel = NULL;
	free(ctx->vbuf);
	free(ctx->zbuf);
	ctx->vbuf = ctx->zbuf = NULL;
}

const struct ks_collector ks_biolat_collector = {
	.spec = {
		.name = "biolat",
		.summary = "Block I/O latency (issue to completion), queue time, request sizes and queue depth.",
		.common = KS_O_COLLECTOR,
		.by_keys = "disk|pid|comm|op|cgroup",
		.opts = bl_opts,
	},
	.ctx_size = sizeof(struct bl_ctx),
	.parse_opt = bl_parse_opt,
	.open = bl_open,
	.hook = bl_hook,
	.collect = bl_collect,
	.close = bl_close,
};
