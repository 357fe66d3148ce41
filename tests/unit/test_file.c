/* Unit tests of core/file.c: output files made 0600 whatever the umask, symlinks refused, fds 0-2 kept taken. */
#include <fcntl.h>
#include <sys/stat.h>
#include "test.h"
#include "core/file.h"

static char dir[64];

/* @name in the test's directory (two buffers in turn: one call's result may be the other's argument) */
static const char *at(const char *name)
{
	static char p[2][128];
	static int i;

	i ^= 1;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

TEST(new_file_0600_under_umask_022)
{
	bool made = false;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/ks-file.XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	umask(022);
	fd = ks_file_create(at("new"), 0, &made);
	ASSERT_TRUE(fd >= 0);
	EXPECT_TRUE(made);
	EXPECT_EQ_INT(mode_of(at("new")), 0600);
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

TEST(existing_file_kept_until_emptied)
{
	bool made = true;
	FILE *f = fopen(at("old"), "w");
	int fd;

	ASSERT_TRUE(f != NULL);
	fputs("old contents", f);
	fclose(f);
	chmod(at("old"), 0644);
	fd = ks_file_create(at("old"), 0, &made);
	ASSERT_TRUE(fd >= 0);
	EXPECT_TRUE(!made);
	EXPECT_EQ_INT(mode_of(at("old")), 0644); /* untouched until the caller empties it */
	EXPECT_EQ_INT(lseek(fd, 0, SEEK_END), 12);
	EXPECT_EQ_INT(ks_file_empty(fd), 0);
	EXPECT_EQ_INT(mode_of(at("old")), 0600);
	EXPECT_EQ_INT(lseek(fd, 0, SEEK_END), 0);
	close(fd);
	fd = ks_file_create(at("old"), KS_FILE_TRUNC, NULL);
	EXPECT_TRUE(fd >= 0);
	close(fd);
}

TEST(symlink_refused_target_untouched)
{
	int fd;

	ASSERT_EQ_INT(symlink(at("old"), at("link")), 0);
	chmod(at("old"), 0644);
	fd = ks_file_create(at("link"), KS_FILE_TRUNC, NULL);
	EXPECT_EQ_INT(fd, -ELOOP);
	EXPECT_EQ_STR(ks_file_strerror(at("link"), fd), "it is a symbolic link; give the target's path");
	EXPECT_EQ_INT(mode_of(at("old")), 0644);
	/* a dangling link is refused too, and nothing is made at its target */
	ASSERT_EQ_INT(symlink(at("none"), at("dangling")), 0);
	EXPECT_EQ_INT(ks_file_create(at("dangling"), 0, NULL), -ELOOP);
	EXPECT_EQ_INT(access(at("none"), F_OK), -1);
	EXPECT_TRUE(ks_file_fopen(at("link"), 0) == NULL && errno == ELOOP);
}

TEST(device_written_as_it_is)
{
	int fd = ks_file_create("/dev/null", KS_FILE_TRUNC, NULL);
	struct stat st;

	ASSERT_TRUE(fd >= 0);
	EXPECT_TRUE(!fstat(fd, &st) && S_ISCHR(st.st_mode) && (st.st_mode & 0666) == 0666);
	close(fd);
}

TEST(dash_is_stdout)
{
	int saved = dup(STDOUT_FILENO), fd;
	struct stat a, b;
	bool made = true;
	char buf[8] = { 0 };

	/* stdout on a 0644 file with contents: "-" writes there, never emptied nor chmod-ed (the shell made it) */
	ASSERT_TRUE(saved >= 0);
	fd = open(at("stdout"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(write(fd, "keep", 4) == 4);
	fchmod(fd, 0644);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	fd = ks_file_create("-", KS_FILE_TRUNC, &made);
	ASSERT_TRUE(fd > 2);
	EXPECT_TRUE(!made);
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_TRUE(!fstat(fd, &a) && !fstat(STDOUT_FILENO, &b) && a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	EXPECT_EQ_INT(mode_of(at("stdout")), 0644);
	close(fd);
	/* closing the copy leaves stdout open */
	EXPECT_TRUE(fcntl(STDOUT_FILENO, F_GETFD) >= 0);
	EXPECT_TRUE(ks_file_fopen("-", KS_FILE_TRUNC) == stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	fd = open(at("stdout"), O_RDONLY);
	EXPECT_EQ_INT((int)read(fd, buf, sizeof(buf) - 1), 4);
	EXPECT_EQ_STR(buf, "keep");
	close(fd);
	/* and no file named "-" */
	EXPECT_TRUE(access("-", F_OK) != 0);
}

TEST(stdio_reserved)
{
	int saved = dup(STDERR_FILENO), fd;
	char cmd[128];

	ASSERT_TRUE(saved >= 0);
	close(STDERR_FILENO);
	EXPECT_EQ_INT(ks_reserve_stdio(), 0);
	/* taken: the next file gets another number, and a write to it fails rather than landing anywhere */
	fd = ks_file_create(at("after"), 0, NULL);
	EXPECT_TRUE(fd > 2);
	EXPECT_EQ_INT(write(STDERR_FILENO, "x", 1), -1);
	close(fd);
	dup2(saved, STDERR_FILENO);
	close(saved);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ_INT(system(cmd), 0);
}
