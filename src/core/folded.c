/* Folded stack files of two profiles into one table: each distinct stack once, with its count on each side. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/folded.h"
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

/* stacks are looked up by an index sorted as they come: a hash table would be faster, but profiles are thousands of lines */
static struct ks_fstack *find(struct ks_folded2 *f, const char *s)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].stack, s))
			return &f->v[i];
	return NULL;
}

int ks_folded_load(struct ks_folded2 *f, int side, const char *file, char *err, size_t errlen)
{
	FILE *in = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;

	if (!in) {
		rc = -errno;
		snprintf(err, errlen, "cannot read '%s': %s", KS_ESC(file), strerror(-rc));
		return rc;
	}
	while ((len = getline(&line, &cap, in)) >= 0) {
		struct ks_fstack *s;
		uint64_t n;

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
		s = find(f, line);
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
			if (!s->stack) {
				rc = -ENOMEM;
				break;
			}
			f->n++;
		}
		s->n[side] += n;
		f->total[side] += n;
	}
	if (!rc && ferror(in))
		rc = -EIO;
	if (rc && rc != -EBADMSG)
		snprintf(err, errlen, "reading '%s': %s", KS_ESC(file), strerror(-rc));
	free(line);
	fclose(in);
	return rc;
}

static int by_stack(const void *a, const void *b)
{
	return strcmp(((const struct ks_fstack *)a)->stack, ((const struct ks_fstack *)b)->stack);
}

void ks_folded_sort(struct ks_folded2 *f)
{
	if (f->n > 1)
		qsort(f->v, f->n, sizeof(*f->v), by_stack);
}

void ks_folded_free(struct ks_folded2 *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].stack);
	free(f->v);
	memset(f, 0, sizeof(*f));
}
