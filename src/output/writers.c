/* The writer table and what every writer shares: rendering into memory and honest stream errors. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/output.h"

const struct ks_writer ks_writers[] = {
	{ "text", ks_write_text, "tables and drawn histograms for a terminal" },
	{ "json", ks_write_json, "one JSON document per report (docs/json.md)" },
	{ NULL, NULL, NULL },
};

const struct ks_writer *ks_writer_find(const char *name)
{
	for (const struct ks_writer *w = ks_writers; w->name; w++)
		if (!strcmp(w->name, name))
			return w;
	return NULL;
}

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
	m = open_memstream(buf, len);
	if (!m)
		return -errno;
	err = w->write(r, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return err;
}

/* The old entry points, kept for callers outside the driver. */
int ks_report_write_text(const struct ks_report *r, FILE *out)
{
	return ks_write_text(r, out);
}

int ks_report_write_json(const struct ks_report *r, FILE *out)
{
	return ks_write_json(r, out);
}
