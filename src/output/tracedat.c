/* A recording's raw tracepoint events as trace-cmd's trace.dat, version 6 (trace-cmd.dat.v6(5)): formats, comms, ring-buffer pages per CPU. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "output/tracedat.h"

/*
 * Why this file writes the format itself: libtracecmd 1.3 (Debian 12's
 * libtracecmd-dev 3.1.6) declares only its reading API in trace-cmd.h.
 * Its writer (tracecmd_output_create_fd, tracecmd_output_write_headers,
 * tracecmd_write_cpu_data) is exported but declared in trace-cmd-private.h,
 * which is not installed, and it takes the formats from a tracefs
 * directory and the events from files of ring-buffer pages: a recording's
 * formats and records would have to be laid out as a fake tracefs first.
 * Version 6 is the simplest layout every trace-cmd since 2010 reads.
 */

/* What the kernel's events/header_page and header_event say on a 64-bit kernel with 4 KiB pages. */
static const char header_page[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
				  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
				  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
				  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
static const char header_event[] = "# compressed entry header\n"
				   "\ttype_len    :    5 bits\n"
				   "\ttime_delta  :   27 bits\n"
				   "\tarray       :   32 bits\n\n"
				   "\tpadding     : type == 29\n"
				   "\ttime_extend : type == 30\n"
				   "\ttime_stamp : type == 31\n"
				   "\tdata max type_len  == 28\n";

#define TYPE_TIME_EXTEND 30u
#define TYPE_LEN_MAX 28u
#define DELTA_BITS 27

/* One CPU's ring-buffer pages, built in memory: the page being filled is the last one. */
struct cpu_pages {
	unsigned char *buf;
	size_t len; /* whole pages */
	size_t pos; /* in the last page's data */
	uint64_t last_ts;
};

static uint32_t ev_header(uint32_t type_len, uint32_t delta)
{
	/* the 32-bit word of a bitfield (type_len:5, time_delta:27) in the writer's byte order */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return type_len << DELTA_BITS | delta;
#else
	return delta << 5 | type_len;
#endif
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static int new_page(struct cpu_pages *c, uint64_t ts)
{
	unsigned char *nb = realloc(c->buf, c->len + KS_TDAT_PAGE);

	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	memset(nb + c->len, 0, KS_TDAT_PAGE);
	memcpy(nb + c->len, &ts, 8); /* the page's time: its events' deltas count from it */
	c->len += KS_TDAT_PAGE;
	c->pos = 0;
	c->last_ts = ts;
	return 0;
}

/* Appends one record as the kernel's ring buffer holds it; 1: too long for any page (left out). */
static int add_record(struct cpu_pages *c, uint64_t ts, const void *data, uint32_t len)
{
	uint32_t dlen = (len + 3) & ~3u, hlen = dlen <= TYPE_LEN_MAX * 4 ? 4 : 8;
	uint64_t delta;
	unsigned char *p;
	int err;

	if (hlen + dlen > KS_TDAT_PAGE_DATA)
		return 1;
	delta = c->buf && ts >= c->last_ts ? ts - c->last_ts : 0;
	/* a delta past 27 bits takes a time-extend record (8 bytes) before the event */
	if (!c->buf || c->pos + hlen + dlen + (delta >> DELTA_BITS ? 8 : 0) > KS_TDAT_PAGE_DATA || ts < c->last_ts) {
		err = new_page(c, ts);
		if (err)
			return err;
		delta = 0;
	}
	p = c->buf + c->len - KS_TDAT_PAGE + 16 + c->pos;
	if (delta >> DELTA_BITS) {
		put32(p, ev_header(TYPE_TIME_EXTEND, (uint32_t)(delta & ((1u << DELTA_BITS) - 1))));
		put32(p + 4, (uint32_t)(delta >> DELTA_BITS));
		p += 8;
		c->pos += 8;
		delta = 0;
	}
	if (hlen == 4) {
		put32(p, ev_header(dlen / 4, (uint32_t)delta));
	} else {
		/* type_len 0: the length (with this word) in array[0] */
		put32(p, ev_header(0, (uint32_t)delta));
		put32(p + 4, dlen + 4);
	}
	memcpy(p + hlen, data, len);
	c->pos += hlen + dlen;
	c->last_ts = ts;
	/* commit: the bytes of data the page holds */
	uint64_t commit = c->pos;
	memcpy(c->buf + c->len - KS_TDAT_PAGE + 8, &commit, 8);
	return 0;
}

struct fmt_ref {
	const char *sys, *text;
	size_t len;
	void *payload;
};

static int cmp_fmt(const void *a, const void *b)
{
	const struct fmt_ref *x = a, *y = b;
	int c = strcmp(x->sys, y->sys);

	/* stable within a system: the recording's order */
	return c ? c : (x->text > y->text) - (x->text < y->text);
}

/* The "ID:" line of a format text, or -1. */
static long format_id(const char *text, size_t len)
{
	for (size_t i = 0; i + 4 < len; i++)
		if ((i == 0 || text[i - 1] == '\n') && !memcmp(text + i, "ID: ", 4)) {
			char num[16];
			size_t n = 0;

			for (i += 4; i < len && n + 1 < sizeof(num) && text[i] >= '0' && text[i] <= '9'; i++)
				num[n++] = text[i];
			num[n] = '\0';
			return n ? strtol(num, NULL, 10) : -1;
		}
	return -1;
}

static bool id_used(const struct ks_recording *rec, const bool *used, long id, const char *sys)
{
	struct tep_event *ev;

	if (id < 0 || id > 0xffff || !used[id])
		return false;
	ev = tep_find_event(rec->tep, (int)id);
	return ev && !strcmp(ev->system, sys);
}

/* The formats of the event types @rec's events have (@used by ID), one per ID, grouped by system. */
static int collect_formats(const struct ks_recording *rec, const bool *used, struct fmt_ref **out, size_t *n)
{
	struct fmt_ref *v = NULL;
	bool *seen = calloc(0x10000, 1);
	size_t k = 0;
	int err = 0;

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < rec->rd.nchunks && !err; i++) {
		void *p;
		const char *nul;
		long id;

		if (rec->rd.chunks[i].hdr.type != KS_REC_FORMAT)
			continue;
		err = ks_rec_read(&rec->rd, i, &p);
		if (err)
			break;
		nul = memchr(p, '\0', rec->rd.chunks[i].hdr.len);
		id = nul ? format_id(nul + 1, rec->rd.chunks[i].hdr.len - (size_t)(nul + 1 - (char *)p)) : -1;
		if (!nul || !id_used(rec, used, id, p) || seen[id]) {
			free(p);
			continue;
		}
		seen[id] = true;
		struct fmt_ref *nv = realloc(v, (k + 1) * sizeof(*v));

		if (!nv) {
			free(p);
			err = -ENOMEM;
			break;
		}
		v = nv;
		v[k++] = (struct fmt_ref){ .sys = p, .text = nul + 1,
					   .len = rec->rd.chunks[i].hdr.len - (size_t)(nul + 1 - (char *)p), .payload = p };
	}
	free(seen);
	if (k)
		qsort(v, k, sizeof(*v), cmp_fmt);
	*out = v;
	*n = k;
	return err;
}

struct pid_comm {
	int pid;
	size_t i;
};

static int cmp_pid(const void *a, const void *b)
{
	const struct pid_comm *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * saved_cmdlines ("pid comm" lines): each thread's last comm in the
 * recording.  A comm's bytes go as they are, but for a newline, which
 * would end its line (trace-cmd reads them line by line): written as a
 * space, as no other byte can stand for it there.
 */
static int write_cmdlines(const struct ks_recording *rec, FILE *f)
{
	struct pid_comm *v = malloc((rec->nev ? rec->nev : 1) * sizeof(*v));
	char *text = NULL;
	size_t len = 0;
	FILE *m;
	uint64_t sz;

	if (!v)
		return -ENOMEM;
	m = open_memstream(&text, &len);
	if (!m) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rec->nev; i++) {
		v[i].i = i;
		memcpy(&v[i].pid, (const char *)(rec->evs[i].e + 1) + 4, 4);
	}
	qsort(v, rec->nev, sizeof(*v), cmp_pid);
	for (size_t i = 0; i < rec->nev; i++) {
		const char *comm = rec->evs[v[i].i].e->comm;

		if ((i + 1 < rec->nev && v[i + 1].pid == v[i].pid) || !comm[0])
			continue;
		fprintf(m, "%d ", v[i].pid);
		for (size_t j = 0; j < 16 && comm[j]; j++)
			fputc(comm[j] == '\n' ? ' ' : comm[j], m);
		fputc('\n', m);
	}
	free(v);
	if (fclose(m)) {
		free(text);
		return -ENOMEM;
	}
	sz = len;
	fwrite(&sz, 8, 1, f);
	fwrite(text, 1, len, f);
	free(text);
	return 0;
}

static void put_str_sized(FILE *f, const char *s, size_t len, int width)
{
	uint64_t v64 = len;
	uint32_t v32 = (uint32_t)len;

	if (width == 8)
		fwrite(&v64, 8, 1, f);
	else
		fwrite(&v32, 4, 1, f);
	fwrite(s, 1, len, f);
}

/* Everything before the CPU data: the initial format, headers, formats, kallsyms, printk, cmdlines, CPU count. */
static int write_header(const struct ks_recording *rec, const struct fmt_ref *fm, size_t nfm, uint32_t ncpus,
			FILE *f)
{
	const unsigned char magic[] = { 0x17, 0x08, 0x44 };
	uint32_t page = KS_TDAT_PAGE, nsys = 0, zero = 0;
	unsigned char endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__, longsz = 8;

	fwrite(magic, 1, 3, f);
	fwrite("tracing6", 1, 9, f); /* "tracing", then the version "6\0" */
	fputc(endian, f);
	fputc(longsz, f);
	fwrite(&page, 4, 1, f);
	fwrite("header_page", 1, 12, f);
	put_str_sized(f, header_page, sizeof(header_page) - 1, 8);
	fwrite("header_event", 1, 13, f);
	put_str_sized(f, header_event, sizeof(header_event) - 1, 8);
	fwrite(&zero, 4, 1, f); /* no ftrace (function tracer) formats */
	for (size_t i = 0; i < nfm; i++)
		nsys += !i || strcmp(fm[i].sys, fm[i - 1].sys);
	fwrite(&nsys, 4, 1, f);
	for (size_t i = 0, j; i < nfm; i = j) {
		uint32_t nev;

		for (j = i; j < nfm && !strcmp(fm[j].sys, fm[i].sys); j++)
			;
		nev = (uint32_t)(j - i);
		fwrite(fm[i].sys, 1, strlen(fm[i].sys) + 1, f);
		fwrite(&nev, 4, 1, f);
		for (size_t k = i; k < j; k++)
			put_str_sized(f, fm[k].text, fm[k].len, 8);
	}
	/* no kallsyms (no kernel address leaves the machine this way), no trace_printk formats */
	fwrite(&zero, 4, 1, f);
	fwrite(&zero, 4, 1, f);
	if (write_cmdlines(rec, f))
		return -ENOMEM;
	fwrite(&ncpus, 4, 1, f);
	return 0;
}

int ks_tracedat_write(const struct ks_recording *rec, int64_t offset_ns, FILE *out, uint64_t *too_big)
{
	uint32_t ncpus = rec->ncpus > 0 ? (uint32_t)rec->ncpus : 1;
	struct cpu_pages *cp = calloc(ncpus, sizeof(*cp));
	bool *used = calloc(0x10000, 1);
	struct fmt_ref *fm = NULL;
	size_t nfm = 0, hlen = 0;
	char *head = NULL;
	FILE *m = NULL;
	uint64_t off;
	int err = 0;

	*too_big = 0;
	if (!cp || !used) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rec->nev && !err; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];

		used[x->ev->id & 0xffff] = true;
		err = add_record(&cp[x->e->cpu], x->e->ts + (uint64_t)offset_ns, x->e + 1, x->e->len);
		if (err == 1) {
			(*too_big)++;
			err = 0;
		}
	}
	if (!err)
		err = collect_formats(rec, used, &fm, &nfm);
	if (err)
		goto out;
	m = open_memstream(&head, &hlen);
	if (!m || write_header(rec, fm, nfm, ncpus, m) || fclose(m)) {
		if (m)
			fclose(m);
		err = -ENOMEM;
		m = NULL;
		goto out;
	}
	m = NULL;
	fwrite(head, 1, hlen, out);
	fwrite("flyrecord", 1, 10, out);
	/* the CPU data from the first page boundary after the offsets */
	off = (hlen + 10 + 16ull * ncpus + KS_TDAT_PAGE - 1) / KS_TDAT_PAGE * KS_TDAT_PAGE;
	for (uint32_t c = 0; c < ncpus; c++) {
		uint64_t sz = cp[c].len, o = off;

		fwrite(&o, 8, 1, out);
		fwrite(&sz, 8, 1, out);
		off += sz;
	}
	for (size_t pad = (KS_TDAT_PAGE - (hlen + 10 + 16ull * ncpus) % KS_TDAT_PAGE) % KS_TDAT_PAGE; pad; pad--)
		fputc(0, out);
	for (uint32_t c = 0; c < ncpus; c++)
		if (cp[c].len)
			fwrite(cp[c].buf, 1, cp[c].len, out);
	if (ferror(out))
		err = -EIO;
out:
	for (size_t i = 0; i < nfm; i++)
		free(fm[i].payload);
	free(fm);
	free(head);
	for (uint32_t c = 0; cp && c < ncpus; c++)
		free(cp[c].buf);
	free(cp);
	free(used);
	return err;
}
