/* Hook-variant selection: programs named <base>__<hook>, only the chosen variant is loaded. */
#ifndef KS_CORE_LOADER_H
#define KS_CORE_LOADER_H

#include <stdbool.h>
#include <bpf/libbpf.h>

/* Hook variants, cheapest first in most collectors' preference lists. */
#define KS_HOOK_FENTRY "fentry"
#define KS_HOOK_TP_BTF "tp_btf"
#define KS_HOOK_RAW_TP "raw_tp"
#define KS_HOOK_TP "tp"
#define KS_HOOK_KPROBE "kprobe"

/*
 * Enables the programs whose name ends in "__<hook>" and disables every
 * other variant; programs without "__" are left as they are.  Returns the
 * number enabled.
 */
int ks_prog_select(struct bpf_object *obj, const char *hook);
/* Disables every variant of the programs named "<base>__*". */
void ks_prog_disable(struct bpf_object *obj, const char *base);

/*
 * Tries each hook of @hooks (NULL-terminated) in order: @try opens,
 * configures, loads and attaches for that hook, and cleans up after
 * itself on failure.  Returns 0 with *chosen set, or the last error.
 * KSIGHT_HOOK=<hook> in the environment restricts the list to that hook
 * (-ENOENT when the collector has no such variant), so tests can load the
 * fallbacks on a kernel that has the preferred hook.
 */
int ks_load_first(const char *const *hooks, int (*try)(void *ctx, const char *hook), void *ctx,
		  const char **chosen);
/*
 * After ks_load_first failed: one clause saying why each hook was not
 * loaded (privilege, tracefs, the kernel, or the error), for the caller's
 * one-line error; NULL when it did not fail.  With -v the chosen hook's
 * line names the better ones that failed and why.
 */
const char *ks_load_error(void);

/* Sum of recursion_misses of every loaded program of @obj (events the kernel skipped). */
unsigned long long ks_obj_missed(struct bpf_object *obj);
/* Misses since the previous call with the same @seen, which it updates. */
unsigned long long ks_obj_missed_since(struct bpf_object *obj, unsigned long long *seen);

#endif
