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
	/*
	 * A hash map allocated at run time (BPF_F_NO_PREALLOC) in a perf_event
	 * program: refused before Linux 6.1 ("perf_event programs can only use
	 * preallocated hash map"; lifted with bpf_mem_alloc, commit
	 * 96da3f7d489d), where other tracing programs only got a warning.
	 */
	KS_FEAT_DYN_HASH,
	/*
	 * One link for many uprobes (BPF_TRACE_UPROBE_MULTI, Linux 6.6,
	 * commit 89ae89f53d20): funclat's many functions attach and detach
	 * at once; without it, a perf-event uprobe per function.
	 */
	KS_FEAT_UPROBE_MULTI,
	KS_FEAT_COUNT,
};

struct ks_probe_result {
	bool ok;
	int err;	  /* negative errno of the failed step */
	const char *step; /* "load" or "attach" when it failed */
	bool off;	  /* not probed: KSIGHT_FEATURES_OFF names it */
};

const char *ks_feature_name(enum ks_feature f);
/* Probes once (cached): loads, and for hooks attaches, a trivial program. */
const struct ks_probe_result *ks_probe(enum ks_feature f);

#endif
