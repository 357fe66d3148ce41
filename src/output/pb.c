/* The one protobuf encoder (see pb.h): the wire format written by hand, as neither message needs more than these few calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/pb.h"

void ks_pb_raw(struct ks_pb *p, const void *d, size_t n)
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
	/* an empty sub-message may come with no buffer at all */
	if (n)
		memcpy(p->b + p->n, d, n);
	p->n += n;
}

size_t ks_pb_varint_enc(uint8_t out[KS_PB_VARINT_MAX], uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

void ks_pb_varint(struct ks_pb *p, uint64_t v)
{
	uint8_t b[KS_PB_VARINT_MAX];

	ks_pb_raw(p, b, ks_pb_varint_enc(b, v));
}

void ks_pb_tag(struct ks_pb *p, int field, enum ks_pb_wire wt)
{
	ks_pb_varint(p, (uint64_t)field << 3 | (uint64_t)wt);
}

void ks_pb_uint(struct ks_pb *p, int field, uint64_t v)
{
	ks_pb_tag(p, field, KS_PB_VARINT);
	ks_pb_varint(p, v);
}

void ks_pb_sint(struct ks_pb *p, int field, int64_t v)
{
	ks_pb_uint(p, field, ks_pb_zigzag(v));
}

void ks_pb_double(struct ks_pb *p, int field, double v)
{
	uint8_t le[8];
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(u >> (8 * i));
	ks_pb_tag(p, field, KS_PB_I64);
	ks_pb_raw(p, le, sizeof(le));
}

void ks_pb_bytes(struct ks_pb *p, int field, const void *d, size_t n)
{
	ks_pb_tag(p, field, KS_PB_LEN);
	ks_pb_varint(p, n);
	ks_pb_raw(p, d, n);
}

void ks_pb_str(struct ks_pb *p, int field, const char *s)
{
	ks_pb_bytes(p, field, s, strlen(s));
}

void ks_pb_msg(struct ks_pb *p, int field, struct ks_pb *m)
{
	if (m->err && !p->err)
		p->err = m->err;
	ks_pb_bytes(p, field, m->b, m->n);
	m->n = 0;
}

void ks_pb_free(struct ks_pb *p)
{
	free(p->b);
	*p = (struct ks_pb){ 0 };
}
