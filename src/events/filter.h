/* Event filter expressions (record/report --filter): parser, compiler to ksight/recfilter.h programs against a tracepoint format, and the user-space interpreter. */
#ifndef KS_EVENTS_FILTER_H
#define KS_EVENTS_FILTER_H

#include <stdbool.h>
#include "ksight/record.h"
#include "ksight/recfilter.h"

struct tep_event;
struct ks_recording;

/*
 * The syntax (ftrace's filter syntax, with quoted strings):
 *
 *	expr  := expr '||' expr | expr '&&' expr | '!' expr | '(' expr ')' | field OP value
 *	field := NAME | NAME '[' N ']'	   (an element of an integer array, e.g. args[0])
 *	OP    := == != < <= > >= &	   on integer fields (& : any bit in common)
 *	       | == != ~ !~		   on strings, value "quoted"; ~ is a glob: * any run, ? one byte
 *
 * && binds tighter than ||.  Numbers are decimal, 0x hex or 0 octal, with
 * an optional '-'.  In strings, \" \\ \* \? stand for the character itself.
 * Besides the event's fields (common_pid ... included): `comm`, the task's
 * name, and `cpu`, where the event has no field of that name.
 */

/* Where and why an expression was refused: @col is the byte offset in the text (-1: none). */
struct ks_flt_err {
	int col;
	char msg[256];
};

struct ks_flt_expr;

/* Parses @text; NULL with @err set on a syntax error (or -ENOMEM: col -1). */
struct ks_flt_expr *ks_flt_parse(const char *text, struct ks_flt_err *err);
void ks_flt_expr_free(struct ks_flt_expr *x);
const char *ks_flt_text(const struct ks_flt_expr *x);

/*
 * Compiles @x against @ev's format into @prog: 0, or -EINVAL with @err set
 * (unknown field, type mismatch, constant out of range; the message names
 * the event).
 */
int ks_flt_compile(const struct ks_flt_expr *x, struct tep_event *ev, struct ks_flt_prog *prog,
		   struct ks_flt_err *err);
/* The same against tracefs format text @format of system @sys (record: before the event is attached). */
int ks_flt_compile_format(const struct ks_flt_expr *x, const char *sys, const char *format, struct ks_flt_prog *prog,
			  struct ks_flt_err *err);

/* True when the recorded event @e (header, then @e->len bytes of raw record) passes @prog. */
bool ks_flt_run(const struct ks_flt_prog *prog, const struct ks_rec_event *e);

/* One p_err naming @opt and the error, then @text and a caret under the offending byte on stderr. */
void ks_flt_report(const char *opt, const char *text, const struct ks_flt_err *err);

/*
 * Keeps only the events of @rec that pass @text (compiled per event of the
 * recording): 0, -EINVAL after ks_flt_report, or -ENOMEM.
 */
int ks_recording_filter(struct ks_recording *rec, const char *text);

#endif
