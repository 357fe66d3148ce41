/* Latency pairs: the START/END spec and its key fields checked against formats, and the bounded matcher of open starts shared by report and record. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "core/hash.h"
#include "core/log.h"
#include "events/pair.h"
#include "format/field.h"

static struct tep_event *find_event(struct tep_handle *tep, const char *spec, size_t len)
{
	char buf[256], *colon;

	if (len >= sizeof(buf))
		return NULL;
	memcpy(buf, spec, len);
	buf[len] = '\0';
	colon = strchr(buf, ':');
	if (!colon)
		return NULL;
	*colon = '\0';
	return tep_find_event_by_name(tep, buf, colon + 1);
}

/*
 * Field @name of @e; where @e has none, its @side twin: sched_switch
 * names its two tasks prev_pid and next_pid, never pid, so `pid` ties a
 * start to the task switched out (prev_, off-CPU: sched_switch/
 * sched_wakeup) and an end to the task switched in (next_, run-queue
 * latency: sched_wakeup/sched_switch), as the issue's own spelling
 * `key=pid` means.  A field the event has is always taken as written.
 */
static struct tep_format_field *key_field(struct tep_event *e, const char *name, const char *side)
{
	struct tep_format_field *f = tep_find_any_field(e, name);
	char twin[128];

	if (f || (size_t)snprintf(twin, sizeof(twin), "%s%s", side, name) >= sizeof(twin))
		return f;
	return tep_find_field(e, twin);
}

int ks_pair_parse_tep(struct ks_pair *p, struct tep_handle *tep, const char *spec, const char *keys, const char *opt,
		      const char *kopt, const char *where)
{
	const char *slash = strchr(spec, '/');
	char *dup, *save = NULL, *tok;
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->spec = spec;
	if (!slash) {
		p_err("bad %s '%s': expected START/END, e.g. sched:sched_wakeup/sched:sched_switch", opt, spec);
		return -EINVAL;
	}
	p->a = find_event(tep, spec, (size_t)(slash - spec));
	p->b = find_event(tep, slash + 1, strlen(slash + 1));
	if (!p->a || !p->b) {
		p_err("%s '%s': %.*s is not %s", opt, spec, p->a ? (int)strlen(slash + 1) : (int)(slash - spec),
		      p->a ? slash + 1 : spec, where);
		return -EINVAL;
	}
	if (!keys || !*keys) {
		p_err("%s '%s' needs %s FIELD[=FIELD],... (which fields tie a start to its end)", opt, spec, kopt);
		return -EINVAL;
	}
	dup = strdup(keys);
	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *fa = tok, *fb = eq ? eq + 1 : tok;

		if (eq)
			*eq = '\0';
		if (p->nkeys == KS_PAIR_MAX_KEYS) {
			p_err("%s '%s': at most %d fields", kopt, keys, KS_PAIR_MAX_KEYS);
			err = -EINVAL;
			break;
		}
		p->ka[p->nkeys] = key_field(p->a, fa, "prev_");
		p->kb[p->nkeys] = key_field(p->b, fb, "next_");
		if (!p->ka[p->nkeys] || !p->kb[p->nkeys]) {
			p_err("%s '%s': %s has no field '%s'", kopt, keys, p->ka[p->nkeys] ? p->b->name : p->a->name,
			      p->ka[p->nkeys] ? fb : fa);
			err = -EINVAL;
		}
		p->nkeys++;
	}
	free(dup);
	return err;
}

/* A key field's value: the number, or a hash of a string; -1 when it is not within @dlen bytes. */
static int key_val(struct tep_handle *tep, const struct tep_format_field *f, const unsigned char *data,
		   uint32_t dlen, uint64_t *out)
{
	uint32_t off, len;
	uint64_t h = 1469598103934665603ull;

	if ((uint32_t)f->offset + (uint32_t)f->size > dlen)
		return -1;
	ks_field_span(f, data, &off, &len);
	if ((uint64_t)off + len > dlen)
		return -1;
	if (!(f->flags & (TEP_FIELD_IS_STRING | TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) && len <= 8) {
		*out = (uint64_t)ks_field_num(tep, f, data, off, len);
		return 0;
	}
	/* up to the string's NUL, within its field */
	*out = ks_fnv1a(data + off, strnlen((const char *)data + off, len), h);
	return 0;
}

unsigned ks_pair_keys(const struct ks_pair *p, struct tep_handle *tep, const struct tep_event *ev, const void *data,
		      uint32_t len, uint64_t ka[KS_PAIR_MAX_KEYS], uint64_t kb[KS_PAIR_MAX_KEYS])
{
	unsigned roles = (ev == p->a ? KS_PAIR_START : 0) | (ev == p->b ? KS_PAIR_END : 0);

	memset(ka, 0, KS_PAIR_MAX_KEYS * sizeof(*ka));
	memset(kb, 0, KS_PAIR_MAX_KEYS * sizeof(*kb));
	for (int f = 0; f < p->nkeys; f++)
		if (((roles & KS_PAIR_START) && key_val(tep, p->ka[f], data, len, &ka[f])) ||
		    ((roles & KS_PAIR_END) && key_val(tep, p->kb[f], data, len, &kb[f])))
			return 0;
	return roles;
}

/*
 * The open starts live in a ring in the order they came (so the oldest is
 * at its head, evicted in O(1)), chained into hash buckets by ring index.
 * A start used up by its end, or replaced by a restart, is only marked
 * dead: the ring drops dead entries from its head as it needs room, and
 * is rebuilt without them when they are half of it.
 */
struct open_start {
	uint64_t k[KS_PAIR_MAX_KEYS];
	uint64_t ts;
	int32_t next; /* in the bucket's chain, -1: last */
	uint8_t live;
};

struct ks_pairer {
	struct open_start *ring;
	int32_t *bucket;	 /* cap of them, -1: empty */
	uint32_t cap, head, n;	 /* ring positions head .. head + n - 1 (mod cap) */
	uint32_t live, max;	 /* max 0: unbounded */
	struct ks_pair_counts pc;
};

static uint32_t hash_key(const uint64_t *k, uint32_t cap)
{
	uint64_t h = 0;

	for (int i = 0; i < KS_PAIR_MAX_KEYS; i++)
		h = (h ^ k[i]) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The live start of key @k, its link in the chain in *@link. */
static int32_t *find(struct ks_pairer *m, const uint64_t *k)
{
	int32_t *link = &m->bucket[hash_key(k, m->cap)];

	for (; *link >= 0; link = &m->ring[*link].next)
		if (m->ring[*link].live && !memcmp(m->ring[*link].k, k, sizeof(m->ring[0].k)))
			return link;
	return NULL;
}

static void unlink_slot(struct ks_pairer *m, uint32_t idx)
{
	int32_t *link = &m->bucket[hash_key(m->ring[idx].k, m->cap)];

	while (*link != (int32_t)idx)
		link = &m->ring[*link].next;
	*link = m->ring[idx].next;
}

/* The ring at @cap entries, with only the live ones, in their order. */
static int rebuild(struct ks_pairer *m, uint32_t cap)
{
	struct open_start *ring = calloc(cap, sizeof(*ring));
	int32_t *bucket = malloc(cap * sizeof(*bucket));
	uint32_t n = 0;

	if (!ring || !bucket) {
		free(ring);
		free(bucket);
		return -ENOMEM;
	}
	memset(bucket, 0xff, cap * sizeof(*bucket));
	for (uint32_t i = 0; i < m->n; i++) {
		struct open_start *s = &m->ring[(m->head + i) & (m->cap - 1)];
		uint32_t h = hash_key(s->k, cap);

		if (!s->live)
			continue;
		ring[n] = *s;
		ring[n].next = bucket[h];
		bucket[h] = (int32_t)n++;
	}
	free(m->ring);
	free(m->bucket);
	m->ring = ring;
	m->bucket = bucket;
	m->cap = cap;
	m->head = 0;
	m->n = n;
	return 0;
}

struct ks_pairer *ks_pairer_new(size_t max_open)
{
	struct ks_pairer *m = calloc(1, sizeof(*m));
	uint32_t max = 0;

	if (!m)
		return NULL;
	if (max_open) {
		for (max = 16; max < max_open && max < (1u << 30); max *= 2)
			;
	}
	m->max = max;
	if (rebuild(m, max && max < 1024 ? max : 1024)) {
		free(m);
		return NULL;
	}
	return m;
}

size_t ks_pairer_open_bytes(void)
{
	return sizeof(struct open_start) + sizeof(int32_t);
}

void ks_pairer_free(struct ks_pairer *m)
{
	if (!m)
		return;
	free(m->ring);
	free(m->bucket);
	free(m);
}

/* Room for one more at the ring's tail: dead entries go, then the ring is rebuilt, grows, or its oldest is evicted. */
static int make_room(struct ks_pairer *m)
{
	while (m->n && !m->ring[m->head].live) {
		unlink_slot(m, m->head);
		m->head = (m->head + 1) & (m->cap - 1);
		m->n--;
	}
	if (m->n < m->cap)
		return 0;
	if (m->live * 2 <= m->cap)
		return rebuild(m, m->cap);
	if (!m->max || m->cap < m->max)
		return rebuild(m, m->cap * 2);
	unlink_slot(m, m->head);
	m->ring[m->head].live = 0;
	m->head = (m->head + 1) & (m->cap - 1);
	m->n--;
	m->live--;
	m->pc.evicted++;
	return 0;
}

int ks_pairer_feed(struct ks_pairer *m, unsigned roles, const uint64_t *ka, const uint64_t *kb, uint64_t ts,
		   uint64_t *start_ts)
{
	int ended = 0, err;
	int32_t *link;
	struct open_start *s;
	uint32_t idx, h;

	/* an event both starts and ends (same event twice) ends first */
	if (roles & KS_PAIR_END) {
		link = find(m, kb);
		if (link) {
			*start_ts = m->ring[*link].ts;
			m->ring[*link].live = 0; /* leaves its chain when the ring drops it */
			m->live--;
			ended = 1;
		} else if (!(roles & KS_PAIR_START)) {
			m->pc.unmatched++;
		}
	}
	if (!(roles & KS_PAIR_START))
		return ended;
	link = find(m, ka);
	if (link) {
		m->pc.restarted++; /* a second start before an end: the later one counts */
		m->ring[*link].live = 0;
		m->live--;
	}
	err = make_room(m);
	if (err)
		return err;
	idx = (m->head + m->n) & (m->cap - 1);
	h = hash_key(ka, m->cap);
	s = &m->ring[idx];
	memcpy(s->k, ka, sizeof(s->k));
	s->ts = ts;
	s->live = 1;
	s->next = m->bucket[h];
	m->bucket[h] = (int32_t)idx;
	m->n++;
	m->live++;
	return ended;
}

void ks_pairer_counts(const struct ks_pairer *m, struct ks_pair_counts *pc)
{
	*pc = m->pc;
	pc->open = m->live;
}
