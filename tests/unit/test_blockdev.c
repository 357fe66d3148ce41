/* Unit test: block-device topology (disks, queues, scheduler, flush features, partitions, names) read from a fixture sysfs tree. */
#include "core/blockdev.h"
#include "collectors/rows.h"
#include "test.h"

#define ROOT "tests/unit/fixtures/blockdev"

static const struct ks_blockdev *by_name(const struct ks_blockdev *d, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(d[i].name, name))
			return &d[i];
	return NULL;
}

TEST(scan_disks)
{
	struct ks_blockdev d[8];
	const struct ks_blockdev *v, *l, *nv, *sr;
	int n = ks_blockdev_scan(ROOT, d, 8);

	ASSERT_EQ_INT(n, 4);
	v = by_name(d, n, "vda");
	l = by_name(d, n, "loop0");
	nv = by_name(d, n, "nvme0n1");
	sr = by_name(d, n, "sr0");
	ASSERT_TRUE(v && l && nv && sr);
	EXPECT_EQ_U64(v->dev, KS_BLK_DEV(254, 0));
	EXPECT_EQ_INT(v->nr_hw, 1);
	EXPECT_EQ_INT(v->nr_tags, 128);
	EXPECT_EQ_INT(v->nr_requests, 256);
	EXPECT_TRUE(!v->sched_none && v->write_back && !v->fua);
	EXPECT_TRUE(l->sched_none && l->write_back && !l->fua);
	EXPECT_EQ_INT(nv->nr_hw, 4);
	EXPECT_EQ_INT(nv->nr_tags, 1023);
	EXPECT_TRUE(nv->sched_none && !nv->write_back && nv->fua);
	/* no mq directory, no queue files: not blk-mq, no scheduler */
	EXPECT_EQ_INT(sr->nr_hw, 0);
	EXPECT_TRUE(sr->sched_none && !sr->write_back);
}

TEST(scan_counts_beyond_max)
{
	struct ks_blockdev d[1];

	EXPECT_EQ_INT(ks_blockdev_scan(ROOT, d, 1), 4);
	EXPECT_EQ_INT(ks_blockdev_scan("tests/unit/fixtures/nonexistent", d, 1), -ENOENT);
}

TEST(find_by_name)
{
	struct ks_blockdev d;

	ASSERT_EQ_INT(ks_blockdev_find(ROOT, "loop0", &d), 0);
	EXPECT_EQ_U64(d.dev, KS_BLK_DEV(7, 0));
	ASSERT_EQ_INT(ks_blockdev_find(ROOT, "/dev/vda", &d), 0);
	EXPECT_EQ_STR(d.name, "vda");
	EXPECT_EQ_INT(ks_blockdev_find(ROOT, "vda1", &d), -EISDIR);
	EXPECT_EQ_INT(ks_blockdev_find(ROOT, "nope", &d), -ENOENT);
	EXPECT_EQ_INT(ks_blockdev_find(ROOT, "../block/vda", &d), -ENOENT);
	EXPECT_EQ_INT(ks_blockdev_find(ROOT, "", &d), -ENOENT);
}

static void add_part(uint32_t part, uint32_t disk, void *arg)
{
	uint32_t *p = arg;

	p[0] = part;
	p[1] = disk;
}

TEST(partitions_name_their_disk)
{
	uint32_t p[2] = { 0, 0 };

	EXPECT_EQ_INT(ks_blockdev_partitions(ROOT, add_part, p), 1);
	EXPECT_EQ_U64(p[0], KS_BLK_DEV(254, 1));
	EXPECT_EQ_U64(p[1], KS_BLK_DEV(254, 0));
}

TEST(names_from_dev)
{
	char b[32];

	ks_blockdev_name(ROOT, KS_BLK_DEV(254, 0), b, sizeof(b));
	EXPECT_EQ_STR(b, "vda");
	ks_blockdev_name(ROOT, KS_BLK_DEV(254, 1), b, sizeof(b));
	EXPECT_EQ_STR(b, "vda1");
	ks_blockdev_name(ROOT, KS_BLK_DEV(8, 0), b, sizeof(b));
	EXPECT_EQ_STR(b, "?");
}

TEST(stat_fields_parse)
{
	uint64_t f[20];

	EXPECT_EQ_INT(ks_blk_stat_parse("  1 2 3 4 5 6 7 8 9 10 11\n", f, 20), 11);
	EXPECT_EQ_U64(f[8], 9);
	EXPECT_EQ_INT(ks_blk_stat_parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", f, 20), 17);
	EXPECT_EQ_U64(f[16], 17);
	/* fewer than Linux 2.6's 11, or not numbers: refused */
	EXPECT_EQ_INT(ks_blk_stat_parse("1 2 3", f, 20), -EINVAL);
	EXPECT_EQ_INT(ks_blk_stat_parse("1 2 3 4 5 6 7 8 x 10 11", f, 20), -EINVAL);
	EXPECT_EQ_INT(ks_blk_stat_parse("1 2 3 4 5 6 7 8 -1 10 11", f, 20), -EINVAL);
}

TEST(quiet_reads_disk_and_partitions)
{
	struct ks_blk_quiet q;

	ASSERT_EQ_INT(ks_blockdev_quiet(ROOT, KS_BLK_DEV(254, 0), &q), 0);
	/* vda's count is 0, vda1's 1: from 6.16 a partition's requests count in its own file only */
	EXPECT_EQ_INT(q.files, 2);
	EXPECT_EQ_U64(q.inflight, 1);
	EXPECT_TRUE(q.iostats);
	EXPECT_EQ_INT(ks_blockdev_quiet(ROOT, KS_BLK_DEV(8, 0), &q), -ENOENT);
}

TEST(quiet_idle_decision)
{
	struct ks_blk_quiet a = { .inflight = 0, .sig = 42, .iostats = true, .files = 2 }, b = a;

	EXPECT_TRUE(ks_blk_quiet_idle(&a, &b));
	b.inflight = 1; /* a request in flight at the second read */
	EXPECT_TRUE(!ks_blk_quiet_idle(&a, &b));
	b = a;
	b.sig = 43; /* one started and ended in between */
	EXPECT_TRUE(!ks_blk_quiet_idle(&a, &b));
	b = a;
	b.files = 3; /* a partition appeared */
	EXPECT_TRUE(!ks_blk_quiet_idle(&a, &b));
	a.iostats = b.iostats = false; /* no statistics: in_flight is always 0 */
	EXPECT_TRUE(!ks_blk_quiet_idle(&a, &b));
	a = b = (struct ks_blk_quiet){ 0 }; /* nothing read */
	a.iostats = b.iostats = true;
	EXPECT_TRUE(!ks_blk_quiet_idle(&a, &b));
}

TEST(biolat_stale_requests)
{
	const uint64_t t0 = 1000;

	/* 6.16+: every request the count covers, stamped before t0 */
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_READ, 4096, 999, t0, true));
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_FLUSH, 0, 1, t0, true));
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_WRITE, 0, 1, t0, true));
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_SEQ, 4096, 1, t0, true));
	/* stamped at or after t0, or not at all: may have started after the count was read */
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_READ, 4096, 1000, t0, true));
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_READ, 4096, 0, t0, true));
	/* passthrough commands are never counted in flight */
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_OTHER, 4096, 1, t0, true));
	/* before 6.16: only requests started in the driver */
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_READ, 4096, 1, t0, false));
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_WRITE, 4096, 1, t0, false));
	EXPECT_TRUE(ks_bl_stale(KS_BL_OP_DISCARD, 4096, 1, t0, false));
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_FLUSH, 0, 1, t0, false));
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_WRITE, 0, 1, t0, false));
	EXPECT_TRUE(!ks_bl_stale(KS_BL_OP_SEQ, 4096, 1, t0, false));
}
