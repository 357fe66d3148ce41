/* Unit tests of the shared protobuf encoder (output/pb.c) against known byte vectors: varint boundaries, tags, zigzag, doubles, nested lengths, packed fields, errors. */
#include <errno.h>
#include "test.h"
#include "output/pb.h"

/* @p holds exactly the @n bytes of @want; prints both in hex if not. */
static bool same(const struct ks_pb *p, const uint8_t *want, size_t n, int line)
{
	char got[256] = "", exp[256] = "";

	if (p->n == n && (!n || !memcmp(p->b, want, n)))
		return true;
	for (size_t i = 0; i < p->n && i < 80; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%02x ", p->b[i]);
	for (size_t i = 0; i < n && i < 80; i++)
		snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), "%02x ", want[i]);
	return t_check(false, __FILE__, line, "got %zu bytes [%s], want %zu [%s]", p->n, got, n, exp);
}
#define EXPECT_BYTES(p, ...)                                                                       \
	same((p), (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }), __LINE__)

TEST(varint_boundaries)
{
	static const struct {
		uint64_t v;
		uint8_t b[KS_PB_VARINT_MAX];
		size_t n;
	} cases[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ 16383, { 0xff, 0x7f }, 2 },
		{ 16384, { 0x80, 0x80, 0x01 }, 3 },
		{ (1ull << 32) - 1, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ 1ull << 32, { 0x80, 0x80, 0x80, 0x80, 0x10 }, 5 },
		{ (1ull << 63) - 1, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f }, 9 },
		{ 1ull << 63, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 10 },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ks_pb p = { 0 };
		uint8_t b[KS_PB_VARINT_MAX];

		EXPECT_EQ_U64(ks_pb_varint_enc(b, cases[i].v), cases[i].n);
		EXPECT_TRUE(!memcmp(b, cases[i].b, cases[i].n));
		ks_pb_varint(&p, cases[i].v);
		same(&p, cases[i].b, cases[i].n, __LINE__);
		ks_pb_free(&p);
	}
}

/* The examples of protobuf's encoding guide, and tags past one byte. */
TEST(fields_and_tags)
{
	struct ks_pb p = { 0 };

	ks_pb_uint(&p, 1, 150);
	EXPECT_BYTES(&p, 0x08, 0x96, 0x01);
	p.n = 0;
	ks_pb_str(&p, 2, "testing");
	EXPECT_BYTES(&p, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g');
	p.n = 0;
	ks_pb_bytes(&p, 2, NULL, 0);
	EXPECT_BYTES(&p, 0x12, 0x00);
	p.n = 0;
	/* field 15 is the last one-byte tag, 16 the first two-byte one; 2^29-1 the largest field */
	ks_pb_uint(&p, 15, 0);
	ks_pb_uint(&p, 16, 0);
	ks_pb_tag(&p, (1 << 29) - 1, KS_PB_LEN);
	EXPECT_BYTES(&p, 0x78, 0x00, 0x80, 0x01, 0x00, 0xfa, 0xff, 0xff, 0xff, 0x0f);
	p.n = 0;
	ks_pb_uint(&p, 1, UINT64_MAX);
	EXPECT_BYTES(&p, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	ks_pb_free(&p);
	EXPECT_TRUE(!p.b && !p.n && !p.cap && !p.err);
}

TEST(zigzag)
{
	struct ks_pb p = { 0 };

	EXPECT_EQ_U64(ks_pb_zigzag(0), 0);
	EXPECT_EQ_U64(ks_pb_zigzag(-1), 1);
	EXPECT_EQ_U64(ks_pb_zigzag(1), 2);
	EXPECT_EQ_U64(ks_pb_zigzag(-2), 3);
	EXPECT_EQ_U64(ks_pb_zigzag(2147483647), 4294967294ull);
	EXPECT_EQ_U64(ks_pb_zigzag(-2147483648ll), 4294967295ull);
	EXPECT_EQ_U64(ks_pb_zigzag(INT64_MAX), UINT64_MAX - 1);
	EXPECT_EQ_U64(ks_pb_zigzag(INT64_MIN), UINT64_MAX);
	ks_pb_sint(&p, 1, -1);
	ks_pb_sint(&p, 5, 5);
	ks_pb_sint(&p, 2, -65);
	EXPECT_BYTES(&p, 0x08, 0x01, 0x28, 0x0a, 0x10, 0x81, 0x01);
	ks_pb_free(&p);
}

TEST(doubles_little_endian)
{
	struct ks_pb p = { 0 };

	ks_pb_double(&p, 1, 1.0);
	ks_pb_double(&p, 2, -2.5);
	ks_pb_double(&p, 6, 0x1p-128);
	EXPECT_BYTES(&p, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
		     0x11, 0, 0, 0, 0, 0, 0, 0x04, 0xc0,
		     0x31, 0, 0, 0, 0, 0, 0, 0xf0, 0x37);
	ks_pb_free(&p);
}

/* Sub-messages: the guide's Test3{c: Test1{a: 150}}, an empty one, and lengths across the one-byte boundary, three deep. */
TEST(nested_lengths)
{
	struct ks_pb p = { 0 }, m = { 0 }, inner = { 0 };
	uint8_t fill[200];

	ks_pb_uint(&m, 1, 150);
	ks_pb_msg(&p, 3, &m);
	EXPECT_BYTES(&p, 0x1a, 0x03, 0x08, 0x96, 0x01);
	EXPECT_EQ_U64(m.n, 0);
	p.n = 0;
	/* an empty sub-message, never allocated */
	ks_pb_msg(&p, 3, &inner);
	EXPECT_BYTES(&p, 0x1a, 0x00);
	p.n = 0;

	memset(fill, 0xab, sizeof(fill));
	for (size_t body = 123; body <= 126; body++) {
		/* inner: 2 + body bytes; middle wraps it in 2 or 3 more; the outer length follows */
		size_t in_len = 2 + body, mid_len = 1 + (in_len > 127 ? 2 : 1) + in_len;

		ks_pb_bytes(&inner, 1, fill, body);
		EXPECT_EQ_U64(inner.n, in_len);
		ks_pb_msg(&m, 2, &inner);
		EXPECT_EQ_U64(m.n, mid_len);
		ks_pb_msg(&p, 4, &m);
		EXPECT_EQ_U64(p.n, 1 + (mid_len > 127 ? 2 : 1) + mid_len);
		EXPECT_EQ_U64(p.b[0], 0x22);
		if (mid_len <= 127) {
			EXPECT_EQ_U64(p.b[1], mid_len);
		} else {
			EXPECT_EQ_U64(p.b[1], 0x80 | (mid_len & 0x7f));
			EXPECT_EQ_U64(p.b[2], mid_len >> 7);
		}
		p.n = 0;
	}
	/* body 125: inner exactly 127 bytes (length 0x7f), middle 129 (0x81 0x01) */
	ks_pb_bytes(&inner, 1, fill, 125);
	ks_pb_msg(&m, 2, &inner);
	ks_pb_msg(&p, 4, &m);
	EXPECT_EQ_U64(p.n, 3 + 2 + 127);
	EXPECT_TRUE(p.b[0] == 0x22 && p.b[1] == 0x81 && p.b[2] == 0x01 && p.b[3] == 0x12 && p.b[4] == 0x7f &&
		    p.b[5] == 0x0a && p.b[6] == 0x7d && p.b[7] == 0xab);
	ks_pb_free(&p);
	ks_pb_free(&m);
	ks_pb_free(&inner);
}

/* Packed repeated fields: the elements as bare varints in a sub-buffer, then one length-delimited field. */
TEST(packed_fields)
{
	struct ks_pb p = { 0 }, pk = { 0 };
	static const int64_t deltas[] = { 3, -1, 0, -3, 70 };

	ks_pb_varint(&pk, 3);
	ks_pb_varint(&pk, 270);
	ks_pb_varint(&pk, 86942);
	ks_pb_msg(&p, 4, &pk);
	EXPECT_BYTES(&p, 0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05);
	p.n = 0;
	/* repeated sint64 (Prometheus' native bucket deltas) */
	for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++)
		ks_pb_varint(&pk, ks_pb_zigzag(deltas[i]));
	ks_pb_msg(&p, 13, &pk);
	EXPECT_BYTES(&p, 0x6a, 0x06, 0x06, 0x01, 0x00, 0x05, 0x8c, 0x01);
	p.n = 0;
	/* an empty packed field is still written (length 0) */
	ks_pb_msg(&p, 1, &pk);
	EXPECT_BYTES(&p, 0x0a, 0x00);
	ks_pb_free(&p);
	ks_pb_free(&pk);
}

/* Growth keeps every byte; an error sticks, passes up through ks_pb_msg and stops writes. */
TEST(growth_and_errors)
{
	struct ks_pb p = { 0 }, m = { 0 };
	bool ok = true;

	for (uint64_t i = 0; i < 100000; i++)
		ks_pb_varint(&p, i & 0x7f);
	ASSERT_EQ_U64(p.n, 100000);
	for (uint64_t i = 0; i < 100000 && ok; i++)
		ok = p.b[i] == (i & 0x7f);
	EXPECT_TRUE(ok);
	EXPECT_EQ_INT(p.err, 0);
	p.n = 0;
	ks_pb_uint(&m, 1, 1);
	m.err = -ENOMEM;
	ks_pb_uint(&m, 2, 2);
	EXPECT_EQ_U64(m.n, 2);
	ks_pb_msg(&p, 1, &m);
	EXPECT_EQ_INT(p.err, -ENOMEM);
	EXPECT_EQ_U64(p.n, 0);
	ks_pb_uint(&p, 1, 1);
	EXPECT_EQ_U64(p.n, 0);
	ks_pb_free(&p);
	ks_pb_free(&m);
}
