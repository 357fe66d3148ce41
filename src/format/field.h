/* A field of a raw event record, read by its tracefs format: where its bytes are, and its number. */
#ifndef KS_FORMAT_FIELD_H
#define KS_FORMAT_FIELD_H

#include <stdint.h>

struct tep_handle;
struct tep_format_field;

/* Where field @f's bytes are in the raw record @data: its own place, or a dynamic field's payload. */
void ks_field_span(const struct tep_format_field *f, const unsigned char *data, uint32_t *off, uint32_t *len);
/* The number at @off (@size bytes) of field @f, sign-extended when the field is signed. */
int64_t ks_field_num(struct tep_handle *tep, const struct tep_format_field *f, const unsigned char *data, uint32_t off,
		     uint32_t size);

#endif
