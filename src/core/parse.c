/* Number parsing with end-pointer and range checks, so "10x" or "-1" is never taken for a number. */
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/parse.h"
#include "core/sanitize.h"

int ks_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	if (!isdigit((unsigned char)*s))
		return *s == '-' ? -ERANGE : -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ks_parse_seconds(const char *s, double *out)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "ns", 1e-9 }, { "m", 60 }, { "h", 3600 },
	};
	double v;
	char *end;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit)) {
			if (v < 0)
				return -ERANGE;
			*out = v * units[i].mul;
			return 0;
		}
	}
	return -EINVAL;
}

int ks_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	default: return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

int ks_parse_cpulist(const char *s, uint64_t *bits, unsigned int nbits)
{
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	memset(bits, 0, (nbits + 63) / 64 * sizeof(uint64_t));
	while (*p) {
		unsigned long a, b;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			b = strtoul(p, &end, 10);
		}
		if (b < a)
			return -EINVAL;
		if (b >= nbits)
			return -ERANGE;
		for (unsigned long c = a; c <= b; c++)
			bits[c / 64] |= 1ull << (c % 64);
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -EINVAL; /* junk, or a trailing comma ("0,"): a list cut short */
	}
	return 0;
}

const char *ks_escape(const char *s, char *buf, size_t len)
{
	size_t n;

	if (!len)
		return "";
	n = ks_sanitize(s, buf, len);
	/* cut short: say so rather than pass a prefix off as the whole */
	if (n < ks_sanitized_len(s) && len > 4) {
		n = ks_sanitize(s, buf, len - 3);
		memcpy(buf + n, "...", 4);
	}
	return buf;
}
