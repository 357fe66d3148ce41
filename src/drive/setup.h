/* The set-up and teardown every driver shares, written once: -- CMD, the output, a run's announcement, and collector instances named, opened in order (pinned ones adopted) and closed (`run`, `serve`, a collector's command, `profile`). */
#ifndef KS_DRIVE_SETUP_H
#define KS_DRIVE_SETUP_H

#include <stdbool.h>
#include "core/filter.h"
#include "core/instance.h"
#include "output/output.h"

/*
 * Adds an instance (ks_instance_init) for each name of the comma-separated
 * @list to @in[0..*n), at most @max: an unknown name, one given twice or one
 * too many is refused with one line prefixed by @driver ("run", "serve").
 * 0; -EINVAL (said: bad usage); -ENOMEM or an init error (said).
 */
int ks_drive_add(struct ks_instance *in, int *n, int max, const char *list, const char *driver);
/* --funclat TARGET: adds funclat when @in does not hold it yet; as ks_drive_add. */
int ks_drive_add_funclat(struct ks_instance *in, int *n, int max, const char *driver);

/*
 * Called once each instance is open: @adopted when it took over programs
 * pinned by an earlier run (serve --pin) rather than loading its own.  A
 * negative return stops the opening (the callback said why).
 */
typedef int (*ks_drive_opened_fn)(void *ctx, int i, bool adopted);

/*
 * Loads and attaches @in[0..n) in order with @f, calling @opened (may be
 * NULL) after each.  On a failed open, says why (permissions named) and
 * stops.  *@tried gets how many were tried (the failed one included), which
 * ks_drive_close must close.  0 or the negative errno.
 */
int ks_drive_open(struct ks_instance *in, int n, const struct ks_filter *f, ks_drive_opened_fn opened, void *ctx,
		  int *tried);
/* One line per instance on stderr: "ksight: VERB NAME (hook HOOK)EACH", @last's tail instead on the last. */
void ks_drive_say(const struct ks_instance *in, int n, const char *verb, const char *each, const char *last);
/* Detaches and frees @in[0..n); safe on instances never opened, and twice. */
void ks_drive_close(struct ks_instance *in, int n);

/*
 * -- CMD: forks @c->cmd_argv at its gate (ks_cmd_spawn) and sets @c->cmd, so
 * that the filter follows its cgroup and the loop starts it once all is
 * attached; the caller releases @cmd (ks_cmd_release) on every path.  0
 * (also without a command) or an exit code: 2 when it cannot run, else 1.
 */
int ks_drive_spawn(struct ks_common *c, struct ks_cmd *cmd);
/* @path (-o FILE) opened as ks_sink_open does, or stdout when NULL; 0 or negative errno (said). */
int ks_drive_sink(struct ks_sink *s, const char *path);
/* How a run without -d ends, for the end of its "tracing" line ("; Ctrl-C to end" and the like); "" with -d. */
const char *ks_drive_until(const struct ks_common *c);

#endif
