/* Streaming JSON writer: tracks nesting so callers never place commas or escape strings themselves. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/json.h"

#define KS_JSON_DEPTH 32

struct ks_json {
	FILE *out;
	int depth;
	bool first[KS_JSON_DEPTH]; /* no element written yet at this level */
	bool after_key;		   /* the next value completes a member */
};

struct ks_json *ks_json_new(FILE *out)
{
	struct ks_json *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->out = out;
	j->first[0] = true;
	return j;
}

void ks_json_free(struct ks_json *j)
{
	free(j);
}

/* Writes the separator owed before a new value or key. */
static void sep(struct ks_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
}

static void open_level(struct ks_json *j, char c)
{
	sep(j);
	fputc(c, j->out);
	if (j->depth < KS_JSON_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_level(struct ks_json *j, char c)
{
	fputc(c, j->out);
	if (j->depth > 0)
		j->depth--;
}

void ks_json_obj_begin(struct ks_json *j) { open_level(j, '{'); }
void ks_json_obj_end(struct ks_json *j) { close_level(j, '}'); }
void ks_json_arr_begin(struct ks_json *j) { open_level(j, '['); }
void ks_json_arr_end(struct ks_json *j) { close_level(j, ']'); }

/*
 * Length of the well-formed UTF-8 sequence at @p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0.
 */
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

/*
 * JSON text must be UTF-8, and a task's comm is any 15 bytes, often a
 * multi-byte name cut in the middle: each byte that is not part of a
 * well-formed sequence is written as U+FFFD.
 */
static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x80) {
			int n = ks_utf8_len(p);

			if (n) {
				fwrite(p, 1, (size_t)n, out);
				p += n - 1;
			} else {
				fputs("\\ufffd", out);
			}
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			/* DEL too: JSON allows it raw, but a terminal showing the text does not want it */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

void ks_json_key(struct ks_json *j, const char *key)
{
	sep(j);
	put_string(j->out, key);
	fputc(':', j->out);
	j->after_key = true;
}

void ks_json_str(struct ks_json *j, const char *s)
{
	sep(j);
	put_string(j->out, s ? s : "");
}

void ks_json_u64(struct ks_json *j, uint64_t v)
{
	sep(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void ks_json_i64(struct ks_json *j, int64_t v)
{
	sep(j);
	fprintf(j->out, "%lld", (long long)v);
}

void ks_json_double(struct ks_json *j, double v)
{
	char b[32];

	sep(j);
	if (!isfinite(v)) {
		fputs("null", j->out);
		return;
	}
	/* the shortest text that reads back as the same double: 0.1, but all of 2.000123456 */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	fputs(b, j->out);
}

void ks_json_bool(struct ks_json *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->out);
}

void ks_json_null(struct ks_json *j)
{
	sep(j);
	fputs("null", j->out);
}
