/* The one protobuf encoder the pprof and Prometheus writers share: varints, tags, zigzag, doubles, length-delimited sub-messages and packed fields. */
#ifndef KS_OUTPUT_PB_H
#define KS_OUTPUT_PB_H

#include <stddef.h>
#include <stdint.h>

/* wire types (protobuf encoding): what follows a tag */
enum ks_pb_wire { KS_PB_VARINT = 0, KS_PB_I64 = 1, KS_PB_LEN = 2 };

/* The longest varint: 64 bits, 7 a byte. */
#define KS_PB_VARINT_MAX 10

/*
 * A growing message.  Zero-initialize it; @err sticks at the first failed
 * allocation (-ENOMEM), after which every call is a no-op, so a writer checks
 * once at the end.  A sub-message or a packed repeated field is built in a
 * second struct ks_pb and appended with ks_pb_msg.
 */
struct ks_pb {
	uint8_t *b;
	size_t n, cap;
	int err;
};

/* Writes @v as a varint into @out; returns its length (1..KS_PB_VARINT_MAX). */
size_t ks_pb_varint_enc(uint8_t out[KS_PB_VARINT_MAX], uint64_t v);
/* sint32/sint64's zigzag: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ..., so small negatives stay short. */
static inline uint64_t ks_pb_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void ks_pb_raw(struct ks_pb *p, const void *d, size_t n);
/* a bare varint: an element of a packed repeated field, or a length prefix */
void ks_pb_varint(struct ks_pb *p, uint64_t v);
void ks_pb_tag(struct ks_pb *p, int field, enum ks_pb_wire wt);
/* uint32/uint64/int64 (non-negative), enum and bool fields */
void ks_pb_uint(struct ks_pb *p, int field, uint64_t v);
/* sint32/sint64 fields */
void ks_pb_sint(struct ks_pb *p, int field, int64_t v);
/* double fields: 8 bytes, little-endian */
void ks_pb_double(struct ks_pb *p, int field, double v);
/* bytes and string fields */
void ks_pb_bytes(struct ks_pb *p, int field, const void *d, size_t n);
void ks_pb_str(struct ks_pb *p, int field, const char *s);
/* Appends @m (a sub-message, or a packed field's elements) as field @field, passes on its error, and empties it for reuse. */
void ks_pb_msg(struct ks_pb *p, int field, struct ks_pb *m);
void ks_pb_free(struct ks_pb *p);

#endif
