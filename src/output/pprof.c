/* The pprof writer: profile.proto through the shared encoder (pb.c), gzip'd with zlib. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/sanitize.h"
#include "output/output.h"
#include "output/pb.h"
#include "output/stacks.h"

static void value_type(struct ks_pb *p, int field, uint64_t type, uint64_t unit)
{
	struct ks_pb m = { 0 };

	ks_pb_uint(&m, 1, type);
	ks_pb_uint(&m, 2, unit);
	ks_pb_msg(p, field, &m);
	ks_pb_free(&m);
}

/* String table: 0 "", then these, then each frame's name at FIXED + frame id. */
enum { S_EMPTY, S_TYPE, S_UNIT, S_CPU, S_NS, S_COMM, S_KERNEL, S_FIXED };

static int encode(const struct ks_stacks *st, struct ks_pb *p)
{
	struct ks_pb m = { 0 }, packed = { 0 }, lbl = { 0 };
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
				ks_pb_varint(&packed, s->frames[j] + 1);
		ks_pb_msg(&m, 1, &packed);
		ks_pb_varint(&packed, s->value);
		if (has_ns)
			ks_pb_varint(&packed, s->value * st->period_ns);
		ks_pb_msg(&m, 2, &packed);
		if (s->n && st->kinds[s->frames[0]] == KS_FK_COMM) {
			ks_pb_uint(&lbl, 1, S_COMM);
			ks_pb_uint(&lbl, 2, S_FIXED + s->frames[0]);
			ks_pb_msg(&m, 3, &lbl);
		}
		ks_pb_msg(p, 2, &m);
	}
	for (size_t id = 0; id < st->nnames; id++) {
		if (st->kinds[id] == KS_FK_COMM)
			continue;
		/* Location {id, line {function_id}} and Function {id, name, system_name} */
		ks_pb_uint(&m, 1, id + 1);
		ks_pb_uint(&lbl, 1, id + 1);
		ks_pb_msg(&m, 4, &lbl);
		ks_pb_msg(p, 4, &m);
		ks_pb_uint(&m, 1, id + 1);
		ks_pb_uint(&m, 2, S_FIXED + id);
		ks_pb_uint(&m, 3, S_FIXED + id);
		if (st->kinds[id] == KS_FK_KERNEL)
			ks_pb_uint(&m, 4, S_KERNEL);
		ks_pb_msg(p, 5, &m);
	}
	for (int i = 0; i < S_FIXED; i++)
		ks_pb_str(p, 6, fixed[i] ? fixed[i] : "");
	/* profile.proto strings are UTF-8 (Go's decoder checks): names sanitized like every output's */
	for (size_t id = 0; id < st->nnames && !p->err; id++) {
		size_t n = ks_sanitized_len(st->names[id]);
		char *b = malloc(n + 1);

		if (!b) {
			p->err = -ENOMEM;
			break;
		}
		ks_sanitize(st->names[id], b, n + 1);
		ks_pb_bytes(p, 6, b, n);
		free(b);
	}
	if (has_ns) {
		value_type(p, 11, S_CPU, S_NS);
		ks_pb_uint(p, 12, st->period_ns);
	}
	ks_pb_free(&m);
	ks_pb_free(&packed);
	ks_pb_free(&lbl);
	return p->err;
}

int ks_write_pprof(const struct ks_stacks *st, FILE *out)
{
	struct ks_pb p = { 0 };
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
	ks_pb_free(&p);
	return err;
}
