/* The output sink: reports go out with poll + write(2), so a stop signal is never stuck behind a full pipe. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/file.h"
#include "core/log.h"
#include "core/parse.h"
#include "output/output.h"

/* Slice of a wait for the output: how late a stop signal that raced the wait is seen. */
#define SINK_SLICE_MS 100

void ks_sink_stdout(struct ks_sink *s, volatile sig_atomic_t *stop)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->fd = STDOUT_FILENO;
	s->stop = stop;
	s->is_reg = !fstat(s->fd, &st) && S_ISREG(st.st_mode);
}

int ks_sink_open(struct ks_sink *s, const char *path, volatile sig_atomic_t *stop)
{
	struct stat st;
	int fd;

	if (ks_file_is_stdout(path)) {
		ks_sink_stdout(s, stop);
		return 0;
	}
	memset(s, 0, sizeof(*s));
	s->stop = stop;
	s->path = path;
	/* not emptied here: a failed load must leave an existing file as it was */
	fd = ks_file_create(path, 0, &s->created);
	if (fd < 0) {
		p_err("cannot open output '%s': %s", KS_ESC(path), ks_file_strerror(path, fd));
		return fd;
	}
	if (fstat(fd, &st)) {
		int err = errno;

		close(fd);
		p_err("cannot open output '%s': %s", KS_ESC(path), strerror(err));
		return -err;
	}
	s->fd = fd;
	s->own = true;
	s->is_reg = S_ISREG(st.st_mode);
	return 0;
}

int ks_sink_start(struct ks_sink *s)
{
	return s->own ? ks_file_empty(s->fd) : 0;
}

/* Waits until @fd takes data: 0, -EINTR when a stop came and @grace_ms passed without room, or -errno. */
static int wait_room(struct ks_sink *s, int grace_ms)
{
	int waited = 0;

	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };
		bool stopping = s->stop && *s->stop;
		int n;

		if (stopping && waited >= grace_ms)
			return -EINTR;
		n = poll(&p, 1, SINK_SLICE_MS);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			/* POLLERR/POLLHUP: the write below says which error */
			return 0;
		}
		if (stopping)
			waited += SINK_SLICE_MS;
	}
}

int ks_sink_write(struct ks_sink *s, const char *buf, size_t len, int grace_ms)
{
	while (len) {
		/* at most PIPE_BUF after POLLOUT: a pipe with room takes it without blocking */
		size_t chunk = s->is_reg || len < PIPE_BUF ? len : PIPE_BUF;
		ssize_t n;
		int err;

		if (!s->is_reg) {
			err = wait_room(s, grace_ms);
			if (err)
				return err;
		}
		/* no SA_RESTART on the stop handlers: a write that blocks anyway ends with EINTR */
		n = write(s->fd, buf, chunk);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int ks_sink_close(struct ks_sink *s, bool started)
{
	int err = 0;

	if (!s->own)
		return 0;
	if (close(s->fd))
		err = -errno;
	if (!started && s->created)
		unlink(s->path);
	s->own = false;
	return err;
}
