/* record --flight: event chunks in a bounded in-memory queue, trigger tests on each event, and the writing of the windows around triggers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "format/filter.h"
#include "record/flight.h"

/* How long past a window's end the recorder waits for its events to come out of every ring. */
#define SETTLE_NS 200000000ull

/* Triggers waiting for their window (--trigger-all): more in one batch are not kept, but counted. */
#define MAX_QUEUE KS_FLIGHT_MAX_QUEUE

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
	uint64_t lo, hi;	/* the window being written (AFTER), or the last one written */
	uint64_t *pending_lost; /* per CPU: losses of chunks not written */
	uint64_t triggers, written;
	uint64_t dropped; /* --trigger-all: triggers that found the queue full */
	/*
	 * Triggers seen whose window is not opened yet, oldest first.  Sorted
	 * here, not taken in the order they arrive: a batch holds each CPU's
	 * ring in turn, so a later marker on CPU 0 is seen before an earlier
	 * one on CPU 1.  Without --trigger-all only the oldest is kept.
	 */
	uint64_t queue[MAX_QUEUE];
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
	fl->pending_lost = calloc((size_t)ncpus, sizeof(*fl->pending_lost));
	if (!fl->pending_lost) {
		ks_flight_free(fl);
		return NULL;
	}
	return fl;
}

static void free_kept(struct ks_flight *fl, struct kept *k)
{
	if (k->hdr.cpu < (uint32_t)fl->ncpus)
		fl->pending_lost[k->hdr.cpu] += k->hdr.lost;
	free(k->buf);
	free(k);
}

static void drop_head(struct ks_flight *fl)
{
	struct kept *k = fl->head;

	fl->head = k->next;
	if (!fl->head)
		fl->tail = NULL;
	fl->bytes -= k->hdr.len;
	free_kept(fl, k);
}

void ks_flight_free(struct ks_flight *fl)
{
	if (!fl)
		return;
	while (fl->head)
		drop_head(fl);
	free(fl->pending_lost);
	free(fl->tmp);
	free(fl);
}

enum ks_flight_state ks_flight_state(const struct ks_flight *fl)
{
	return fl->state;
}

void ks_flight_see(struct ks_flight *fl, const struct ks_rec_event *e)
{
	const struct ks_rec_tps *tps = fl->o->tps;
	int max = fl->o->trigger_all ? MAX_QUEUE : 1;
	uint16_t type;
	int i;

	if (fl->state == KS_FL_DONE || e->len < 2)
		return;
	memcpy(&type, e + 1, 2);
	for (i = 0; i < tps->n && tps->v[i].id != type; i++)
		;
	if (i == tps->n || !fl->o->trigger[i].n || !ks_flt_run(&fl->o->trigger[i], e))
		return;
	/* inside (or before the end of) the last window: part of it, not a window of its own */
	if (fl->triggers && e->ts <= fl->hi)
		return;
	for (i = fl->nqueue; i > 0 && fl->queue[i - 1] > e->ts; i--)
		;
	/* without --trigger-all only the first window is written: a later trigger is no loss */
	if (i == max || fl->nqueue == max)
		fl->dropped += fl->o->trigger_all;
	if (i == max)
		return; /* after every waiting trigger and no room; without --trigger-all, after the first */
	if (fl->nqueue == max)
		fl->nqueue--; /* the latest waiting one gives way to an earlier one */
	memmove(fl->queue + i + 1, fl->queue + i, (size_t)(fl->nqueue - i) * sizeof(fl->queue[0]));
	fl->queue[i] = e->ts;
	fl->nqueue++;
	if (fl->state == KS_FL_IDLE)
		fl->state = KS_FL_PENDING;
}

/*
 * Appends the events of @p (@len bytes of CPU @cpu, @lost losses before
 * them) with lo <= ts <= hi as one chunk carrying the CPU's losses so far,
 * and copies the others, in their order, to @rest (which may be @p: they
 * only move down), their count and extent in @rh.  What is written leaves
 * the queue, so no event is written twice; the test is each event's own
 * time, not a chunk's first and last, nor a per-CPU "written up to": one
 * ring is not in time order when programs are preempted between taking a
 * timestamp and reserving ring space.
 */
static int write_part(struct ks_flight *fl, struct ks_rec_writer *w, uint32_t cpu, uint64_t lost, const char *p,
		      uint32_t len, char *rest, struct ks_rec_chunk *rh)
{
	struct ks_rec_chunk out = { .type = KS_REC_EVENTS, .cpu = cpu };
	const struct ks_rec_event *e;
	uint32_t off = 0;
	int err;

	*rh = (struct ks_rec_chunk){ .type = KS_REC_EVENTS, .cpu = cpu };
	if (cpu >= (uint32_t)fl->ncpus)
		return 0;
	fl->pending_lost[cpu] += lost;
	if (len > fl->tmp_cap) {
		char *n = realloc(fl->tmp, len);

		if (!n)
			return -ENOMEM;
		fl->tmp = n;
		fl->tmp_cap = len;
	}
	while ((e = ks_rec_next_event(p, len, &off))) {
		uint32_t sz = ks_rec_ev_stride(e->len);
		struct ks_rec_chunk *to = e->ts < fl->lo || e->ts > fl->hi ? rh : &out;

		/* memmove: what stays only moves down within @rest, which may be @p */
		memmove((to == rh ? rest : fl->tmp) + to->len, e, sz);
		to->len += sz;
		if (!to->count++ || e->ts < to->first_ts)
			to->first_ts = e->ts;
		if (e->ts > to->last_ts)
			to->last_ts = e->ts;
	}
	if (!out.count)
		return 0;
	out.lost = fl->pending_lost[cpu];
	err = ks_rec_append(w, &out, fl->tmp, out.len);
	if (err)
		return err;
	fl->pending_lost[cpu] = 0;
	fl->written += out.count;
	return 0;
}

/*
 * Appends @k to the queue; the oldest go first beyond the size.  The size
 * bounds what is kept from before a trigger: a chunk with the oldest
 * waiting trigger or anything after it stays until its window is written
 * (a batch may hold more than the size: dropping the chunk that holds the
 * marker would write its window without it).  The newest chunk always
 * stays, even alone over the size.
 */
static void enqueue(struct ks_flight *fl, struct kept *k)
{
	k->next = NULL;
	if (fl->tail)
		fl->tail->next = k;
	else
		fl->head = k;
	fl->tail = k;
	fl->bytes += k->hdr.len;
	while (fl->bytes > fl->o->flight_bytes && fl->head != fl->tail &&
	       !(fl->nqueue && fl->head->hdr.last_ts >= fl->queue[0]))
		drop_head(fl);
}

static struct kept *copy_chunk(const struct ks_rec_chunk *c, const void *p, uint32_t len)
{
	struct kept *k = calloc(1, sizeof(*k));
	const struct ks_rec_event *e;

	if (!k || !(k->buf = malloc(len ? len : 1))) {
		free(k);
		return NULL;
	}
	k->hdr = *c;
	k->hdr.len = len;
	memcpy(k->buf, p, len);
	/* the chunk's extent, whatever order its events are in: enqueue compares the newest with a trigger */
	k->hdr.first_ts = UINT64_MAX;
	k->hdr.last_ts = 0;
	for (uint32_t off = 0; (e = ks_rec_next_event(k->buf, len, &off));) {
		k->hdr.first_ts = e->ts < k->hdr.first_ts ? e->ts : k->hdr.first_ts;
		k->hdr.last_ts = e->ts > k->hdr.last_ts ? e->ts : k->hdr.last_ts;
	}
	if (k->hdr.first_ts == UINT64_MAX)
		k->hdr.first_ts = 0;
	return k;
}

/* What is left of a chunk after its window part was written: the memory the queue's size counts. */
static void shrink(struct kept *k)
{
	char *n = realloc(k->buf, k->hdr.len ? k->hdr.len : 1);

	if (n)
		k->buf = n;
}

int ks_flight_chunk(struct ks_flight *fl, struct ks_rec_writer *w, const struct ks_rec_chunk *c, const void *p,
		    uint32_t len)
{
	struct kept *k;
	int err;

	switch (fl->state) {
	case KS_FL_DONE:
		if (c->cpu < (uint32_t)fl->ncpus)
			fl->pending_lost[c->cpu] += c->lost;
		return 0;
	case KS_FL_AFTER:
		/* the part in the window is written now; the rest is kept for a next window */
		k = copy_chunk(c, p, len);
		if (!k)
			return -ENOMEM;
		err = write_part(fl, w, c->cpu, c->lost, k->buf, len, k->buf, &k->hdr);
		if (err || !k->hdr.count || !fl->o->trigger_all) {
			k->hdr.lost = 0; /* counted by write_part */
			free_kept(fl, k);
			return err;
		}
		shrink(k);
		enqueue(fl, k);
		return 0;
	default:
		k = copy_chunk(c, p, len);
		if (!k)
			return -ENOMEM;
		enqueue(fl, k);
		return 0;
	}
}

int ks_flight_fire(struct ks_flight *fl, struct ks_rec_writer *w)
{
	struct kept *k = fl->head, *keep = NULL, **ktail = &keep;
	uint64_t ts = fl->queue[0];
	int err = 0;

	if (fl->state != KS_FL_PENDING || !fl->nqueue)
		return 0;
	fl->triggers++;
	fl->lo = ts > fl->o->before_ns ? ts - fl->o->before_ns : 0;
	fl->hi = ts + fl->o->after_ns;
	/* triggers inside this window are part of it */
	while (fl->nqueue && fl->queue[0] <= fl->hi)
		memmove(fl->queue, fl->queue + 1, (size_t)--fl->nqueue * sizeof(fl->queue[0]));
	/*
	 * Every kept chunk gives its part in the window; with --trigger-all
	 * what is left of it stays: it may hold the next trigger's window,
	 * even that trigger, when both came out of the rings in one batch.
	 */
	fl->head = fl->tail = NULL;
	fl->bytes = 0;
	while (k) {
		struct kept *next = k->next;
		uint64_t lost = k->hdr.lost; /* write_part counts it; what stays has none */

		if (!err)
			err = write_part(fl, w, k->hdr.cpu, lost, k->buf, k->hdr.len, k->buf, &k->hdr);
		if (!err && k->hdr.count && fl->o->trigger_all) {
			shrink(k);
			*ktail = k;
			ktail = &k->next;
			fl->bytes += k->hdr.len;
		} else {
			free_kept(fl, k);
		}
		k = next;
	}
	*ktail = NULL;
	fl->head = keep;
	for (fl->tail = keep; fl->tail && fl->tail->next; fl->tail = fl->tail->next)
		;
	fl->state = KS_FL_AFTER;
	return err;
}

bool ks_flight_after_over(const struct ks_flight *fl, uint64_t now_ns)
{
	return fl->state == KS_FL_AFTER && now_ns > fl->hi + SETTLE_NS;
}

void ks_flight_window_end(struct ks_flight *fl)
{
	if (!fl->o->trigger_all)
		fl->state = KS_FL_DONE;
	else
		fl->state = fl->nqueue ? KS_FL_PENDING : KS_FL_IDLE;
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
	st->dropped = fl->dropped;
}
