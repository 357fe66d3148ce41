/* serve --pin: the exporter's cumulative counters kept in a pinned BPF array, so a restarted serve continues them. */
#ifndef KS_SERVE_PINSTATE_H
#define KS_SERVE_PINSTATE_H

#include "core/accum.h"

/*
 * Why a pinned map: the kernel's maps only hold what happened since the
 * last drain; the totals built from every earlier drain live in user
 * space and die with the process.  They are written after every drain,
 * before the period's snapshot is served and before the drain empties
 * the maps (core/pin.h, ks_instance_resume), into DIR/ks_state: element 0 a
 * header naming which of two regions holds the current copy, the rest
 * 4 KiB chunks.  A new copy goes to the other region and the header flips
 * last (one element update, which a kill -9 cannot split), so the state
 * read back is always one whole drain's.  A copy too big for its region
 * goes to a new, larger map renamed over the old one.
 */
struct ks_pinstate;

/*
 * What a collector's saved totals hold of its drains (core/pin.h,
 * ks_instance_resume): how many, counted from which drain-sequence map
 * (its id; 0: unknown, as in copies saved before there was one), and the
 * collector's cursor as of the last (cursor_get; NULL when none).
 */
struct ks_pin_drains {
	uint64_t drains;
	uint32_t seq_id;
	void *cursor; /* ks_pinstate_load: malloc'd, the caller's to free */
	size_t cursor_len;
};

/*
 * Opens DIR/ks_state, or notes that it is to be made at the first save;
 * NULL with errno set after a one-line error on failure: -EPERM/-ELOOP
 * when what is there is not ksight's (a link, another uid's pin, another
 * name or shape, no header a save wrote), which is neither read nor
 * written.
 */
struct ks_pinstate *ks_pinstate_open(const char *dir);
/*
 * Restores the accumulators @acc[i] of collectors @names[i] from the saved
 * copy, and @d[i] (zero for collectors it does not hold, which start
 * empty).  Returns how many were restored, or a negative errno (a damaged
 * copy: -EBADMSG).
 */
int ks_pinstate_load(struct ks_pinstate *ps, struct ks_accum *acc, const char *const *names, int n,
		     struct ks_pin_drains *d);
/* Saves @acc[0..n) and @d[0..n) under @names, as one copy; 0 or negative errno. */
int ks_pinstate_save(struct ks_pinstate *ps, const struct ks_accum *acc, const char *const *names, int n,
		     const struct ks_pin_drains *d);
/* Frees @ps and the names restored rows point to: after the accumulators are freed. */
void ks_pinstate_close(struct ks_pinstate *ps);

#endif
