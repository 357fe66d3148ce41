/* The logging module: errors as one line on stderr, or as a JSON object on stdout under -j. */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "core/log.h"
#include "core/json.h"

int ks_verbose;
bool ks_json;

void p_err(const char *fmt, ...)
{
	char msg[1024];
	struct ks_json *j;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* out of memory for the JSON object: the stderr line still says it */
	j = ks_json ? ks_json_new(stdout) : NULL;
	/* whole lines from every thread: each stream is locked for the line's several calls */
	flockfile(stdout);
	if (j) {
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "error", msg);
		ks_json_obj_end(j);
		ks_json_free(j);
		fputc('\n', stdout);
		fflush(stdout);
	}
	funlockfile(stdout);
	fprintf(stderr, "ksight: error: %s\n", msg);
}

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	/* one line from each call, whichever threads log at once */
	flockfile(stderr);
	fprintf(stderr, "ksight: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void p_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	if (ks_verbose < 1)
		return;
	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void p_dbg(const char *fmt, ...)
{
	va_list ap;

	if (ks_verbose < 2)
		return;
	va_start(ap, fmt);
	vlog("debug: ", fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf warns about every failed variant the loader tries on purpose;
	 * those are reported once by the loader, so only -vv shows libbpf. */
	(void)level;
	if (ks_verbose < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void ks_log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
