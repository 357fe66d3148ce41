/* Event formats read from a recording (a stranger's file): checked before and after libtraceevent parses them. */
#ifndef KS_FORMAT_FMTCHECK_H
#define KS_FORMAT_FMTCHECK_H

#include <stddef.h>

struct tep_handle;

/* What the formats already accepted fix for the next ones: their common fields. */
struct ks_fmt_check {
	char commons[256]; /* "name:offset:size;..." of the first accepted format, "" before */
};

/*
 * Parses the tracefs format @text (@len bytes) of system @sys into @tep
 * if it is safe to: it parses (its fields alone first, in a scratch
 * handle, since libtraceevent's parser dereferences a print argument that
 * names no field), every field lies inside a record of KS_REC_MAX_RAW
 * bytes (in 64-bit arithmetic: offsets are ints there), a dynamic field is
 * a 4-byte locator, common_type is the record's first two bytes, the
 * common fields are those of every other format (libtraceevent reads every
 * record's through the first format's), every REC->field of the print
 * format names a field, and no format in @tep has its ID.  The fields are
 * checked again as @tep parsed them.
 *
 * 0 when added.  -EBADMSG with the reason in @why when refused: *@id is
 * then the ID when the format went into @tep all the same (its records
 * must be left out), else -1.  -ENOMEM.
 */
int ks_fmt_add(struct ks_fmt_check *c, struct tep_handle *tep, const char *sys, const char *text, size_t len, int *id,
	       char *why, size_t whylen);

#endif
