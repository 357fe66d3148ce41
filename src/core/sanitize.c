/* The sanitizer every output runs names through: valid UTF-8 without control characters, one-to-one (see sanitize.h). */
#include <errno.h>
#include <string.h>
#include "core/sanitize.h"

int ks_utf8_len(const unsigned char *p)
{
	unsigned int cp;
	int n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void hex(char *out, unsigned char b)
{
	static const char digits[] = "0123456789abcdef";

	out[0] = '\\';
	out[1] = 'x';
	out[2] = digits[b >> 4];
	out[3] = digits[b & 15];
}

size_t ks_sanitize_next(const char *s, char piece[KS_SAN_PIECE])
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	piece[0] = 0;
	if (!p || !*p)
		return 0;
	if (*p == '\\') {
		memcpy(piece, "\\\\", 3);
		return 1;
	}
	if (*p >= 0x20 && *p < 0x7f) {
		piece[0] = (char)*p;
		piece[1] = 0;
		return 1;
	}
	n = *p >= 0x80 ? ks_utf8_len(p) : 0;
	/* U+0080..U+009F: C1 controls (a lone 0x9b is CSI on some terminals), as their two bytes */
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
		hex(piece, p[0]);
		hex(piece + 4, p[1]);
		piece[8] = 0;
		return 2;
	}
	if (n) {
		memcpy(piece, p, (size_t)n);
		piece[n] = 0;
		return (size_t)n;
	}
	/* a C0 control, DEL, or a byte that starts no well-formed sequence: each byte on its own */
	hex(piece, *p);
	piece[4] = 0;
	return 1;
}

size_t ks_sanitize(const char *s, char *buf, size_t len)
{
	char piece[KS_SAN_PIECE];
	size_t o = 0, used;

	if (!len)
		return 0;
	while ((used = ks_sanitize_next(s, piece))) {
		size_t n = strlen(piece);

		if (o + n >= len)
			break;
		memcpy(buf + o, piece, n);
		o += n;
		s += used;
	}
	buf[o] = 0;
	return o;
}

size_t ks_sanitized_len(const char *s)
{
	char piece[KS_SAN_PIECE];
	size_t o = 0, used;

	while ((used = ks_sanitize_next(s, piece))) {
		o += strlen(piece);
		s += used;
	}
	return o;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int ks_unsanitize(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	while (*s) {
		int hi = s[0] == '\\' && s[1] == 'x' ? hexval(s[2]) : -1;
		int lo = hi >= 0 ? hexval(s[3]) : -1;
		char c = *s;
		size_t used = 1;

		if (s[0] == '\\' && s[1] == '\\') {
			used = 2;
		} else if (lo >= 0 && (hi | lo)) {
			c = (char)(hi << 4 | lo);
			used = 4;
		}
		if (o + 1 >= len)
			return -ENOSPC;
		buf[o++] = c;
		s += used;
	}
	if (!len)
		return -ENOSPC;
	buf[o] = 0;
	return (int)o;
}

void ks_sanitize_put(FILE *out, const char *s, ks_quote_fn *quote)
{
	char piece[KS_SAN_PIECE];
	size_t used;

	while ((used = ks_sanitize_next(s, piece))) {
		for (const char *c = piece; *c; c++) {
			const char *q = quote ? quote(*c) : NULL;

			if (q)
				fputs(q, out);
			else
				fputc(*c, out);
		}
		s += used;
	}
}

const char *ks_quote_xml(char c)
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	default: return NULL;
	}
}
