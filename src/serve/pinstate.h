/* serve --pin: the exporter's cumulative counters kept in a pinned BPF array, so a restarted serve continues them. */
#ifndef KS_SERVE_PINSTATE_H
#define KS_SERVE_PINSTATE_H

#include "core/accum.h"

/*
 * Why a pinned map: the kernel's maps only hold what happened since the
 * last drain; the totals built from every earlier drain live in user
 * space and die with the process.  They are written after every drain,
 * before the period's snapshot is served, into DIR/ks_state: element 0 a
 * header naming which of two regions holds the current copy, the rest
 * 4 KiB chunks.  A new copy goes to the other region and the header flips
 * last (one element update, which a kill -9 cannot split), so the state
 * read back is always one whole drain's.  A copy too big for its region
 * goes to a new, larger map renamed over the old one.
 */
struct ks_pinstate;

/* Opens DIR/ks_state, or notes that it is to be made at the first save; NULL with errno set on failure. */
struct ks_pinstate *ks_pinstate_open(const char *dir);
/*
 * Restores the accumulators @acc[i] of collectors @names[i] from the saved
 * copy (collectors it does not hold start empty).  Returns how many were
 * restored, or a negative errno (a damaged copy: -EBADMSG).
 */
int ks_pinstate_load(struct ks_pinstate *ps, struct ks_accum *acc, const char *const *names, int n);
/* Saves @acc[0..n) under @names; 0 or negative errno. */
int ks_pinstate_save(struct ks_pinstate *ps, const struct ks_accum *acc, const char *const *names, int n);
/* Frees @ps and the names restored rows point to: after the accumulators are freed. */
void ks_pinstate_close(struct ks_pinstate *ps);

#endif
