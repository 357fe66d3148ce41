/* A recording's events as ftrace text, JSON lines, CSV and Chrome/Perfetto trace-event JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "core/json.h"
#include "core/log.h"
#include "core/sanitize.h"
#include "events/pair.h"
#include "format/field.h"
#include "output/trace.h"

static void to_record(const struct ks_rec_ev *x, struct tep_record *r)
{
	memset(r, 0, sizeof(*r));
	r->ts = x->e->ts;
	r->cpu = x->e->cpu;
	r->size = x->e->len;
	r->data = (void *)(x->e + 1);
}

static void json_field(struct ks_json *j, struct tep_handle *tep, const struct tep_format_field *f,
		       const unsigned char *data)
{
	uint32_t off, len;

	ks_field_span(f, data, &off, &len);
	ks_json_key(j, f->name);
	/* libtraceevent marks every one-byte array a string: __u8 saddr[4] is four numbers, not text */
	if ((f->flags & TEP_FIELD_IS_STRING) && strstr(f->type, "char")) {
		char buf[KS_REC_MAX_RAW + 1];
		size_t n = strnlen((const char *)data + off, len);

		memcpy(buf, data + off, n);
		buf[n] = '\0';
		ks_json_str(j, buf);
	} else if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) {
		uint32_t es = f->elementsize > 0 ? (uint32_t)f->elementsize : 1;

		ks_json_arr_begin(j);
		for (uint32_t i = 0; es <= 8 && i + es <= len; i += es)
			ks_json_u64(j, (uint64_t)ks_field_num(tep, f, data, off + i, es));
		ks_json_arr_end(j);
	} else if (f->flags & TEP_FIELD_IS_SIGNED) {
		ks_json_i64(j, ks_field_num(tep, f, data, off, len));
	} else {
		ks_json_u64(j, (uint64_t)ks_field_num(tep, f, data, off, len));
	}
}

/* CSV's quoting of sanitized text: a quote doubled. */
static const char *csv_quote(char c)
{
	return c == '"' ? "\"\"" : NULL;
}

/* A comm or an event's text is anyone's bytes: sanitized (core/sanitize.h), then quoted. */
static void csv_str(FILE *out, const char *s)
{
	fputc('"', out);
	ks_sanitize_put(out, s, csv_quote);
	fputc('"', out);
}

/*
 * The kernel's irq-info columns (kernel/trace/trace_output.c,
 * trace_print_lat_fmt) from an event's common_flags and
 * common_preempt_count (record.bpf.c's irq_ctx): irqs-off is known in
 * hardirq and NMI only ('d', 'D'), 'X' elsewhere, as the kernel printed
 * where it could not tell; need-resched is the preempt count's folded bit
 * ('N'; the kernel's 'n' before the fold shows '.').
 */
static void irq_cols(FILE *out, const unsigned char *data)
{
	unsigned int fl = data[2], pc = data[3];
	bool nmi = fl & 0x40, hard = fl & 0x08, soft = fl & 0x10, bh = fl & 0x80;

	fputc(fl & 0x01 ? (bh ? 'D' : 'd') : 'X', out);
	fputc(fl & 0x20 ? 'N' : '.', out);
	fputc(nmi && hard ? 'Z' : nmi ? 'z' : hard && soft ? 'H' : hard ? 'h' : soft ? 's' : '.', out);
	fputc(pc & 0xf ? "0123456789abcdef"[pc & 0xf] : '.', out);
	fputc(pc >> 4 ? "0123456789abcdef"[pc >> 4] : '.', out);
	fputc(' ', out);
}

int ks_trace_write(const struct ks_recording *rec, enum ks_trace_fmt fmt, int64_t offset_ns, FILE *out)
{
	struct ks_json *j = NULL;
	struct trace_seq s;
	char name[128], v[64];
	/* recordings since the BPF program fills the common fields say so: older ones keep the plain layout */
	bool irq = ks_rec_kv_get(rec->manifest, rec->manifest_len, "irq_info", v, sizeof(v));

	trace_seq_init(&s);
	if (fmt == KS_TRACE_TEXT && irq) {
		/* the header of tracefs's `trace` file with its irq-info columns, so its parsers read this */
		fprintf(out, "# tracer: nop\n#\n# entries-in-buffer/entries-written: %zu/%zu   #P:%d\n#\n"
			     "#                                _-----=> irqs-off/BH-disabled\n"
			     "#                               / _----=> need-resched\n"
			     "#                              | / _---=> hardirq/softirq\n"
			     "#                              || / _--=> preempt-depth\n"
			     "#                              ||| / _-=> migrate-disable\n"
			     "#                              |||| /     delay\n"
			     "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
			     "#              | |         |   |||||     |         |\n",
			rec->nev, rec->nev, rec->ncpus);
	} else if (fmt == KS_TRACE_TEXT) {
		/* the header of tracefs's `trace` file (no irq-info columns), so its parsers read this */
		fprintf(out, "# tracer: nop\n#\n# entries-in-buffer/entries-written: %zu/%zu   #P:%d\n#\n"
			     "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
			     "#              | |         |         |         |\n",
			rec->nev, rec->nev, rec->ncpus);
	} else if (fmt == KS_TRACE_CSV) {
		fprintf(out, "ts_ns,cpu,event,comm,pid,tgid,info\n");
	} else {
		j = ks_json_new(out);
		if (!j)
			return -ENOMEM;
	}
	for (size_t i = 0; i < rec->nev; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];
		const unsigned char *data = (const unsigned char *)(x->e + 1);
		uint64_t ts = x->e->ts + (uint64_t)offset_ns;
		struct tep_record r;
		char comm[17];
		int pid;

		to_record(x, &r);
		memcpy(comm, x->e->comm, 16);
		comm[16] = '\0';
		memcpy(&pid, data + 4, 4);
		if (fmt != KS_TRACE_JSON) {
			trace_seq_reset(&s);
			if (ks_rec_raw_print(rec, x->ev->id)) {
				/* what libtraceevent prints for a print format it failed on (left empty in our handle) */
				trace_seq_puts(&s, "[FAILED TO PARSE]");
				tep_print_fields(&s, (void *)data, (int)x->e->len, x->ev);
			} else {
				tep_print_event(rec->tep, &s, &r, "%s", TEP_PRINT_INFO);
			}
			trace_seq_terminate(&s);
		}
		if (fmt == KS_TRACE_TEXT) {
			char sc[16 * 4 + 1]; /* each byte of a comm may become \xNN */

			/* a task that names itself "x\n" must not forge a line of the trace */
			ks_sanitize(comm, sc, sizeof(sc));
			fprintf(out, "%16s-%-7d [%03u] ", sc, pid, x->e->cpu);
			if (irq)
				irq_cols(out, data);
			fprintf(out, "%5" PRIu64 ".%06" PRIu64 ": ", ts / 1000000000, ts % 1000000000 / 1000);
			/* the event's name comes from the recording's formats: anyone's bytes too */
			ks_sanitize_put(out, x->ev->name, NULL);
			fputs(": ", out);
			ks_sanitize_put(out, s.buffer, NULL);
			fputc('\n', out);
		} else if (fmt == KS_TRACE_CSV) {
			fprintf(out, "%" PRIu64 ",%u,", ts, x->e->cpu);
			csv_str(out, ks_rec_ev_name(x->ev, name, sizeof(name)));
			fputc(',', out);
			csv_str(out, comm);
			fprintf(out, ",%d,%u,", pid, x->e->tgid);
			csv_str(out, s.buffer);
			fputc('\n', out);
		} else {
			ks_json_obj_begin(j);
			ks_json_kv_u64(j, "ts_ns", ts);
			ks_json_kv_u64(j, "cpu", x->e->cpu);
			ks_json_kv_str(j, "event", ks_rec_ev_name(x->ev, name, sizeof(name)));
			ks_json_kv_str(j, "comm", comm);
			ks_json_key(j, "pid");
			ks_json_i64(j, pid);
			ks_json_kv_u64(j, "tgid", x->e->tgid);
			ks_json_key(j, "fields");
			ks_json_obj_begin(j);
			for (struct tep_format_field *f = x->ev->format.fields; f; f = f->next)
				json_field(j, rec->tep, f, data);
			ks_json_obj_end(j);
			ks_json_obj_end(j);
			ks_json_free(j);
			fputc('\n', out);
			j = ks_json_new(out); /* one document per line */
			if (!j)
				break;
		}
	}
	if (j)
		ks_json_free(j);
	trace_seq_destroy(&s);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

/* A thread the recording names: its id, its process (-1 until an event of its own says), its comm. */
struct thr {
	int tid, tgid;
	size_t seq; /* the event it was seen in: the latest comm wins (a thread renamed by exec) */
	char comm[17];
};

static int thr_cmp(const void *pa, const void *pb)
{
	const struct thr *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	/* within a thread: a known process first, then the latest */
	if ((a->tgid >= 0) != (b->tgid >= 0))
		return a->tgid >= 0 ? -1 : 1;
	return a->seq > b->seq ? -1 : a->seq < b->seq;
}

static int thr_tid_cmp(const void *key, const void *pb)
{
	int tid = *(const int *)key, b = ((const struct thr *)pb)->tid;

	return tid < b ? -1 : tid > b;
}

/* The thread @tid of the sorted @t (@n), or NULL. */
static const struct thr *thr_find(const struct thr *t, size_t n, int tid)
{
	return bsearch(&tid, t, n, sizeof(*t), thr_tid_cmp);
}

/* The process of @tid: its own id where no event of the thread said (a thread seen only switched in). */
static int thr_pid(const struct thr *t, size_t n, int tid)
{
	const struct thr *x = thr_find(t, n, tid);

	return x && x->tgid >= 0 ? x->tgid : tid;
}

/* @ns as microseconds, exactly: "2846017.000" from 2846017000 (a double would print 2846017.0000000005). */
static void pf_us(struct ks_json *j, const char *key, uint64_t ns)
{
	char b[32];

	snprintf(b, sizeof(b), "%" PRIu64 ".%03u", ns / 1000, (unsigned int)(ns % 1000));
	ks_json_key(j, key);
	ks_json_str_or_number(j, b);
}

static void pf_meta(struct ks_json *j, const char *what, int pid, int tid, const char *name)
{
	char sc[16 * 4 + 1];

	ks_json_obj_begin(j);
	ks_json_kv_str(j, "ph", "M");
	ks_json_kv_str(j, "name", what);
	ks_json_key(j, "pid");
	ks_json_i64(j, pid);
	ks_json_key(j, "tid");
	ks_json_i64(j, tid);
	ks_json_key(j, "args");
	ks_json_obj_begin(j);
	ks_sanitize(name, sc, sizeof(sc));
	ks_json_kv_str(j, "name", sc);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
}

struct running {
	bool on;
	uint64_t since;
	int tid;
	char comm[17];
};

/* The time @run's task ran on @cpu until @end: a slice on the thread's own track. */
static void pf_slice(struct ks_json *j, const struct thr *t, size_t nt, unsigned int cpu, struct running *run,
		     uint64_t end, int64_t off)
{
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "ph", "X");
	ks_json_kv_str(j, "name", run->comm);
	ks_json_kv_str(j, "cat", "sched");
	ks_json_key(j, "pid");
	ks_json_i64(j, thr_pid(t, nt, run->tid));
	ks_json_key(j, "tid");
	ks_json_i64(j, run->tid);
	/* both from the ns integers: ts + dur is exactly the end, nothing rounded */
	pf_us(j, "ts", run->since + (uint64_t)off);
	pf_us(j, "dur", end - run->since);
	ks_json_key(j, "args");
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "cpu", cpu);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
	run->on = false;
}

static void str_field(const struct tep_format_field *f, const unsigned char *data, char *buf, size_t len)
{
	uint32_t off, n;

	ks_field_span(f, data, &off, &n);
	if (n >= len)
		n = (uint32_t)len - 1;
	memcpy(buf, data + off, n);
	buf[n] = '\0';
	buf[strnlen(buf, n)] = '\0';
}

/*
 * Every thread the recording names, sorted by tid, one entry each: the
 * task of each event (its tid, process and comm from the record's header)
 * and the next task of each sched_switch.  *@n: how many; NULL, no memory.
 */
static struct thr *pf_threads(const struct ks_recording *rec, const struct tep_event *sw,
			      const struct tep_format_field *next_pid, const struct tep_format_field *next_comm,
			      size_t *n)
{
	struct thr *t = calloc(2 * rec->nev + 1, sizeof(*t));
	size_t k = 0, u = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < rec->nev; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];
		const unsigned char *data = (const unsigned char *)(x->e + 1);

		memcpy(&t[k].tid, data + 4, 4);
		t[k].tgid = (int)x->e->tgid;
		t[k].seq = i;
		memcpy(t[k].comm, x->e->comm, 16);
		k++;
		if (x->ev == sw && next_pid && next_comm) {
			t[k].tid = (int)ks_field_num(rec->tep, next_pid, data, (uint32_t)next_pid->offset, 4);
			t[k].tgid = -1;
			t[k].seq = i;
			str_field(next_comm, data, t[k].comm, sizeof(t[k].comm));
			k++;
		}
	}
	qsort(t, k, sizeof(*t), thr_cmp);
	for (size_t i = 0; i < k; i++)
		if (!u || t[u - 1].tid != t[i].tid)
			t[u++] = t[i];
	*n = u;
	return t;
}

/* process_name (the comm of the thread whose tid is the pid, else of its first thread) and thread_name of each. */
static void pf_names(struct ks_json *j, const struct thr *t, size_t nt)
{
	for (size_t i = 0; i < nt; i++) {
		int pid = t[i].tgid >= 0 ? t[i].tgid : t[i].tid;
		const struct thr *lead = thr_find(t, nt, pid);
		bool first = true;

		/* once per process: at its main thread, or at its first in tid order where that is not seen */
		if (lead)
			first = lead == &t[i];
		for (size_t k = 0; !lead && k < i && first; k++)
			first = (t[k].tgid >= 0 ? t[k].tgid : t[k].tid) != pid;
		if (first)
			pf_meta(j, "process_name", pid, pid, lead ? lead->comm : t[i].comm);
		pf_meta(j, "thread_name", pid, t[i].tid, t[i].comm);
	}
}

int ks_trace_write_perfetto(const struct ks_recording *rec, int64_t offset_ns, FILE *out)
{
	struct tep_event *sw = tep_find_event_by_name(rec->tep, "sched", "sched_switch");
	struct tep_format_field *next_pid = sw ? tep_find_field(sw, "next_pid") : NULL;
	struct tep_format_field *next_comm = sw ? tep_find_field(sw, "next_comm") : NULL;
	struct running *run = calloc((size_t)rec->ncpus + 1, sizeof(*run));
	struct ks_json *j = ks_json_new(out);
	struct thr *t = NULL;
	size_t nt = 0;
	char name[128];

	if (run && j)
		t = pf_threads(rec, sw, next_pid, next_comm, &nt);
	if (!run || !j || !t) {
		free(run);
		free(t);
		if (j)
			ks_json_free(j);
		return -ENOMEM;
	}
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "displayTimeUnit", "ns");
	ks_json_key(j, "traceEvents");
	ks_json_arr_begin(j);
	pf_names(j, t, nt);
	for (size_t i = 0; i < rec->nev; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];
		const unsigned char *data = (const unsigned char *)(x->e + 1);
		unsigned int cpu = x->e->cpu;
		int tid;

		if (cpu >= (unsigned int)rec->ncpus)
			cpu = (unsigned int)rec->ncpus; /* the spare slot: a recording's bad cpu reads nothing else */
		if (sw && x->ev == sw && next_pid && next_comm) {
			struct running *r = &run[cpu];

			if (r->on)
				pf_slice(j, t, nt, cpu, r, x->e->ts, offset_ns);
			r->tid = (int)ks_field_num(rec->tep, next_pid, data, (uint32_t)next_pid->offset, 4);
			/* a thread runs on one CPU at a time: where its switch-out was lost, its slice there ends here */
			for (int c = 0; r->tid && c <= rec->ncpus; c++)
				if (run[c].on && run[c].tid == r->tid)
					pf_slice(j, t, nt, (unsigned int)c, &run[c], x->e->ts, offset_ns);
			/* the idle task is no slice: gaps are idle time */
			r->on = r->tid != 0;
			r->since = x->e->ts;
			str_field(next_comm, data, r->comm, sizeof(r->comm));
			continue;
		}
		memcpy(&tid, data + 4, 4);
		/* another task's event on this CPU: the one running was switched out by an event not recorded */
		if (run[cpu].on && run[cpu].tid != tid)
			pf_slice(j, t, nt, cpu, &run[cpu], x->e->ts, offset_ns);
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "ph", "i");
		ks_json_kv_str(j, "s", "t");
		ks_json_kv_str(j, "name", ks_rec_ev_name(x->ev, name, sizeof(name)));
		ks_json_key(j, "pid");
		ks_json_i64(j, thr_pid(t, nt, tid));
		ks_json_key(j, "tid");
		ks_json_i64(j, tid);
		pf_us(j, "ts", x->e->ts + (uint64_t)offset_ns);
		ks_json_key(j, "args");
		ks_json_obj_begin(j);
		ks_json_kv_u64(j, "cpu", x->e->cpu);
		for (struct tep_format_field *f = x->ev->format.fields; f; f = f->next)
			json_field(j, rec->tep, f, data);
		ks_json_obj_end(j);
		ks_json_obj_end(j);
	}
	/* slices still open end with the recording */
	for (int c = 0; c <= rec->ncpus; c++)
		if (run[c].on)
			pf_slice(j, t, nt, (unsigned int)c, &run[c], rec->last_ts, offset_ns);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	free(run);
	free(t);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
