/* Locating tracefs, mounting it for ksight alone when absent (classic tracepoints and `list` need it), and saying why not. */
#ifndef KS_CORE_TRACEFS_H
#define KS_CORE_TRACEFS_H

#include <stdbool.h>
#include <stddef.h>

/* The tracefs mount point, or NULL when none is mounted; never mounts. */
const char *ks_tracefs_find(void);
/*
 * Returns the tracefs mount point, mounting it at /sys/kernel/tracing when
 * no mount exists (one p_info line says so); *mounted (may be NULL) tells
 * whether this call did.  The mount is made in a mount namespace of this
 * process's own, so the system is left as found however ksight ends; where
 * that cannot be (a threaded process), in the shared tree and taken down
 * at exit (ks_tracefs_release, also registered with atexit).  NULL with
 * errno set (EPERM: no CAP_SYS_ADMIN to mount) when it cannot be had.
 */
const char *ks_tracefs_dir(bool *mounted);
/* Unmounts what ks_tracefs_dir mounted in the shared tree; safe to call more than once. */
void ks_tracefs_release(void);
/*
 * 0 when tracefs's events can be read by this process (its effective ids
 * and capabilities), -EACCES when its mode refuses, -EPERM when it is not
 * mounted and this process may not mount it, -ENODEV when it cannot be had
 * otherwise.  Classic tracepoints need it for their event ids.
 */
int ks_tracefs_access(void);
/*
 * One clause for an error message: what about tracefs is missing for @err
 * (from ks_tracefs_access or ks_tracepoint_exists) and how to fix it,
 * naming the capability or the mount options.  Returns @buf.
 */
const char *ks_tracefs_explain(int err, char *buf, size_t len);
/*
 * 1 when the tracepoint @sys:@event exists in this kernel, 0 when it does
 * not, negative errno when that cannot be told: -EACCES (tracefs not
 * readable), -EPERM (not mounted, cannot mount), -ENODEV.  The kernel's BTF
 * answers first (btf_trace_<event>), so tracefs is only needed for syscall
 * events and modules' tracepoints.
 */
int ks_tracepoint_exists(const char *sys, const char *event);

#endif
