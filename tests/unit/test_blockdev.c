/* Unit test: block-device topology (disks, queues, scheduler, flush features, partitions, names) read from a fixture sysfs tree. */
#include "core/blockdev.h"
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
