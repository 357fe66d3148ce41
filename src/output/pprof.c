/* The pprof writer: profile.proto encoded by hand (varints and length-delimited fields) and gzip'd with zlib. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/sanitize.h"
#include "output/output.h"
#include "output/stacks.h"

/* A growing protobuf message; @err sticks at the first failed allocation. */
struct pb {
	uint8_t *b;
	size_t n, cap;
	int err;
};

static void pb_bytes(struct pb *p, const void *d, size_t n)
{
	if (p->err)
		return;
	if (p->n + n > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		uint8_t *b;

		while (cap < p->n + n)
			cap *= 2;
		b = realloc(p->b, cap);
		if (!b) {
			p->err = -ENOMEM;
			return;
		}
		p->b = b;
		p->cap = cap;
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t b[10];
	int n = 0;

	do {
		b[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_bytes(p, b, n);
}

/* wire types: 0 varint, 2 length-delimited */
static void pb_uint(struct pb *p, int field, uint64_t v)
{
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

static void pb_len(struct pb *p, int field, const void *d, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	pb_bytes(p, d, n);
}

/* Appends @m as a sub-message @field of @p, and empties @m for reuse. */
static void pb_msg(struct pb *p, int field, struct pb *m)
{
	if (m->err)
		p->err = m->err;
	pb_len(p, field, m->b, m->n);
	m->n = 0;
}

static void value_type(struct pb *p, int field, uint64_t type, uint64_t unit)
{
	struct pb m = { 0 };

	pb_uint(&m, 1, type);
	pb_uint(&m, 2, unit);
	pb_msg(p, field, &m);
	free(m.b);
}

/* String table: 0 "", then these, then each frame's name at FIXED + frame id. */
enum { S_EMPTY, S_TYPE, S_UNIT, S_CPU, S_NS, S_COMM, S_KERNEL, S_FIXED };

static int encode(const struct ks_stacks *st, struct pb *p)
{
	struct pb m = { 0 }, packed = { 0 }, lbl = { 0 };
	const char *fixed[S_FIXED] = { "", st->sample_type, st->unit, "cpu", "nanoseconds", "comm", "[kernel]" };
	bool has_ns = st->period_ns > 0;

	value_type(p, 1, S_TYPE, S_UNIT);
	if (has_ns)
		value_type(p, 1, S_CPU, S_NS);
	for (size_t i = 0; i < st->n; i++) {
		const struct ks_stack *s = &st->s[i];

		/* location ids leaf first; the comm root frame becomes a label */
		for (uint32_t j = s->n; j-- > 0;)
			if (st->kinds[s->frames[j]] != KS_FK_COMM)
				pb_varint(&packed, s->frames[j] + 1);
		pb_msg(&m, 1, &packed);
		pb_varint(&packed, s->value);
		if (has_ns)
			pb_varint(&packed, s->value * st->period_ns);
		pb_msg(&m, 2, &packed);
		if (s->n && st->kinds[s->frames[0]] == KS_FK_COMM) {
			pb_uint(&lbl, 1, S_COMM);
			pb_uint(&lbl, 2, S_FIXED + s->frames[0]);
			pb_msg(&m, 3, &lbl);
		}
		pb_msg(p, 2, &m);
	}
	for (size_t id = 0; id < st->nnames; id++) {
		if (st->kinds[id] == KS_FK_COMM)
			continue;
		/* Location {id, line {function_id}} and Function {id, name, system_name} */
		pb_uint(&m, 1, id + 1);
		pb_uint(&lbl, 1, id + 1);
		pb_msg(&m, 4, &lbl);
		pb_msg(p, 4, &m);
		pb_uint(&m, 1, id + 1);
		pb_uint(&m, 2, S_FIXED + id);
		pb_uint(&m, 3, S_FIXED + id);
		if (st->kinds[id] == KS_FK_KERNEL)
			pb_uint(&m, 4, S_KERNEL);
		pb_msg(p, 5, &m);
	}
	for (int i = 0; i < S_FIXED; i++)
		pb_len(p, 6, fixed[i] ? fixed[i] : "", fixed[i] ? strlen(fixed[i]) : 0);
	/* profile.proto strings are UTF-8 (Go's decoder checks): names sanitized like every output's */
	for (size_t id = 0; id < st->nnames && !p->err; id++) {
		size_t n = ks_sanitized_len(st->names[id]);
		char *b = malloc(n + 1);

		if (!b) {
			p->err = -ENOMEM;
			break;
		}
		ks_sanitize(st->names[id], b, n + 1);
		pb_len(p, 6, b, n);
		free(b);
	}
	if (has_ns) {
		value_type(p, 11, S_CPU, S_NS);
		pb_uint(p, 12, st->period_ns);
	}
	free(m.b);
	free(packed.b);
	free(lbl.b);
	return p->err;
}

int ks_write_pprof(const struct ks_stacks *st, FILE *out)
{
	struct pb p = { 0 };
	uint8_t buf[16384];
	z_stream z = { 0 };
	int err, zr;

	err = encode(st, &p);
	if (err)
		goto out;
	/* windowBits 15 + 16: a gzip wrapper, as pprof files are */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		err = -ENOMEM;
		goto out;
	}
	z.next_in = p.b;
	z.avail_in = p.n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		fwrite(buf, 1, sizeof(buf) - z.avail_out, out);
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	if (!err)
		err = ks_stream_status(out);
out:
	free(p.b);
	return err;
}
