/* Event formats from a recording checked before libtraceevent parses them for good, and again as it parsed them. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "format/fmtcheck.h"
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

/* Fields, then the common ones (into @sig) against those of the formats before. */
static int check_event(const struct ks_fmt_check *c, const struct tep_event *ev, char *sig, char *why, size_t whylen)
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
	for (f = ev->format.common_fields; f; f = f->next) {
		int k = snprintf(sig + n, sizeof(c->commons) - n, "%s:%d:%d;", f->name, f->offset, f->size);

		if (k < 0 || (size_t)k >= sizeof(c->commons) - n)
			return refuse(why, whylen, "too many common fields");
		n += (size_t)k;
	}
	if (c->commons[0] && strcmp(c->commons, sig))
		return refuse(why, whylen, "its common fields differ from those of the formats before it");
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

int ks_fmt_add(struct ks_fmt_check *c, struct tep_handle *tep, const char *sys, const char *text, size_t len, int *id,
	       char *why, size_t whylen)
{
	const char *pf = memmem(text, len, PRINT_FMT, strlen(PRINT_FMT));
	struct tep_handle *t = NULL;
	struct tep_event *ev;
	char sig[sizeof(c->commons)];
	char *head = NULL;
	size_t hl;
	int err;

	*id = -1;
	if (memchr(text, '\0', len))
		return refuse(why, whylen, "a NUL byte in its text");
	if (!pf)
		return refuse(why, whylen, "no print format");
	/* the fields with an empty print format: what they are decides whether the real one is safe to parse */
	hl = (size_t)(pf - text);
	head = malloc(hl + sizeof(EMPTY_PRINT));
	t = tep_alloc();
	if (!head || !t) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(head, text, hl);
	memcpy(head + hl, EMPTY_PRINT, sizeof(EMPTY_PRINT));
	ev = tep_parse_event(t, head, hl + strlen(EMPTY_PRINT), sys) ? NULL : tep_get_first_event(t);
	if (!ev || tep_get_events_count(t) != 1) {
		err = refuse(why, whylen, "its fields do not parse");
		goto cleanup;
	}
	err = check_event(c, ev, sig, why, whylen);
	if (!err)
		err = check_print_refs(ev, pf, text + len, why, whylen);
	if (!err && tep_find_event(tep, ev->id))
		err = refuse(why, whylen, "a second format for event ID %d", ev->id);
	if (err)
		goto cleanup;
	/* a print format libtraceevent cannot parse leaves the event in @tep, printed raw: not an error */
	tep_parse_event(tep, text, len, sys);
	ev = tep_find_event(tep, ev->id);
	if (!ev) {
		err = refuse(why, whylen, "it does not parse");
		goto cleanup;
	}
	*id = ev->id;
	err = check_event(c, ev, sig, why, whylen);
	if (!err && !c->commons[0])
		memcpy(c->commons, sig, sizeof(sig));
cleanup:
	if (t)
		tep_free(t);
	free(head);
	return err;
}
