/* Block-device topology from sysfs (disks, their queues, partitions), read under a root directory so it can be tested on a fixture tree. */
#ifndef KS_CORE_BLOCKDEV_H
#define KS_CORE_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A dev_t as the block tracepoints and BPF programs write it: major << 20 | minor. */
#define KS_BLK_DEV(maj, min) (((uint32_t)(maj) << 20) | (uint32_t)(min))
#define KS_BLK_MAJOR(dev) ((dev) >> 20)
#define KS_BLK_MINOR(dev) ((dev) & 0xfffff)

/* One whole disk of ROOT/sys/block. */
struct ks_blockdev {
	char name[32];
	uint32_t dev;
	unsigned int nr_hw;   /* blk-mq hardware queues (ROOT/sys/block/X/mq/N); 0: not blk-mq */
	unsigned int nr_tags; /* tags per hardware queue, the largest */
	unsigned int nr_requests; /* queue/nr_requests: the scheduler's tags per hardware queue */
	bool sched_none;      /* no I/O scheduler: requests are issued without block_rq_insert */
	bool write_back;      /* queue/write_cache says "write back": flushes reach the device */
	bool fua;	      /* queue/fua: the device writes FUA itself, without a postflush */
};

/*
 * Fills up to @max disks of @root (NULL or "" for "/") into @out, in
 * directory order; returns how many there are (may exceed @max), or
 * negative errno when ROOT/sys/block cannot be read.
 */
int ks_blockdev_scan(const char *root, struct ks_blockdev *out, int max);

/*
 * The disk named @name ("sda" or "/dev/sda").  -ENOENT when there is none,
 * -EISDIR when @name is a partition (request events name whole disks).
 */
int ks_blockdev_find(const char *root, const char *name, struct ks_blockdev *out);

/* Calls @fn(partition dev, its disk's dev, @arg) for each partition; returns how many, or negative errno. */
int ks_blockdev_partitions(const char *root, void (*fn)(uint32_t part, uint32_t disk, void *arg), void *arg);

/* The name of block device @dev ("sda" for 8:0) into @buf; "?" when it is gone. */
void ks_blockdev_name(const char *root, uint32_t dev, char *buf, size_t len);

/*
 * What the stat files of whole disk @dev and of its partitions
 * (ROOT/sys/dev/block/MAJ:MIN/stat, .../PART/stat) say at one moment:
 * the evidence of biolat's stale check, read twice around its scan.
 */
struct ks_blk_quiet {
	/*
	 * Requests in flight (field 9), the disk's and its partitions'
	 * together: from Linux 6.16 (commit c151919080ad, "blk-mq: remove
	 * blk_mq_in_flight()") the per-CPU count from a request's start of
	 * accounting (blk_account_io_start(), when it is made) to its end
	 * (blk_account_io_done(), after block_rq_complete), charged to the
	 * partition it was made for; before, on blk-mq, the requests started
	 * in the driver (state MQ_RQ_IN_FLIGHT, left before
	 * block_rq_complete), which leaves out flush requests and requests
	 * not yet issued.  Neither counts passthrough commands.
	 */
	uint64_t inflight;
	uint64_t sig;	/* a hash of all those files' text: the same while no request starts or ends */
	bool iostats;	/* queue/iostats is on: without it the kernel counts nothing in flight */
	int files;	/* stat files read */
};

/* Reads @q for whole disk @dev; 0, or negative errno when its stat file cannot be read. */
int ks_blockdev_quiet(const char *root, uint32_t dev, struct ks_blk_quiet *q);

/*
 * Parses the decimal fields of a stat file's @text into @f (at most
 * @max); returns how many, or -EINVAL when fewer than 11 (Linux 2.6's).
 */
int ks_blk_stat_parse(const char *text, uint64_t *f, int max);

/*
 * True when @before and @after, read in that order, show the disk with
 * nothing in flight either time, its statistics kept, and no request
 * started or ended in between: every request of it that was in flight
 * before @before was read had ended by then (see ks_blk_quiet.inflight
 * for which ones the kernel counts).
 */
bool ks_blk_quiet_idle(const struct ks_blk_quiet *before, const struct ks_blk_quiet *after);

#endif
