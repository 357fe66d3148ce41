/* Folded stack files of two profiles into one table: each distinct stack once, with its count on each side. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/folded.h"
#include "core/hash.h"
#include "core/parse.h"

/* The count at the end of @line ("stack 123"), cutting it off; -EBADMSG when the line has none. */
static int split_count(char *line, uint64_t *n)
{
	char *sp = strrchr(line, ' ');

	if (!sp || sp == line || ks_parse_u64(sp + 1, 0, UINT64_MAX / 4, n))
		return -EBADMSG;
	*sp = 0;
	return 0;
}

int ks_folded_sniff(const char *file)
{
	FILE *f = fopen(file, "re");
	char line[4096];
	uint64_t n;
	int yes = 0;

	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		yes = line[0] != '{' && !split_count(line, &n);
	}
	fclose(f);
	return yes;
}

static bool stack_eq(const void *ctx, size_t pos)
{
	const void *const *k = ctx;

	return !strcmp(((const struct ks_folded2 *)k[0])->v[pos].stack, k[1]);
}

static struct ks_fstack *find(struct ks_folded2 *f, const char *s, uint64_t h)
{
	const void *k[2] = { f, s };
	long pos = ks_strindex_find(&f->idx, h, stack_eq, k);

	return pos < 0 ? NULL : &f->v[pos];
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * Reads back in place the escapes of core/sanitize.h ("\\" and "\xNN") that
 * ksight's folded writers put in names, so that the stack the outputs escape
 * again shows as in the file (a comm 0xff 0xfe as \xff\xfe, not \\xff\\xfe).
 * Any other backslash stays one; "\x00" stays text (a NUL would cut the stack).
 */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == '\\') {
			*o++ = '\\';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0 &&
			   (hexval(s[2]) || hexval(s[3]))) {
			*o++ = (char)(hexval(s[2]) * 16 + hexval(s[3]));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

int ks_folded_load(struct ks_folded2 *f, int side, const char *file, char *err, size_t errlen)
{
	FILE *in = fopen(file, "re");
	int rc;

	if (!in) {
		rc = -errno;
		snprintf(err, errlen, "cannot read '%s': %s", KS_ESC(file), strerror(-rc));
		return rc;
	}
	rc = ks_folded_read(f, side, in, file, err, errlen);
	fclose(in);
	return rc;
}

int ks_folded_read(struct ks_folded2 *f, int side, FILE *in, const char *file, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &cap, in)) >= 0) {
		struct ks_fstack *s;
		uint64_t n, h;

		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		if (split_count(line, &n)) {
			snprintf(err, errlen, "'%s' line %zu is not 'FRAME;FRAME... COUNT'", KS_ESC(file), lineno);
			rc = -EBADMSG;
			break;
		}
		unescape(line);
		h = ks_fnv1a(line, strlen(line), KS_FNV1A_INIT);
		s = find(f, line, h);
		if (!s) {
			if (f->n == f->cap) {
				size_t c = f->cap ? f->cap * 2 : 256;
				struct ks_fstack *g = realloc(f->v, c * sizeof(*g));

				if (!g) {
					rc = -ENOMEM;
					break;
				}
				f->v = g;
				f->cap = c;
			}
			s = &f->v[f->n];
			memset(s, 0, sizeof(*s));
			s->stack = strdup(line);
			if (!s->stack || ks_strindex_add(&f->idx, h, f->n)) {
				free(s->stack);
				rc = -ENOMEM;
				break;
			}
			f->n++;
		}
		if (n > UINT64_MAX / 4 - f->total[side]) {
			snprintf(err, errlen, "'%s' line %zu: the counts add up past 2^62", KS_ESC(file), lineno);
			rc = -EBADMSG;
			break;
		}
		s->n[side] += n;
		f->total[side] += n;
	}
	if (!rc && ferror(in))
		rc = -EIO;
	if (rc && rc != -EBADMSG)
		snprintf(err, errlen, "reading '%s': %s", KS_ESC(file), strerror(-rc));
	free(line);
	return rc;
}

static int by_stack(const void *a, const void *b)
{
	return strcmp(((const struct ks_fstack *)a)->stack, ((const struct ks_fstack *)b)->stack);
}

void ks_folded_sort(struct ks_folded2 *f)
{
	/* the index holds positions: sorting ends the loading */
	ks_strindex_free(&f->idx);
	if (f->n > 1)
		qsort(f->v, f->n, sizeof(*f->v), by_stack);
}

void ks_folded_free(struct ks_folded2 *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].stack);
	free(f->v);
	ks_strindex_free(&f->idx);
	memset(f, 0, sizeof(*f));
}
