/* record --flight: event chunks in a bounded in-memory queue, trigger tests on each event, and the writing of the windows around triggers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "format/filter.h"
#include "record/flight.h"

/* How long past a window's end the recorder waits for its events to come out of every ring. */
#define SETTLE_NS 200000000ull

struct kept {
	struct ks_rec_chunk hdr;
	char *buf;
	struct kept *next;
};

struct ks_flight {
	const struct ks_rec_opts *o;
	int ncpus;
	enum ks_flight_state state;
	struct kept *head, *tail;
	uint64_t bytes;
	uint64_t lo, hi;	/* the window being written */
	uint64_t *upto;		/* per CPU: the last timestamp written (no event twice across windows) */
	uint64_t *pending_lost; /* per CPU: losses of chunks not written */
	uint64_t triggers, written;
	/* --trigger-all: triggers seen while a window was being written, each past the one before it */
	uint64_t queue[16];
	int nqueue;
	char *tmp;		/* a chunk's events in the window */
	uint32_t tmp_cap;
};

struct ks_flight *ks_flight_new(const struct ks_rec_opts *o, int ncpus)
{
	struct ks_flight *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	fl->o = o;
	fl->ncpus = ncpus;
	fl->upto = calloc((size_t)ncpus, sizeof(*fl->upto));
	fl->pending_lost = calloc((size_t)ncpus, sizeof(*fl->pending_lost));
	if (!fl->upto || !fl->pending_lost) {
		ks_flight_free(fl);
		return NULL;
	}
	return fl;
}

static void drop_head(struct ks_flight *fl)
{
	struct kept *k = fl->head;

	fl->head = k->next;
	if (!fl->head)
		fl->tail = NULL;
	if (k->hdr.cpu < (uint32_t)fl->ncpus)
		fl->pending_lost[k->hdr.cpu] += k->hdr.lost;
	fl->bytes -= k->hdr.len;
	free(k->buf);
	free(k);
}

void ks_flight_free(struct ks_flight *fl)
{
	if (!fl)
		return;
	while (fl->head)
		drop_head(fl);
	free(fl->upto);
	free(fl->pending_lost);
	free(fl->tmp);
	free(fl);
}

enum ks_flight_state ks_flight_state(const struct ks_flight *fl)
{
	return fl->state;
}

static void start(struct ks_flight *fl, uint64_t ts)
{
	fl->state = KS_FL_PENDING;
	fl->triggers++;
	fl->lo = ts > fl->o->before_ns ? ts - fl->o->before_ns : 0;
	fl->hi = ts + fl->o->after_ns;
}

void ks_flight_see(struct ks_flight *fl, const struct ks_rec_event *e)
{
	const struct ks_rec_tps *tps = fl->o->tps;
	uint16_t type;
	int i;

	if (fl->state == KS_FL_DONE || e->len < 2)
		return;
	memcpy(&type, e + 1, 2);
	for (i = 0; i < tps->n && tps->v[i].id != type; i++)
		;
	if (i == tps->n || !fl->o->trigger[i].n || !ks_flt_run(&fl->o->trigger[i], e))
		return;
	if (fl->state == KS_FL_IDLE) {
		start(fl, e->ts);
	} else if (fl->o->trigger_all && fl->nqueue < (int)(sizeof(fl->queue) / sizeof(fl->queue[0])) &&
		   e->ts > (fl->nqueue ? fl->queue[fl->nqueue - 1] + fl->o->after_ns : fl->hi)) {
		/* events come in batches: the next marker may arrive with the window of this one */
		fl->queue[fl->nqueue++] = e->ts;
	}
}

/*
 * Appends the events of @c (payload @p) with lo <= ts <= hi and newer than
 * what was written for its CPU, as one chunk carrying the CPU's losses so far.
 */
static int write_part(struct ks_flight *fl, struct ks_rec_writer *w, const struct ks_rec_chunk *c, const void *p,
		      uint64_t lo, uint64_t hi)
{
	struct ks_rec_chunk out = { .type = KS_REC_EVENTS, .cpu = c->cpu };
	const struct ks_rec_event *e;
	uint32_t off = 0, len = 0, cpu = c->cpu;
	int err;

	if (cpu >= (uint32_t)fl->ncpus)
		return 0;
	fl->pending_lost[cpu] += c->lost;
	if (c->len > fl->tmp_cap) {
		char *n = realloc(fl->tmp, c->len);

		if (!n)
			return -ENOMEM;
		fl->tmp = n;
		fl->tmp_cap = c->len;
	}
	while ((e = ks_rec_next_event(p, c->len, &off))) {
		uint32_t sz = ks_rec_ev_stride(e->len);

		if (e->ts < lo || e->ts > hi || (fl->upto[cpu] && e->ts <= fl->upto[cpu]))
			continue;
		memcpy(fl->tmp + len, e, sz);
		len += sz;
		if (!out.count++)
			out.first_ts = e->ts;
		out.last_ts = e->ts;
	}
	if (!out.count)
		return 0;
	out.lost = fl->pending_lost[cpu];
	err = ks_rec_append(w, &out, fl->tmp, len);
	if (err)
		return err;
	fl->pending_lost[cpu] = 0;
	fl->upto[cpu] = out.last_ts;
	fl->written += out.count;
	return 0;
}

static int keep(struct ks_flight *fl, const struct ks_rec_chunk *c, const void *p, uint32_t len)
{
	struct kept *k = calloc(1, sizeof(*k));

	if (!k || !(k->buf = malloc(len ? len : 1))) {
		free(k);
		return -ENOMEM;
	}
	k->hdr = *c;
	k->hdr.len = len;
	memcpy(k->buf, p, len);
	if (fl->tail)
		fl->tail->next = k;
	else
		fl->head = k;
	fl->tail = k;
	fl->bytes += len;
	/* the oldest go first; the newest chunk always stays, even alone over the size */
	while (fl->bytes > fl->o->flight_bytes && fl->head != fl->tail)
		drop_head(fl);
	return 0;
}

int ks_flight_chunk(struct ks_flight *fl, struct ks_rec_writer *w, const struct ks_rec_chunk *c, const void *p,
		    uint32_t len)
{
	struct ks_rec_chunk h = *c;

	h.len = len;
	switch (fl->state) {
	case KS_FL_AFTER:
		/* the part up to the window's end is written now; what is later is kept for a next window */
		if (h.first_ts <= fl->hi) {
			int err = write_part(fl, w, &h, p, fl->lo, fl->hi);

			if (err || h.last_ts <= fl->hi)
				return err;
			h.lost = 0; /* counted by write_part */
		}
		if (fl->o->trigger_all)
			return keep(fl, &h, p, len);
		if (h.cpu < (uint32_t)fl->ncpus)
			fl->pending_lost[h.cpu] += h.lost;
		return 0;
	case KS_FL_DONE:
		if (c->cpu < (uint32_t)fl->ncpus)
			fl->pending_lost[c->cpu] += c->lost;
		return 0;
	default:
		return keep(fl, &h, p, len);
	}
}

int ks_flight_fire(struct ks_flight *fl, struct ks_rec_writer *w)
{
	int err = 0;

	while (fl->head && !err) {
		struct kept *k = fl->head;

		err = write_part(fl, w, &k->hdr, k->buf, fl->lo, fl->hi);
		k->hdr.lost = 0; /* now counted in pending_lost or a written chunk */
		drop_head(fl);
	}
	fl->state = KS_FL_AFTER;
	return err;
}

bool ks_flight_after_over(const struct ks_flight *fl, uint64_t now_ns)
{
	return fl->state == KS_FL_AFTER && now_ns > fl->hi + SETTLE_NS;
}

void ks_flight_window_end(struct ks_flight *fl)
{
	fl->state = fl->o->trigger_all ? KS_FL_IDLE : KS_FL_DONE;
	if (fl->nqueue) {
		start(fl, fl->queue[0]);
		memmove(fl->queue, fl->queue + 1, (size_t)--fl->nqueue * sizeof(fl->queue[0]));
	}
}

int ks_flight_finish(struct ks_flight *fl, struct ks_rec_writer *w)
{
	int err = 0;

	/* every event has arrived: windows still open, or triggered and not yet written, are complete */
	if (fl->state == KS_FL_AFTER)
		ks_flight_window_end(fl);
	while (fl->state == KS_FL_PENDING && !err) {
		err = ks_flight_fire(fl, w);
		ks_flight_window_end(fl);
	}
	while (fl->head)
		drop_head(fl);
	for (int i = 0; i < fl->ncpus && !err; i++) {
		struct ks_rec_chunk c = { .type = KS_REC_EVENTS, .cpu = (uint32_t)i, .lost = fl->pending_lost[i] };

		if (!c.lost)
			continue;
		err = ks_rec_append(w, &c, "", 0);
		if (!err)
			fl->pending_lost[i] = 0;
	}
	return err;
}

void ks_flight_stats(const struct ks_flight *fl, struct ks_flight_stats *st)
{
	st->triggers = fl->triggers;
	st->written = fl->written;
}
