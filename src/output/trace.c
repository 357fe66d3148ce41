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

int ks_trace_write(const struct ks_recording *rec, enum ks_trace_fmt fmt, int64_t offset_ns, FILE *out)
{
	struct ks_json *j = NULL;
	struct trace_seq s;
	char name[128];

	trace_seq_init(&s);
	if (fmt == KS_TRACE_TEXT) {
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
			fprintf(out, "%16s-%-7d [%03u] %5" PRIu64 ".%06" PRIu64 ": ", sc, pid, x->e->cpu,
				ts / 1000000000, ts % 1000000000 / 1000);
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

static void pf_meta(struct ks_json *j, const char *what, int tid, const char *name)
{
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "ph", "M");
	ks_json_kv_str(j, "name", what);
	ks_json_kv_u64(j, "pid", 1);
	ks_json_kv_u64(j, "tid", (uint64_t)tid);
	ks_json_key(j, "args");
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "name", name);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
}

struct running {
	bool on;
	uint64_t since;
	int pid;
	char comm[17];
};

static void pf_slice(struct ks_json *j, unsigned int cpu, const struct running *run, uint64_t end, int64_t off)
{
	double ts = (double)(run->since + (uint64_t)off) / 1e3, te = (double)(end + (uint64_t)off) / 1e3;
	char name[48];

	snprintf(name, sizeof(name), "%s %d", run->comm, run->pid);
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "ph", "X");
	ks_json_kv_str(j, "name", name);
	ks_json_kv_str(j, "cat", "sched");
	ks_json_kv_u64(j, "pid", 1);
	ks_json_kv_u64(j, "tid", cpu);
	ks_json_kv_double(j, "ts", ts);
	/* the difference of the two doubles, not (end - since) / 1e3: a reader's ts + dur is then
	 * exactly the next slice's ts, where a rounded dur overlapped it by a few 1e-9 us and
	 * the DevTools engine drew the next slice nested in this one */
	ks_json_kv_double(j, "dur", te - ts);
	ks_json_key(j, "args");
	ks_json_obj_begin(j);
	ks_json_key(j, "pid");
	ks_json_i64(j, run->pid);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
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

int ks_trace_write_perfetto(const struct ks_recording *rec, int64_t offset_ns, FILE *out)
{
	struct tep_event *sw = tep_find_event_by_name(rec->tep, "sched", "sched_switch");
	struct tep_format_field *next_pid = sw ? tep_find_field(sw, "next_pid") : NULL;
	struct tep_format_field *next_comm = sw ? tep_find_field(sw, "next_comm") : NULL;
	struct running *run = calloc((size_t)rec->ncpus + 1, sizeof(*run));
	struct ks_json *j = ks_json_new(out);
	char name[128];

	if (!run || !j) {
		free(run);
		if (j)
			ks_json_free(j);
		return -ENOMEM;
	}
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "displayTimeUnit", "ns");
	ks_json_key(j, "traceEvents");
	ks_json_arr_begin(j);
	pf_meta(j, "process_name", 0, "CPUs");
	for (int c = 0; c < rec->ncpus; c++) {
		snprintf(name, sizeof(name), "CPU %d", c);
		pf_meta(j, "thread_name", c, name);
	}
	for (size_t i = 0; i < rec->nev; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];
		const unsigned char *data = (const unsigned char *)(x->e + 1);
		unsigned int cpu = x->e->cpu;

		if (sw && x->ev == sw && next_pid && next_comm) {
			struct running *r = &run[cpu];

			if (r->on)
				pf_slice(j, cpu, r, x->e->ts, offset_ns);
			r->pid = (int)ks_field_num(rec->tep, next_pid, data, (uint32_t)next_pid->offset, 4);
			/* the idle task is no slice: gaps are idle time */
			r->on = r->pid != 0;
			r->since = x->e->ts;
			str_field(next_comm, data, r->comm, sizeof(r->comm));
			continue;
		}
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "ph", "i");
		ks_json_kv_str(j, "s", "t");
		ks_json_kv_str(j, "name", ks_rec_ev_name(x->ev, name, sizeof(name)));
		ks_json_kv_u64(j, "pid", 1);
		ks_json_kv_u64(j, "tid", cpu);
		ks_json_kv_double(j, "ts", (double)(x->e->ts + (uint64_t)offset_ns) / 1e3);
		ks_json_key(j, "args");
		ks_json_obj_begin(j);
		for (struct tep_format_field *f = x->ev->format.fields; f; f = f->next)
			json_field(j, rec->tep, f, data);
		ks_json_obj_end(j);
		ks_json_obj_end(j);
	}
	/* slices still open end with the recording */
	for (int c = 0; c < rec->ncpus; c++)
		if (run[c].on)
			pf_slice(j, (unsigned int)c, &run[c], rec->last_ts, offset_ns);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	free(run);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
