/* Event formats read from a recording (a stranger's file): checked before and after libtraceevent parses them. */
#ifndef KS_FORMAT_FMTCHECK_H
#define KS_FORMAT_FMTCHECK_H

#include <stdbool.h>
#include <stddef.h>

struct tep_handle;

/* One format chunk: "system\0" then the tracefs text. */
struct ks_fmt {
	const char *sys, *text; /* in; @text followed by a NUL (as ks_rec_read leaves a payload) */
	size_t len;		/* of @text */
	int id;			/* out: its event ID when it went into the handle (even refused), else -1 */
	bool refused;		/* out: its records must be left out */
	bool raw_print;		/* out: its print format did not parse and was left empty */
	char why[160];		/* out: when refused */
};

/*
 * Parses the formats @v[0..n) into @tep, those that are safe to.  Each is
 * tried first in a child process (libtraceevent leaks on malformed text,
 * and crashes on some), where it must have the shape tracefs writes
 * (field lines "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;", printable
 * ASCII); its fields alone must parse, each inside a record of
 * KS_REC_MAX_RAW bytes (in 64-bit arithmetic: offsets are ints there), a
 * dynamic one a 4-byte locator, common_type the record's first two bytes;
 * every REC->field of its print format must name a field (libtraceevent's
 * parser follows one that names none).  Then, here: its common fields must
 * be those of the formats before it (libtraceevent reads every record's
 * through one format's), its ID new; it is parsed with its print format,
 * or an empty one when that did not parse in the child, and its fields
 * are checked again as parsed.  Verdicts are kept for the process (by the
 * whole text), so the same formats read again fork no child: not for
 * threads at once.  0, or -errno (ENOMEM, fork or pipe).
 */
int ks_fmt_add_all(struct tep_handle *tep, struct ks_fmt *v, size_t n);

/* A collector's report chunk (KS_REC_REPORT) read from a recording, checked by ks_rec_report_check. */
struct ks_rec_report_view {
	char collector[32];	/* [a-z0-9_], as the collector table names them */
	bool total;		/* kind "total": the whole window; else "interval" */
	const char *kv;		/* the "key\tvalue\n" lines (own cost among them) */
	size_t kv_len;
	const char *json, *text; /* the -j and the text renderings, not terminated */
	size_t json_len, text_len;
};

/*
 * A report chunk's payload as written (its renderings deflated, zlib_len
 * bytes) made plain for ks_rec_report_check: *@plain a malloc'd copy of
 * the lines and the inflated renderings (*@plen bytes, NUL after), or NULL
 * when @p is not deflated (then check @p itself; *@plen is left as it was).  The inflated size is
 * the declared json_len + text_len, at most KS_REC_MAX_PAYLOAD, and must
 * come out exactly.  0, -ENOMEM, or -EBADMSG with one line in @why.
 */
int ks_rec_report_inflate(const char *p, size_t len, char **plain, size_t *plen, char *why, size_t whylen);
/*
 * Splits and checks the plain payload @p of @len bytes (a stranger's file): the
 * lines end at an empty line, collector and kind are known shapes, the two
 * lengths add up to the rest exactly, and neither rendering holds a
 * control byte other than newline and tab (the text goes to terminals).
 * 0, or -EBADMSG with one line saying why in @why.
 */
int ks_rec_report_check(const char *p, size_t len, struct ks_rec_report_view *v, char *why, size_t whylen);

#endif
