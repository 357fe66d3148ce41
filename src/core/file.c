/* Every file ksight writes is opened here: created 0600, close-on-exec, never through a symbolic link; and fds 0-2 kept taken. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/file.h"

/* Opens an existing @path in place: the second try of ks_file_create. */
static int open_existing(const char *path)
{
	return open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
}

int ks_file_create(const char *path, int flags, bool *created)
{
	bool made = false;
	int fd = -1, err;

	if (ks_file_is_stdout(path)) {
		/* a copy, so that closing it leaves stdout open; never emptied nor chmod-ed: the shell made it */
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
		if (created)
			*created = false;
		return fd;
	}
	/*
	 * O_EXCL first, to know whether the file is ours; then the file that
	 * is there, still without following a link.  A file removed or made
	 * in between (another process) is retried a few times.
	 */
	for (int i = 0; i < 4 && fd < 0; i++) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd >= 0) {
			made = true;
			break;
		}
		if (errno != EEXIST)
			return -errno;
		fd = open_existing(path);
		if (fd < 0 && errno != ENOENT)
			return -errno;
	}
	if (fd < 0)
		return -EAGAIN;
	if (flags & KS_FILE_TRUNC) {
		err = ks_file_empty(fd);
		if (err)
			goto fail;
	}
	if (created)
		*created = made;
	return fd;
fail:
	close(fd);
	if (made)
		unlink(path);
	return err;
}

int ks_file_empty(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	/*
	 * The umask does not apply to fchmod: 0600 exactly.  Best effort: a
	 * file of another user's that this one may write but not chmod was
	 * named on purpose.
	 */
	if ((st.st_mode & 07777) != 0600)
		(void)!fchmod(fd, 0600);
	return st.st_size && ftruncate(fd, 0) ? -errno : 0;
}

bool ks_file_is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

FILE *ks_file_fopen(const char *path, int flags)
{
	int fd;
	FILE *f;

	if (ks_file_is_stdout(path))
		return stdout;
	fd = ks_file_create(path, flags, NULL);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}

const char *ks_file_strerror(const char *path, int err)
{
	struct stat st;

	/* ELOOP from O_NOFOLLOW is the last component; a loop further up is told as the kernel says */
	if (err == -ELOOP && !lstat(path, &st) && S_ISLNK(st.st_mode))
		return "it is a symbolic link; give the target's path";
	return strerror(-err);
}

int ks_reserve_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/*
		 * The lowest free number: this one, as those below it are open.
		 * Read-only, so that a report written to a closed stdout still
		 * fails (EBADF) rather than vanishing.
		 */
		n = open("/dev/null", O_RDONLY);
		if (n < 0)
			return -errno;
		if (n != fd) {
			close(n);
			return -EBADF;
		}
	}
	return 0;
}
