/* Decoding a recording: formats into libtraceevent, events checked against them and merged across CPUs by timestamp. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "core/log.h"
#include "format/fmtcheck.h"
#include "format/field.h"
#include "format/recording.h"

const char *ks_rec_ev_name(const struct tep_event *ev, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s", ev->system, ev->name);
	return buf;
}

uint64_t ks_rec_manifest_u64(const struct ks_recording *rec, const char *key)
{
	char v[64];

	if (!ks_rec_kv_get(rec->manifest, rec->manifest_len, key, v, sizeof(v)))
		return 0;
	return strtoull(v, NULL, 10);
}

/*
 * True when @e's raw record holds @ev's fixed part and every dynamic
 * field points inside it; a dynamic field that does not (a record cut at
 * KS_REC_MAX_RAW) is emptied so that no reader follows it out.
 */
static bool fits(struct tep_event *ev, struct ks_rec_event *e)
{
	unsigned char *raw = (unsigned char *)(e + 1);
	struct tep_format_field *f;

	for (f = ev->format.fields; f; f = f->next) {
		uint32_t off, len;

		/* offsets and sizes are ints, and checked non-negative when the format was read */
		if ((int64_t)f->offset + f->size > (int64_t)e->len)
			return false;
		if (!(f->flags & TEP_FIELD_IS_DYNAMIC) || f->size != 4)
			continue;
		ks_field_span(f, raw, &off, &len);
		if ((uint64_t)off + len > e->len)
			memset(raw + f->offset, 0, 4);
	}
	return true;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ks_rec_ev *x = a, *y = b;

	if (x->e->ts != y->e->ts)
		return x->e->ts < y->e->ts ? -1 : 1;
	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

static int grow_cpus(struct ks_recording *rec, uint32_t cpu)
{
	int n = (int)cpu + 1;
	uint64_t *r, *l;

	if (cpu >= 65536)
		return -EBADMSG;
	if (n <= rec->ncpus)
		return 0;
	r = realloc(rec->recorded, (size_t)n * sizeof(*r));
	if (r)
		rec->recorded = r;
	l = realloc(rec->lost, (size_t)n * sizeof(*l));
	if (l)
		rec->lost = l;
	if (!r || !l)
		return -ENOMEM;
	for (int i = rec->ncpus; i < n; i++)
		rec->recorded[i] = rec->lost[i] = 0;
	rec->ncpus = n;
	return 0;
}

static bool id_in(const int *v, size_t n, int id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

bool ks_rec_raw_print(const struct ks_recording *rec, int id)
{
	return id_in(rec->raw_print_ids, rec->nraw_print_ids, id);
}

static int add_id(int **v, size_t *n, int id)
{
	int *g = realloc(*v, (*n + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	*v = g;
	g[(*n)++] = id;
	return 0;
}

static void note_refused(struct ks_recording *rec, const char *sys, const char *text, size_t len, const char *why)
{
	if (!rec->bad_formats++) {
		char name[64] = "?";
		const char *n = text ? memmem(text, len, "name: ", 6) : NULL;

		/* "name: NAME\n" is the text's first line: enough to say which event */
		if (n)
			sscanf(n + 6, "%63[A-Za-z0-9_]", name);
		snprintf(rec->bad_format_why, sizeof(rec->bad_format_why), "%.40s:%s: %s", sys, name, why);
	}
}

/*
 * The formats of @fmts[0..n) (payloads: "system\0" and the text) into
 * libtraceevent, checked (src/format/fmtcheck.h).  A refused format leaves
 * its events unknown, counted; the first reason is kept for the warning.
 */
static int add_formats(struct ks_recording *rec, char **fmts, const uint32_t *lens, size_t n)
{
	struct ks_fmt *v = calloc(n + 1, sizeof(*v));
	size_t k = 0;
	int err;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *nul = memchr(fmts[i], '\0', lens[i]);

		if (!nul) {
			note_refused(rec, "?", NULL, 0, "no system name");
			continue;
		}
		v[k++] = (struct ks_fmt){ .sys = fmts[i], .text = nul + 1, .len = lens[i] - (size_t)(nul + 1 - fmts[i]) };
	}
	err = ks_fmt_add_all(rec->tep, v, k);
	for (size_t i = 0; i < k && !err; i++) {
		if (!v[i].refused) {
			if (v[i].raw_print)
				err = add_id(&rec->raw_print_ids, &rec->nraw_print_ids, v[i].id);
			continue;
		}
		note_refused(rec, v[i].sys, v[i].text, v[i].len, v[i].why);
		/* in the library's handle all the same: its records are left out by their type */
		if (v[i].id >= 0)
			err = add_id(&rec->refused_ids, &rec->nrefused_ids, v[i].id);
	}
	free(v);
	return err;
}

static int add_events(struct ks_recording *rec, size_t ci, void *p)
{
	const struct ks_rec_chunk *c = &rec->rd.chunks[ci].hdr;
	const struct ks_rec_event *ce;
	uint32_t off = 0;
	int err = grow_cpus(rec, c->cpu);

	if (err)
		return err;
	rec->lost[c->cpu] += c->lost;
	rec->chunk_events += c->count;
	while ((ce = ks_rec_next_event(p, c->len, &off))) {
		struct ks_rec_event *e = (struct ks_rec_event *)ce;
		struct tep_event *ev;
		uint16_t type;

		/* the recorder files each event under its own CPU: another CPU is damage (and would
		 * index past the per-CPU tables the renderers size from the chunks) */
		if (e->len < 8 || e->cpu != c->cpu) {
			rec->bad_events++;
			continue;
		}
		memcpy(&type, e + 1, 2);
		ev = id_in(rec->refused_ids, rec->nrefused_ids, type) ? NULL : tep_find_event(rec->tep, type);
		if (!ev) {
			rec->unknown_events++;
			continue;
		}
		if (!fits(ev, e)) {
			rec->bad_events++;
			continue;
		}
		if ((rec->nev & (rec->nev + 1)) == 0 || !rec->evs) {
			/* grows at 0, 1, 3, 7...: doubling */
			struct ks_rec_ev *n = realloc(rec->evs, (rec->nev + 1) * 2 * sizeof(*n));

			if (!n)
				return -ENOMEM;
			rec->evs = n;
		}
		rec->evs[rec->nev++] = (struct ks_rec_ev){ e, ev, (uint32_t)ci };
		rec->recorded[c->cpu]++;
	}
	if (off != c->len)
		rec->bad_events++; /* a record that does not fit the chunk: the rest of it is skipped */
	return 0;
}

/*
 * The events the trailer says this file holds, or -1 without a trailer: a
 * flight recording's flight.written (its file.events was 0 in files
 * written before that was fixed), else file.events, else (files from
 * before it, never rotated) recorded.
 */
static int64_t trailer_events(const struct ks_recording *rec)
{
	const char *t = rec->trailer;
	size_t tl = rec->trailer_len;
	char v[32], *end;
	unsigned long long n;

	if (!ks_rec_kv_get(t, tl, "flight.written", v, sizeof(v)) && !ks_rec_kv_get(t, tl, "file.events", v, sizeof(v)) &&
	    (ks_rec_kv_get(t, tl, "rotation.index", v, sizeof(v)) || !ks_rec_kv_get(t, tl, "recorded", v, sizeof(v))))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno || end == v || *end || n > INT64_MAX ? -1 : (int64_t)n;
}

int ks_recording_load(struct ks_recording *rec, const char *path)
{
	char **fmts = NULL;
	uint32_t *lens = NULL;
	size_t nfmts = 0;
	int err;

	memset(rec, 0, sizeof(*rec));
	err = ks_rec_open(&rec->rd, path);
	if (err)
		return err;
	rec->tep = tep_alloc();
	rec->payloads = calloc(rec->rd.nchunks + 1, sizeof(*rec->payloads));
	fmts = calloc(rec->rd.nchunks + 1, sizeof(*fmts));
	lens = calloc(rec->rd.nchunks + 1, sizeof(*lens));
	rec->reps = calloc(rec->rd.nchunks + 1, sizeof(*rec->reps));
	if (!rec->tep || !rec->payloads || !fmts || !lens || !rec->reps) {
		err = -ENOMEM;
		goto fail;
	}
	/* formats first: a reader does not depend on the order of the chunks */
	for (size_t i = 0; i < rec->rd.nchunks; i++) {
		const struct ks_rec_chunk *c = &rec->rd.chunks[i].hdr;
		void *p;

		if (c->type == KS_REC_EVENTS)
			continue;
		err = ks_rec_read(&rec->rd, i, &p);
		if (err)
			goto fail;
		if (c->type == KS_REC_FORMAT) {
			/* kept for add_formats: they are checked all at once */
			fmts[nfmts] = p;
			lens[nfmts++] = c->len;
		} else if (c->type == KS_REC_MANIFEST && !rec->manifest) {
			rec->manifest = p;
			rec->manifest_len = c->len;
		} else if (c->type == KS_REC_TRAILER) {
			free(rec->trailer);
			rec->trailer = p;
			rec->trailer_len = c->len;
		} else if (c->type == KS_REC_REPORT) {
			struct ks_rec_rep *rp = &rec->reps[rec->nreps];
			char why[160], *plain;
			size_t plen = c->len;

			/* inflated and checked once here: report and diff read only what passed */
			err = ks_rec_report_inflate(p, c->len, &plain, &plen, why, sizeof(why));
			if (err == -ENOMEM) {
				free(p);
				goto fail;
			}
			if (plain) {
				free(p);
				p = plain;
			}
			rec->payloads[i] = p;
			if (err || ks_rec_report_check(p, plen, &rp->v, why, sizeof(why))) {
				err = 0;
				if (!rec->bad_reports++)
					snprintf(rec->bad_report_why, sizeof(rec->bad_report_why), "%s", why);
			} else {
				rp->hdr = c;
				rec->nreps++;
			}
		} else {
			free(p);
		}
	}
	err = add_formats(rec, fmts, lens, nfmts);
	if (err)
		goto fail;
	for (size_t i = 0; i < rec->rd.nchunks; i++) {
		if (rec->rd.chunks[i].hdr.type != KS_REC_EVENTS)
			continue;
		err = ks_rec_read(&rec->rd, i, &rec->payloads[i]);
		if (!err)
			err = add_events(rec, i, rec->payloads[i]);
		if (err)
			goto fail;
	}
	if (!rec->manifest)
		rec->manifest = strdup("");
	if (!rec->trailer)
		rec->trailer = strdup("");
	if (!rec->manifest || !rec->trailer) {
		err = -ENOMEM;
		goto fail;
	}
	rec->trailer_events = trailer_events(rec);
	if (rec->nev) {
		qsort(rec->evs, rec->nev, sizeof(*rec->evs), cmp_ev);
		rec->first_ts = rec->evs[0].e->ts;
		rec->last_ts = rec->evs[rec->nev - 1].e->ts;
	}
fail:
	for (size_t i = 0; i < nfmts; i++)
		free(fmts[i]);
	free(fmts);
	free(lens);
	if (err)
		ks_recording_free(rec);
	return err;
}

void ks_recording_warn(const struct ks_recording *rec, const char *file)
{
	const struct ks_rec_reader *r = &rec->rd;

	if (r->cut_bytes)
		p_warn("'%s' is cut: its last %llu bytes form no whole chunk (was 'record' killed?)", file,
		       (unsigned long long)r->cut_bytes);
	if (r->bad_chunks || r->bad_bytes)
		p_warn("'%s': %llu damaged chunks and %llu bytes skipped (bad CRC or header)", file,
		       (unsigned long long)r->bad_chunks, (unsigned long long)r->bad_bytes);
	if (r->seq_gaps)
		p_warn("'%s': %llu chunks missing by sequence number (removed or damaged)", file,
		       (unsigned long long)r->seq_gaps);
	if (r->seq_repeats)
		p_warn("'%s': %llu chunks repeat an earlier chunk's sequence number (%llu exact copies left out)", file,
		       (unsigned long long)r->seq_repeats, (unsigned long long)r->repeats_dropped);
	if (rec->bad_formats)
		p_warn("'%s': %llu event formats refused, their events left out (%s)", file,
		       (unsigned long long)rec->bad_formats, rec->bad_format_why);
	if (rec->bad_reports)
		p_warn("'%s': %llu collector report chunks refused (%s)", file, (unsigned long long)rec->bad_reports,
		       rec->bad_report_why);
	if (ks_recording_count_differs(rec))
		p_warn("'%s': the trailer counts %lld events, the chunks hold %llu", file,
		       (long long)rec->trailer_events, (unsigned long long)rec->chunk_events);
}

void ks_recording_free(struct ks_recording *rec)
{
	for (size_t i = 0; rec->payloads && i < rec->rd.nchunks; i++)
		free(rec->payloads[i]);
	free(rec->payloads);
	free(rec->evs);
	free(rec->anon_mem);
	free(rec->manifest);
	free(rec->trailer);
	free(rec->recorded);
	free(rec->lost);
	free(rec->refused_ids);
	free(rec->raw_print_ids);
	free(rec->reps);
	if (rec->tep)
		tep_free(rec->tep);
	ks_rec_free(&rec->rd);
	memset(rec, 0, sizeof(*rec));
	rec->rd.fd = -1;
}
