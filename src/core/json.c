/* Streaming JSON writer: tracks nesting so callers never place commas or escape strings themselves. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/json.h"
#include "core/sanitize.h"

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

/* JSON's quoting of sanitized text, which has no control characters left. */
static const char *json_quote(char c)
{
	return c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
}

/*
 * JSON text must be UTF-8, and a task's comm is any 15 bytes, often a
 * multi-byte name cut in the middle: strings go through the one sanitizer
 * every output shares (core/sanitize.h), then JSON's quoting.
 */
static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	ks_sanitize_put(out, s, json_quote);
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

bool ks_json_is_number_text(const char *s)
{
	const char *d;
	bool dot = false;

	if (*s == '-')
		s++;
	d = s;
	/* -?(0|[1-9][0-9]*)(\.[0-9]+)?: the JSON grammar less exponents; no leading zeros, no sign on its own */
	if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1])))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s == '.') {
		dot = true;
		if (!isdigit((unsigned char)*++s))
			return false;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s)
		return false;
	/* an integer a double cannot hold exactly (past 2^53: a realtime clock in ns) would be rounded by most readers */
	if (!dot) {
		size_t n = strlen(d);

		if (n > 16 || (n == 16 && strcmp(d, "9007199254740992") > 0))
			return false;
	}
	return true;
}

void ks_json_str_or_number(struct ks_json *j, const char *s)
{
	if (!ks_json_is_number_text(s)) {
		ks_json_str(j, s);
		return;
	}
	sep(j);
	fputs(s, j->out);
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
