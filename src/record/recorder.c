/* ksight record's engine: tracepoints and their formats, the BPF load, per-CPU ring draining into CRC'd chunks, exact loss accounting. */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <event-parse.h>
#include <linux/perf_event.h>
#include <tracefs.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/cmd.h"
#include "core/filter.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/names.h"
#include "core/probe.h"
#include "core/sysinfo.h"
#include "core/tracefs.h"
#include "events/anon.h"
#include "format/recfile.h"
#include "record/collect.h"
#include "record/flight.h"
#include "record/recorder.h"
#include "record/rotate.h"
#include "record.skel.h"

/* A CPU's events are flushed as a chunk at this size, and at least once a second. */
#define CHUNK_BYTES (256u << 10)

static char *read_format(const char *dir, const char *sys, const char *name)
{
	char path[512], *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", dir, sys, name);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *n = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!n) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = n;
		}
		size_t r = fread(buf + len, 1, 4096, f);

		len += r;
		if (r < 4096)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

static int tps_push(struct ks_rec_tps *tps, const char *dir, const char *sys, const char *name)
{
	struct ks_rec_tp *tp;
	const char *idl;

	for (int i = 0; i < tps->n; i++)
		if (!strcmp(tps->v[i].sys, sys) && !strcmp(tps->v[i].name, name))
			return 0; /* named twice: recorded once */
	if (tps->n == tps->cap) {
		int cap = tps->cap ? tps->cap * 2 : 16;
		struct ks_rec_tp *n = realloc(tps->v, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tps->v = n;
		tps->cap = cap;
	}
	tp = &tps->v[tps->n];
	memset(tp, 0, sizeof(*tp));
	tp->sys = strdup(sys);
	tp->name = strdup(name);
	tp->format = read_format(dir, sys, name);
	idl = tp->format ? strstr(tp->format, "\nID: ") : NULL;
	if (!tp->sys || !tp->name || !tp->format || !idl) {
		int err = tp->format ? -ENOMEM : -errno;

		free(tp->sys);
		free(tp->name);
		free(tp->format);
		p_err("cannot read the format of %s:%s: %s", sys, name, strerror(err ? -err : EIO));
		return err ? err : -EIO;
	}
	tp->id = atoi(idl + 5);
	tps->n++;
	return 0;
}

int ks_rec_tps_add(struct ks_rec_tps *tps, const char *spec)
{
	const char *colon = strchr(spec, ':'), *dir;
	char *sysg, **systems;
	int err = 0, found = 0, acc;
	char why[256];

	if (!colon || colon == spec || !colon[1] || strchr(colon + 1, ':')) {
		p_err("bad event '%s': expected SUBSYSTEM:EVENT (globs allowed), e.g. sched:sched_switch", spec);
		return -EINVAL;
	}
	acc = ks_tracefs_access();
	dir = acc ? NULL : ks_tracefs_dir(NULL);
	if (!dir) {
		p_err("cannot read tracepoint formats: %s", ks_tracefs_explain(acc ? acc : -ENODEV, why, sizeof(why)));
		return acc ? acc : -ENODEV;
	}
	sysg = strndup(spec, (size_t)(colon - spec));
	if (!sysg)
		return -ENOMEM;
	systems = tracefs_event_systems(dir);
	for (int i = 0; systems && systems[i] && !err; i++) {
		char **events;

		if (fnmatch(sysg, systems[i], 0))
			continue;
		events = tracefs_system_events(dir, systems[i]);
		for (int j = 0; events && events[j] && !err; j++)
			if (!fnmatch(colon + 1, events[j], 0)) {
				err = tps_push(tps, dir, systems[i], events[j]);
				found++;
			}
		tracefs_list_free(events);
	}
	tracefs_list_free(systems);
	free(sysg);
	if (!err && !found) {
		p_err("no tracepoint matches '%s'; 'ksight list %s' shows what this kernel has", spec,
		      strchr(spec, '*') ? spec : "SUBSYSTEM:*");
		return -ENOENT;
	}
	return err;
}

void ks_rec_tps_free(struct ks_rec_tps *tps)
{
	for (int i = 0; i < tps->n; i++) {
		free(tps->v[i].sys);
		free(tps->v[i].name);
		free(tps->v[i].format);
	}
	free(tps->v);
	memset(tps, 0, sizeof(*tps));
}

/* The fixed size and dynamic fields of @tp, from its format. */
static int evcfg_of(struct tep_handle *tep, const struct ks_rec_tp *tp, struct ks_rec_evcfg *c)
{
	struct tep_event *ev;
	struct tep_format_field **lists[2];
	int end = 0;

	memset(c, 0, sizeof(*c));
	if (tep_parse_event(tep, tp->format, strlen(tp->format), tp->sys))
		return -EINVAL;
	ev = tep_find_event(tep, tp->id);
	if (!ev)
		return -EINVAL;
	lists[0] = tep_event_common_fields(ev);
	lists[1] = tep_event_fields(ev);
	for (int l = 0; l < 2; l++)
		for (int i = 0; lists[l] && lists[l][i]; i++) {
			struct tep_format_field *f = lists[l][i];

			if (f->offset + f->size > end)
				end = f->offset + f->size;
			if ((f->flags & TEP_FIELD_IS_DYNAMIC) && c->ndloc < KS_REC_MAX_DLOC)
				c->dloc[c->ndloc++] = (uint16_t)(f->offset | ((f->flags & TEP_FIELD_IS_RELATIVE) ? KS_REC_DLOC_REL : 0));
		}
	free(lists[0]);
	free(lists[1]);
	c->fixed = (uint16_t)(end > KS_REC_MAX_RAW ? KS_REC_MAX_RAW : end);
	/*
	 * ksight's own hits are left out (unless --include-self, which clears the
	 * filter) only of the system-call events, which its writing of the file
	 * would feed; in the others (sched_switch from ksight, a wakeup by it)
	 * another task is concerned as much: 1-2% of a busy system's switches and
	 * wakeups went missing, breaking its wakeup-to-switch pairs.
	 */
	c->on = KS_REC_ON;
	if (strcmp(tp->sys, "raw_syscalls") && strcmp(tp->sys, "syscalls"))
		c->on |= KS_REC_ON_SELF;
	return 0;
}

/*
 * The number of the system call whose events are named @name: the table's
 * name, or the kernel function's where the two differ on x86-64
 * (arch/x86/entry/syscalls/syscall_64.tbl: stat is sys_newstat, ...).
 */
static int sys_nr(const char *name)
{
	static const char *const alias[][2] = {
		{ "newstat", "stat" },	     { "newfstat", "fstat" }, { "newlstat", "lstat" },
		{ "newuname", "uname" },     { "umount", "umount2" }, { "sendfile64", "sendfile" },
	};

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(name, alias[i][0]))
			return ks_syscall_nr(alias[i][1]);
	return ks_syscall_nr(name);
}

/*
 * Where the system-call event @tp is taken from the raw sys_enter/sys_exit
 * tracepoints (record.bpf.c, sys_record): its key in the sysev map, or -1
 * for a classic tracepoint of its own.  Only when its number is known
 * (by name, in the build's table) and its format (parsed into @tep) is the
 * one sys_record builds; on x86-64, whose argument registers it reads.
 */
static int sys_key(struct tep_handle *tep, const struct ks_rec_tp *tp)
{
#if defined(__x86_64__)
	bool exit = !strncmp(tp->name, "sys_exit_", 9);
	struct tep_format_field **fl;
	struct tep_event *ev;
	int nr, n = 0, ok = 1;

	if (strcmp(tp->sys, "syscalls") || (!exit && strncmp(tp->name, "sys_enter_", 10)))
		return -1;
	nr = sys_nr(tp->name + (exit ? 9 : 10));
	ev = nr >= 0 && nr < KS_REC_SYS_NR ? tep_find_event(tep, tp->id) : NULL;
	fl = ev ? tep_event_fields(ev) : NULL;
	if (!fl)
		return -1;
	for (; fl[n]; n++) {
		/* __syscall_nr (int) at 8, then 8-byte fields from 16: the arguments, or the return value */
		int off = n ? 16 + 8 * (n - 1) : 8, size = n ? 8 : 4;

		if (fl[n]->offset != off || fl[n]->size != size || (fl[n]->flags & TEP_FIELD_IS_DYNAMIC) ||
		    (!n && strcmp(fl[n]->name, "__syscall_nr")))
			ok = 0;
	}
	free(fl);
	if (!ok || n < 1 || n > (exit ? 2 : 7) || (exit && n != 2) || strcmp(ev->name, tp->name))
		return -1;
	return exit ? KS_REC_SYS_NR + nr : nr;
#else
	(void)tep;
	(void)tp;
	return -1;
#endif
}

struct cpu_buf {
	char *buf;
	size_t len;
	uint32_t count;
	uint64_t first, last;
	uint64_t lost_seen;
	uint64_t recorded; /* written to the file */
	uint64_t dropped;  /* taken from the ring after --max-size was reached */
};

struct rec {
	struct ks_rec_out out;
	struct cpu_buf *cpus;
	int ncpus;
	int err;
	bool full; /* --max-size reached */
	const struct ks_anon *anon;
	struct tep_handle *tep;	/* the formats, for --anonymize */
	struct ks_rec_event *anon_buf;
	uint64_t bad; /* ring records that did not parse: never expected */
	struct ks_flight *fl; /* --flight: chunks go through it */
	uint64_t armed_ns, disarmed_ns; /* the recording window (CLOCK_MONOTONIC, as the events' times) */
};

static int flush_cpu(struct rec *r, int cpu, uint64_t lost_now)
{
	struct cpu_buf *b = &r->cpus[cpu];
	struct ks_rec_chunk c = { .type = KS_REC_EVENTS, .cpu = (uint32_t)cpu };
	uint32_t written = 0;
	int err;

	if (!b->count && lost_now == b->lost_seen)
		return 0;
	c.count = b->count;
	c.first_ts = b->first;
	c.last_ts = b->last;
	c.lost = lost_now - b->lost_seen;
	if (r->fl) {
		/* --flight (never with --max-size or --rotate): counted as recorded in on_event */
		err = ks_flight_chunk(r->fl, &r->out.w, &c, b->buf, (uint32_t)b->len);
	} else {
		err = ks_rec_out_events(&r->out, &c, b->buf, (uint32_t)b->len, &written);
		b->recorded += written;
		if (err == -ENOSPC) {
			/* the file is at --max-size: the rest of this chunk, and all after it, are dropped (counted) */
			b->dropped += b->count - written;
			r->full = true;
			err = 0;
		}
	}
	if (err)
		return err;
	b->lost_seen = lost_now;
	b->len = 0;
	b->count = 0;
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct rec *r = ctx;
	const struct ks_rec_event *e = data;
	struct cpu_buf *b;

	if (size < sizeof(*e) || e->cpu >= r->ncpus || ks_rec_ev_stride(e->len) != size) {
		r->bad++;
		return 0;
	}
	if (r->anon) {
		uint16_t type;
		struct tep_event *ev;
		int n;

		memcpy(&type, e + 1, 2);
		ev = e->len >= 8 ? tep_find_event(r->tep, type) : NULL;
		n = ev ? ks_anon_event(r->anon, ev, e, r->anon_buf, sizeof(*e) + KS_REC_MAX_RAW + 8) : -EINVAL;
		if (n < 0) {
			r->bad++;
			return 0;
		}
		size = ks_rec_ev_stride((uint32_t)n);
		/* the padding after the record: zeroed, no bytes of an earlier event in it */
		memset((char *)(r->anon_buf + 1) + n, 0, size - sizeof(*e) - (size_t)n);
		data = r->anon_buf;
		e = data;
	}
	b = &r->cpus[e->cpu];
	if (r->full) {
		b->dropped++;
		return 0;
	}
	memcpy(b->buf + b->len, data, size);
	b->len += size;
	if (!b->count)
		b->first = e->ts;
	b->last = e->ts;
	b->count++;
	if (r->fl) {
		b->recorded++;
		ks_flight_see(r->fl, e);
	}
	if (b->len + sizeof(*e) + KS_REC_MAX_RAW + 8 > CHUNK_BYTES) {
		/* losses are attributed at the periodic flush; here the chunk is only full */
		int err = flush_cpu(r, e->cpu, b->lost_seen);

		if (err) {
			r->err = err;
			return err;
		}
	}
	return 0;
}

static int read_counts(int fd, int ncpus, struct ks_rec_counts *out)
{
	uint32_t zero = 0;

	memset(out, 0, (size_t)ncpus * sizeof(*out));
	return bpf_map_lookup_elem(fd, &zero, out) ? -errno : 0;
}

static int flush_all(struct rec *r, int counts_fd, struct ks_rec_counts *cnt)
{
	int err = read_counts(counts_fd, r->ncpus, cnt);

	for (int i = 0; i < r->ncpus && !err; i++)
		err = flush_cpu(r, i, cnt[i].lost);
	return err;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Every ring emptied and every CPU's events flushed as chunks; then, with
 * --flight, the latency pairs matched up to when the drain began (the
 * events' clock), every event before it being out by then.
 */
static int drain_all(struct rec *r, struct ring_buffer *ring, int counts_fd, struct ks_rec_counts *cnt)
{
	uint64_t began = now_ns();
	int n = ring_buffer__consume(ring);
	int err = n < 0 ? n : flush_all(r, counts_fd, cnt);

	if (!err && r->fl)
		ks_flight_settle(r->fl, began);
	return err;
}

/* MONOTONIC, REALTIME and BOOTTIME read back to back, so a recording can be put on another clock or host's timeline. */
static void clock_calibration(struct ks_rec_kv *kv, const char *prefix)
{
	struct timespec m1, re, bo, m2;
	char key[64];

	clock_gettime(CLOCK_MONOTONIC, &m1);
	clock_gettime(CLOCK_REALTIME, &re);
	clock_gettime(CLOCK_BOOTTIME, &bo);
	clock_gettime(CLOCK_MONOTONIC, &m2);
#define NS(t) ((uint64_t)(t).tv_sec * 1000000000ull + (uint64_t)(t).tv_nsec)
	snprintf(key, sizeof(key), "%s.monotonic_ns", prefix);
	ks_rec_kv_add(kv, key, "%llu", (unsigned long long)((NS(m1) + NS(m2)) / 2));
	snprintf(key, sizeof(key), "%s.realtime_ns", prefix);
	ks_rec_kv_add(kv, key, "%llu", (unsigned long long)NS(re));
	snprintf(key, sizeof(key), "%s.boottime_ns", prefix);
	ks_rec_kv_add(kv, key, "%llu", (unsigned long long)NS(bo));
	snprintf(key, sizeof(key), "%s.uncertainty_ns", prefix);
	ks_rec_kv_add(kv, key, "%llu", (unsigned long long)(NS(m2) - NS(m1)));
#undef NS
}

/*
 * record.bpf.c's pc_rq_delta: x86's per-CPU __preempt_count less per-CPU
 * runqueues, their offsets in vmlinux BTF's .data..percpu; 0 where either
 * is missing (other architectures keep the count elsewhere, 6.2-6.14 in
 * pcpu_hot) or struct cfs_rq has no rq.
 */
static int64_t pc_rq_delta(void)
{
#if defined(__x86_64__)
	struct btf *vm = ks_kernel_btf();
	int64_t off[2] = { -1, -1 };
	int id = vm ? btf__find_by_name_kind(vm, ".data..percpu", BTF_KIND_DATASEC) : -1;
	const struct btf_type *ds = id > 0 ? btf__type_by_id(vm, id) : NULL;
	const struct btf_var_secinfo *v = ds ? btf_var_secinfos(ds) : NULL;

	int cid = vm ? btf__find_by_name_kind(vm, "cfs_rq", BTF_KIND_STRUCT) : -1;
	const struct btf_type *cfs = cid > 0 ? btf__type_by_id(vm, cid) : NULL;
	const struct btf_member *m = cfs ? btf_members(cfs) : NULL;
	bool rq = false;

	/* the program reaches the runqueue by the task's cfs_rq->rq (CONFIG_FAIR_GROUP_SCHED) */
	for (int i = 0; m && i < btf_vlen(cfs); i++, m++)
		rq = rq || !strcmp(btf__name_by_offset(vm, m->name_off) ?: "", "rq");
	for (int i = 0; rq && v && i < btf_vlen(ds); i++, v++) {
		const struct btf_type *vt = btf__type_by_id(vm, v->type);
		const char *n = vt ? btf__name_by_offset(vm, vt->name_off) : NULL;

		if (n && !strcmp(n, "__preempt_count"))
			off[0] = v->offset;
		else if (n && !strcmp(n, "runqueues"))
			off[1] = v->offset;
	}
	if (off[0] >= 0 && off[1] >= 0)
		return off[0] - off[1];
#endif
	return 0;
}

static void host_manifest(struct ks_rec_kv *kv, const struct ks_rec_opts *o, int ncpus)
{
	struct ks_sysinfo *si = calloc(1, sizeof(*si));
	struct utsname u;

	if (!uname(&u)) {
		ks_rec_kv_add(kv, "host", "%s", u.nodename);
		ks_rec_kv_add(kv, "machine", "%s", u.machine);
	}
	if (si && !ks_sysinfo_gather(si, NULL)) {
		ks_rec_kv_add(kv, "kernel.release", "%s", si->release);
		ks_rec_kv_add(kv, "kernel.version", "%s", si->version);
		ks_rec_kv_add(kv, "cpu.model", "%s", si->cpu_model);
		ks_rec_kv_add(kv, "cpu.online", "%d", si->cpus_online);
		ks_rec_kv_add(kv, "cpu.possible", "%d", si->cpus_possible);
		ks_rec_kv_add(kv, "cpu.sockets", "%d", si->sockets);
		ks_rec_kv_add(kv, "cpu.cores", "%d", si->cores);
		ks_rec_kv_add(kv, "cpu.numa_nodes", "%d", si->numa_nodes);
		for (int i = 0; i < si->ngovernors; i++)
			ks_rec_kv_add(kv, "cpu.governor", "%s", si->governors[i]);
		ks_rec_kv_add(kv, "clocksource", "%s", si->clocksource);
	}
	free(si);
	ks_rec_kv_add(kv, "clock", "%s", "monotonic");
	clock_calibration(kv, "clock.start");
	ks_rec_kv_add(kv, "rings", "%s", o->shared ? "shared" : "per-cpu");
	ks_rec_kv_add(kv, "ring_bytes", "%llu", (unsigned long long)o->buf_size);
	ks_rec_kv_add(kv, "ring_count", "%d", o->shared ? 1 : ncpus);
	ks_rec_kv_add(kv, "sample", "%u", o->sample_n > 1 ? o->sample_n : 1);
	ks_rec_kv_add(kv, "max_raw_bytes", "%d", KS_REC_MAX_RAW);
	/* report's ftrace text prints the kernel's irq-info columns from the common fields where they are filled */
	if (pc_rq_delta())
		ks_rec_kv_add(kv, "irq_info", "%s", "hardsoft,preempt,migrate");
	for (int i = 0; i < o->tps->n; i++)
		ks_rec_kv_add(kv, "event", "%s:%s", o->tps->v[i].sys, o->tps->v[i].name);
}

struct head_ctx {
	struct rec *r;
	const struct ks_rec_opts *o;
};

/* The head of every file (rotated ones too): manifest, then the formats. */
static int write_head(void *vctx, struct ks_rec_writer *w, uint64_t index)
{
	struct head_ctx *h = vctx;
	const struct ks_rec_opts *o = h->o;
	struct ks_rec_chunk c = { .type = KS_REC_MANIFEST };
	struct ks_rec_kv kv = { 0 };
	int err;

	host_manifest(&kv, o, h->r->ncpus);
	if (o->rotate_size)
		ks_rec_kv_add(&kv, "rotation.index", "%llu", (unsigned long long)index);
	if (!kv.err && o->manifest_len) {
		/* the command's own lines (cmdline, options) come first in reading order after the host's */
		char *n = realloc(kv.buf, kv.len + o->manifest_len + 1);

		if (!n)
			kv.err = -ENOMEM;
		else {
			kv.buf = n;
			memcpy(kv.buf + kv.len, o->manifest, o->manifest_len);
			kv.len += o->manifest_len;
		}
	}
	if (!kv.err && o->anon) {
		struct ks_rec_kv an = { 0 };

		ks_anon_manifest(o->anon, kv.buf, kv.len, &an);
		ks_rec_kv_free(&kv);
		kv = an;
	}
	err = kv.err ? kv.err : ks_rec_append(w, &c, kv.buf, (uint32_t)kv.len);
	ks_rec_kv_free(&kv);
	for (int i = 0; i < o->tps->n && !err; i++) {
		const struct ks_rec_tp *tp = &o->tps->v[i];
		size_t sl = strlen(tp->sys) + 1, fl = strlen(tp->format);
		char *p = malloc(sl + fl);

		if (!p)
			return -ENOMEM;
		memcpy(p, tp->sys, sl);
		memcpy(p + sl, tp->format, fl);
		c = (struct ks_rec_chunk){ .type = KS_REC_FORMAT };
		err = ks_rec_append(w, &c, p, (uint32_t)(sl + fl));
		free(p);
	}
	return err;
}

static int write_trailer(struct rec *r, const struct ks_rec_opts *o, const struct ks_rec_counts *cnt,
			 const struct ks_rec_stats *st)
{
	struct ks_rec_chunk c = { .type = KS_REC_TRAILER };
	struct ks_rec_kv kv = { 0 };
	char key[32];
	int err;

	for (int i = 0; i < r->ncpus; i++) {
		if (!cnt[i].produced && !r->cpus[i].recorded)
			continue;
		snprintf(key, sizeof(key), "cpu.%d", i);
		/* produced sampled_out recorded lost cut filtered */
		ks_rec_kv_add(&kv, key, "%llu %llu %llu %llu %llu %llu", (unsigned long long)cnt[i].produced,
			      (unsigned long long)cnt[i].sampled_out, (unsigned long long)r->cpus[i].recorded,
			      (unsigned long long)cnt[i].lost, (unsigned long long)cnt[i].cut,
			      (unsigned long long)cnt[i].filtered);
	}
	ks_rec_kv_add(&kv, "produced", "%llu", (unsigned long long)st->produced);
	ks_rec_kv_add(&kv, "filtered", "%llu", (unsigned long long)st->filtered);
	ks_rec_kv_add(&kv, "sampled_out", "%llu", (unsigned long long)st->sampled_out);
	ks_rec_kv_add(&kv, "recorded", "%llu", (unsigned long long)st->recorded);
	ks_rec_kv_add(&kv, "lost", "%llu", (unsigned long long)st->lost);
	ks_rec_kv_add(&kv, "cut", "%llu", (unsigned long long)st->cut);
	ks_rec_kv_add(&kv, "missed", "%llu", (unsigned long long)st->missed);
	ks_rec_kv_add(&kv, "exact", "%s", st->exact ? "yes" : "no");
	if (st->full)
		ks_rec_kv_add(&kv, "dropped", "%llu", (unsigned long long)st->dropped);
	if (r->fl) {
		/* recorded = written + dropped (outside every window) */
		ks_rec_kv_add(&kv, "flight.triggers", "%llu", (unsigned long long)st->triggers);
		ks_rec_kv_add(&kv, "flight.written", "%llu", (unsigned long long)st->flight_written);
		ks_rec_kv_add(&kv, "flight.dropped", "%llu", (unsigned long long)(st->recorded - st->flight_written));
		ks_rec_kv_add(&kv, "flight.triggers_dropped", "%llu", (unsigned long long)st->triggers_dropped);
	}
	if (o->cmd && o->cmd->done) {
		ks_rec_kv_add(&kv, "command.pid", "%d", (int)o->cmd->pid);
		if (WIFEXITED(o->cmd->status))
			ks_rec_kv_add(&kv, "command.exit_status", "%d", WEXITSTATUS(o->cmd->status));
		else
			ks_rec_kv_add(&kv, "command.signal", "%d", WTERMSIG(o->cmd->status));
		ks_rec_kv_add(&kv, "command.wall_s", "%.6f", o->cmd->end_s - o->cmd->start_s);
	}
	if (r->fl && o->latency) {
		ks_rec_kv_add(&kv, "flight.latency_pairs", "%llu", (unsigned long long)st->lat_pairs);
		ks_rec_kv_add(&kv, "flight.latency_over", "%llu", (unsigned long long)st->lat_over);
		ks_rec_kv_add(&kv, "flight.latency_unmatched", "%llu", (unsigned long long)st->lat.unmatched);
		ks_rec_kv_add(&kv, "flight.latency_evicted", "%llu", (unsigned long long)st->lat.evicted);
		ks_rec_kv_add(&kv, "flight.latency_open", "%llu", (unsigned long long)st->lat.open);
	}
	/* when the events were taken: from the end of attach (-d counts from it) to the end */
	ks_rec_kv_add(&kv, "window.start_ns", "%llu", (unsigned long long)r->armed_ns);
	ks_rec_kv_add(&kv, "window.end_ns", "%llu", (unsigned long long)r->disarmed_ns);
	ks_rec_out_trailer_kv(&r->out, &kv);
	clock_calibration(&kv, "clock.end");
	err = kv.err ? kv.err : ks_rec_out_append(&r->out, &c, kv.buf, (uint32_t)kv.len);
	ks_rec_kv_free(&kv);
	return err;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Bytes of each ring buffer.  The kernel makes one ring per possible CPU
 * (a CPU that comes online later writes to its own), so at 128 possible
 * CPUs the 1M default would take 128 MiB.  Without -b: 1M, halved until
 * the rings fit in 3/4 of the budget (the rest for the small maps); with
 * -b: as given, or -E2BIG naming the ways out.  A smaller ring loses
 * events sooner in a burst, and every loss is counted.
 */
static int ring_bytes(const struct ks_rec_opts *o, uint64_t *out)
{
	struct ks_budget b;
	uint64_t n, room, size;

	ks_budget_init(&b, o->max_memory);
	n = o->shared ? 1 : (uint64_t)b.ncpus;
	room = b.limit / 4 * 3;
	size = o->buf_size ? o->buf_size : 1u << 20;
	while (!o->buf_size && size > 4096 && n * ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, (uint32_t)size, 0, b.ncpus) > room)
		size /= 2;
	if (n * ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, (uint32_t)size, 0, b.ncpus) > room) {
		p_err("%llu ring buffer%s of %llu KiB take %.1f MiB at %d possible CPUs, over 3/4 of the memory budget "
		      "(%.1f MiB); use a smaller -b%s or raise --max-memory",
		      (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)(size >> 10),
		      (double)(n * ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, (uint32_t)size, 0, b.ncpus)) / 1048576.0,
		      b.ncpus, (double)b.limit / 1048576.0, o->shared ? "" : ", --ring shared");
		return -E2BIG;
	}
	*out = size;
	return 0;
}

/*
 * The cookie of event @i: which event fired (the record's own common_type
 * is overwritten by then), and in its high half which --filter slot
 * applies (+1, 0: none).
 */
static uint64_t cookie_of(const struct ks_rec_opts *o, int i)
{
	uint64_t fslot = o->filters && o->filters[i].n ? (uint64_t)i + 1 : 0;

	return (uint64_t)o->tps->v[i].id | fslot << 32;
}

/* -v: what the verifier made of each loaded program, the start-up's largest part once (bench/record_start.sh). */
static void load_report(const struct ks_record *s, double took_s)
{
	struct bpf_program *p;

	p_info("record: BPF object loaded in %.1f ms", took_s * 1e3);
	bpf_object__for_each_program(p, s->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(p) || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		p_info("record: %s: %u instructions verified, %u bytes translated, %u bytes jited", bpf_program__name(p),
		       info.verified_insns, info.xlated_prog_len, info.jited_prog_len);
	}
}

/*
 * The rings into the outer map, in one batch: the kernel waits a grace
 * period after every update of a map of maps (maybe_wait_bpf_programs),
 * 5-18 ms each on this 2-CPU machine, and one per CPU at start-up would
 * make a 128-CPU node wait a second.  One wait for the batch from 6.8
 * (none before); a key at a time where the kernel has no batch update.
 */
static int install_rings(int fd, const int *ringfds, int n)
{
	uint32_t *keys = calloc((size_t)n, sizeof(*keys)), cnt = (uint32_t)n;
	int err = 0;

	if (!keys)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		keys[i] = (uint32_t)i;
	if (bpf_map_update_batch(fd, keys, ringfds, &cnt, NULL)) {
		err = -errno;
		for (uint32_t i = cnt; i < (uint32_t)n && (err == -EINVAL || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */); i++)
			err = bpf_map_update_elem(fd, &keys[i], &ringfds[i], BPF_ANY) ? -errno : 0;
		if (err)
			p_err("cannot install the ring buffers: %s", strerror(-err));
	}
	free(keys);
	return err;
}

/*
 * ks_record on tracepoint @tp, through a perf event opened as libbpf opens
 * it (all tasks, CPU 0) but left disabled once the program is on it.  The
 * program runs from the tracepoint's program array either way; an enabled
 * event sits in CPU 0's list of the tracepoint's perf events, and every
 * record on that CPU then went on (the program returns 1) through
 * perf_tp_event to it, which only counts it: the time added to a getppid
 * (enter and exit recorded, flat out, 5 alternating rounds) went from 885
 * to 641 ns.  Other perf users of the event still get every record.
 */
static struct bpf_link *attach_tp(struct bpf_program *prog, const struct ks_rec_tp *tp, uint64_t cookie)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr), .config = (uint64_t)tp->id, .disabled = 1
	};
	LIBBPF_OPTS(bpf_perf_event_opts, popts, .bpf_cookie = cookie);
	struct bpf_link *link;
	int pfd, err;

	pfd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return NULL;
	link = bpf_program__attach_perf_event_opts(prog, pfd, &popts); /* owns pfd from here */
	if (!link) {
		err = errno;
		close(pfd);
		errno = err;
		return NULL;
	}
	/* libbpf enabled it */
	if (ioctl(pfd, PERF_EVENT_IOC_DISABLE, 0)) {
		err = errno;
		bpf_link__destroy(link);
		errno = err;
		return NULL;
	}
	return link;
}

/* The recorder on the run loop: the rings read as they fill, drained each second, --flight's window watched. */
struct rec_loop {
	struct rec *r;
	struct ring_buffer *ring;
	int counts_fd;
	struct ks_rec_counts *cnt;
	int fatal; /* the rings could not be read: the recording ends without its closing chunks */
	struct ks_rec_collect *collect; /* --collect: ticked with the drain */
	double drained;			/* when the rings were last drained (--collect -i over 1 s) */
};

/* A write error or a full file (--max-size) ends the recording. */
static int rec_state(struct rec_loop *rl)
{
	return rl->r->err || rl->r->full ? KS_LOOP_DONE : 0;
}

static int rec_ready(void *ctx, struct ks_loop *l, int fd)
{
	struct rec_loop *rl = ctx;
	int n;

	if (rl->collect && fd == ks_rec_collect_fd(rl->collect))
		return ks_rec_collect_ready(rl->collect, l->end); /* --profile's samples */
	n = ring_buffer__poll(rl->ring, 0);
	if (n < 0 && n != -EINTR) {
		p_err("reading the ring buffers: %s", strerror(-n));
		rl->fatal = n;
		return n;
	}
	return rec_state(rl);
}

/*
 * Wake-ups are batched (a quarter ring): at a low rate the events wait in
 * the rings, so they are taken here, and reach the file within a second.
 */
static int rec_tick(void *ctx, struct ks_loop *l)
{
	struct rec_loop *rl = ctx;
	int err = drain_all(rl->r, rl->ring, rl->counts_fd, rl->cnt);

	rl->drained = l->now;
	if (!err && rl->collect)
		err = ks_rec_collect_tick(rl->collect, &rl->r->out.w, l->ticks, false);
	return err ? err : rec_state(rl);
}

/* --flight: a trigger pending, or the window after one over. */
static int rec_wake(void *ctx, struct ks_loop *l)
{
	struct rec_loop *rl = ctx;
	struct rec *r = rl->r;
	bool fire;
	int err;

	if (rec_state(rl))
		return KS_LOOP_DONE;
	if (rl->collect && (err = ks_rec_collect_wake(rl->collect, l->end)))
		return err;
	if (rl->collect && ks_loop_now() - rl->drained >= 1) {
		/* ticks further apart than a second (--collect -i): the events still reach the file each second */
		rl->drained = ks_loop_now();
		err = drain_all(r, rl->ring, rl->counts_fd, rl->cnt);
		if (err)
			return err;
	}
	(void)l;
	if (!r->fl || (ks_flight_state(r->fl) != KS_FL_PENDING && !ks_flight_after_over(r->fl, (uint64_t)(now_s() * 1e9))))
		return 0;
	fire = ks_flight_state(r->fl) == KS_FL_PENDING;
	/* every CPU's events so far first: into the flight queue, or the window's end into the file */
	err = drain_all(r, rl->ring, rl->counts_fd, rl->cnt);
	if (!err && fire)
		err = ks_flight_fire(r->fl, &r->out.w);
	else if (!err)
		ks_flight_window_end(r->fl);
	if (err)
		return err;
	return ks_flight_state(r->fl) == KS_FL_DONE ? KS_LOOP_DONE : 0;
}

static const struct ks_engine rec_engine = { .tick = rec_tick, .ready = rec_ready, .wake = rec_wake };

int ks_rec_run(const struct ks_rec_opts *o, struct ks_rec_stats *st)
{
	/* o with the ring size chosen, for the rest of the run and the manifest */
	struct ks_rec_opts sized;
	struct ks_record *s = NULL;
	struct ring_buffer *ring = NULL;
	struct tep_handle *tep = NULL;
	struct bpf_link **links = NULL;
	struct ks_rec_counts *cnt = NULL;
	struct ks_rec_evcfg *cfgs = NULL;
	int *keys = NULL, nclassic = 0, nsys[2] = { 0, 0 }, nlinks = 0;
	struct rec r = { .out = { .w = { .fd = -1 } } };
	struct head_ctx hc = { &r, o };
	int *ringfds = NULL, nrings, maxid = 0, err = 0;
	bool created = false;
	double attach_began, load_began;
	int collect_ticks = 0;

	memset(st, 0, sizeof(*st));
	sized = *o;
	err = ring_bytes(o, &sized.buf_size);
	if (err)
		return err;
	o = &sized;
	hc.o = o;
	r.ncpus = ks_ncpus();
	st->ncpus = r.ncpus;
	nrings = o->shared ? 1 : r.ncpus;
	r.cpus = calloc((size_t)r.ncpus, sizeof(*r.cpus));
	cnt = calloc((size_t)r.ncpus, sizeof(*cnt));
	ringfds = calloc((size_t)nrings, sizeof(*ringfds));
	links = calloc((size_t)o->tps->n + 2, sizeof(*links));
	cfgs = calloc((size_t)o->tps->n, sizeof(*cfgs));
	keys = calloc((size_t)o->tps->n, sizeof(*keys));
	tep = tep_alloc();
	r.tep = tep;
	r.anon = o->anon;
	r.anon_buf = o->anon ? malloc(sizeof(struct ks_rec_event) + KS_REC_MAX_RAW + 16) : NULL;
	if (o->anon && !r.anon_buf) {
		err = -ENOMEM;
		goto out;
	}
	if (!r.cpus || !cnt || !ringfds || !links || !tep || !cfgs || !keys) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nrings; i++)
		ringfds[i] = -1;
	if (o->flight_bytes && !(r.fl = ks_flight_new(o, r.ncpus))) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < r.ncpus; i++) {
		r.cpus[i].buf = malloc(CHUNK_BYTES);
		if (!r.cpus[i].buf) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (int i = 0; i < o->tps->n; i++) {
		if (o->tps->v[i].id > maxid)
			maxid = o->tps->v[i].id;
		if (evcfg_of(tep, &o->tps->v[i], &cfgs[i])) {
			p_err("cannot parse the format of %s:%s", o->tps->v[i].sys, o->tps->v[i].name);
			err = -EINVAL;
			goto out;
		}
		/* system-call events from the raw tracepoints where this kernel attaches them (KSIGHT_FEATURES_OFF=raw_tp: not) */
		keys[i] = ks_probe(KS_FEAT_RAW_TP)->ok ? sys_key(tep, &o->tps->v[i]) : -1;
		if (keys[i] < 0)
			nclassic++;
		else
			nsys[keys[i] >= KS_REC_SYS_NR]++;
	}

	s = ks_record__open();
	if (!s) {
		err = -errno;
		p_err("cannot open the record BPF object: %s", strerror(-err));
		goto out;
	}
	bpf_program__set_autoload(s->progs.ks_record, nclassic > 0);
	bpf_program__set_autoload(s->progs.ks_record_sys_enter, nsys[0] > 0);
	bpf_program__set_autoload(s->progs.ks_record_sys_exit, nsys[1] > 0);
	s->rodata->ks_filter = o->filter;
	s->rodata->pc_rq_delta = pc_rq_delta();
	s->rodata->ks_flt_on = o->filters != NULL;
	s->rodata->sample_n = o->sample_n;
	s->rodata->shared_ring = o->shared;
	/* wake the reader when a quarter of the ring waits: batches wake-ups, leaves room for bursts */
	s->rodata->wake_bytes = o->buf_size / 4;
	bpf_map__set_max_entries(s->maps.rbs, (uint32_t)nrings);
	bpf_map__set_max_entries(s->maps.evcfg, (uint32_t)maxid + 1);
	/* --collect without -e: no event, but a map has at least one entry */
	bpf_map__set_max_entries(s->maps.evflt, o->tps->n ? (uint32_t)o->tps->n : 1);
	for (int i = 0; i < nrings; i++) {
		ringfds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ks_rec_ring", 0, 0, (uint32_t)o->buf_size, NULL);
		if (ringfds[i] < 0) {
			err = -errno;
			p_err("cannot create ring buffer %d of %llu bytes: %s%s", i, (unsigned long long)o->buf_size,
			      strerror(-err), ks_priv_hint(err));
			goto out;
		}
	}
	/* the rings are made here (one per CPU, or one), the first standing for all as the template */
	err = bpf_map__set_inner_map_fd(s->maps.rbs, ringfds[0]);
	load_began = now_s();
	if (!err)
		err = ks_follow_prepare(s->obj);
	if (!err)
		err = ks_record__load(s);
	if (!err)
		err = ks_follow_attach(s->obj);
	if (err) {
		p_err("cannot load the record BPF program: %s%s", strerror(-err), ks_priv_hint(err));
		goto out;
	}
	load_report(s, now_s() - load_began);
	for (int i = 0; i < o->tps->n; i++) {
		uint32_t id = (uint32_t)o->tps->v[i].id;

		if (bpf_map_update_elem(bpf_map__fd(s->maps.evcfg), &id, &cfgs[i], BPF_ANY)) {
			err = -errno;
			goto out;
		}
		if (keys[i] >= 0) {
			struct ks_rec_sysev ev = { .cookie = cookie_of(o, i) };

			id = (uint32_t)keys[i];
			if (bpf_map_update_elem(bpf_map__fd(s->maps.sysev), &id, &ev, BPF_ANY)) {
				err = -errno;
				goto out;
			}
		}
		id = (uint32_t)i;
		if (o->filters && bpf_map_update_elem(bpf_map__fd(s->maps.evflt), &id, &o->filters[i], BPF_ANY)) {
			err = -errno;
			p_err("cannot install the filter of %s:%s: %s", o->tps->v[i].sys, o->tps->v[i].name, strerror(-err));
			goto out;
		}
	}
	err = install_rings(bpf_map__fd(s->maps.rbs), ringfds, nrings);
	if (err)
		goto out;
	for (int i = 0; i < nrings; i++) {
		if (!ring)
			ring = ring_buffer__new(ringfds[i], on_event, &r, NULL);
		else if (ring_buffer__add(ring, ringfds[i], on_event, &r))
			err = -errno;
		if (!ring || err) {
			err = err ? err : -errno;
			p_err("cannot map ring buffer %d: %s", i, strerror(-err));
			goto out;
		}
	}
	r.out.base = o->output;
	r.out.max_size = o->max_size;
	r.out.rotate_size = o->rotate_size;
	r.out.keep = o->keep;
	/* room for the closing chunks: a loss chunk and a trailer line per CPU, the totals and clocks */
	r.out.reserve = 2048 + (uint64_t)r.ncpus * (sizeof(struct ks_rec_chunk) + 128);
	r.out.write_head = write_head;
	r.out.ctx = &hc;
	err = ks_rec_out_open(&r.out);
	created = r.out.open;
	if (err)
		goto out;
	/* the collectors load and attach first: the recording's window opens when everything is attached */
	if (o->collect && (err = ks_rec_collect_open(o->collect, &o->filter)))
		goto out;
	attach_began = now_s();
	for (int i = 0; i < o->tps->n; i++) {
		if (keys[i] >= 0)
			continue;
		links[nlinks] = attach_tp(s->progs.ks_record, &o->tps->v[i], cookie_of(o, i));
		if (!links[nlinks]) {
			err = -errno;
			p_err("cannot attach to %s:%s: %s", o->tps->v[i].sys, o->tps->v[i].name, strerror(-err));
			goto out;
		}
		nlinks++;
	}
	for (int k = 0; k < 2; k++) {
		struct bpf_program *p = k ? s->progs.ks_record_sys_exit : s->progs.ks_record_sys_enter;

		if (!nsys[k])
			continue;
		links[nlinks] = bpf_program__attach(p);
		if (!links[nlinks]) {
			err = -errno;
			p_err("cannot attach to the raw tracepoint %s: %s", k ? "sys_exit" : "sys_enter", strerror(-err));
			goto out;
		}
		nlinks++;
	}
	/* the window opens once everything is attached, and -d counts from here */
	s->bss->ks_armed = 1;
	r.armed_ns = now_ns();
	{
		char dur[64];

		snprintf(dur, sizeof(dur), "%s", o->cmd ? "until Ctrl-C or the command's exit" : "until Ctrl-C");
		if (o->duration > 0)
			snprintf(dur, sizeof(dur), "for %g s", o->duration);
		for (int i = 0; o->collect && i < o->collect->n; i++)
			fprintf(stderr, "ksight: collecting %s (hook %s) every %g s into %s\n",
				o->collect->in[i].col->spec.name,
				o->collect->in[i].col->hook ? o->collect->in[i].col->hook(o->collect->in[i].ctx) : "?",
				o->collect->interval, o->output);
		fprintf(stderr, "ksight: tracing %d event%s into %s: attached %d probe%s in %.0f ms", o->tps->n,
			o->tps->n == 1 ? "" : "s", o->output, nlinks, nlinks == 1 ? "" : "s",
			(now_s() - attach_began) * 1e3);
		if (nsys[0] + nsys[1])
			fprintf(stderr, " (%d system-call event%s through the raw sys_enter/sys_exit)", nsys[0] + nsys[1],
				nsys[0] + nsys[1] == 1 ? "" : "s");
		fprintf(stderr, "; recording %s\n", dur);
	}
	{
		struct ks_loop_opts lo = {
			/* the rings drained a second after the last drain ended; -p, the command and the flight window at least every 100 ms */
			.duration = o->duration, .interval = 1, .tick_from_end = true, .slice = 0.1,
			.pid = o->target_pid > 0 ? (uint32_t)o->target_pid : 0, .cmd = o->cmd, .stop = o->stop,
		};
		struct rec_loop rl = { .r = &r, .ring = ring, .counts_fd = bpf_map__fd(s->maps.counts), .cnt = cnt,
				       .collect = o->collect };
		struct ks_loop l;

		if (o->collect) {
			/* the collectors' windows: -i apart from start to start, as a collector's own -i */
			lo.interval = o->collect->interval;
			lo.tick_from_end = false;
			ks_rec_collect_start(o->collect);
		}
		ks_loop_init(&l, &lo);
		/* the loop starts the command once the window is open: its first system call is recorded */
		err = ks_loop_add_fd(&l, ring_buffer__epoll_fd(ring));
		if (!err && o->collect && ks_rec_collect_fd(o->collect) >= 0)
			err = ks_loop_add_fd(&l, ks_rec_collect_fd(o->collect));
		if (!err)
			err = ks_loop_run(&l, &rec_engine, &rl);
		/* the command could not start, or the rings could not be read: nothing more to write */
		if (l.why == KS_LOOP_RUNNING || rl.fatal)
			goto out;
		collect_ticks = l.ticks;
	}
	/* the loop stopped a command still running (-d, a stop signal, a full file) inside the recording, the signal forwarded */
	/*
	 * The window closes, then the rings are drained: once every program
	 * that saw the flag set has returned (the grace period), nothing more
	 * is produced and the counts are final.  The links go after the file
	 * is complete: detaching waits a grace period per tracepoint, which
	 * is seconds for hundreds of them.
	 */
	s->bss->ks_armed = 0;
	r.disarmed_ns = now_ns();
	ks_sync_programs();
	if (!err && !r.err)
		err = ring_buffer__consume(ring) < 0 ? -EIO : 0;
	if (!err && !r.err)
		err = flush_all(&r, bpf_map__fd(s->maps.counts), cnt);
	if (!err && !r.err && r.fl)
		err = ks_flight_finish(r.fl, &r.out.w);
	/* the collectors' last (partial) interval, then each one's whole window */
	if (!err && !r.err && o->collect)
		err = ks_rec_collect_tick(o->collect, &r.out.w, collect_ticks + 1, true);
	if (!err)
		err = r.err;
	if (err) {
		p_err("writing '%s': %s", o->output, strerror(-err));
		goto out;
	}
	st->exact = true;
	for (int i = 0; i < r.ncpus; i++) {
		st->produced += cnt[i].produced;
		st->filtered += cnt[i].filtered;
		st->sampled_out += cnt[i].sampled_out;
		st->lost += cnt[i].lost;
		st->cut += cnt[i].cut;
		st->recorded += r.cpus[i].recorded;
		st->dropped += r.cpus[i].dropped;
		if (cnt[i].produced !=
		    cnt[i].filtered + cnt[i].sampled_out + cnt[i].lost + r.cpus[i].recorded + r.cpus[i].dropped)
			st->exact = false;
	}
	st->missed = ks_obj_missed(s->obj);
	st->full = r.full;
	st->files = r.out.index + 1;
	if (r.fl) {
		struct ks_flight_stats fs;

		ks_flight_stats(r.fl, &fs);
		st->triggers = fs.triggers;
		st->flight_written = fs.written;
		/* the flight queue writes past ks_rec_out (it never rotates): the file's counts are its */
		r.out.file_events = fs.written;
		r.out.file_lost = fs.written_lost;
		st->triggers_dropped = fs.dropped;
		st->lat_pairs = fs.lat_pairs;
		st->lat_over = fs.lat_over;
		st->lat = fs.lat;
	}
	err = write_trailer(&r, o, cnt, st);
	st->chunks = r.out.chunks + r.out.w.seq;
	st->bytes = r.out.bytes + r.out.w.bytes;
	if (err)
		p_err("writing '%s': %s", r.out.path, strerror(-err));
out:
	if (created) {
		int cerr = ks_rec_out_close(&r.out);

		if (!err && cerr) {
			err = cerr;
			p_err("closing '%s': %s", r.out.path, strerror(-err));
		}
	}
	for (int i = 0; links && i < nlinks; i++)
		bpf_link__destroy(links[i]);
	if (o->collect)
		ks_rec_collect_close(o->collect);
	ring_buffer__free(ring);
	for (int i = 0; ringfds && i < nrings; i++)
		if (ringfds[i] >= 0)
			close(ringfds[i]);
	ks_record__destroy(s);
	if (err && created && st->recorded == 0 && r.out.index == 0)
		unlink(r.out.path);
	for (int i = 0; r.cpus && i < r.ncpus; i++)
		free(r.cpus[i].buf);
	free(r.cpus);
	free(r.anon_buf);
	ks_flight_free(r.fl);
	free(cnt);
	free(ringfds);
	free(links);
	free(cfgs);
	free(keys);
	if (tep)
		tep_free(tep);
	return err;
}
