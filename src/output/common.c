/* What every writer shares: honest stream errors, rendering into memory, timestamps. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "output/output.h"

int ks_stream_status(FILE *out)
{
	int err;

	errno = 0;
	if (!fflush(out) && !ferror(out))
		return 0;
	/* fflush leaves the failed write's errno; an error flag from an earlier write has none */
	err = errno ? -errno : -EIO;
	clearerr(out);
	return err;
}

int ks_writer_render(const struct ks_writer *w, const struct ks_report *r, char **buf, size_t *len)
{
	FILE *m;
	int err;

	*buf = NULL;
	*len = 0;
	if (!w->report)
		return -EINVAL;
	m = open_memstream(buf, len);
	if (!m)
		return -errno;
	err = w->report(r, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return err;
}

const char *ks_fmt_iso8601(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	char b[32];

	gmtime_r(&ts->tv_sec, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", b, ts->tv_nsec / 1000000);
	return buf;
}
