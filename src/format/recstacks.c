/* record --profile: the profile's stacks as one KS_REC_STACKS chunk of a recording, written and read back (checked) as struct ks_stacks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "format/recstacks.h"

/* the sample types and units ksight's stack profiles have: the loaded model points at these */
static const char *const sample_types[] = { "samples", "offcpu", "syscalls", "bio", NULL };
static const char *const units[] = { "count", "nanoseconds", "bytes", NULL };

struct body {
	unsigned char *b;
	size_t len, cap;
};

static int put(struct body *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		unsigned char *b;

		while (cap < o->len + n)
			cap *= 2;
		b = realloc(o->b, cap);
		if (!b)
			return -ENOMEM;
		o->b = b;
		o->cap = cap;
	}
	memcpy(o->b + o->len, p, n);
	o->len += n;
	return 0;
}

static int serialise(const struct ks_stacks *st, struct body *o)
{
	int err = 0;

	for (size_t i = 0; i < st->nnames && !err; i++) {
		uint32_t n = (uint32_t)strlen(st->names[i]);
		uint8_t kind = st->kinds[i];

		err = put(o, &n, sizeof(n));
		if (!err)
			err = put(o, &kind, 1);
		if (!err)
			err = put(o, st->names[i], n);
	}
	for (size_t i = 0; i < st->n && !err; i++) {
		err = put(o, &st->s[i].n, sizeof(st->s[i].n));
		if (!err)
			err = put(o, &st->s[i].value, sizeof(st->s[i].value));
		if (!err)
			err = put(o, st->s[i].frames, (size_t)st->s[i].n * sizeof(uint32_t));
	}
	return err;
}

int ks_rec_stacks_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const char *head, size_t head_len,
			 const struct ks_stacks *st)
{
	struct ks_rec_kv kv = { 0 };
	struct body body = { 0 };
	int err;

	err = serialise(st, &body);
	if (err)
		goto cleanup;
	ks_rec_kv_add(&kv, "version", "%d", KS_REC_STACKS_VERSION);
	ks_rec_kv_add(&kv, "sample_type", "%s", st->sample_type);
	ks_rec_kv_add(&kv, "unit", "%s", st->unit);
	ks_rec_kv_add(&kv, "period_ns", "%llu", (unsigned long long)st->period_ns);
	ks_rec_kv_add(&kv, "time_ns", "%llu", (unsigned long long)st->time_ns);
	ks_rec_kv_add(&kv, "duration_ns", "%llu", (unsigned long long)st->duration_ns);
	ks_rec_kv_add(&kv, "total", "%llu", (unsigned long long)st->total);
	ks_rec_kv_add(&kv, "frames", "%zu", st->nnames);
	ks_rec_kv_add(&kv, "stacks", "%zu", st->n);
	ks_rec_kv_add(&kv, "raw_len", "%zu", body.len);
	/* frame names repeat their prefixes (libraries, namespaces): 99 Hz over 2 CPUs for 10 s deflates ~5x */
	err = ks_rec_deflated_append(w, c, KS_REC_STACKS, head, head_len, &kv, body.b, body.len);
cleanup:
	free(body.b);
	ks_rec_kv_free(&kv);
	return err;
}

static int refuse(char *why, size_t whylen, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return err;
}

/* @key's value in the lines as a number: true when there and all digits, at most @max. */
static bool kv_u64(const char *kv, size_t len, const char *key, uint64_t max, uint64_t *v)
{
	char buf[32], *end;

	if (!ks_rec_kv_get(kv, len, key, buf, sizeof(buf)) || buf[0] < '0' || buf[0] > '9')
		return false;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return !errno && !*end && *v <= max;
}

/* @key's value as one of @known (the static string), or NULL. */
static const char *kv_known(const char *kv, size_t len, const char *key, const char *const *known)
{
	char buf[32];

	if (!ks_rec_kv_get(kv, len, key, buf, sizeof(buf)))
		return NULL;
	for (int i = 0; known[i]; i++)
		if (!strcmp(buf, known[i]))
			return known[i];
	return NULL;
}

/* A cursor over the inflated body: each read checked against what is left. */
struct cur {
	const unsigned char *p;
	size_t left;
};

static bool take(struct cur *c, void *out, size_t n)
{
	if (n > c->left)
		return false;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static bool printable(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/*
 * The body walked twice: first only checked (nothing added, so a refused
 * chunk leaves @out as it was), then added with @ids mapping the file's
 * frame ids to @out's.
 */
static int walk(struct cur c, uint64_t nframes, uint64_t nstacks, uint64_t total, struct ks_stacks *out, uint32_t *ids,
		uint32_t *fr, char *why, size_t whylen)
{
	uint64_t sum = 0;
	char *name = NULL;

	for (uint64_t i = 0; i < nframes; i++) {
		uint32_t n;
		uint8_t kind;

		if (!take(&c, &n, sizeof(n)) || !take(&c, &kind, 1) || n > c.left)
			return refuse(why, whylen, -EBADMSG, "stacks chunk: frame %llu does not fit in its body",
				      (unsigned long long)i);
		if (!n || n > KS_REC_STACKS_MAX_NAME || kind > KS_FK_INLINE || !printable(c.p, n))
			return refuse(why, whylen, -EBADMSG, "stacks chunk: frame %llu has %s", (unsigned long long)i,
				      !n || n > KS_REC_STACKS_MAX_NAME ? "a name of no or too many bytes"
				      : kind > KS_FK_INLINE	       ? "an unknown kind"
								       : "a control byte in its name");
		if (out) {
			int64_t id;

			name = malloc(n + 1);
			if (!name)
				return -ENOMEM;
			memcpy(name, c.p, n);
			name[n] = 0;
			id = ks_stacks_frame(out, name, (enum ks_frame_kind)kind);
			free(name);
			if (id < 0)
				return (int)id;
			ids[i] = (uint32_t)id;
		}
		c.p += n;
		c.left -= n;
	}
	for (uint64_t i = 0; i < nstacks; i++) {
		uint32_t n;
		uint64_t value;

		if (!take(&c, &n, sizeof(n)) || !take(&c, &value, sizeof(value)) || (uint64_t)n * 4 > c.left)
			return refuse(why, whylen, -EBADMSG, "stacks chunk: stack %llu does not fit in its body",
				      (unsigned long long)i);
		if (!n || n > KS_REC_STACKS_MAX_DEPTH)
			return refuse(why, whylen, -EBADMSG, "stacks chunk: stack %llu has %u frames (1 to %d)",
				      (unsigned long long)i, n, KS_REC_STACKS_MAX_DEPTH);
		for (uint32_t j = 0; j < n; j++) {
			uint32_t f = UINT32_MAX;

			take(&c, &f, sizeof(f)); /* fits: checked with the depth */
			if (f >= nframes)
				return refuse(why, whylen, -EBADMSG, "stacks chunk: stack %llu names frame %u of %llu",
					      (unsigned long long)i, f, (unsigned long long)nframes);
			fr[j] = out ? ids[f] : f;
		}
		if (value > UINT64_MAX - sum)
			return refuse(why, whylen, -EBADMSG, "stacks chunk: its values overflow");
		sum += value;
		if (out) {
			int err = ks_stacks_add(out, fr, n, value);

			if (err)
				return err;
		}
	}
	if (c.left)
		return refuse(why, whylen, -EBADMSG, "stacks chunk: %zu bytes after its last stack", c.left);
	if (sum != total)
		return refuse(why, whylen, -EBADMSG, "stacks chunk: its stacks add up to %llu, not its total %llu",
			      (unsigned long long)sum, (unsigned long long)total);
	return 0;
}

int ks_rec_stacks_parse(const char *p, size_t len, struct ks_stacks *out, bool *inited, char *why, size_t whylen)
{
	const char *end = NULL, *st_type, *unit;
	uint64_t version, raw, zl, nframes, nstacks, total, period, t, dur;
	unsigned char *body = NULL;
	uint32_t *ids = NULL, *fr = NULL;
	uLongf got;
	size_t head;
	int err;

	/* the lines end at the first empty line: "\n\n", or a payload that starts with "\n" */
	for (size_t i = 0; i < len; i++)
		if (p[i] == '\n' && (i == 0 || p[i - 1] == '\n')) {
			end = p + i;
			break;
		}
	if (!end)
		return refuse(why, whylen, -EBADMSG, "stacks chunk: no end to its lines");
	head = (size_t)(end - p);
	if (!kv_u64(p, head, "version", UINT32_MAX, &version))
		return refuse(why, whylen, -EBADMSG, "stacks chunk: no version");
	if (version != KS_REC_STACKS_VERSION)
		return refuse(why, whylen, -EPROTO, "stacks chunk of version %llu: this ksight reads version %d",
			      (unsigned long long)version, KS_REC_STACKS_VERSION);
	st_type = kv_known(p, head, "sample_type", sample_types);
	unit = kv_known(p, head, "unit", units);
	if (!st_type || !unit)
		return refuse(why, whylen, -EBADMSG, "stacks chunk: a sample type or unit ksight does not write");
	if (!kv_u64(p, head, "raw_len", KS_REC_MAX_PAYLOAD, &raw) || !kv_u64(p, head, "zlib_len", UINT32_MAX, &zl) ||
	    !kv_u64(p, head, "frames", raw / 6, &nframes) || !kv_u64(p, head, "stacks", raw / 16, &nstacks) ||
	    !kv_u64(p, head, "total", UINT64_MAX, &total) || !kv_u64(p, head, "period_ns", UINT64_MAX, &period) ||
	    !kv_u64(p, head, "time_ns", UINT64_MAX, &t) || !kv_u64(p, head, "duration_ns", UINT64_MAX, &dur))
		return refuse(why, whylen, -EBADMSG, "stacks chunk: its lengths and counts are missing or out of range");
	if (zl != len - head - 1)
		return refuse(why, whylen, -EBADMSG, "stacks chunk: zlib_len %llu, but %zu bytes follow its lines",
			      (unsigned long long)zl, len - head - 1);
	/* no more is inflated than raw_len, itself bounded */
	body = malloc(raw ? raw : 1);
	ids = calloc(nframes ? nframes : 1, sizeof(*ids));
	fr = malloc(KS_REC_STACKS_MAX_DEPTH * sizeof(*fr));
	err = -ENOMEM;
	if (!body || !ids || !fr)
		goto cleanup;
	got = (uLongf)raw;
	err = refuse(why, whylen, -EBADMSG, "stacks chunk: its body does not inflate to its %llu bytes",
		     (unsigned long long)raw);
	if (uncompress(body, &got, (const Bytef *)end + 1, (uLong)zl) != Z_OK || got != raw)
		goto cleanup;
	err = walk((struct cur){ body, raw }, nframes, nstacks, total, NULL, NULL, fr, why, whylen);
	if (err)
		goto cleanup;
	if (!*inited) {
		ks_stacks_init(out, st_type, unit, period);
		out->time_ns = t;
		*inited = true;
	} else if (strcmp(out->sample_type, st_type) || strcmp(out->unit, unit)) {
		err = refuse(why, whylen, -EBADMSG, "stacks chunk: %s in %s beside %s in %s", st_type, unit,
			     out->sample_type, out->unit);
		goto cleanup;
	}
	out->duration_ns += dur;
	err = walk((struct cur){ body, raw }, nframes, nstacks, total, out, ids, fr, why, whylen);
cleanup:
	free(body);
	free(ids);
	free(fr);
	return err;
}

int ks_rec_stacks_load(const struct ks_rec_reader *r, struct ks_stacks *out, struct ks_rec_stacks_info *info)
{
	bool inited = false;
	int err = 0;

	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < r->nchunks && !err; i++) {
		char why[160];
		void *p;

		if (r->chunks[i].hdr.type != KS_REC_STACKS)
			continue;
		err = ks_rec_read(r, i, &p);
		if (err)
			break;
		err = ks_rec_stacks_parse(p, r->chunks[i].hdr.len, out, &inited, why, sizeof(why));
		free(p);
		if (err == -EBADMSG || err == -EPROTO) {
			if (!info->refused++)
				snprintf(info->why, sizeof(info->why), "%s", why);
			err = 0;
		} else if (!err) {
			info->chunks++;
		}
	}
	if (!inited)
		ks_stacks_init(out, "samples", "count", 0);
	if (err)
		ks_stacks_free(out);
	return err;
}
