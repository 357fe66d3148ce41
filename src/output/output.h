/* The writer table (every format ksight renders: text, JSON, folded, SVG, pprof) and the output sink reports are written through. */
#ifndef KS_OUTPUT_OUTPUT_H
#define KS_OUTPUT_OUTPUT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include "core/report.h"

struct ks_stacks;

/*
 * One output format: what it can render, a function per kind of data (NULL
 * where the format has none), each onto a stdio stream, 0 or negative errno.
 * A new format is one entry in ks_writers (output/writers.c) and its file.
 */
struct ks_writer {
	const char *name; /* "text", "json", "folded", "svg", "pprof" */
	const char *help;
	int (*report)(const struct ks_report *r, FILE *out); /* an interval report */
	int (*stacks)(const struct ks_stacks *st, FILE *out); /* a stack profile (output/stacks.h) */
};

/* Terminated by a NULL name. */
extern const struct ks_writer ks_writers[];
const struct ks_writer *ks_writer_find(const char *name);

/* The report writers.  JSON is one document (a line, under -i). */
int ks_write_text(const struct ks_report *r, FILE *out);
int ks_write_json(const struct ks_report *r, FILE *out);
/* Renders @r with @w's report function into a malloc'd buffer (*@buf, *@len); 0 or negative errno. */
int ks_writer_render(const struct ks_writer *w, const struct ks_report *r, char **buf, size_t *len);

/* The familiar "usecs : count | distribution" layout of one histogram. */
void ks_hist_write_text(const struct ks_hist *h, FILE *out, const char *indent);
void ks_hist_write_text_unit(const struct ks_hist *h, enum ks_unit unit, FILE *out, const char *indent);
/* "p50 1.2us p90 ... count N" */
void ks_hist_write_pct_line(const struct ks_hist *h, FILE *out);
void ks_hist_write_pct_line_unit(const struct ks_hist *h, enum ks_unit unit, FILE *out);

/*
 * Flushes @out and returns 0, or the errno of the write that failed
 * (ENOSPC, EPIPE, EBADF...), not a blanket EIO; the error flag is cleared
 * so the next report on the same stream is judged on its own.
 */
int ks_stream_status(FILE *out);

/* Names of a column kind ("counter", "gauge", "duration", "bytes") and of a unit ("ns", "bytes", "count"). */
const char *ks_col_kind_name(enum ks_col_kind k);
const char *ks_unit_name(enum ks_unit u);
/* A schema as the docs/json.md table of a collector's row fields; 0 or negative errno. */
int ks_schema_write_md(const struct ks_schema *s, FILE *out);

/* @ts (CLOCK_REALTIME) as ISO-8601 UTC with milliseconds. */
const char *ks_fmt_iso8601(const struct timespec *ts, char *buf, size_t len);

/*
 * Where reports go: stdout or an -o file.  Written with poll and plain
 * write(2) so that a stop signal ends a run whose reader stopped reading,
 * and every failure keeps its errno.
 */
struct ks_sink {
	int fd;
	bool own;	    /* an -o file: closed by ks_sink_close */
	bool created;	    /* made by ks_sink_open (removed when the run never started) */
	bool is_reg;
	const char *path;   /* NULL for stdout */
	volatile sig_atomic_t *stop; /* set by a stop signal; NULL: never */
};

void ks_sink_stdout(struct ks_sink *s, volatile sig_atomic_t *stop);
/*
 * Opens @path for reports before the load, without truncating an existing
 * file (a failed load leaves it as it was): created 0600, a symlink refused
 * (-ELOOP), O_CLOEXEC.  0 or negative errno (after a one-line error).
 */
int ks_sink_open(struct ks_sink *s, const char *path, volatile sig_atomic_t *stop);
/* Called once the programs are attached: empties a regular -o file. */
int ks_sink_start(struct ks_sink *s);
/*
 * Writes all of @buf.  0, negative errno of the failed write, or -EINTR
 * when a stop signal came while the output could not take the data (the
 * rest is abandoned; a stopping run then waits at most @grace_ms more).
 */
int ks_sink_write(struct ks_sink *s, const char *buf, size_t len, int grace_ms);
/* Closes an -o file (0 or negative errno); @started false removes a file ks_sink_open created. */
int ks_sink_close(struct ks_sink *s, bool started);

#endif
