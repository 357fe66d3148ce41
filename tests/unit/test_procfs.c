/* Unit test: the /proc and /sys readers of src/core/procfs.c on a fixture tree (no root needed). */
#include "core/procfs.h"
#include "test.h"

#define ROOT "tests/unit/fixtures/procfs"

TEST(line_strips_trailing_space)
{
	char b[64];

	ASSERT_EQ_INT(ks_procfs_line(ROOT, "/proc/42/comm", b, sizeof(b)), 0);
	EXPECT_EQ_STR(b, "a (b) c");
	ASSERT_EQ_INT(ks_procfs_line(ROOT, "/proc/sys/kernel/blank", b, sizeof(b)), 0);
	EXPECT_EQ_STR(b, "");
}

TEST(missing_file_is_enoent_and_empties_buffer)
{
	char b[16] = "junk";

	EXPECT_EQ_INT(ks_procfs_line(ROOT, "/proc/nope", b, sizeof(b)), -ENOENT);
	EXPECT_EQ_STR(b, "");
	EXPECT_EQ_INT(ks_procfs_read(ROOT, "/proc/nope", b, sizeof(b)), -ENOENT);
}

TEST(read_whole_file_truncates_to_buffer)
{
	char b[8];
	int n = ks_procfs_read(ROOT, "/proc/self/mounts", b, sizeof(b));

	EXPECT_EQ_INT(n, 7);
	EXPECT_EQ_STR(b, "sysfs /");
}

TEST(u64_and_int)
{
	uint64_t v = 0;
	int i = 0;

	ASSERT_EQ_INT(ks_procfs_u64(ROOT, "/proc/sys/kernel/pid_max", &v), 0);
	EXPECT_EQ_U64(v, 32768);
	ASSERT_EQ_INT(ks_procfs_u64(ROOT, "/proc/sys/kernel/big", &v), 0);
	EXPECT_EQ_U64(v, UINT64_MAX);
	EXPECT_EQ_INT(ks_procfs_u64(ROOT, "/proc/sys/kernel/bad", &v), -EINVAL);
	EXPECT_EQ_INT(ks_procfs_u64(ROOT, "/proc/sys/kernel/neg", &v), -EINVAL);
	EXPECT_EQ_INT(ks_procfs_u64(ROOT, "/proc/sys/kernel/blank", &v), -EINVAL);
	ASSERT_EQ_INT(ks_procfs_int(ROOT, "/proc/sys/kernel/neg", &i), 0);
	EXPECT_EQ_INT(i, -5);
	EXPECT_EQ_INT(ks_procfs_int(ROOT, "/proc/sys/kernel/big", &i), -EINVAL);
}

TEST(pid_max_with_default)
{
	EXPECT_EQ_U64(ks_procfs_pid_max(ROOT), 32768);
	EXPECT_EQ_U64(ks_procfs_pid_max(ROOT "/none"), 4194304);
}

TEST(comm_is_cut_to_15_chars)
{
	char comm[16];

	ASSERT_EQ_INT(ks_procfs_comm(ROOT, 42, comm), 0);
	EXPECT_EQ_STR(comm, "a (b) c");
	EXPECT_EQ_INT(ks_procfs_comm(ROOT, 9, comm), -ENOENT);
}

TEST(stat_state_and_threads_after_a_name_with_parentheses)
{
	char state = 0;
	int n = 0;

	ASSERT_EQ_INT(ks_procfs_stat(ROOT, 42, &state, &n), 0);
	EXPECT_EQ_INT(state, 'S');
	EXPECT_EQ_INT(n, 3);
	ASSERT_EQ_INT(ks_procfs_stat(ROOT, 77, &state, &n), 0);
	EXPECT_EQ_INT(state, 'Z');
	EXPECT_EQ_INT(n, 1);
	EXPECT_EQ_INT(ks_procfs_stat(ROOT, 9, &state, &n), -ENOENT);
}

TEST(pid_and_thread_exist)
{
	EXPECT_TRUE(ks_procfs_pid_exists(ROOT, 42, 0));
	EXPECT_TRUE(ks_procfs_pid_exists(ROOT, 42, 43));
	EXPECT_TRUE(!(ks_procfs_pid_exists(ROOT, 42, 44)));
	EXPECT_TRUE(!(ks_procfs_pid_exists(ROOT, 9, 0)));
}

TEST(mount_of_first_of_type_with_escapes)
{
	char d[64];

	ASSERT_EQ_INT(ks_procfs_mount_of(ROOT, "cgroup2", d, sizeof(d)), 0);
	EXPECT_EQ_STR(d, "/sys/fs/cgroup/unified");
	ASSERT_EQ_INT(ks_procfs_mount_of(ROOT, "tracefs", d, sizeof(d)), 0);
	EXPECT_EQ_STR(d, "/mnt/with space");
	EXPECT_EQ_INT(ks_procfs_mount_of(ROOT, "debugfs", d, sizeof(d)), -ENOENT);
}

TEST(machine_root_is_null_or_empty)
{
	char a[64], b[64];

	ASSERT_EQ_INT(ks_procfs_line(NULL, "/proc/sys/kernel/osrelease", a, sizeof(a)), 0);
	ASSERT_EQ_INT(ks_procfs_line("", "/proc/sys/kernel/osrelease", b, sizeof(b)), 0);
	EXPECT_EQ_STR(a, b);
	EXPECT_TRUE(ks_procfs_pid_exists(NULL, (uint32_t)getpid(), 0));
}
