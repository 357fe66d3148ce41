/* record --flight: event chunks in a bounded in-memory queue, trigger tests on each event, and the writing of the windows around triggers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "events/filter.h"
#include "events/pair.h"
#include "record/flight.h"

/* How long past a window's end the recorder waits for its events to come out of every ring. */
#define SETTLE_NS 200000000ull

/* Triggers waiting for their window (--trigger-all): more in one batch are not kept, but counted. */
#define MAX_QUEUE KS_FLIGHT_MAX_QUEUE

/* Start and end events waiting to be matched in time order; more are matched at once. */
#define LAT_MAX_PENDING (1u << 20)
/*
 * How far behind a full drain's start the matching stays: an event took
 * its timestamp before it reserved ring space, and a program can be
 * preempted in between, so a drain may miss an event a little older.
 */
#define LAT_SLACK_NS 20000000ull

/* A start or end, its keys folded into one hash (the matcher keys on it). */
struct lat_ev {
	uint64_t ts, ka, kb;
	unsigned roles;
};

/* A trigger waiting for its window: its time, and where its window starts. */
struct trig {
	uint64_t ts, lo;
};

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
	uint64_t triggers, written, written_lost;
	uint64_t dropped; /* --trigger-all: triggers that found the queue full */
	/*
	 * Triggers seen whose window is not opened yet, oldest first.  Sorted
	 * here, not taken in the order they arrive: a batch holds each CPU's
	 * ring in turn, so a later marker on CPU 0 is seen before an earlier
	 * one on CPU 1.  Without --trigger-all only the oldest is kept.
	 */
	struct trig queue[MAX_QUEUE];
	int nqueue;
	/*
	 * --trigger-latency.  Each CPU's ring is read in turn, so a start on
	 * one CPU can come out after its end on another (a task woken on CPU 1
	 * and switched in on CPU 0).  Matching as events arrive would take that
	 * end as unmatched; instead starts and ends wait in @lat (folded to a
	 * few words each) and are matched in time order after each full drain
	 * of every ring, up to the time the drain began: by then every earlier
	 * event is out.  A trigger is found up to a drain (a second) late,
	 * which the kept events' size covers as it does for --before.
	 */
	struct ks_pairer *pairer;
	struct lat_ev *lat;
	uint32_t nlat, lat_cap;
	uint64_t lat_pairs, lat_over;
	char *tmp;		/* a chunk's events in the window */
	uint32_t tmp_cap;
};

uint32_t ks_flight_lat_max_open(uint64_t flight_bytes)
{
	uint64_t fit = flight_bytes / 4 / ks_pairer_open_bytes();
	uint32_t n = 1024;

	while (n < (1u << 22) && (uint64_t)n * 2 <= fit)
		n *= 2;
	return n;
}

struct ks_flight *ks_flight_new(const struct ks_rec_opts *o, int ncpus)
{
	struct ks_flight *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	fl->o = o;
	fl->ncpus = ncpus;
	fl->pending_lost = calloc((size_t)ncpus, sizeof(*fl->pending_lost));
	if (o->latency)
		fl->pairer = ks_pairer_new(ks_flight_lat_max_open(o->flight_bytes));
	if (!fl->pending_lost || (o->latency && !fl->pairer)) {
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
	ks_pairer_free(fl->pairer);
	free(fl->lat);
	free(fl);
}

enum ks_flight_state ks_flight_state(const struct ks_flight *fl)
{
	return fl->state;
}

/*
 * A trigger at @ts whose window starts at @lo: queued in time order
 * (--trigger-all: up to MAX_QUEUE windows).  One that falls in a waiting
 * trigger's window, or whose window holds the next waiting trigger, joins
 * it now, as ks_flight_fire would join them: so each waiting entry is a
 * window of its own (its time more than --after past the one before), and
 * a burst of triggers, a busy latency trigger's, takes one entry, not one
 * each.
 */
static void queue_trigger(struct ks_flight *fl, uint64_t ts, uint64_t lo)
{
	int max = fl->o->trigger_all ? MAX_QUEUE : 1;
	uint64_t after = fl->o->after_ns;
	struct trig *q;
	int i;

	/* inside (or before the end of) the last window: part of it, not a window of its own */
	if (fl->triggers && ts <= fl->hi)
		return;
	for (i = fl->nqueue; i > 0 && fl->queue[i - 1].ts > ts; i--)
		;
	q = i > 0 && ts - fl->queue[i - 1].ts <= after ? &fl->queue[i - 1] /* in the window before */
	    : i < fl->nqueue && fl->queue[i].ts - ts <= after ? &fl->queue[i] /* its window holds the next */
							       : NULL;
	if (q) {
		q->ts = ts < q->ts ? ts : q->ts;
		q->lo = lo < q->lo ? lo : q->lo;
		return;
	}
	/* without --trigger-all only the first window is written: a later trigger is no loss */
	if (i == max || fl->nqueue == max)
		fl->dropped += fl->o->trigger_all;
	if (i == max)
		return; /* after every waiting trigger and no room; without --trigger-all, after the first */
	if (fl->nqueue == max)
		fl->nqueue--; /* the latest waiting one gives way to an earlier one */
	memmove(fl->queue + i + 1, fl->queue + i, (size_t)(fl->nqueue - i) * sizeof(fl->queue[0]));
	fl->queue[i] = (struct trig){ ts, lo };
	fl->nqueue++;
	if (fl->state == KS_FL_IDLE)
		fl->state = KS_FL_PENDING;
}

static uint64_t fold(const uint64_t *k)
{
	uint64_t h = 0;

	for (int i = 0; i < KS_PAIR_MAX_KEYS; i++)
		h = (h ^ k[i]) * 0xff51afd7ed558ccdull + 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

static int cmp_lat(const void *a, const void *b)
{
	const struct lat_ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (int)y->roles - (int)x->roles; /* same time: a start-and-end, then an end... */
}

/* A --trigger-latency start or end: waits in fl->lat for ks_flight_settle. */
static void latency_see(struct ks_flight *fl, const struct ks_rec_event *e, uint16_t type)
{
	const struct ks_rec_latency *l = fl->o->latency;
	const struct tep_event *ev = type == l->pair.a->id ? l->pair.a : type == l->pair.b->id ? l->pair.b : NULL;
	uint64_t ka[KS_PAIR_MAX_KEYS], kb[KS_PAIR_MAX_KEYS];
	unsigned roles;

	if (!ev || !(roles = ks_pair_keys(&l->pair, l->tep, ev, e + 1, e->len, ka, kb)))
		return;
	if (fl->nlat == LAT_MAX_PENDING)
		ks_flight_settle(fl, UINT64_MAX); /* a burst: matched now, in the order there is */
	if (fl->nlat == fl->lat_cap) {
		uint32_t cap = fl->lat_cap ? fl->lat_cap * 2 : 4096;
		struct lat_ev *n = realloc(fl->lat, cap * sizeof(*n));

		if (!n)
			return; /* the pair is missed: its end counts as unmatched, or its start stays open */
		fl->lat = n;
		fl->lat_cap = cap;
	}
	fl->lat[fl->nlat++] = (struct lat_ev){ e->ts, fold(ka), fold(kb), roles };
}

void ks_flight_see(struct ks_flight *fl, const struct ks_rec_event *e)
{
	const struct ks_rec_tps *tps = fl->o->tps;
	uint16_t type;
	int i;

	if (fl->state == KS_FL_DONE || e->len < 2)
		return;
	memcpy(&type, e + 1, 2);
	if (fl->o->latency)
		latency_see(fl, e, type);
	if (!fl->o->trigger)
		return;
	for (i = 0; i < tps->n && tps->v[i].id != type; i++)
		;
	if (i == tps->n || !fl->o->trigger[i].n || !ks_flt_run(&fl->o->trigger[i], e))
		return;
	queue_trigger(fl, e->ts, e->ts > fl->o->before_ns ? e->ts - fl->o->before_ns : 0);
}

void ks_flight_settle(struct ks_flight *fl, uint64_t drained_at)
{
	uint64_t upto = drained_at > LAT_SLACK_NS ? drained_at - LAT_SLACK_NS : 0;
	uint32_t i;

	if (!fl->nlat)
		return;
	qsort(fl->lat, fl->nlat, sizeof(*fl->lat), cmp_lat);
	for (i = 0; i < fl->nlat && fl->lat[i].ts <= upto; i++) {
		const struct lat_ev *x = &fl->lat[i];
		uint64_t ka[KS_PAIR_MAX_KEYS] = { x->ka }, kb[KS_PAIR_MAX_KEYS] = { x->kb }, start, lo;

		if (ks_pairer_feed(fl->pairer, x->roles, ka, kb, x->ts, &start) != 1)
			continue; /* no pair ended (or no memory for a start: it is missed) */
		fl->lat_pairs++;
		if (x->ts - start <= fl->o->latency->threshold_ns)
			continue;
		fl->lat_over++;
		/* the window reaches back to the start, however long the latency was */
		lo = x->ts > fl->o->before_ns ? x->ts - fl->o->before_ns : 0;
		if (fl->state != KS_FL_DONE)
			queue_trigger(fl, x->ts, start < lo ? start : lo);
	}
	memmove(fl->lat, fl->lat + i, (fl->nlat - i) * sizeof(*fl->lat));
	fl->nlat -= i;
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
	fl->written_lost += out.lost;
	return 0;
}

/*
 * Appends @k to the queue; the oldest go first beyond the size.  The size
 * bounds what is kept from before a trigger: a chunk with anything in
 * the oldest waiting trigger's window stays until the window is written
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
	       !(fl->nqueue && fl->head->hdr.last_ts >= fl->queue[0].lo))
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
	int err = 0;

	if (fl->state != KS_FL_PENDING || !fl->nqueue)
		return 0;
	fl->triggers++;
	fl->lo = fl->queue[0].lo;
	fl->hi = fl->queue[0].ts + fl->o->after_ns;
	/* triggers inside this window are part of it, and so are the starts of their latencies */
	while (fl->nqueue && fl->queue[0].ts <= fl->hi) {
		fl->lo = fl->queue[0].lo < fl->lo ? fl->queue[0].lo : fl->lo;
		memmove(fl->queue, fl->queue + 1, (size_t)--fl->nqueue * sizeof(fl->queue[0]));
	}
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

	/* every event has arrived: the last pairs are matched; windows still open, or triggered and not yet
	 * written, are complete */
	ks_flight_settle(fl, UINT64_MAX);
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
		if (!err) {
			fl->pending_lost[i] = 0;
			fl->written_lost += c.lost;
		}
	}
	return err;
}

void ks_flight_stats(const struct ks_flight *fl, struct ks_flight_stats *st)
{
	st->triggers = fl->triggers;
	st->written = fl->written;
	st->written_lost = fl->written_lost;
	st->dropped = fl->dropped;
	st->lat_pairs = fl->lat_pairs;
	st->lat_over = fl->lat_over;
	memset(&st->lat, 0, sizeof(st->lat));
	if (fl->pairer)
		ks_pairer_counts(fl->pairer, &st->lat);
}
