/* The writer table: every format, with what each can render. */
#include <string.h>
#include "output/output.h"
#include "output/stacks.h"

const struct ks_writer ks_writers[] = {
	{ "text", "tables and drawn histograms for a terminal", .report = ks_write_text },
	{ "json", "one JSON document per report (docs/json.md)", .report = ks_write_json },
	{ "folded", "one line per stack, 'comm;frame;...;frame count' (flamegraph.pl's input)", .stacks = ks_write_folded },
	{ "svg", "a self-contained interactive flame graph", .stacks = ks_write_svg },
	{ "pprof", "gzip'd profile.proto, for go tool pprof and profiling servers", .stacks = ks_write_pprof },
	{ NULL, NULL, NULL, NULL },
};

const struct ks_writer *ks_writer_find(const char *name)
{
	for (const struct ks_writer *w = ks_writers; w->name; w++)
		if (!strcmp(w->name, name))
			return w;
	return NULL;
}
