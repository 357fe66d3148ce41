/* One-shot feature probe: which hook types and map types this kernel really offers. */
#ifndef KS_CORE_PROBE_H
#define KS_CORE_PROBE_H

#include <stdbool.h>

enum ks_feature {
	KS_FEAT_BTF,
	KS_FEAT_FENTRY,
	KS_FEAT_KPROBE,
	KS_FEAT_TP_BTF,
	KS_FEAT_RAW_TP,
	KS_FEAT_TP,
	KS_FEAT_UPROBE,
	KS_FEAT_PERF_EVENT,
	KS_FEAT_RINGBUF,
	KS_FEAT_TASK_STORAGE,
	KS_FEAT_COUNT,
};

struct ks_probe_result {
	bool ok;
	int err;	  /* negative errno of the failed step */
	const char *step; /* "load" or "attach" when it failed */
};

const char *ks_feature_name(enum ks_feature f);
/* Probes once (cached): loads, and for hooks attaches, a trivial program. */
const struct ks_probe_result *ks_probe(enum ks_feature f);

#endif
