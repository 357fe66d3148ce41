/* Event formats from a recording checked before libtraceevent parses them for good, and again as it parsed them. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
#include <zlib.h>
#include <event-parse.h>
#include "format/fmtcheck.h"
#include "format/recfile.h"
#include "ksight/record.h"

#define PRINT_FMT "print fmt:"
#define EMPTY_PRINT PRINT_FMT " \"\"\n"

static int refuse(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static int check_fields(const struct tep_format_field *f, char *why, size_t whylen)
{
	for (; f; f = f->next) {
		if (f->offset < 0 || f->size < 0 || (int64_t)f->offset + f->size > KS_REC_MAX_RAW)
			return refuse(why, whylen, "field '%s' (offset %d, size %d) lies outside a record of %d bytes",
				      f->name, f->offset, f->size, KS_REC_MAX_RAW);
		if ((f->flags & TEP_FIELD_IS_DYNAMIC) && f->size != 4)
			return refuse(why, whylen, "dynamic field '%s' has size %d, not a 4-byte locator", f->name,
				      f->size);
	}
	return 0;
}

/* Fields, and common_type; the common fields' signature "name:offset:size;..." into @sig. */
static int check_event(const struct tep_event *ev, char *sig, size_t siglen, char *why, size_t whylen)
{
	const struct tep_format_field *f = ev->format.common_fields;
	size_t n = 0;
	int err = check_fields(f, why, whylen);

	if (!err)
		err = check_fields(ev->format.fields, why, whylen);
	if (err)
		return err;
	f = tep_find_common_field((struct tep_event *)ev, "common_type");
	if (!f || f->offset != 0 || f->size != 2)
		return refuse(why, whylen, "no common_type field in the record's first two bytes");
	sig[0] = '\0';
	for (f = ev->format.common_fields; f; f = f->next) {
		int k = snprintf(sig + n, siglen - n, "%s:%d:%d;", f->name, f->offset, f->size);

		if (k < 0 || (size_t)k >= siglen - n)
			return refuse(why, whylen, "too many common fields");
		n += (size_t)k;
	}
	return 0;
}

/* Every REC->NAME in the print format @p..@end names a field of @ev. */
static int check_print_refs(const struct tep_event *ev, const char *p, const char *end, char *why, size_t whylen)
{
	for (const char *s = p; s + 3 <= end; s++) {
		const char *q = s + 3, *name;
		char buf[128];

		if (memcmp(s, "REC", 3) || (s > p && (isalnum((unsigned char)s[-1]) || s[-1] == '_')))
			continue;
		while (q < end && isspace((unsigned char)*q))
			q++;
		if (end - q < 2 || q[0] != '-' || q[1] != '>')
			continue;
		for (q += 2; q < end && isspace((unsigned char)*q); q++)
			;
		for (name = q; q < end && (isalnum((unsigned char)*q) || *q == '_'); q++)
			;
		if (q == name || (size_t)(q - name) >= sizeof(buf))
			return refuse(why, whylen, "a REC-> in its print format names no field");
		memcpy(buf, name, (size_t)(q - name));
		buf[q - name] = '\0';
		if (!tep_find_any_field((struct tep_event *)ev, buf))
			return refuse(why, whylen, "its print format names no field '%s'", buf);
	}
	return 0;
}

/* "DIGITS;" at *@p, advanced past it; false if not. */
static bool number_then_semi(const char **p, const char *end)
{
	const char *q = *p;

	while (q < end && isdigit((unsigned char)*q))
		q++;
	if (q == *p || q - *p > 10 || q >= end || *q != ';')
		return false;
	*p = q + 1;
	return true;
}

static bool skip_lit(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/*
 * A field's declaration as all 2,323 formats of 6.18 write it: words
 * split by one space, each '*'s, an identifier, "[N]" or "[]", '*'s; at
 * least two, the last an identifier (the name).  libtraceevent's field
 * parser leaks what it fails on ("pid]t", "__print_hex(x" as a type).
 */
static bool decl_ok(const char *p, const char *end)
{
	int words = 0;
	bool named = false;

	while (p < end) {
		const char *w = p;

		named = false;
		while (p < end && *p == '*')
			p++;
		if (p < end && (isalpha((unsigned char)*p) || *p == '_')) {
			named = true;
			while (p < end && ident_char(*p))
				p++;
		}
		if (p < end && *p == '[') {
			for (p++; p < end && ident_char(*p); p++)
				;
			if (p == end || *p++ != ']')
				return false;
		}
		while (p < end && *p == '*') {
			named = false;
			p++;
		}
		if (p == w || (p < end && *p++ != ' ') || (p < end && *p == ' ') || p - w > 64)
			return false;
		words++;
	}
	return words >= 2 && named;
}

/*
 * The shape tracefs writes, line by line: "name: N", "ID: N", "format:",
 * then field lines ("\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;") and
 * empty lines up to "print fmt: ...", all printable ASCII.  libtraceevent's
 * parser leaks on what it cannot classify (a byte 0xff in a type), so only
 * this shape reaches it.
 */
static int check_shape(const char *text, const char *pf, const char *end, char *why, size_t whylen)
{
	const char *p = text;

	for (const char *q = text; q < end; q++)
		if ((*q < 0x20 || *q > 0x7e) && *q != '\t' && *q != '\n')
			return refuse(why, whylen, "a byte 0x%02x in its text", (unsigned char)*q);
	if (!skip_lit(&p, pf, "name: ") || !(p = memchr(p, '\n', (size_t)(pf - p))) || !skip_lit(&p, pf, "\nID: ") ||
	    !(p = memchr(p, '\n', (size_t)(pf - p))) || !skip_lit(&p, pf, "\nformat:\n"))
		return refuse(why, whylen, "not the name, ID and format lines of a tracefs format");
	while (p < pf) {
		const char *decl = p;

		if (*p == '\n') {
			p++;
			continue;
		}
		if (!skip_lit(&p, pf, "\tfield:"))
			return refuse(why, whylen, "a line other than a field before its print format");
		for (decl = p; p < pf && *p != ';' && *p != '\n'; p++)
			;
		if (!decl_ok(decl, p) || !skip_lit(&p, pf, ";\toffset:") || !number_then_semi(&p, pf) ||
		    !skip_lit(&p, pf, "\tsize:") || !number_then_semi(&p, pf) || !skip_lit(&p, pf, "\tsigned:") ||
		    !number_then_semi(&p, pf) || !skip_lit(&p, pf, "\n"))
			return refuse(why, whylen, "a field line not as tracefs writes it");
	}
	return 0;
}

/*
 * True when the print format @pf..@end prints a byte range only as
 * __print_hex[_str](__get_dynamic_array(X), __get_dynamic_array_len(X)):
 * libtraceevent reads __print_hex's and __print_array's length from the
 * format or the record (a constant 100000, REC->len) and reads that many
 * bytes, past the record.  A dynamic array's length is checked against
 * its record when it is read (recording.c fits()).
 */
static bool print_ranges_safe(const char *pf, const char *end)
{
	static const char *const helpers[] = { "__print_hex(", "__print_hex_str(", "__print_array(" };
	size_t len = (size_t)(end - pf);

	for (int h = 0; h < 3; h++) {
		const char *p = pf;
		size_t hl = strlen(helpers[h]);

		while ((p = memmem(p, len - (size_t)(p - pf), helpers[h], hl))) {
			char a[64], b[64];
			int n = -1;

			p += hl;
			if (h == 2)
				return false; /* a count and an element size: printed raw */
			if (sscanf(p, "__get_dynamic_array(%63[A-Za-z0-9_]), __get_dynamic_array_len(%63[A-Za-z0-9_]))%n", a,
				   b, &n) != 2 ||
			    n < 0 || strcmp(a, b))
				return false;
		}
	}
	return true;
}

/* One format's verdict from the probing child: a pipe record, under PIPE_BUF so it is written whole. */
struct verdict {
	int32_t index, state, id;
	char sig[256]; /* its common fields */
	char why[160];
};

enum { V_NONE, V_REFUSED, V_OK, V_OK_FIELDS /* its print format does not parse: left empty */ };

/* @f's fields alone, in a scratch handle: @f->text up to its print format, then an empty one; NULL on ENOMEM. */
static char *fields_only(const struct ks_fmt *f, const char *pf, size_t *len)
{
	size_t hl = (size_t)(pf - f->text);
	char *head = malloc(hl + sizeof(EMPTY_PRINT));

	if (head) {
		memcpy(head, f->text, hl);
		memcpy(head + hl, EMPTY_PRINT, sizeof(EMPTY_PRINT));
		*len = hl + strlen(EMPTY_PRINT);
	}
	return head;
}

/* Everything that takes libtraceevent, on one format: run in the probing child. */
static void probe_one(const struct ks_fmt *f, struct verdict *v)
{
	const char *pf = memmem(f->text, f->len, PRINT_FMT, strlen(PRINT_FMT));
	struct tep_handle *t = NULL, *full = NULL;
	struct tep_event *ev;
	char *head = NULL;
	size_t hl;

	v->state = V_REFUSED;
	v->id = -1;
	if (!pf) {
		refuse(v->why, sizeof(v->why), "no print format");
		return;
	}
	if (check_shape(f->text, pf, f->text + f->len, v->why, sizeof(v->why)))
		return;
	head = fields_only(f, pf, &hl);
	t = tep_alloc();
	full = tep_alloc();
	if (!head || !t || !full) {
		refuse(v->why, sizeof(v->why), "out of memory");
		goto cleanup;
	}
	ev = tep_parse_event(t, head, hl, f->sys) ? NULL : tep_get_first_event(t);
	if (!ev || tep_get_events_count(t) != 1) {
		refuse(v->why, sizeof(v->why), "its fields do not parse");
		goto cleanup;
	}
	if (check_event(ev, v->sig, sizeof(v->sig), v->why, sizeof(v->why)) ||
	    check_print_refs(ev, pf, f->text + f->len, v->why, sizeof(v->why)))
		goto cleanup;
	v->id = ev->id;
	v->state = V_OK_FIELDS;
	/* libtraceevent keeps an event whose print format fails, flagged, and leaks: then it gets an empty one,
	 * as does one that prints a byte range of a length not checked against the record */
	if (!tep_parse_event(full, f->text, f->len, f->sys)) {
		ev = tep_get_first_event(full);
		if (ev && ev->id == v->id && !(ev->flags & TEP_EVENT_FL_FAILED) && tep_get_events_count(full) == 1 &&
		    print_ranges_safe(pf, f->text + f->len))
			v->state = V_OK;
	}
cleanup:
	if (full)
		tep_free(full);
	if (t)
		tep_free(t);
	free(head);
}

static bool read_verdict(int fd, struct verdict *v)
{
	size_t got = 0;

	while (got < sizeof(*v)) {
		ssize_t n = read(fd, (char *)v + got, sizeof(*v) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/*
 * Verdicts on @v[0..n) from a child process, so that what libtraceevent
 * leaks or crashes on while trying them is the child's, not ours: a child
 * that dies leaves the format it was on refused, and a new one goes on
 * from the next.  One fork per recording, not per format.
 */
static int probe_all(const struct ks_fmt *v, size_t n, struct verdict *out)
{
	size_t from = 0;

	for (size_t i = 0; i < n; i++)
		out[i] = (struct verdict){ .index = (int32_t)i, .state = V_NONE, .id = -1 };
	while (from < n) {
		struct verdict vd;
		int pfd[2], st;
		pid_t pid;

		if (pipe2(pfd, O_CLOEXEC) < 0)
			return -errno;
		pid = fork();
		if (pid < 0) {
			close(pfd[0]);
			close(pfd[1]);
			return -errno;
		}
		if (pid == 0) {
			close(pfd[0]);
			for (size_t i = from; i < n; i++) {
				memset(&vd, 0, sizeof(vd));
				probe_one(&v[i], &vd);
				vd.index = (int32_t)i;
				if (write(pfd[1], &vd, sizeof(vd)) != (ssize_t)sizeof(vd))
					_exit(1);
			}
			_exit(0); /* no exit handlers: the leaks stay uncounted, the parent's buffers unflushed */
		}
		close(pfd[1]);
		while (read_verdict(pfd[0], &vd))
			if (vd.index >= 0 && (size_t)vd.index < n && vd.state != V_NONE) {
				vd.sig[sizeof(vd.sig) - 1] = vd.why[sizeof(vd.why) - 1] = '\0';
				out[vd.index] = vd;
			}
		close(pfd[0]);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		while (from < n && out[from].state != V_NONE)
			from++;
		if (from < n) {
			refuse(out[from].why, sizeof(out[from].why), "libtraceevent failed on it");
			out[from++].state = V_REFUSED;
		}
	}
	return 0;
}

/*
 * Verdicts already had in this process, by the format's whole text: a
 * command reads one recording, but the tests and the fuzzer read the same
 * formats thousands of times, and a fork under ASan costs milliseconds.
 */
#define CACHE_MAX 128

static struct cached {
	char *key; /* sys, NUL, text */
	size_t len;
	struct verdict v;
} cache[CACHE_MAX];
static unsigned cache_next;

static struct cached *cache_find(const struct ks_fmt *f)
{
	size_t sl = strlen(f->sys) + 1;

	for (int i = 0; i < CACHE_MAX; i++)
		if (cache[i].key && cache[i].len == sl + f->len && !memcmp(cache[i].key, f->sys, sl) &&
		    !memcmp(cache[i].key + sl, f->text, f->len))
			return &cache[i];
	return NULL;
}

static void cache_put(const struct ks_fmt *f, const struct verdict *v)
{
	size_t sl = strlen(f->sys) + 1;
	struct cached *c = &cache[cache_next++ % CACHE_MAX];
	char *key = malloc(sl + f->len);

	if (!key)
		return;
	memcpy(key, f->sys, sl);
	memcpy(key + sl, f->text, f->len);
	free(c->key);
	*c = (struct cached){ key, sl + f->len, *v };
}

/* Verdicts on @v[0..n): from the cache, the others from a child (probe_all). */
static int verdicts(const struct ks_fmt *v, size_t n, struct verdict *out)
{
	struct ks_fmt *todo = calloc(n + 1, sizeof(*todo));
	struct verdict *got = calloc(n + 1, sizeof(*got));
	size_t *at = calloc(n + 1, sizeof(*at)), k = 0;
	int err = 0;

	if (!todo || !got || !at) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		struct cached *c = cache_find(&v[i]);

		if (c) {
			out[i] = c->v;
			continue;
		}
		at[k] = i;
		todo[k++] = v[i];
	}
	err = k ? probe_all(todo, k, got) : 0;
	for (size_t j = 0; j < k && !err; j++) {
		out[at[j]] = got[j];
		cache_put(&todo[j], &got[j]);
	}
cleanup:
	free(todo);
	free(got);
	free(at);
	return err;
}

int ks_fmt_add_all(struct tep_handle *tep, struct ks_fmt *v, size_t n)
{
	struct verdict *vd = calloc(n + 1, sizeof(*vd));
	char commons[sizeof(vd->sig)] = "";
	int err;

	if (!vd)
		return -ENOMEM;
	err = verdicts(v, n, vd);
	for (size_t i = 0; i < n && !err; i++) {
		struct ks_fmt *f = &v[i];
		const char *pf = memmem(f->text, f->len, PRINT_FMT, strlen(PRINT_FMT));
		char *head = NULL;
		struct tep_event *ev;
		size_t hl;

		f->id = -1;
		f->refused = vd[i].state == V_REFUSED;
		f->raw_print = vd[i].state == V_OK_FIELDS;
		snprintf(f->why, sizeof(f->why), "%s", vd[i].why);
		if (f->refused)
			continue;
		f->refused = true;
		/* libtraceevent reads every record's common fields through one format's */
		if (commons[0] && strcmp(commons, vd[i].sig)) {
			refuse(f->why, sizeof(f->why), "its common fields differ from those of the formats before it");
			continue;
		}
		if (tep_find_event(tep, vd[i].id)) {
			refuse(f->why, sizeof(f->why), "a second format for event ID %d", vd[i].id);
			continue;
		}
		/* the text the child parsed without a failure, so without a leak */
		if (f->raw_print && !(head = fields_only(f, pf, &hl))) {
			err = -ENOMEM;
			break;
		}
		tep_parse_event(tep, head ? head : f->text, head ? hl : f->len, f->sys);
		free(head);
		ev = tep_find_event(tep, vd[i].id);
		if (!ev) {
			refuse(f->why, sizeof(f->why), "it does not parse");
			continue;
		}
		f->id = ev->id;
		if (check_event(ev, vd[i].sig, sizeof(vd[i].sig), f->why, sizeof(f->why)))
			continue; /* as parsed here: in @tep all the same, its records to be left out by ID */
		if (!commons[0])
			memcpy(commons, vd[i].sig, sizeof(commons));
		f->refused = false;
	}
	free(vd);
	return err;
}

static bool clean_bytes(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

/* Bytes of the lines before the empty line that ends them (escaped values hold no raw newline), or @len when none does. */
static size_t head_end(const char *p, size_t len)
{
	size_t head = 0;

	while (head < len && !(p[head] == '\n' && (head == 0 || p[head - 1] == '\n')))
		head++;
	return head;
}

/* Value of @key in the lines as a decimal length; false when absent or not one. */
static bool get_len(const char *p, size_t head, const char *key, size_t *out)
{
	char num[32], *end;
	unsigned long long v;

	if (!ks_rec_kv_get(p, head, key, num, sizeof(num)) || !isdigit((unsigned char)num[0]))
		return false;
	errno = 0;
	v = strtoull(num, &end, 10);
	if (*end || errno || v > SIZE_MAX)
		return false;
	*out = (size_t)v;
	return true;
}

int ks_rec_report_inflate(const char *p, size_t len, char **plain, size_t *plen, char *why, size_t whylen)
{
	size_t head = head_end(p, len), jl, tl, zl, raw;
	uLongf got;
	char *out;

	*plain = NULL;
	if (head >= len || !ks_rec_kv_get(p, head, "zlib_len", (char[2]){ 0 }, 2))
		return 0; /* not deflated (or no end: ks_rec_report_check says so) */
	if (!get_len(p, head, "zlib_len", &zl) || zl != len - head - 1 || !get_len(p, head, "json_len", &jl) ||
	    !get_len(p, head, "text_len", &tl))
		return refuse(why, whylen, "report chunk: its deflated lengths do not add up to its %zu bytes", len - head - 1);
	if (jl > KS_REC_MAX_PAYLOAD || tl > KS_REC_MAX_PAYLOAD - jl)
		return refuse(why, whylen, "report chunk: its reports would inflate past %u MiB", KS_REC_MAX_PAYLOAD >> 20);
	/* the size is the one declared, bounded: no more is inflated than a chunk could hold */
	raw = jl + tl;
	out = malloc(head + 1 + raw + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, p, head + 1);
	got = (uLongf)raw;
	if (uncompress((Bytef *)out + head + 1, &got, (const Bytef *)p + head + 1, (uLong)zl) != Z_OK || got != raw) {
		free(out);
		return refuse(why, whylen, "report chunk: its deflated reports do not inflate to their %zu bytes", raw);
	}
	out[head + 1 + raw] = '\0';
	*plain = out;
	*plen = head + 1 + raw;
	return 0;
}

int ks_rec_report_check(const char *p, size_t len, struct ks_rec_report_view *v, char *why, size_t whylen)
{
	char kind[16];
	size_t head = head_end(p, len), rest, jl, tl;

	memset(v, 0, sizeof(*v));
	if (head >= len)
		return refuse(why, whylen, "report chunk: no end to its lines");
	v->kv = p;
	v->kv_len = head;
	rest = len - head - 1;
	if (!ks_rec_kv_get(p, head, "collector", v->collector, sizeof(v->collector)) || !v->collector[0] ||
	    strspn(v->collector, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v->collector))
		return refuse(why, whylen, "report chunk: no collector name of the known shape");
	if (!ks_rec_kv_get(p, head, "kind", kind, sizeof(kind)) || (strcmp(kind, "interval") && strcmp(kind, "total")))
		return refuse(why, whylen, "report chunk of %s: kind is neither interval nor total", v->collector);
	v->total = !strcmp(kind, "total");
	if (!get_len(p, head, "json_len", &jl) || !get_len(p, head, "text_len", &tl) || jl > rest || tl != rest - jl)
		return refuse(why, whylen, "report chunk of %s: its lengths do not add up to its %zu bytes", v->collector,
			      rest);
	v->json = p + head + 1;
	v->json_len = jl;
	v->text = v->json + jl;
	v->text_len = tl;
	if (!clean_bytes(v->json, v->json_len) || !clean_bytes(v->text, v->text_len))
		return refuse(why, whylen, "report chunk of %s: a control byte in its report", v->collector);
	return 0;
}
