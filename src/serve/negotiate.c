/* What /metrics sends: the exposition format and encoding an HTTP request asks for, and gzip. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include "serve/negotiate.h"

/* The q-value of one media range's parameters (1 when absent). */
static double qvalue(const char *params)
{
	const char *q = strstr(params, ";q=");

	if (!q)
		q = strstr(params, "; q=");
	return q ? strtod(strchr(q, '=') + 1, NULL) : 1.0;
}

enum prom_format prom_negotiate(const char *accept)
{
	enum prom_format best = PROM_FMT_TEXT;
	double best_q = -1;
	char *dup, *save = NULL;

	if (!accept || !(dup = strdup(accept)))
		return PROM_FMT_TEXT;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		double q;
		int fmt;
		char *p;

		while (*t == ' ')
			t++;
		/* parameters without spaces, for the substring tests below */
		for (p = t; *p; p++)
			if (*p == ' ')
				memmove(p, p + 1, strlen(p));
		q = qvalue(t);
		if (!strncasecmp(t, "application/vnd.google.protobuf", 31) &&
		    strstr(t, "proto=io.prometheus.client.MetricFamily") && strstr(t, "encoding=delimited"))
			fmt = PROM_FMT_PROTO;
		else if (!strncasecmp(t, "application/openmetrics-text", 28))
			fmt = PROM_FMT_OPENMETRICS;
		else if (!strncasecmp(t, "text/plain", 10) || !strncmp(t, "*/*", 3))
			fmt = PROM_FMT_TEXT;
		else
			continue;
		if (q > best_q) {
			best_q = q;
			best = (enum prom_format)fmt;
		}
	}
	free(dup);
	return best;
}

enum prom_encoding prom_negotiate_encoding(const char *ae)
{
	double gzip = -1, identity = -1, star = -1;
	char *dup, *save = NULL;

	if (!ae)
		return PROM_ENC_IDENTITY;
	if (!(dup = strdup(ae)))
		return PROM_ENC_IDENTITY;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t n;
		double q;

		while (*t == ' ' || *t == '\t')
			t++;
		n = strcspn(t, " \t;");
		q = qvalue(t);
		if (q < 0 || q > 1)
			q = 0;
		if ((n == 4 && !strncasecmp(t, "gzip", 4)) || (n == 6 && !strncasecmp(t, "x-gzip", 6)))
			gzip = q > gzip ? q : gzip;
		else if (n == 8 && !strncasecmp(t, "identity", 8))
			identity = q;
		else if (n == 1 && *t == '*')
			star = q;
	}
	free(dup);
	if (gzip < 0)
		gzip = star;
	/* identity, when not named, is acceptable (unless "*;q=0") but not preferred to gzip */
	if (gzip > 0 && gzip >= identity)
		return PROM_ENC_GZIP;
	if (identity < 0)
		identity = star < 0 ? 1 : star;
	if (identity > 0)
		return PROM_ENC_IDENTITY;
	return gzip > 0 ? PROM_ENC_GZIP : PROM_ENC_NONE;
}

int prom_gzip(const void *in, size_t len, int level, char **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap;
	char *buf;
	int zr;

	/* windowBits 15 + 16: a gzip wrapper (RFC 1952), what Content-Encoding: gzip names */
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)cap;
	/* deflateBound's room: one Z_FINISH ends the stream */
	zr = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}
