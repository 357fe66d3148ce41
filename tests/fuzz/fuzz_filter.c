/* libFuzzer target: the --filter parser and compiler on any text, and the compiled program run on any record bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "events/filter.h"
#include "flt_formats.h"

static struct tep_event *evs[3];

static void init(void)
{
	static const char *const fmts[] = { fmt_switch, fmt_exec, fmt_sys_enter };
	struct tep_handle *tep = tep_alloc(); /* kept for the process's life, as the events point into it */

	for (int i = 0; i < 3; i++)
		if (!tep || tep_parse_format(tep, &evs[i], fmts[i], strlen(fmts[i]), "sched"))
			abort();
}

/* Input: the expression up to the first NUL, then the raw record the program is run on. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct {
		struct ks_rec_event h;
		unsigned char raw[512];
	} rec;
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size, rlen = nul ? size - tlen - 1 : 0;
	struct ks_flt_prog prog;
	struct ks_flt_err err;
	struct ks_flt_expr *x;
	char *text;

	if (!evs[0])
		init();
	text = malloc(tlen + 1);
	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = 0;
	memset(&rec, 0, sizeof(rec));
	if (rlen > sizeof(rec.raw))
		rlen = sizeof(rec.raw);
	if (rlen)
		memcpy(rec.raw, nul + 1, rlen);
	rec.h.len = (uint16_t)rlen;
	rec.h.cpu = rlen ? rec.raw[0] : 0;
	memcpy(rec.h.comm, rec.raw, sizeof(rec.h.comm));
	x = ks_flt_parse(text, &err);
	if (!x && (err.col < -1 || err.col > (int)tlen))
		abort(); /* an error points inside the text (or nowhere) */
	for (int i = 0; x && i < 3; i++) {
		if (ks_flt_compile(x, evs[i], &prog, &err)) {
			if (err.col < -1 || err.col > (int)tlen)
				abort();
			continue;
		}
		if (prog.n > KS_FLT_MAX_INSNS)
			abort();
		for (uint32_t k = 0; k < prog.n; k++)
			if (prog.insn[k].t <= k || prog.insn[k].f <= k)
				abort(); /* the kernel's loop bound rests on forward jumps */
		ks_flt_run(&prog, &rec.h);
	}
	ks_flt_expr_free(x);
	free(text);
	return 0;
}
