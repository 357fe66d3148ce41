/* The block request tracker's reading side: what a request or bio is (disk, op, first sector, bytes, tag, flush state), for every hook variant; included by bpf/biolat.bpf.c. */
#ifndef KSIGHT_BLK_TRACKER_BPF_H
#define KSIGHT_BLK_TRACKER_BPF_H

#include "common.bpf.h"
#include "compat.bpf.h"
#include "ksight/biolat.h"

/*
 * Minimum kernel: 5.15 (see compat.bpf.h).  The readers take the disk
 * from rq->q->disk and bio->bi_bdev->bd_disk with no shim.
 * @complete: a block_rq_complete event (reads the flush state); @tags:
 * read the request's tag (the default mode's tag slots).
 */

/* The fields of a request (or bio) that every hook needs. */
struct io {
	struct ks_bl_rkey k;
	struct ks_bl_rkey id; /* its name in the inflight map: k, or the request's address (set_id) */
	__u32 bytes;
	bool preflush;	/* a bio that asks for a cache flush: preflush, or FUA (a postflush where the device has no FUA) */
	bool flush_seq; /* block_rq_complete of a write: the data step of a flush sequence */
	__s32 tag;	/* request events of the default mode: its tag for life (see ks_bl_slot), -1 when none */
	__u32 hw;	/* and its hardware queue */
	__u64 alloc_ns; /* request events: the kernel's allocation stamp, 0 when none */
	__u64 rq;	/* request events of tp_btf and raw_tp: the request's address */
	/*
	 * The kernel's issue stamp (ks_kernel_issue_stamps(); default mode,
	 * tp_btf and raw_tp): @kstart is rq->io_start_time_ns as it is now,
	 * the last issue's at block_rq_issue (the kernel stamps after it);
	 * @kstamp: at block_rq_issue, the kernel will stamp this issue; at
	 * block_rq_complete, it did (RQF_STATS).
	 */
	__u64 kstart;
	bool kstamp;
};

static __always_inline __u32 map_op(__u32 op)
{
	/* REQ_OP_SECURE_ERASE (5) discards too */
	if (op <= KS_BL_OP_DISCARD)
		return op;
	return op == 5 ? KS_BL_OP_DISCARD : KS_BL_OP_OTHER;
}

/* The bio asks for a cache flush before (preflush) or after (FUA) its data. */
static __always_inline bool opf_preflush(__u32 opf)
{
	return opf & ((1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)) |
		      (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)));
}

/*
 * A request without a position (a flush, a passthrough command) has sector
 * -1, which block_rq_issue reports as 0 and block_rq_complete as is
 * (blk_rq_trace_sector() versus blk_rq_pos()): one name for both.
 */
static __always_inline __u64 norm_sector(__u64 sector)
{
	return sector == ~0ull ? 0 : sector;
}

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	return disk ? ((__u32)disk->major << 20) | (__u32)disk->first_minor : 0;
}

/*
 * At block_rq_issue of a request @io on a queue with @queue_flags: the
 * kernel stamps io_start_time_ns next, as blk_mq_start_request() tests
 * (statistics on, not a passthrough command: those are op OTHER here,
 * which the kernel may or may not stamp, so they are stamped by us).
 */
static __always_inline bool kernel_will_stamp(const struct io *io, unsigned long queue_flags)
{
	return io->k.op != KS_BL_OP_OTHER && (queue_flags & (1ul << KS_QUEUE_FLAG_STATS_PRE_6_9));
}

/* tp_btf: the arguments are trusted pointers, read by plain loads. */
static __always_inline void rq_io_btf(struct request *rq, struct io *io, bool complete, bool tags)
{
	__u32 opf = rq->cmd_flags;

	io->k.dev = disk_dev(rq->q->disk);
	io->preflush = opf_preflush(opf); /* block_io_start: before blk_insert_flush() takes the flags off */
	io->k.op = map_op(opf & 0xff);
	io->k.sector = norm_sector(rq->__sector);
	io->bytes = rq->__data_len;
	io->alloc_ns = rq->start_time_ns;
	io->rq = (__u64)rq;
	if (complete && io->k.op == KS_BL_OP_WRITE)
		io->flush_seq = rq->rq_flags & ks_rqf_flush_seq();
	io->tag = -1;
	if (tags && rq->mq_hctx) {
		io->tag = rq->internal_tag >= 0 ? rq->internal_tag : rq->tag;
		io->hw = rq->mq_hctx->queue_num;
	}
	if (tags && ks_kernel_issue_stamps()) {
		io->kstart = rq->io_start_time_ns;
		io->kstamp = complete ? rq->rq_flags & ks_rqf_stats()
				      : kernel_will_stamp(io, rq->q->queue_flags);
	}
}

static __always_inline void bio_io_btf(struct bio *bio, struct io *io)
{
	__u32 opf = bio->bi_opf;

	io->k.dev = disk_dev(bio->bi_bdev->bd_disk);
	io->k.op = map_op(opf & 0xff);
	io->k.sector = bio->bi_iter.bi_sector;
	io->bytes = bio->bi_iter.bi_size;
	io->preflush = opf_preflush(opf);
}

/* raw_tp: the same fields through probe reads. */
static __always_inline __u32 disk_dev_core(struct gendisk *disk)
{
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
}

static __always_inline void rq_io_core(struct request *rq, struct io *io, bool complete, bool tags)
{
	__u32 opf = BPF_CORE_READ(rq, cmd_flags);

	io->k.dev = disk_dev_core(BPF_CORE_READ(rq, q, disk));
	io->preflush = opf_preflush(opf);
	io->k.op = map_op(opf & 0xff);
	io->k.sector = norm_sector(BPF_CORE_READ(rq, __sector));
	io->bytes = BPF_CORE_READ(rq, __data_len);
	io->alloc_ns = BPF_CORE_READ(rq, start_time_ns);
	io->rq = (__u64)rq;
	if (complete && io->k.op == KS_BL_OP_WRITE)
		io->flush_seq = BPF_CORE_READ(rq, rq_flags) & ks_rqf_flush_seq();
	io->tag = -1;
	if (tags) {
		struct blk_mq_hw_ctx *hctx = BPF_CORE_READ(rq, mq_hctx);

		if (hctx) {
			__s32 itag = BPF_CORE_READ(rq, internal_tag);

			io->tag = itag >= 0 ? itag : BPF_CORE_READ(rq, tag);
			io->hw = BPF_CORE_READ(hctx, queue_num);
		}
	}
	if (tags && ks_kernel_issue_stamps()) {
		io->kstart = BPF_CORE_READ(rq, io_start_time_ns);
		io->kstamp = complete ? BPF_CORE_READ(rq, rq_flags) & ks_rqf_stats()
				      : kernel_will_stamp(io, BPF_CORE_READ(rq, q, queue_flags));
	}
}

static __always_inline void bio_io_core(struct bio *bio, struct io *io)
{
	__u32 opf = BPF_CORE_READ(bio, bi_opf);

	io->k.dev = disk_dev_core(BPF_CORE_READ(bio, bi_bdev, bd_disk));
	io->k.op = map_op(opf & 0xff);
	io->k.sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
	io->bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
	io->preflush = opf_preflush(opf);
}

/*
 * Classic tracepoints: the operation from rwbs, whose first letter is 'F'
 * for a preflush, then the operation's letter, then 'F' for FUA
 * (blk_fill_rwbs()).  *@preflush: either flush flag.
 */
static __always_inline __u32 rwbs_op(char c, char n, char m, bool *preflush)
{
	*preflush = false;
	if (c == 'F' && (n == 'W' || n == 'R' || n == 'D' || n == 'F' || n == 'N')) {
		*preflush = true;
		c = n;
		n = m;
	}
	if (c == 'W' && n == 'F')
		*preflush = true;
	if (c == 'R')
		return KS_BL_OP_READ;
	if (c == 'W')
		return KS_BL_OP_WRITE;
	if (c == 'F')
		return KS_BL_OP_FLUSH;
	if (c == 'D')
		return KS_BL_OP_DISCARD;
	return KS_BL_OP_OTHER;
}

#endif /* KSIGHT_BLK_TRACKER_BPF_H */
