/* Hook-variant selection: programs named <base>__<hook>, only the chosen variant is loaded. */
#ifndef KS_CORE_LOADER_H
#define KS_CORE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
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
/*
 * For an error @err (-errno) of a BPF map or program made outside the
 * loader: "; run as root or with CAP_BPF and CAP_PERFMON" when it is a
 * refusal and the process lacks them, else "" (the cause is elsewhere).
 */
const char *ks_priv_hint(int err);

/*
 * How every bpftool skeleton starts (bpftool gen skeleton), so that core
 * finds the object of a context's skeleton by the pointer's offset alone
 * (struct ks_pin_ops' skel_at, core/pin.h); KS_SKEL_OPS checks each skeleton.
 */
struct ks_skel_head {
	struct bpf_object_skeleton *skeleton;
	struct bpf_object *obj;
};

/*
 * A skeleton seen through void pointers: bpftool's skeleton functions are
 * static inline and typed per object; KS_SKEL_OPS(ks_NAME) wraps them as
 * ks_NAME_ops.
 */
struct ks_skel_ops {
	void *(*open)(void);
	int (*load)(void *s);
	int (*attach)(void *s);
	void (*destroy)(void *s);
	struct bpf_object *(*obj)(void *s);
	struct bpf_object_skeleton *(*skeleton)(void *s); /* its links, for --pin */
};

#define KS_SKEL_OPS(name)                                                                        \
	_Static_assert(offsetof(struct name, obj) == offsetof(struct ks_skel_head, obj) &&       \
			       offsetof(struct name, skeleton) == offsetof(struct ks_skel_head, skeleton), \
		       #name " does not start as struct ks_skel_head");                          \
	static void *name##_ops_open(void)                                                       \
	{                                                                                        \
		return name##__open();                                                           \
	}                                                                                        \
	static int name##_ops_load(void *s)                                                      \
	{                                                                                        \
		return name##__load(s);                                                          \
	}                                                                                        \
	static int name##_ops_attach(void *s)                                                    \
	{                                                                                        \
		return name##__attach(s);                                                        \
	}                                                                                        \
	static void name##_ops_destroy(void *s)                                                  \
	{                                                                                        \
		name##__destroy(s);                                                              \
	}                                                                                        \
	static struct bpf_object *name##_ops_obj(void *s)                                        \
	{                                                                                        \
		return ((struct name *)s)->obj;                                                  \
	}                                                                                        \
	static struct bpf_object_skeleton *name##_ops_skeleton(void *s)                          \
	{                                                                                        \
		return ((struct name *)s)->skeleton;                                             \
	}                                                                                        \
	static const struct ks_skel_ops name##_ops = { name##_ops_open, name##_ops_load,         \
						       name##_ops_attach, name##_ops_destroy,    \
						       name##_ops_obj, name##_ops_skeleton }

/*
 * One collector's load, declared in place of a hand-written
 * try-each-hook function.  For each of @hooks in order (ks_load_first):
 * open the skeleton, select the variant's programs (ks_prog_select),
 * @configure (rodata, map sizes, programs left out for this hook; 0 or
 * -errno), @budget_check the configured object before load (optional; a
 * failure ends the search: every variant has the same maps), load,
 * @loaded (optional: rows made ahead), attach; on any failure destroy and
 * try the next variant.  Under a --pin scope (core/pin.h) the load adopts
 * the pinned maps and programs, or pins a fresh one once attached.
 */
struct ks_load_spec {
	const char *const *hooks; /* NULL-terminated, preferred first */
	const struct ks_skel_ops *skel;
	int (*configure)(void *ctx, void *skel, const char *hook);
	int (*budget_check)(void *ctx, struct bpf_object *obj);
	int (*loaded)(void *ctx, void *skel);
	/*
	 * Optional: the budget @configure sizes the maps from.  With a shared
	 * one (serve, run) @configure is called at several limits until the
	 * maps fit the instance's share (ks_budget_fit), or only measured.
	 */
	struct ks_budget *(*budget)(void *ctx);
	/*
	 * Optional, for one set of programs without variants (funclat): its
	 * name in place of @hooks, the mark of its --pin directory.  Loaded
	 * once: KSIGHT_HOOK does not apply and no "hook:" line is said.
	 */
	const char *programs;
	/* Optional: attaches in place of the skeleton's attach (targets named at run time); after an adoption too */
	int (*attach)(void *ctx, void *skel);
	/* Optional: pins in place of ks_pin_attached, with what @attach made outside the skeleton (ks_pin_attached_extra) */
	int (*pin)(void *ctx, void *skel, const char *hook);
};

/* Runs @spec for @ctx: 0 with *@skel loaded and attached and *@chosen its hook, or the last error. */
int ks_load_spec(const struct ks_load_spec *spec, void *ctx, void **skel, const char **chosen);

/* The kernel's count of the runs it skipped of program @fd (recursion), 0 when it cannot tell (also @fd < 0). */
unsigned long long ks_prog_missed(int fd);
/* Sum of recursion_misses of every loaded program of @obj (events the kernel skipped). */
unsigned long long ks_obj_missed(struct bpf_object *obj);
/* Misses since the previous call with the same @seen, which it updates. */
unsigned long long ks_obj_missed_since(struct bpf_object *obj, unsigned long long *seen);

#endif
