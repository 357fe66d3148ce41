/* The protobuf exposition (through the shared encoder, output/pb.c), with native histograms mapped from the log-linear slots. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include "output/output.h"
#include "output/pb.h"
#include "output/prom.h"

/*
 * Field numbers of io.prometheus.client's metrics.proto (the wire contract):
 * MetricFamily{name=1, help=2, type=3, metric=4, unit=5}, Metric{label=1, gauge=2,
 * counter=3, histogram=7}, LabelPair{name=1, value=2}, Gauge/Counter{value=1},
 * Histogram{sample_count=1, sample_sum=2, bucket=3, schema=5, zero_threshold=6,
 * zero_count=7, positive_span=12, positive_delta=13}, Bucket{cumulative_count=1,
 * upper_bound=2}, BucketSpan{offset=1, length=2}.
 */
/*
 * Native buckets at schema 5 (2^(1/32) = 2.19% wide).  The log-linear
 * layout splits each power of two into 16 linear slots, 6.25% (the first)
 * down to 3.2% (the last) of their lower bound: schema 5 is the coarsest
 * whose buckets are all narrower than the narrowest slot, so no two slots
 * share a bucket (no resolution is lost) and the added error is at most
 * one bucket.  Schema 4 (4.4%) would merge the upper slots of each power
 * of two; schema 6 doubles the buckets and adds nothing the slots know.
 * Each slot's count goes to the bucket holding the slot's middle: within
 * 1/32 + 2.19% of any value in it.  Value 0 goes to the zero bucket.
 */
static void native_hist(struct ks_pb *h, const struct ks_hist *hist, double div)
{
	struct ks_pb span = { 0 };
	int32_t prev_idx = 0, span_start = 0, span_len = 0;
	int64_t prev_count = 0;
	bool any = false;
	/* deltas are written once the spans are known: collected here */
	struct ks_pb deltas = { 0 };
	int32_t cur_idx = 0;
	uint64_t cur_count = 0;

	ks_pb_sint(h, 5, PROM_NATIVE_SCHEMA);
	/* client_golang's default: only exact zeros in the zero bucket */
	ks_pb_double(h, 6, ldexp(1.0, -128));
	ks_pb_uint(h, 7, hist->slots[0]);
	for (unsigned int s = 1; s <= KS_HIST_SLOTS; s++) {
		int32_t idx = 0;
		bool flush;

		if (s < KS_HIST_SLOTS) {
			double mid;

			if (!hist->slots[s])
				continue;
			mid = ((double)ks_hist_slot_low(s) + (double)ks_hist_slot_high(s)) / 2 / div;
			idx = prom_native_index(mid);
			if (cur_count && idx == cur_idx) {
				cur_count += hist->slots[s];
				continue;
			}
		}
		/* a new bucket (or the end): emit the one collected so far */
		flush = cur_count != 0;
		if (flush) {
			if (any && cur_idx == prev_idx + 1) {
				span_len++;
			} else {
				if (any) {
					ks_pb_sint(&span, 1, span_start);
					ks_pb_uint(&span, 2, (uint64_t)span_len);
					ks_pb_msg(h, 12, &span);
				}
				/* the first span's offset is absolute, later ones the gap after the previous */
				span_start = any ? cur_idx - prev_idx - 1 : cur_idx;
				span_len = 1;
			}
			ks_pb_varint(&deltas, ks_pb_zigzag((int64_t)cur_count - prev_count));
			prev_count = (int64_t)cur_count;
			prev_idx = cur_idx;
			any = true;
		}
		if (s < KS_HIST_SLOTS) {
			cur_idx = idx;
			cur_count = hist->slots[s];
		}
	}
	if (any) {
		ks_pb_sint(&span, 1, span_start);
		ks_pb_uint(&span, 2, (uint64_t)span_len);
		ks_pb_msg(h, 12, &span);
		/* repeated sint64, packed */
		ks_pb_msg(h, 13, &deltas);
	}
	ks_pb_free(&span);
	ks_pb_free(&deltas);
}

static void hist_msg(struct ks_pb *h, const struct prom_family *f, const struct prom_sample *s)
{
	struct ks_pb b = { 0 };
	uint64_t cum[32];
	int n;
	const uint64_t *bounds = prom_classic_bounds(f->unit, &n);

	ks_pb_uint(h, 1, s->hist->count);
	ks_pb_double(h, 2, (double)s->hist->sum / f->div);
	/* the classic buckets too, for scrapers that keep those (the +Inf one is the count) */
	prom_classic_counts(s->hist, bounds, n, cum);
	for (int i = 0; i < n; i++) {
		ks_pb_uint(&b, 1, cum[i]);
		ks_pb_double(&b, 2, (double)bounds[i] / f->div);
		ks_pb_msg(h, 3, &b);
	}
	ks_pb_free(&b);
	native_hist(h, s->hist, f->div);
}

int prom_write_proto(const struct prom_set *set, FILE *out)
{
	struct ks_pb fam = { 0 }, met = { 0 }, sub = { 0 };
	uint8_t len[KS_PB_VARINT_MAX];
	size_t nlen;
	int err = 0;

	for (int i = 0; i < set->n && !err; i++) {
		const struct prom_family *f = &set->f[i];
		char name[PROM_NAME + 8];
		static const int types[] = { [PROM_COUNTER] = 0, [PROM_GAUGE] = 1, [PROM_HISTOGRAM] = 4 };

		if (!f->n)
			continue;
		snprintf(name, sizeof(name), "%s%s", f->name, f->type == PROM_COUNTER ? "_total" : "");
		fam.n = 0;
		ks_pb_str(&fam, 1, name);
		ks_pb_str(&fam, 2, f->help);
		ks_pb_uint(&fam, 3, (uint64_t)types[f->type]);
		/* MetricFamily.unit (client_model 0.6): older decoders skip the unknown field */
		if (prom_unit(f))
			ks_pb_str(&fam, 5, prom_unit(f));
		for (int j = 0; j < f->n; j++) {
			const struct prom_sample *s = &f->s[j];

			for (int l = 0; l < s->nlabels; l++) {
				ks_pb_str(&sub, 1, s->labels[l].name);
				ks_pb_str(&sub, 2, prom_label_value(&s->labels[l]));
				ks_pb_msg(&met, 1, &sub);
			}
			if (f->type == PROM_HISTOGRAM) {
				hist_msg(&sub, f, s);
				ks_pb_msg(&met, 7, &sub);
			} else {
				ks_pb_double(&sub, 1, s->value);
				ks_pb_msg(&met, f->type == PROM_COUNTER ? 3 : 2, &sub);
			}
			ks_pb_msg(&fam, 4, &met);
		}
		/* delimited: each MetricFamily after its length */
		nlen = ks_pb_varint_enc(len, fam.n);
		err = fam.err;
		if (!err && (fwrite(len, 1, nlen, out) != nlen || fwrite(fam.b, 1, fam.n, out) != fam.n))
			err = -EIO;
	}
	ks_pb_free(&fam);
	ks_pb_free(&met);
	ks_pb_free(&sub);
	return err ? err : ks_stream_status(out);
}
