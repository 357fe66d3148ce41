/* serve --pin: the cumulative counters serialized into a pinned, double-buffered BPF array and read back on restart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <zlib.h>
#include "core/log.h"
#include "core/pin.h"
#include "serve/pinstate.h"

#define CHUNK 4096u
#define MIN_REGION 16u /* chunks per region of a new map: 64 KiB */
#define MAGIC "ksightst"
/* 2: each collector's drains, sequence id and cursor after its name (issue 14); 1 is still read */
#define VERSION 2u
/* a value's kind in the low byte, then its no-sample bit and its merge rule (struct ks_val) */
#define VAL_KIND_MASK 0xffu
#define VAL_NONE_SHIFT 8
#define VAL_MERGE_SHIFT 9

struct hdr {
	char magic[8];
	uint64_t seq;	 /* saves so far */
	uint32_t region; /* 0 or 1: which holds the current copy */
	uint32_t version;
	uint64_t len;	 /* bytes of the copy */
	uint32_t crc;	 /* crc32 of them */
	uint32_t pad;
};

struct ks_pinstate {
	char path[4200]; /* DIR/ks_state */
	int fd;		 /* -1 until the first save makes it */
	uint32_t nchunks; /* the map's elements, header included */
	struct hdr h;
	char **names;	 /* interned names of restored rows */
	int nnames, capnames;
};

struct buf {
	unsigned char *p;
	size_t len, cap, off;
	int err;
};

static void put(struct buf *b, const void *v, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		unsigned char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put_u32(struct buf *b, uint32_t v) { put(b, &v, sizeof(v)); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, sizeof(v)); }

static void put_str(struct buf *b, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : 0;

	put_u32(b, n);
	put(b, s, n);
}

/* count, sum, max, then the non-empty slots only: most of a histogram's 976 slots are empty */
static void put_hist(struct buf *b, const struct ks_hist *h)
{
	uint32_t nz = 0;

	put_u64(b, h->count);
	put_u64(b, h->sum);
	put_u64(b, h->max);
	for (uint32_t i = 0; i < KS_HIST_SLOTS; i++)
		nz += h->slots[i] != 0;
	put_u32(b, nz);
	for (uint32_t i = 0; i < KS_HIST_SLOTS; i++)
		if (h->slots[i]) {
			put_u32(b, i);
			put_u64(b, h->slots[i]);
		}
}

static void put_row(struct buf *b, const struct ks_row *r)
{
	put_u32(b, (uint32_t)r->nkeys);
	for (int k = 0; k < r->nkeys; k++) {
		put_str(b, r->keys[k].name);
		put_u32(b, r->keys[k].is_num);
		put_u64(b, (uint64_t)r->keys[k].num);
		put_str(b, r->keys[k].str);
	}
	put_u32(b, (uint32_t)r->nvals);
	for (int v = 0; v < r->nvals; v++) {
		put_str(b, r->vals[v].name);
		/* a gauge's no-sample bit and merge rule above the kind: a copy without them reads as before */
		put_u32(b, r->vals[v].kind | (uint32_t)r->vals[v].none << VAL_NONE_SHIFT |
				   (uint32_t)r->vals[v].merge << VAL_MERGE_SHIFT);
		put_u64(b, r->vals[v].v);
	}
	put_u32(b, r->hist != NULL);
	if (r->hist)
		put_hist(b, r->hist);
	put_u32(b, (uint32_t)r->nsub);
	for (int s = 0; s < r->nsub; s++) {
		put_str(b, r->sub[s].name);
		put_u64(b, r->sub[s].count);
	}
	put_u32(b, (uint32_t)r->nxhist);
	for (int x = 0; x < r->nxhist; x++) {
		put_str(b, r->xhist[x].name);
		put_u32(b, r->xhist[x].unit);
		put_hist(b, r->xhist[x].h);
	}
	put_u64(b, r->sort);
}

static void put_metas(struct buf *b, const struct ks_meta *m, int n)
{
	put_u32(b, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		put_str(b, m[i].name);
		put_u64(b, m[i].num);
	}
}

static void get(struct buf *b, void *v, size_t n)
{
	if (b->err || b->off + n > b->len) {
		b->err = -EBADMSG;
		memset(v, 0, n);
		return;
	}
	memcpy(v, b->p + b->off, n);
	b->off += n;
}

static uint32_t get_u32(struct buf *b)
{
	uint32_t v;

	get(b, &v, sizeof(v));
	return v;
}

static uint64_t get_u64(struct buf *b)
{
	uint64_t v;

	get(b, &v, sizeof(v));
	return v;
}

/* A count read from the copy, refused past @max (a damaged copy must not allocate without bound). */
static uint32_t get_n(struct buf *b, uint32_t max)
{
	uint32_t n = get_u32(b);

	if (n > max) {
		b->err = -EBADMSG;
		return 0;
	}
	return n;
}

/* A string into @dst (@cap bytes, cut there). */
static void get_str(struct buf *b, char *dst, size_t cap)
{
	uint32_t n = get_n(b, 1u << 16);
	size_t keep = n < cap ? n : cap - 1;

	if (b->err || b->off + n > b->len) {
		b->err = -EBADMSG;
		dst[0] = 0;
		return;
	}
	memcpy(dst, b->p + b->off, keep);
	dst[keep] = 0;
	b->off += n;
}

/* A name that restored rows point to for the rest of the process: each distinct one kept once. */
static const char *intern(struct ks_pinstate *ps, struct buf *b)
{
	char s[256];

	get_str(b, s, sizeof(s));
	if (b->err)
		return "";
	for (int i = 0; i < ps->nnames; i++)
		if (!strcmp(ps->names[i], s))
			return ps->names[i];
	if (ps->nnames == ps->capnames) {
		int cap = ps->capnames ? ps->capnames * 2 : 64;
		char **n = realloc(ps->names, (size_t)cap * sizeof(*n));

		if (!n) {
			b->err = -ENOMEM;
			return "";
		}
		ps->names = n;
		ps->capnames = cap;
	}
	if (!(ps->names[ps->nnames] = strdup(s))) {
		b->err = -ENOMEM;
		return "";
	}
	return ps->names[ps->nnames++];
}

static struct ks_hist *get_hist(struct buf *b)
{
	struct ks_hist *h = calloc(1, sizeof(*h));
	uint32_t nz;

	if (!h) {
		b->err = -ENOMEM;
		return NULL;
	}
	h->count = get_u64(b);
	h->sum = get_u64(b);
	h->max = get_u64(b);
	nz = get_n(b, KS_HIST_SLOTS);
	for (uint32_t i = 0; i < nz; i++) {
		uint32_t at = get_n(b, KS_HIST_SLOTS - 1);

		h->slots[at] = get_u64(b);
	}
	return h;
}

static void get_row(struct ks_pinstate *ps, struct buf *b, struct ks_report *r)
{
	struct ks_row *row = ks_report_add_row(r);
	uint32_t n;

	if (!row) {
		b->err = -ENOMEM;
		return;
	}
	n = get_n(b, KS_ROW_KEYS);
	for (uint32_t k = 0; k < n; k++) {
		struct ks_key *key = &row->keys[row->nkeys++];

		key->name = intern(ps, b);
		key->is_num = get_u32(b) != 0;
		key->num = (int64_t)get_u64(b);
		get_str(b, key->str, sizeof(key->str));
	}
	n = get_n(b, KS_ROW_VALS);
	for (uint32_t v = 0; v < n; v++) {
		struct ks_val *val = &row->vals[row->nvals++];
		uint32_t kind;

		val->name = intern(ps, b);
		kind = get_u32(b);
		/*
		 * without the no-sample bit a restored gauge that had no sample
		 * read as a real 0, which a min then kept for good (cwnd_min 0)
		 */
		val->kind = (enum ks_val_kind)(kind & VAL_KIND_MASK);
		val->none = (kind >> VAL_NONE_SHIFT) & 1;
		val->merge = (enum ks_gauge_merge)(kind >> VAL_MERGE_SHIFT & 3);
		if (val->kind > KS_VAL_BYTES || val->merge > KS_GAUGE_MAX || kind >> (VAL_MERGE_SHIFT + 2))
			b->err = -EBADMSG;
		val->v = get_u64(b);
	}
	if (get_u32(b))
		row->hist = get_hist(b);
	n = get_n(b, 4096);
	for (uint32_t s = 0; s < n && !b->err; s++) {
		char name[32];

		get_str(b, name, sizeof(name));
		if (ks_row_sub_add(row, name, get_u64(b)))
			b->err = -ENOMEM;
	}
	n = get_n(b, KS_ROW_XHISTS);
	for (uint32_t x = 0; x < n && !b->err; x++) {
		const char *name = intern(ps, b);
		enum ks_unit unit = (enum ks_unit)get_n(b, KS_UNIT_COUNT);
		struct ks_hist *h = get_hist(b);

		if (h && ks_row_xhist(row, name, unit, h))
			b->err = -ENOMEM;
	}
	row->sort = get_u64(b);
}

static void serialize(struct buf *b, const struct ks_accum *acc, const char *const *names, int n,
		      const struct ks_pin_drains *d)
{
	put(b, MAGIC, 8);
	put_u32(b, VERSION);
	put_u32(b, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		const struct ks_accum *a = &acc[i];

		put_str(b, names[i]);
		put_u64(b, d[i].drains);
		put_u32(b, d[i].seq_id);
		put_u32(b, (uint32_t)d[i].cursor_len);
		if (d[i].cursor_len)
			put(b, d[i].cursor, d[i].cursor_len);
		put_u32(b, (uint32_t)a->other);
		put_u64(b, a->folds);
		put_u64(b, a->expired);
		put(b, &a->total.duration_s, sizeof(a->total.duration_s));
		put_u64(b, a->total.lost);
		put_metas(b, a->total.lost_by, a->total.nlost);
		put_metas(b, a->total.counters, a->total.ncounters);
		put_u32(b, (uint32_t)a->total.nrows);
		for (int r = 0; r < a->total.nrows; r++)
			put_row(b, &a->total.rows[r]);
	}
}

struct ks_pinstate *ks_pinstate_open(const char *dir)
{
	struct ks_pinstate *ps = calloc(1, sizeof(*ps));
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), zero = 0;
	unsigned char chunk[CHUNK];
	int err;

	if (!ps) {
		p_err("serve: out of memory");
		return NULL;
	}
	snprintf(ps->path, sizeof(ps->path), "%s/ks_state", dir);
	ps->fd = ks_pin_obj_get(ps->path);
	if (ps->fd == -ENOENT) {
		ps->fd = -1;
		return ps; /* made by the first save */
	}
	if (ps->fd < 0) {
		err = ps->fd;
		ps->fd = -1;
		if (err != -ELOOP && err != -EPERM) /* ks_pin_obj_get said why */
			p_err("serve: cannot open the counters saved as '%s': %s; 'ksight unpin %s' starts afresh", ps->path,
			      strerror(-err), dir);
		goto fail;
	}
	err = bpf_obj_get_info_by_fd(ps->fd, &info, &len) || bpf_map_lookup_elem(ps->fd, &zero, chunk) ? -errno : 0;
	if (err) {
		p_err("serve: cannot read the counters saved as '%s': %s; 'ksight unpin %s' starts afresh", ps->path,
		      strerror(-err), dir);
		goto fail;
	}
	memcpy(&ps->h, chunk, sizeof(ps->h));
	/*
	 * Ours: the name and shape it is made with, and the header a save
	 * writes before it pins a map (a new one is pinned only once a whole
	 * copy is in it), so a pinned ks_state without it is another's.
	 */
	if (strcmp(info.name, "ks_state") || info.type != BPF_MAP_TYPE_ARRAY || info.value_size != CHUNK ||
	    info.key_size != 4 || info.max_entries < 3 || memcmp(ps->h.magic, MAGIC, 8) || !ps->h.seq ||
	    ps->h.version < 1 || ps->h.version > VERSION || ps->h.region > 1) {
		p_err("serve: '%s' is not counters ksight saved (map '%s', %u x %u+%u bytes, no ksight header): refusing to "
		      "adopt or overwrite it; remove it or use another --pin directory", ps->path, info.name,
		      info.max_entries, info.key_size, info.value_size);
		err = -EPERM;
		goto fail;
	}
	ps->nchunks = info.max_entries;
	return ps;
fail:
	if (ps->fd >= 0)
		close(ps->fd);
	free(ps);
	errno = -err;
	return NULL;
}

int ks_pinstate_load(struct ks_pinstate *ps, struct ks_accum *acc, const char *const *names, int n,
		     struct ks_pin_drains *d)
{
	uint32_t half = (ps->nchunks - 1) / 2, ncol, version;
	struct buf b = { 0 };
	unsigned char chunk[CHUNK];
	int restored = 0;
	char magic[8];

	memset(d, 0, sizeof(*d) * (size_t)n);
	if (ps->fd < 0 || memcmp(ps->h.magic, MAGIC, 8) || !ps->h.seq)
		return 0;
	if ((ps->h.version != VERSION && ps->h.version != 1) || ps->h.region > 1 || ps->h.len > (uint64_t)half * CHUNK)
		return -EBADMSG;
	b.p = malloc(ps->h.len ? ps->h.len : 1);
	if (!b.p)
		return -ENOMEM;
	b.len = ps->h.len;
	for (uint32_t c = 0; (uint64_t)c * CHUNK < b.len; c++) {
		__u32 key = 1 + ps->h.region * half + c;
		size_t n_ = b.len - (size_t)c * CHUNK < CHUNK ? b.len - (size_t)c * CHUNK : CHUNK;

		if (bpf_map_lookup_elem(ps->fd, &key, chunk)) {
			free(b.p);
			return -errno;
		}
		memcpy(b.p + (size_t)c * CHUNK, chunk, n_);
	}
	if ((uint32_t)crc32(0, b.p, (uInt)b.len) != ps->h.crc) {
		free(b.p);
		return -EBADMSG;
	}
	get(&b, magic, 8);
	version = get_u32(&b);
	if (memcmp(magic, MAGIC, 8) || version != ps->h.version)
		b.err = -EBADMSG;
	ncol = get_n(&b, 64);
	for (uint32_t i = 0; i < ncol && !b.err; i++) {
		struct ks_report total;
		char name[64];
		int other, at = -1;
		uint64_t folds, expired;
		uint32_t nrows, k;
		struct ks_pin_drains dr = { 0 };

		get_str(&b, name, sizeof(name));
		for (int j = 0; j < n; j++)
			if (!strcmp(names[j], name))
				at = j;
		/* a copy of version 1 knows no drains: its serve emptied the maps as it read them */
		if (version >= 2) {
			dr.drains = get_u64(&b);
			dr.seq_id = get_u32(&b);
			dr.cursor_len = get_n(&b, 1u << 28);
			if (!b.err && dr.cursor_len && b.off + dr.cursor_len <= b.len && (dr.cursor = malloc(dr.cursor_len)))
				get(&b, dr.cursor, dr.cursor_len);
			else if (dr.cursor_len)
				b.err = b.err ? b.err : b.off + dr.cursor_len > b.len ? -EBADMSG : -ENOMEM;
		}
		ks_report_init(&total, NULL, NULL);
		other = (int)get_u32(&b);
		folds = get_u64(&b);
		expired = get_u64(&b);
		get(&b, &total.duration_s, sizeof(total.duration_s));
		total.lost = get_u64(&b);
		k = get_n(&b, KS_REPORT_META);
		for (uint32_t j = 0; j < k; j++) {
			total.lost_by[j].name = intern(ps, &b);
			total.lost_by[j].is_num = true;
			total.lost_by[j].num = get_u64(&b);
		}
		total.nlost = (int)k;
		k = get_n(&b, KS_REPORT_META);
		for (uint32_t j = 0; j < k; j++) {
			total.counters[j].name = intern(ps, &b);
			total.counters[j].is_num = true;
			total.counters[j].num = get_u64(&b);
		}
		total.ncounters = (int)k;
		nrows = get_n(&b, 1u << 24);
		for (uint32_t r = 0; r < nrows && !b.err; r++)
			get_row(ps, &b, &total);
		/* a collector no longer asked for: its saved totals are dropped */
		if (!b.err && at >= 0) {
			b.err = ks_accum_restore(&acc[at], &total, other, folds, expired);
			restored += !b.err;
		}
		if (!b.err && at >= 0) {
			free(d[at].cursor);
			d[at] = dr;
		} else {
			free(dr.cursor);
		}
		ks_report_free(&total);
	}
	free(b.p);
	return b.err ? b.err : restored;
}

/* Writes @len bytes of @p into region @region (of @half chunks each) of map @fd, then the header @h. */
static int write_copy(int fd, uint32_t half, uint32_t region, const unsigned char *p, size_t len, struct hdr *h)
{
	unsigned char chunk[CHUNK];
	__u32 key;

	for (uint32_t c = 0; (size_t)c * CHUNK < len; c++) {
		size_t n = len - (size_t)c * CHUNK < CHUNK ? len - (size_t)c * CHUNK : CHUNK;

		memset(chunk, 0, sizeof(chunk));
		memcpy(chunk, p + (size_t)c * CHUNK, n);
		key = 1 + region * half + c;
		if (bpf_map_update_elem(fd, &key, chunk, BPF_ANY))
			return -errno;
	}
	/* the switch: one element, written whole or not at all */
	memset(chunk, 0, sizeof(chunk));
	memcpy(chunk, h, sizeof(*h));
	key = 0;
	return bpf_map_update_elem(fd, &key, chunk, BPF_ANY) ? -errno : 0;
}

int ks_pinstate_save(struct ks_pinstate *ps, const struct ks_accum *acc, const char *const *names, int n,
		     const struct ks_pin_drains *d)
{
	struct buf b = { 0 };
	struct hdr h;
	uint32_t need, half = ps->nchunks ? (ps->nchunks - 1) / 2 : 0;
	int err = 0;

	serialize(&b, acc, names, n, d);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	need = (uint32_t)((b.len + CHUNK - 1) / CHUNK);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, 8);
	h.seq = ps->h.seq + 1;
	h.version = VERSION;
	h.len = b.len;
	h.crc = (uint32_t)crc32(0, b.p, (uInt)b.len);
	if (ps->fd >= 0 && need <= half) {
		h.region = memcmp(ps->h.magic, MAGIC, 8) ? 0 : ps->h.region ^ 1;
		err = write_copy(ps->fd, half, h.region, b.p, b.len, &h);
	} else {
		/* a larger map, filled, then renamed over the old one: the rename is the switch */
		char tmp[sizeof(ps->path) + 8];
		uint32_t nhalf = MIN_REGION;
		int fd;

		while (nhalf < need * 2)
			nhalf *= 2;
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_state", 4, CHUNK, 1 + 2 * nhalf, NULL);
		if (fd < 0) {
			free(b.p);
			return -errno;
		}
		snprintf(tmp, sizeof(tmp), "%s_new", ps->path); /* bpffs refuses dots */
		unlink(tmp);
		h.region = 0;
		err = write_copy(fd, nhalf, 0, b.p, b.len, &h);
		if (!err && bpf_obj_pin(fd, tmp))
			err = -errno;
		if (!err && rename(tmp, ps->path))
			err = -errno;
		if (err) {
			unlink(tmp);
			close(fd);
		} else {
			if (ps->fd >= 0)
				close(ps->fd);
			ps->fd = fd;
			ps->nchunks = 1 + 2 * nhalf;
		}
	}
	free(b.p);
	if (!err)
		ps->h = h;
	return err;
}

void ks_pinstate_close(struct ks_pinstate *ps)
{
	if (!ps)
		return;
	if (ps->fd >= 0)
		close(ps->fd);
	for (int i = 0; i < ps->nnames; i++)
		free(ps->names[i]);
	free(ps->names);
	free(ps);
}
