/* A field of a raw event record read by its tracefs format: shared by the file's decoder and the event analysis above it. */
#include <string.h>
#include <event-parse.h>
#include "format/field.h"

void ks_field_span(const struct tep_format_field *f, const unsigned char *data, uint32_t *off, uint32_t *len)
{
	uint32_t loc;

	if (!(f->flags & TEP_FIELD_IS_DYNAMIC) || f->size != 4) {
		*off = (uint32_t)f->offset;
		*len = (uint32_t)f->size;
		return;
	}
	memcpy(&loc, data + f->offset, 4);
	*off = (loc & 0xffff) + ((f->flags & TEP_FIELD_IS_RELATIVE) ? (uint32_t)f->offset + 4 : 0);
	*len = loc >> 16;
}

int64_t ks_field_num(struct tep_handle *tep, const struct tep_format_field *f, const unsigned char *data, uint32_t off,
		     uint32_t size)
{
	uint64_t v = tep_read_number(tep, data + off, (int)size);

	if ((f->flags & TEP_FIELD_IS_SIGNED) && size < 8 && size > 0 && (v >> (size * 8 - 1)) & 1)
		v |= ~0ull << (size * 8);
	return (int64_t)v;
}
