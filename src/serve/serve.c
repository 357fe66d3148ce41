/* `ksight serve`: collectors run as cumulative instances; a snapshot per period is served as /metrics, /healthz and / over libmicrohttpd. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "core/accum.h"
#include "core/cgroup.h"
#include "core/collector.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/parse.h"
#include "core/pin.h"
#include "core/sanitize.h"
#include "drive/driver.h"
#include "drive/setup.h"
#include "output/html.h"
#include "output/output.h"
#include "output/stacks.h"
#include "profile/profile.h"
#include "serve/k8s.h"
#include "serve/pinstate.h"
#include "serve/procself.h"
#include "output/prom.h"
#include "serve/negotiate.h"
#include "serve/serve.h"

#define MAX_COLS 16
#define DEFAULT_LISTEN "127.0.0.1:10464"
#define DEFAULT_COLLECTORS "syscalls,runqlat,offcpu,biolat,tcp,mem"
#define DEFAULT_MAX_SERIES 1000
/* Prometheus marks a series stale 5 minutes after its last sample; rows leave some time after that */
#define DEFAULT_SERIES_TTL 600.0
/* at most the seconds unchanged after which a row leaves to make room for a new key at --max-series */
#define SERIES_IDLE 60.0
/* Connections beyond this are refused at accept; idle ones are closed after the timeout. */
#define CONN_LIMIT 1000
#define CONN_TIMEOUT_S 10
/*
 * One address's connections beyond this are refused at accept: a client
 * that trickles headers on many connections holds only this many of the
 * CONN_LIMIT slots (a scraper needs one; test_serve_robust's 50 at once fit).
 * Kept-alive connections count until their client's close is seen, which
 * lags behind a busy worker: 50 clients connecting afresh for every scrape
 * lost 28 to 44 of 500 scrapes to it at 64, none at 128.
 */
#define PER_IP_LIMIT 128
/*
 * A request's whole header must arrive within this from the accept (or the
 * previous answer, on a kept-alive connection): the idle timeout is reset by
 * every byte, so a client sending a line every 2 s would otherwise hold its
 * slot for ever (Go's ReadHeaderTimeout, nginx's client_header_timeout).
 */
#define HEADER_TIMEOUT_S 5
/*
 * A kept-alive connection may wait this long after an answer for its next
 * request line (then HEADER_TIMEOUT_S for the rest of the header): longer
 * than Prometheus's usual scrape intervals (15 s, 1 m), so a scraper keeps
 * its connection and its TLS session.  Only a connection whose last
 * answer was below 400 waits so (an error closes it).
 */
#define KEEPALIVE_IDLE_S 125
#define STR_(x) #x
#define STR(x) STR_(x)
/* /debug/pprof/profile: seconds when not asked (Go's default), the longest allowed, the sampling rate */
#define PROF_DEFAULT_S 30
#define PROF_MAX_S 120
#define PROF_HZ 99
/*
 * zlib's level for /metrics, its default as client_golang's: on a 198 kB
 * text page 6 made 15.1 kB in 5.6 ms, 1 made 17.8 kB in 5.9 ms
 */
#define GZIP_LEVEL 6

/*
 * One period's state, as scrapes see it: views of the cumulative reports
 * (ks_accum_view: the accumulators' rows, sorted, not a copy) and their
 * families.  Since both point into the accumulators, the collection thread
 * (the main one) merges a period's deltas, builds the new snapshot and
 * swaps it in under the write lock, the kernel drain before it off-lock;
 * scrapes render under the read lock.  Draining on a period rather than on each scrape keeps the
 * kernel work independent of how many scrapers there are (50 concurrent
 * scrapes cost 50 renders, not 50 map drains), and every scraper of one
 * period sees the same numbers.
 */
struct snapshot {
	int n;
	struct ks_report reports[MAX_COLS];
	struct prom_set set;
	struct timespec at; /* CLOCK_MONOTONIC of the drain */
};

/*
 * One HTTP connection, from libmicrohttpd's accept to its close (the
 * socket context of MHD_OPTION_NOTIFY_CONNECTION).  While its request
 * header is awaited it is on the reaper's list, oldest first.
 */
struct hconn {
	struct hconn *prev, *next;
	double due;	/* CLOCK_MONOTONIC by when the header (or, idle, the request line) must have come */
	int fd;
	bool waiting;	/* on the list */
	bool nul;	/* the request's path or query decoded a NUL byte */
	bool idle;	/* kept alive after an answer: the next request line is awaited */
};

/* The header deadline's thread and its list (struct hconn). */
struct reaper {
	pthread_mutex_t lock; /* the list; held from a connection's close notice to its fd's close */
	pthread_cond_t cond;  /* a new head, or stop */
	struct hconn *head, *tail;
	pthread_t th;
	bool started, stop;
	atomic_ullong reaped;
};

struct serve_state {
	struct ks_instance in[MAX_COLS];
	struct ks_accum acc[MAX_COLS];
	int n;
	double period;
	pthread_rwlock_t lock;
	struct snapshot *snap;
	struct ks_web_config web;
	pthread_mutex_t web_lock; /* SIGHUP swaps the users; the cache is under it too */
	struct ks_auth_cache auth_cache;
	const char *web_path;
	const char *pods_dir;
	struct ks_pinstate *pin;	/* --pin: where the totals are saved after each drain */
	const char *pin_dir;		/* --pin DIR, NULL without */
	struct ks_pin_drains drains[MAX_COLS]; /* --pin: what the restored totals hold of the drains, until resumed */
	const char *names[MAX_COLS];	/* the collectors' names, as the saved totals know them */
	/* --pin: an adopted collector's losses counted so far, taken off its first delta (only lost_by used) */
	struct ks_report loss_base[MAX_COLS];
	bool rebase[MAX_COLS];
	atomic_ullong scrapes[3], scrape_ns_last, collect_ns_last, collect_errors;
	atomic_ullong http_errors;
	atomic_ullong http_conns, gzip_answers; /* connections accepted; /metrics answers gzip'd */
	atomic_ullong pin_save_errors; /* --pin: saves of the totals that failed */
	/* the one /debug/pprof/profile run at a time: its connection is suspended while it samples */
	atomic_bool prof_busy;
	bool no_pprof;			/* --no-pprof: no /debug/pprof/profile, nothing of the budget kept for it */
	uint64_t max_memory;		/* --max-memory: every collector's maps and the profiler's (0: the default) */
	struct ks_budget_share prof_share; /* the profiler's part of it, kept while the collectors run */
	bool caps_dropped;
	struct prof_job *job;
	struct reaper rp;
};

struct prof_job {
	struct serve_state *st;
	struct MHD_Connection *conn;
	pthread_t th;
	int seconds;
	char *buf; /* the gzip'd profile.proto */
	size_t len;
	int err;
	bool joined;
};

enum {
	OPT_COLLECTORS = 300, OPT_LISTEN, OPT_MAX_SERIES, OPT_WEB_CONFIG, OPT_DROP_CAPS, OPT_BY, OPT_PODS_DIR, OPT_PIN,
	OPT_NO_PPROF, OPT_FUNCLAT, OPT_KEEP_CAPS, OPT_SERIES_TTL
};

static const struct ks_optdef serve_opts[] = {
	{ "collectors", OPT_COLLECTORS, "LIST", "collectors to run (default " DEFAULT_COLLECTORS ")" },
	{ "listen", OPT_LISTEN, "ADDR:PORT", "address to serve on (default " DEFAULT_LISTEN "; port 0 picks one)" },
	{ "web.listen-address", OPT_LISTEN, "ADDR:PORT", "the same as --listen (the exporter-toolkit's name)" },
	{ "max-series", OPT_MAX_SERIES, "N", "rows kept per collector (default 1000); new ones fold into \"other\"" },
	{ "series-ttl", OPT_SERIES_TTL, "DUR", "drop rows unchanged for DUR, as an exited process's (default 10m; 0: keep)" },
	{ "web.config.file", OPT_WEB_CONFIG, "FILE", "TLS and basic auth, in the Prometheus exporter-toolkit format" },
	{ "funclat", OPT_FUNCLAT, "TARGET", "add funclat timing TARGET, as 'ksight funclat' takes it (repeatable; --pin: not USDT)" },
	{ "by", OPT_BY, "COLLECTOR=KEY", "key one collector by KEY, e.g. syscalls=cgroup,syscall (repeatable)" },
	{ "pods-dir", OPT_PODS_DIR, "DIR", "kubelet's pod log tree for the k8s_*_name labels (default /var/log/pods)" },
	{ "drop-caps", OPT_DROP_CAPS, NULL, "drop every capability once attached, /debug/pprof/profile's too (it then answers 503)" },
	{ "keep-caps", OPT_KEEP_CAPS, NULL, "keep every capability (by default those no endpoint uses are dropped once attached)" },
	{ "pin", OPT_PIN, "DIR", "keep programs, links, maps and counters pinned in bpffs under DIR: a restarted serve adopts them" },
	{ "no-pprof", OPT_NO_PPROF, NULL, "no /debug/pprof/profile: the collectors share all of --max-memory" },
	{ 0 },
};

static const struct ks_cmd_spec serve_spec = {
	.name = "serve",
	.summary = "Export the collectors to Prometheus: counters that never reset, served as /metrics\n"
		   "(text 0.0.4, OpenMetrics, or protobuf with native histograms, as the scraper asks),\n"
		   "/healthz, / (a status page) and /debug/pprof/profile?seconds=N (a host CPU profile in\n"
		   "pprof).  -i sets the drain period (default 1 s).  --max-memory is the whole process's:\n"
		   "each collector, and the profiler /debug/pprof/profile loads (unless --no-pprof), gets what\n"
		   "its smallest maps need, the rest in proportion to what it would take alone; the profiler's\n"
		   "part is kept for it while the collectors run (-v shows every share).  --funclat TARGET\n"
		   "(repeatable) adds funclat, its targets resolved once at start: SIGHUP reloads only\n"
		   "--web.config.file; --pin keeps its probes too, but not USDT ones (libbpf cannot pin those).",
	.common = KS_O_DURATION | KS_O_INTERVAL | KS_O_FILTERS | KS_O_MEMORY,
	.opts = serve_opts,
};

struct serve_args {
	const char *collectors, *listen, *web;
	long max_series;
	double series_ttl; /* seconds; 0: rows never expire */
	bool drop_caps, keep_caps, no_pprof;
	const char *pods_dir;
	const char *pin;
	int nby;
	const char *by[MAX_COLS]; /* "collector=key" */
	struct ks_arglist fl;	  /* --funclat */
};

static int serve_opt(void *ctx, int id, const char *arg)
{
	struct serve_args *a = ctx;

	switch (id) {
	case OPT_COLLECTORS: a->collectors = arg; return 0;
	case OPT_LISTEN: a->listen = arg; return 0;
	case OPT_WEB_CONFIG: a->web = arg; return 0;
	case OPT_DROP_CAPS: a->drop_caps = true; return 0;
	case OPT_KEEP_CAPS: a->keep_caps = true; return 0;
	case OPT_NO_PPROF: a->no_pprof = true; return 0;
	case OPT_PODS_DIR: a->pods_dir = arg; return 0;
	case OPT_PIN: a->pin = arg; return 0;
	case OPT_FUNCLAT: return ks_arglist_add(&a->fl, arg);
	case OPT_BY:
		if (!strchr(arg, '=') || a->nby == MAX_COLS) {
			p_err("serve: --by '%s': expected COLLECTOR=KEY, e.g. syscalls=cgroup,syscall", KS_ESC(arg));
			return -EINVAL;
		}
		a->by[a->nby++] = arg;
		return 0;
	case OPT_SERIES_TTL:
		if (ks_parse_seconds(arg, &a->series_ttl)) {
			p_err("serve: --series-ttl '%s': expected a duration such as 10m, 30s or 0", KS_ESC(arg));
			return -EINVAL;
		}
		return 0;
	case OPT_MAX_SERIES: {
		char *end;

		errno = 0;
		a->max_series = strtol(arg, &end, 10);
		if (errno || *end || a->max_series < 1 || a->max_series > 1000000) {
			p_err("serve: --max-series '%s': expected a number from 1 to 1000000", KS_ESC(arg));
			return -EINVAL;
		}
		return 0;
	}
	}
	return -EINVAL;
}

/*
 * The key each collector is served by: never a pid (unbounded on a busy
 * host).  mem and tcp default to pid and flow; comm keeps their columns
 * (tcp's retransmits too, which --by reason has not) and the series cap
 * bounds it.  The others keep their defaults: syscall, cpu-wide, state, disk.
 */
static const char *serve_by(const char *name)
{
	return !strcmp(name, "mem") || !strcmp(name, "tcp") ? "comm" : NULL;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* BPF run time and count of this process's programs (found through its own fds), when kernel.bpf_stats_enabled. */
static void add_prog_stats(struct prom_set *set)
{
	char path[300], line[128], id[16];
	bool enabled = false;
	DIR *d;
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	struct dirent *e;

	if (f) {
		enabled = fgetc(f) == '1';
		fclose(f);
	}
	prom_add(set, "ksight_bpf_stats_enabled", "1 when kernel.bpf_stats_enabled is on (program run times are then exported)",
		 PROM_GAUGE, enabled, NULL, NULL, NULL, NULL);
	if (!enabled || !(d = opendir("/proc/self/fdinfo")))
		return;
	while ((e = readdir(d))) {
		unsigned int pid = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "prog_id: %u", &pid) == 1)
				break;
		fclose(f);
		if (pid) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);
			int fd = atoi(e->d_name);

			memset(&info, 0, sizeof(info));
			if (bpf_obj_get_info_by_fd(fd, &info, &len))
				continue;
			snprintf(id, sizeof(id), "%u", pid);
			prom_add(set, "ksight_bpf_prog_run_seconds", "time the kernel spent in each of ksight's BPF programs",
				 PROM_COUNTER, (double)info.run_time_ns / 1e9, "prog", info.name, "id", id);
			prom_add(set, "ksight_bpf_prog_runs", "runs of each of ksight's BPF programs", PROM_COUNTER,
				 (double)info.run_cnt, "prog", info.name, "id", id);
		}
	}
	closedir(d);
}

/*
 * k8s_pod_name, k8s_namespace_name, k8s_container_name (OpenTelemetry's
 * names: "namespace", "pod" and "container" are the target labels
 * Kubernetes service discovery adds, and Prometheus would rename ours
 * exported_*), pod_uid and container_id ("containerd://<id>" when the path
 * names the runtime, as kube-state-metrics writes it, so the two join) for
 * a row keyed by cgroup.  A long path is cut in the row's key: the full one
 * comes back from the cgroup id, and the cgroup label is never cut (a cut
 * path names another cgroup, or none).
 */
static void k8s_labels(void *ctx, const struct ks_row *row, struct prom_sample *s)
{
	struct serve_state *st = ctx;
	const struct ks_key *cg = NULL;
	int64_t id = -1;
	char path[4096];
	struct ks_k8s k;

	for (int i = 0; i < row->nkeys; i++) {
		if (!strcmp(row->keys[i].name, "cgroup"))
			cg = &row->keys[i];
		else if (!strcmp(row->keys[i].name, "cgroup_id"))
			id = row->keys[i].num;
	}
	if (!cg)
		return;
	snprintf(path, sizeof(path), "%s", cg->str);
	if (id > 0 && strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "...") &&
	    !ks_cgroup_path((__u64)id, path, sizeof(path)))
		prom_label_full(s, "cgroup", path);
	if (ks_k8s_parse(path, &k))
		return;
	ks_k8s_lookup(st->pods_dir, &k);
	if (k.container_id[0]) {
		char cid[sizeof(k.runtime) + 3 + sizeof(k.container_id)];

		snprintf(cid, sizeof(cid), "%s%s%s", k.runtime, k.runtime[0] ? "://" : "", k.container_id);
		prom_label(s, "container_id", cid);
	}
	if (k.pod_uid[0])
		prom_label(s, "pod_uid", k.pod_uid);
	if (k.namespace[0])
		prom_label(s, "k8s_namespace_name", k.namespace);
	if (k.pod[0])
		prom_label(s, "k8s_pod_name", k.pod);
	if (k.container[0])
		prom_label(s, "k8s_container_name", k.container);
}

static void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	prom_set_free(&s->set);
	for (int i = 0; i < s->n; i++)
		ks_accum_view_free(&s->reports[i]);
	free(s);
}

/*
 * One period: mark and drain every instance (off-lock), then under the
 * write lock merge into the accumulators, save them (--pin) and swap in a
 * new snapshot.  The new one goes in even after a failure: the old one's
 * views point into totals that have changed since (the run then ends).
 */
static int collect_once(struct serve_state *st)
{
	struct ks_report delta[MAX_COLS];
	int errs[MAX_COLS], err = 0, berr = 0;
	struct snapshot *s = calloc(1, sizeof(*s)), *old;
	double t0 = mono_now();

	if (!s)
		return -ENOMEM;
	s->set.row_labels = k8s_labels;
	s->set.row_ctx = st;
	for (int i = 0; i < st->n; i++)
		ks_instance_report_init(&st->in[i], &delta[i]);
	/* --pin: only read now, emptied once the totals holding it are saved (core/pin.h) */
	ks_instances_collect(st->in, st->n, delta, errs);
	pthread_rwlock_wrlock(&st->lock);
	for (int i = 0; i < st->n; i++) {
		bool added = false;

		if (errs[i]) {
			atomic_fetch_add(&st->collect_errors, 1);
			p_warn("%s: drain failed: %s", st->in[i].col->spec.name, strerror(-errs[i]));
		} else if (!err) {
			if (st->rebase[i])
				ks_report_lost_less(&delta[i], &st->loss_base[i]);
			st->rebase[i] = false;
			err = ks_accum_add(&st->acc[i], &delta[i]);
			added = !err;
		}
		/*
		 * A half read into no totals stays in the maps: the programs go
		 * back to it, a later drain counts it.  (A failed drain owes
		 * nothing new; one whose owed clear failed still owes that one.)
		 */
		if (!added && !errs[i] && st->in[i].pin)
			st->in[i].pin->clear_due = false;
		ks_report_free(&delta[i]);
	}
	/*
	 * --pin: the totals are saved before anyone sees them, so a scrape
	 * never shows more than a restarted serve resumes from, and before
	 * the maps let go of what was read: a kill -9 at any step leaves a
	 * restart either the data or totals that hold it, and tells it which
	 * (ks_instance_resume).  A failed save is counted and serving goes
	 * on: a restart would then resume from the last good copy, without
	 * the drains emptied since.
	 */
	if (!err && st->pin) {
		struct ks_pin_drains d[MAX_COLS] = { 0 };
		int e = 0;

		ks_fault_point("after-read");
		for (int i = 0; i < st->n && !e; i++) {
			d[i].drains = ks_instance_drains(&st->in[i]);
			d[i].seq_id = st->in[i].pin ? st->in[i].pin->id : 0;
			e = ks_instance_cursor_get(&st->in[i], &d[i].cursor, &d[i].cursor_len);
		}
		if (!e)
			e = ks_pinstate_save(st->pin, st->acc, st->names, st->n, d);
		for (int i = 0; i < st->n; i++)
			free(d[i].cursor);
		if (e && !atomic_fetch_add(&st->pin_save_errors, 1))
			p_warn("serve: cannot save the counters under '%s': %s (counted in ksight_pin_save_errors_total)",
			       ks_pin_dir(), strerror(-e));
		ks_fault_point("after-save");
		e = ks_instances_clear(st->in, st->n);
		if (e) {
			/* owed, and done before the next mark (ks_instances_collect) */
			atomic_fetch_add(&st->collect_errors, 1);
			p_warn("serve: cannot empty the maps after a drain: %s (tried again at the next)", strerror(-e));
		}
	}
	/* the snapshot of the totals as they now are: a view of each accumulator, the families a scrape renders */
	for (int i = 0; i < st->n && !berr; i++) {
		struct ks_report *r = &s->reports[i];

		berr = ks_accum_view(&st->acc[i], r);
		if (berr)
			break;
		s->n = i + 1;
		r->collector = st->in[i].col->spec.name;
		r->schema = st->in[i].col->schema;
		if (!r->hook && st->in[i].col->hook)
			r->hook = st->in[i].col->hook(st->in[i].ctx);
		berr = prom_add_report(&s->set, r);
	}
	if (!berr)
		berr = prom_add_build_info(&s->set);
	if (!berr) {
		add_prog_stats(&s->set);
		atomic_store(&st->collect_ns_last, (unsigned long long)((mono_now() - t0) * 1e9));
		prom_add(&s->set, "ksight_collect_duration_seconds", "time the last drain of every collector took",
			 PROM_GAUGE, (double)atomic_load(&st->collect_ns_last) / 1e9, NULL, NULL, NULL, NULL);
		prom_add(&s->set, "ksight_drain_errors", "drains that failed (the period's events are then lost)",
			 PROM_COUNTER, (double)atomic_load(&st->collect_errors), NULL, NULL, NULL, NULL);
		if (st->pin)
			prom_add(&s->set, "ksight_pin_save_errors",
				 "saves of the totals under --pin that failed (a restart resumes from the last good one)",
				 PROM_COUNTER, (double)atomic_load(&st->pin_save_errors), NULL, NULL, NULL, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &s->at);
	old = st->snap;
	st->snap = s;
	pthread_rwlock_unlock(&st->lock);
	snapshot_free(old);
	return err ? err : berr;
}

/* Scrape-time self-metrics: the process_* families, scrapes, the last scrape's duration. */
static void self_metrics(struct serve_state *st, struct prom_set *set)
{
	static const char *const fmts[] = { "text", "openmetrics", "protobuf" };

	prom_add_process(set);
	for (int i = 0; i < 3; i++)
		prom_add(set, "ksight_scrapes", "scrapes answered, by format", PROM_COUNTER,
			 (double)atomic_load(&st->scrapes[i]), "format", fmts[i], NULL, NULL);
	prom_add(set, "ksight_scrape_duration_seconds", "time the previous /metrics answer took to render", PROM_GAUGE,
		 (double)atomic_load(&st->scrape_ns_last) / 1e9, NULL, NULL, NULL, NULL);
	prom_add(set, "ksight_http_errors", "requests answered with a 4xx status", PROM_COUNTER,
		 (double)atomic_load(&st->http_errors), NULL, NULL, NULL, NULL);
	prom_add(set, "ksight_http_connections", "HTTP connections accepted (a kept-alive one serves many scrapes)",
		 PROM_COUNTER, (double)atomic_load(&st->http_conns), NULL, NULL, NULL, NULL);
	prom_add(set, "ksight_http_gzip_responses", "/metrics answers sent gzip'd (Accept-Encoding: gzip)", PROM_COUNTER,
		 (double)atomic_load(&st->gzip_answers), NULL, NULL, NULL, NULL);
	if (st->web_path) {
		unsigned long long hits, misses;

		pthread_mutex_lock(&st->web_lock);
		hits = st->auth_cache.hits;
		misses = st->auth_cache.misses;
		pthread_mutex_unlock(&st->web_lock);
		prom_add(set, "ksight_http_auth_checks", "basic-auth checks, by how: cached (a password verified before) or bcrypt",
			 PROM_COUNTER, (double)hits, "by", "cached", NULL, NULL);
		prom_add(set, "ksight_http_auth_checks", "basic-auth checks, by how: cached (a password verified before) or bcrypt",
			 PROM_COUNTER, (double)misses, "by", "bcrypt", NULL, NULL);
	}
	prom_add(set, "ksight_http_header_timeouts",
		 "connections closed because a request header took longer than " STR(HEADER_TIMEOUT_S) " s",
		 PROM_COUNTER, (double)atomic_load(&st->rp.reaped), NULL, NULL, NULL, NULL);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *ctype, void *buf,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, buf, mode);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	/*
	 * An error ends its connection: libmicrohttpd 0.9.75 may miss the end
	 * of a kept-alive connection whose client shut its side with the
	 * request (left in CLOSE-WAIT until the header deadline), and a client
	 * sending bad requests has no use for a connection kept.
	 */
	if (status >= 400)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result reply_str(struct serve_state *st, struct MHD_Connection *conn, unsigned int status,
				 const char *msg)
{
	if (status >= 400 && status < 500)
		atomic_fetch_add(&st->http_errors, 1);
	return reply(conn, status, "text/plain; charset=utf-8", (void *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result serve_metrics(struct serve_state *st, struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	const char *format = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
	enum prom_format fmt = prom_negotiate(accept);
	enum prom_encoding enc = prom_negotiate_encoding(
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct prom_set self = { 0 };
	const struct prom_set *sets[2];
	double t0 = mono_now();
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	/* ?format=text: classic histograms for a scraper that would otherwise negotiate native ones */
	if (format && !strcmp(format, "text"))
		fmt = PROM_FMT_TEXT;
	else if (format && !strcmp(format, "openmetrics"))
		fmt = PROM_FMT_OPENMETRICS;
	else if (format && !strcmp(format, "protobuf"))
		fmt = PROM_FMT_PROTO;
	else if (format)
		return reply_str(st, conn, MHD_HTTP_BAD_REQUEST, "format: text, openmetrics or protobuf\n");
	if (enc == PROM_ENC_NONE)
		return reply_str(st, conn, MHD_HTTP_NOT_ACCEPTABLE, "Accept-Encoding: gzip and identity are both refused\n");
	self_metrics(st, &self);
	out = open_memstream(&buf, &len);
	if (!out) {
		prom_set_free(&self);
		return MHD_NO;
	}
	pthread_rwlock_rdlock(&st->lock);
	sets[0] = &st->snap->set;
	sets[1] = &self;
	err = prom_write(fmt, sets, 2, out);
	pthread_rwlock_unlock(&st->lock);
	prom_set_free(&self);
	if (fclose(out) || err) {
		free(buf);
		return reply_str(st, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n");
	}
	if (enc == PROM_ENC_GZIP) {
		char *z;
		size_t zlen;

		atomic_fetch_add(&st->gzip_answers, 1);

		if (prom_gzip(buf, len, GZIP_LEVEL, &z, &zlen)) {
			free(buf);
			return reply_str(st, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot compress the metrics\n");
		}
		free(buf);
		buf = z;
		len = zlen;
	}
	atomic_fetch_add(&st->scrapes[fmt], 1);
	atomic_store(&st->scrape_ns_last, (unsigned long long)((mono_now() - t0) * 1e9));
	resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, prom_content_type(fmt));
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	/* a cache between may keep one answer per Accept and Accept-Encoding */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	if (enc == PROM_ENC_GZIP)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result serve_health(struct serve_state *st, struct MHD_Connection *conn)
{
	struct timespec now;
	double age;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_rwlock_rdlock(&st->lock);
	age = (double)(now.tv_sec - st->snap->at.tv_sec) + (double)(now.tv_nsec - st->snap->at.tv_nsec) / 1e9;
	pthread_rwlock_unlock(&st->lock);
	/* a drain loop that stopped for three periods (and a few seconds) is unhealthy */
	if (age > 3 * st->period + 5)
		return reply_str(st, conn, MHD_HTTP_SERVICE_UNAVAILABLE, "stale: no drain for too long\n");
	return reply_str(st, conn, MHD_HTTP_OK, "ok\n");
}

static enum MHD_Result serve_index(struct serve_state *st, struct MHD_Connection *conn)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int err;

	if (!out)
		return MHD_NO;
	pthread_rwlock_rdlock(&st->lock);
	err = ks_write_index_html(st->snap->reports, st->snap->n, st->period, out);
	pthread_rwlock_unlock(&st->lock);
	if (fclose(out) || err) {
		free(buf);
		return MHD_NO;
	}
	return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", buf, len, MHD_RESPMEM_MUST_FREE);
}

/* The profiler's options: the whole host, kernel and user stacks, within its share of --max-memory. */
static int prof_opts(struct serve_state *st, struct ks_common *c, struct ks_profile_opts *o)
{
	ks_common_init(c);
	c->max_memory = st->max_memory;
	c->share = &st->prof_share;
	*o = (struct ks_profile_opts){ .hz = PROF_HZ, .kernel = true, .user = true, .pprof = true, .c = c };
	return ks_filter_build(c, &o->filter);
}

/* The profile thread: samples the whole host for the job's seconds, renders pprof, resumes the connection. */
static void *prof_thread(void *arg)
{
	struct prof_job *job = arg;
	struct ks_profile_opts o;
	struct ks_profile_result res;
	struct ks_common c;
	FILE *m;

	job->err = prof_opts(job->st, &c, &o);
	c.duration = job->seconds;
	if (!job->err)
		job->err = ks_drive_profile(&o, &res);
	if (!job->err) {
		ks_stacks_sort(&res.st);
		m = open_memstream(&job->buf, &job->len);
		job->err = m ? ks_write_pprof(&res.st, m) : -errno;
		if (m && fclose(m) && !job->err)
			job->err = -ENOMEM;
		ks_profile_result_free(&res);
	}
	MHD_resume_connection(job->conn);
	return NULL;
}

/*
 * /debug/pprof/profile?seconds=N, as Go's net/http/pprof: a CPU profile of
 * the host (every process, kernel and user stacks, PROF_HZ samples a second
 * on each CPU) in gzip'd profile.proto, for go tool pprof, Parca, Pyroscope.
 * The sampling runs in its own thread with the connection suspended, so the
 * HTTP workers go on answering scrapes; one profile at a time (429 while
 * one runs: sampling twice would only cost twice).
 */
static enum MHD_Result serve_profile(struct serve_state *st, struct MHD_Connection *conn, void **req)
{
	const char *arg = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "seconds");
	struct prof_job *job = st->job;
	enum MHD_Result ret;
	long secs = PROF_DEFAULT_S;
	char *end, *buf;

	if (job && *req == job) {
		/* resumed: the thread is done; the job goes in on_completed, which also sees an aborted request */
		pthread_join(job->th, NULL);
		job->joined = true;
		if (job->err) {
			char msg[160];

			snprintf(msg, sizeof(msg), "cannot profile: %s\n", strerror(-job->err));
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", msg, strlen(msg),
				     MHD_RESPMEM_MUST_COPY);
		}
		buf = job->buf;
		job->buf = NULL; /* the response's now */
		return reply(conn, MHD_HTTP_OK, "application/octet-stream", buf, job->len, MHD_RESPMEM_MUST_FREE);
	}
	if (arg) {
		errno = 0;
		secs = strtol(arg, &end, 10);
		if (errno || *end || end == arg || secs < 1 || secs > PROF_MAX_S)
			return reply_str(st, conn, MHD_HTTP_BAD_REQUEST, "seconds: a whole number from 1 to 120\n");
	}
	if (st->no_pprof)
		return reply_str(st, conn, MHD_HTTP_NOT_FOUND, "profiling is off (--no-pprof)\n");
	if (st->caps_dropped)
		return reply_str(st, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "profiling loads a BPF program, which needs the capabilities --drop-caps dropped\n");
	if (atomic_exchange(&st->prof_busy, true)) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			strlen("a profile is being taken; retry when it is done\n"),
			"a profile is being taken; retry when it is done\n", MHD_RESPMEM_PERSISTENT);

		if (!resp)
			return MHD_NO;
		atomic_fetch_add(&st->http_errors, 1);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "5");
		ret = MHD_queue_response(conn, MHD_HTTP_TOO_MANY_REQUESTS, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	job = calloc(1, sizeof(*job));
	if (!job) {
		atomic_store(&st->prof_busy, false);
		return MHD_NO;
	}
	job->st = st;
	job->conn = conn;
	job->seconds = (int)secs;
	st->job = job;
	*req = job;
	/* suspended before the thread can resume it */
	MHD_suspend_connection(conn);
	if (pthread_create(&job->th, NULL, prof_thread, job)) {
		MHD_resume_connection(conn);
		st->job = NULL;
		*req = NULL;
		free(job);
		atomic_store(&st->prof_busy, false);
		return MHD_NO;
	}
	return MHD_YES;
}

/* The connection's struct hconn (NULL after a failed allocation, when it is being shut). */
static struct hconn *hconn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/*
 * Under rp->lock: @c's header (or, @idle, its next request line) is awaited
 * from now; the list stays soonest due first (an idle connection's later
 * deadline goes in behind the header deadlines after it).
 */
static void wait_header(struct reaper *rp, struct hconn *c, bool idle)
{
	struct hconn *after = rp->tail;

	c->due = mono_now() + (idle ? KEEPALIVE_IDLE_S : HEADER_TIMEOUT_S);
	c->idle = idle;
	c->waiting = true;
	while (after && after->due > c->due)
		after = after->prev;
	c->prev = after;
	c->next = after ? after->next : rp->head;
	if (c->next)
		c->next->prev = c;
	else
		rp->tail = c;
	if (after)
		after->next = c;
	else
		rp->head = c;
	if (rp->head == c)
		pthread_cond_signal(&rp->cond);
}

/* Under rp->lock: off the list (its header came, or it closes). */
static void unwait_header(struct reaper *rp, struct hconn *c)
{
	if (!c->waiting)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		rp->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		rp->tail = c->prev;
	c->prev = c->next = NULL;
	c->waiting = false;
}

/*
 * Closes every connection whose header is overdue.  shutdown(2), not
 * close: libmicrohttpd owns the fd, reads the end of the stream and closes
 * the connection itself; the fd is still the connection's here, because
 * its close notice (on_connection) takes the lock before libmicrohttpd
 * closes it.
 */
static void *reap_thread(void *arg)
{
	struct reaper *rp = arg;

	pthread_mutex_lock(&rp->lock);
	while (!rp->stop) {
		struct hconn *c = rp->head;
		double due;
		struct timespec ts;

		if (!c) {
			pthread_cond_wait(&rp->cond, &rp->lock);
			continue;
		}
		due = c->due;
		if (mono_now() >= due) {
			shutdown(c->fd, SHUT_RDWR);
			/* a kept-alive connection idle to its end is no header that came late */
			if (!c->idle)
				atomic_fetch_add(&rp->reaped, 1);
			unwait_header(rp, c);
			continue;
		}
		ts.tv_sec = (time_t)due;
		ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&rp->cond, &rp->lock, &ts);
	}
	pthread_mutex_unlock(&rp->lock);
	return NULL;
}

static int reaper_start(struct reaper *rp)
{
	pthread_condattr_t ca;
	int err;

	pthread_mutex_init(&rp->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the deadlines are mono_now()'s */
	pthread_cond_init(&rp->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&rp->th, NULL, reap_thread, rp);
	if (err)
		return -err;
	rp->started = true;
	return 0;
}

/* After the daemon stopped (every connection's close notice came: the list is empty). */
static void reaper_stop(struct reaper *rp)
{
	if (!rp->started)
		return;
	pthread_mutex_lock(&rp->lock);
	rp->stop = true;
	pthread_cond_signal(&rp->cond);
	pthread_mutex_unlock(&rp->lock);
	pthread_join(rp->th, NULL);
	pthread_cond_destroy(&rp->cond);
	pthread_mutex_destroy(&rp->lock);
	rp->started = false;
}

/* A connection's accept and close: on and off the header deadline's list. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
	struct serve_state *st = cls;
	struct hconn *c = *ctx;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		atomic_fetch_add(&st->http_conns, 1);
		c = calloc(1, sizeof(*c));
		if (!c) {
			/* a connection no deadline would guard is not kept */
			if (ci)
				shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		c->fd = ci ? ci->connect_fd : -1;
		pthread_mutex_lock(&st->rp.lock);
		wait_header(&st->rp, c, false);
		pthread_mutex_unlock(&st->rp.lock);
		*ctx = c;
		return;
	}
	if (!c)
		return;
	pthread_mutex_lock(&st->rp.lock);
	unwait_header(&st->rp, c);
	pthread_mutex_unlock(&st->rp.lock);
	free(c);
	*ctx = NULL;
}

/*
 * Decodes %XX in a path or a query key or value as libmicrohttpd would,
 * noting a NUL among them: C strings would cut "/metrics%00.html" to
 * "/metrics", which on_request then refuses with 400.
 */
static size_t on_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	size_t n = MHD_http_unescape(s);
	struct hconn *c;

	(void)cls;
	if (strlen(s) != n && (c = hconn_of(conn)))
		c->nul = true;
	return n;
}

/*
 * A request line came: on a kept-alive connection the rest of its header
 * is due within HEADER_TIMEOUT_S from now, as on a new one from its accept.
 * Returns the request's context: none yet (on_request's first call sees
 * NULL).
 */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct serve_state *st = cls;
	struct hconn *c = hconn_of(conn);

	(void)uri;
	if (!c || !c->idle)
		return NULL;
	pthread_mutex_lock(&st->rp.lock);
	if (c->waiting) {
		unwait_header(&st->rp, c);
		wait_header(&st->rp, c, false);
	}
	pthread_mutex_unlock(&st->rp.lock);
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned int)CONN_TIMEOUT_S);
	return NULL;
}

/* Every request's end, answered or aborted: a profile's job is freed here, and the next profile may start. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req, enum MHD_RequestTerminationCode why)
{
	struct serve_state *st = cls;
	struct prof_job *job = st->job;
	struct hconn *c = hconn_of(conn);

	(void)why;
	if (c) {
		/* a kept-alive connection's next request line is awaited from now */
		pthread_mutex_lock(&st->rp.lock);
		c->nul = false;
		if (!c->waiting)
			wait_header(&st->rp, c, true);
		pthread_mutex_unlock(&st->rp.lock);
		/* libmicrohttpd's idle timeout, reset by every byte, must not end it first */
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned int)KEEPALIVE_IDLE_S);
	}
	if (!job || *req != job)
		return;
	if (!job->joined)
		pthread_join(job->th, NULL);
	free(job->buf);
	free(job);
	st->job = NULL;
	*req = NULL;
	atomic_store(&st->prof_busy, false);
}

static bool authorized(struct serve_state *st, struct MHD_Connection *conn)
{
	char *pass = NULL, *user;
	bool ok;

	pthread_mutex_lock(&st->web_lock);
	if (!st->web.nusers) {
		pthread_mutex_unlock(&st->web_lock);
		return true;
	}
	pthread_mutex_unlock(&st->web_lock);
	user = MHD_basic_auth_get_username_password(conn, &pass);
	pthread_mutex_lock(&st->web_lock);
	ok = user && pass && ks_web_auth_ok(&st->web, &st->auth_cache, user, pass);
	pthread_mutex_unlock(&st->web_lock);
	MHD_free(user);
	MHD_free(pass);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **req)
{
	struct serve_state *st = cls;
	static int seen;

	(void)upload;
	/*
	 * The first call sees the headers only: a request announcing a body is
	 * refused there, before any of it is read (nothing here takes a body).
	 */
	if (!*req) {
		struct hconn *c = hconn_of(conn);
		bool nul = false;

		*req = &seen;
		if (c) {
			pthread_mutex_lock(&st->rp.lock);
			unwait_header(&st->rp, c);
			nul = c->nul;
			pthread_mutex_unlock(&st->rp.lock);
		}
		if (nul)
			return reply_str(st, conn, MHD_HTTP_BAD_REQUEST, "a NUL byte (%00) in the path or query\n");
		if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
		    strtoull(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) ?: "0",
			     NULL, 10))
			return reply_str(st, conn, MHD_HTTP_CONTENT_TOO_LARGE, "request bodies are not accepted\n");
		/*
		 * Answered at the next call: libmicrohttpd 0.9.75 takes an answer
		 * queued with the headers alone as one to a request whose body it
		 * will not read, and closes the connection after it
		 * (Connection: close), so no scrape would reuse its connection or
		 * its TLS session.
		 */
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	/* RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400 */
	if (!strcmp(version, MHD_HTTP_VERSION_1_1) && !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
		return reply_str(st, conn, MHD_HTTP_BAD_REQUEST, "HTTP/1.1 needs a Host header\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_str(st, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	/*
	 * /healthz answers without credentials: a kubelet's httpGet probe sends
	 * none, and the answer tells nothing but "ok" or "stale".
	 */
	if (!strcmp(url, "/healthz"))
		return serve_health(st, conn);
	if (!authorized(st, conn)) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(13, "unauthorized\n", MHD_RESPMEM_PERSISTENT);
		enum MHD_Result ret;

		if (!resp)
			return MHD_NO;
		atomic_fetch_add(&st->http_errors, 1);
		ret = MHD_queue_basic_auth_fail_response(conn, "ksight", resp);
		MHD_destroy_response(resp);
		return ret;
	}
	if (!strcmp(url, "/metrics"))
		return serve_metrics(st, conn);
	if (!strcmp(url, "/debug/pprof/profile"))
		return serve_profile(st, conn, req);
	if (!strcmp(url, "/"))
		return serve_index(st, conn);
	return reply_str(st, conn, MHD_HTTP_NOT_FOUND, "not found: see /\n");
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	/* libmicrohttpd's own messages only with -v: a bad client is not the operator's error */
	if (ks_verbose) {
		fputs("ksight: http: ", stderr);
		vfprintf(stderr, fmt, ap);
	}
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (loopback) into @ss; 0 or -EINVAL after a one-line error. */
static int parse_listen(const char *arg, struct sockaddr_storage *ss, socklen_t *sslen)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM }, *res;
	int rc;

	snprintf(host, sizeof(host), "%s", arg);
	port = strrchr(host, ':');
	if (!port || !port[1]) {
		p_err("serve: --listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:10464", KS_ESC(arg));
		return -EINVAL;
	}
	*port++ = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = 0;
		memmove(host, host + 1, strlen(host));
	}
	rc = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, &res);
	if (rc) {
		p_err("serve: --listen '%s': %s (numeric address and port expected)", KS_ESC(arg), gai_strerror(rc));
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* The listening socket, bound before any capability is dropped (a port below 1024 needs one). */
static int listen_on(const struct sockaddr_storage *ss, socklen_t len, int *port)
{
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)&got, &glen)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
						: ((struct sockaddr_in *)&got)->sin_port);
	return fd;
}

#define CAPBIT(c) (1ULL << (c))

/*
 * The capabilities the attached exporter still uses.  Draining needs none:
 * the maps are read through fds already open, membarrier waits for the
 * programs, /proc/PID/comm and stat, the cgroup tree (name_to_handle_at)
 * and /var/log/pods are readable by the uid.  A /debug/pprof/profile loads
 * a program and opens perf events (CAP_BPF, CAP_PERFMON), reads kernel
 * addresses in /proc/kallsyms (zeros without CAP_SYSLOG while
 * perf_event_paranoid > 1), and the files other processes map, a
 * container's through /proc/PID/root (CAP_SYS_PTRACE: without it that link
 * is refused even to the same uid; CAP_DAC_READ_SEARCH for files the uid
 * cannot read).  --pin's saved totals may outgrow their map into a new one
 * (CAP_BPF).
 */
static uint64_t caps_needed(const struct serve_state *st, bool pin)
{
	uint64_t keep = 0;

	if (!st->no_pprof)
		keep |= CAPBIT(CAP_BPF) | CAPBIT(CAP_PERFMON) | CAPBIT(CAP_SYSLOG) | CAPBIT(CAP_SYS_PTRACE) |
			CAPBIT(CAP_DAC_READ_SEARCH);
	if (pin)
		keep |= CAPBIT(CAP_BPF);
	return keep;
}

/*
 * Every capability of this thread but @keep goes (effective, permitted,
 * inheritable, ambient, and the bounding set while CAP_SETPCAP allows);
 * what is kept stays only if permitted now.  Runs before any other thread
 * exists (capabilities are per thread; the HTTP threads, and a profile's,
 * inherit the sets).
 */
static int drop_caps(uint64_t keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	keep &= (uint64_t)data[0].permitted | (uint64_t)data[1].permitted << 32;
	for (int c = 0; c <= 63; c++)
		if (!(keep & CAPBIT(c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL)
			break;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	for (int i = 0; i < 2; i++)
		data[i].effective = data[i].permitted = (uint32_t)(keep >> (32 * i));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	/* and nothing can come back through an exec */
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	return 0;
}

static struct MHD_Daemon *start_http(struct serve_state *st, int lfd)
{
	/* suspend and resume: a profile's connection waits out of the workers' way */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	unsigned int limit = CONN_LIMIT;
	struct rlimit rl;
	/* the soft fd limit may rise to the hard one without privilege; keep fds for the BPF objects */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < limit + 256)
		limit = rl.rlim_cur > 512 ? (unsigned int)rl.rlim_cur - 256 : 64;
	if (st->web.cert_pem)
		flags |= MHD_USE_TLS;
	if (reaper_start(&st->rp))
		return NULL;
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, st, MHD_OPTION_LISTEN_SOCKET, lfd,
			     MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONN_TIMEOUT_S,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)PER_IP_LIMIT,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, st, MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, NULL,
			     MHD_OPTION_URI_LOG_CALLBACK, on_request_line, st,
			     /* two workers: a slow render never holds up a health check */
			     MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
			     MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, st,
			     st->web.cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, st->web.cert_pem,
			     MHD_OPTION_HTTPS_MEM_KEY, st->web.key_pem,
			     /* min_version and max_version (TLS 1.2 and up by default, as the toolkit) */
			     MHD_OPTION_HTTPS_PRIORITIES, st->web.priorities, MHD_OPTION_END);
}

/*
 * --max-memory shared out: the collectors' and, unless --no-pprof, the
 * profiler's least and most measured, then split (ks_instances_share).
 * -E2BIG after one line when the minimums alone do not fit; other errors
 * after naming what could not be sized.
 */
static int share_budget(struct serve_state *st, const struct ks_filter *f)
{
	struct ks_budget_share *extra = NULL;
	int err;

	if (!st->no_pprof) {
		struct ks_profile_opts o;
		struct ks_common c;

		st->prof_share = (struct ks_budget_share){ .measure = true, .name = "pprof profiler" };
		err = prof_opts(st, &c, &o);
		if (!err)
			err = ks_profile_measure(&o);
		if (err) {
			p_err("serve: cannot size the /debug/pprof/profile profiler: %s; --no-pprof goes without it",
			      strerror(-err));
			return err;
		}
		extra = &st->prof_share;
	}
	err = ks_instances_share(st->in, st->n, f, st->max_memory, extra);
	if (!err && ks_verbose && extra)
		fprintf(stderr, "ksight: pprof profiler: budget %.1f MiB (its share of --max-memory), kept for "
				"/debug/pprof/profile\n", (double)extra->bytes / 1048576.0);
	return err;
}

/*
 * After each collector opens: an adopted one's loss counters go on from
 * its programs' load, so what of that the saved totals hold is taken off its
 * first delta; with --pin, its drain sequence is pinned and resumed before
 * the first mark (which could send the programs back into a half the totals
 * hold).
 */
static int serve_opened(void *ctx, int i, bool adopted)
{
	struct serve_state *st = ctx;
	struct ks_pin_drains *d = &st->drains[i];
	int err;

	if (adopted) {
		struct ks_report *b = &st->loss_base[i];

		b->nlost = st->acc[i].total.nlost;
		memcpy(b->lost_by, st->acc[i].total.lost_by, sizeof(b->lost_by[0]) * (size_t)b->nlost);
		st->rebase[i] = true;
	}
	if (!st->pin_dir)
		return 0;
	err = ks_instance_pin(&st->in[i]);
	if (!err)
		err = ks_instance_resume(&st->in[i], d->drains, d->seq_id, d->cursor, d->cursor_len);
	if (err < 0) {
		p_err("serve: %s: cannot resume the drains pinned under '%s': %s; 'ksight unpin %s' starts afresh",
		      st->in[i].col->spec.name, st->pin_dir, strerror(-err), st->pin_dir);
		return err;
	}
	return 0;
}

/* SIGHUP with --web-config: users and passwords reloaded; the key pair stays the one the listener started with. */
static void reload_web(struct serve_state *st)
{
	struct ks_web_config nw;

	if (ks_web_config_load(&nw, st->web_path))
		return;
	pthread_mutex_lock(&st->web_lock);
	st->web.nusers = nw.nusers;
	memcpy(st->web.users, nw.users, sizeof(nw.users));
	memcpy(st->web.dummy, nw.dummy, sizeof(nw.dummy));
	pthread_mutex_unlock(&st->web_lock);
	if (strcmp(nw.priorities, st->web.priorities))
		p_warn("serve: '%s': min_version and max_version apply from the next start (the listener keeps its TLS "
		       "settings)", KS_ESC(st->web_path));
	ks_web_config_free(&nw);
	fprintf(stderr, "ksight: reloaded '%s'\n", st->web_path);
}

/* The exporter on the run loop: a drain each period (and at -d's end), the signals read from a signalfd. */
static int serve_tick(void *ctx, struct ks_loop *l)
{
	int err = collect_once(ctx);

	(void)l;
	if (err)
		p_err("serve: cannot collect: %s", strerror(-err));
	return err;
}

static int serve_signal(void *ctx, struct ks_loop *l, int fd)
{
	struct serve_state *st = ctx;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
		ks_loop_stop(l, (int)si.ssi_signo);
	else if (si.ssi_signo == SIGHUP && st->web_path)
		reload_web(st);
	return 0;
}

/* A last drain at -d's end (a signal stops without one); 1 after a failed drain. */
static int serve_close(void *ctx, struct ks_loop *l)
{
	int ret = l->why == KS_LOOP_ERROR;

	if (l->why == KS_LOOP_DURATION && serve_tick(ctx, l))
		ret = 1;
	fprintf(stderr, "ksight: stopping\n");
	return ret;
}

static const struct ks_engine serve_engine = { .tick = serve_tick, .ready = serve_signal, .close = serve_close };

int ks_serve_main(int argc, char **argv)
{
	struct serve_args a = { .collectors = DEFAULT_COLLECTORS, .listen = DEFAULT_LISTEN, .max_series = DEFAULT_MAX_SERIES,
				.series_ttl = DEFAULT_SERIES_TTL };
	struct serve_state *st = calloc(1, sizeof(*st));
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct ks_common c;
	struct ks_filter f;
	struct MHD_Daemon *d = NULL;
	sigset_t sigs;
	char addr[INET6_ADDRSTRLEN] = "?";
	int ret = 2, err, port = 0, lfd = -1, pin_lock = -1, sfd = -1;

	if (!st) {
		p_err("out of memory");
		return 1;
	}
	pthread_rwlock_init(&st->lock, NULL);
	pthread_mutex_init(&st->web_lock, NULL);
	ks_common_init(&c);
	err = ks_opts_parse_noargs(&serve_spec, argc, argv, &c, serve_opt, &a);
	if (err == KS_OPTS_HELP) {
		ret = 0;
		goto out;
	}
	if (err || ks_filter_build(&c, &f) || parse_listen(a.listen, &ss, &sslen) || ks_drive_add(st->in, &st->n, MAX_COLS, a.collectors, "serve") ||
	    (a.fl.n && ks_drive_add_funclat(st->in, &st->n, MAX_COLS, "serve")))
		goto out;
	if (a.web && ks_web_config_load(&st->web, a.web))
		goto out;
	if (a.drop_caps && a.keep_caps) {
		p_err("serve: --drop-caps and --keep-caps cannot go together");
		goto out;
	}
	if (a.pin && a.drop_caps) {
		/* the saved counters outgrow their pinned map into a new one, which takes CAP_BPF to make */
		p_err("serve: --drop-caps and --pin cannot go together: a pinned serve keeps CAP_BPF to grow its pinned "
		      "state map");
		goto out;
	}
	if (a.pin && (err = ks_pin_check_dir(a.pin))) {
		/* a missing permission is not bad usage */
		ret = err == -EINVAL ? 2 : 1;
		goto out;
	}
	if (a.pin) {
		pin_lock = ks_pin_lock(a.pin);
		if (pin_lock < 0) {
			ret = 1;
			goto out;
		}
	}
	st->web_path = a.web;
	st->pods_dir = a.pods_dir ? a.pods_dir : "/var/log/pods";
	st->period = c.interval > 0 ? c.interval : 1.0;
	ret = 1;
	for (int i = 0; i < st->n; i++) {
		const char *by = serve_by(st->in[i].col->spec.name);

		st->in[i].c = c;
		st->in[i].c.interval = 0;
		st->in[i].c.by = by;
		for (int j = 0; j < a.nby; j++) {
			size_t n = strlen(st->in[i].col->spec.name);

			if (!strncmp(a.by[j], st->in[i].col->spec.name, n) && a.by[j][n] == '=')
				st->in[i].c.by = a.by[j] + n + 1;
		}
		/* in marks (one per period): an exited process's rows, of any key, leave after the TTL */
		ks_accum_init(&st->acc[i], st->in[i].col->spec.name, (int)a.max_series,
			      a.series_ttl > 0 ? (uint64_t)ceil(a.series_ttl / st->period) : 0);
		/* at the cap, rows unchanged for a tenth of the TTL, a minute at most (Prometheus' default
		 * scrape interval: it has their last value), make room: by thread, a busy host's exited
		 * threads filled 1000 rows in 12 s and every later thread folded into "other" for the
		 * TTL's 10 minutes */
		if (a.series_ttl > 0)
			st->acc[i].idle_marks = (uint64_t)ceil(fmin(a.series_ttl / 10, SERIES_IDLE) / st->period);
		st->names[i] = st->in[i].col->spec.name;
	}
	for (int j = 0; j < a.nby; j++) {
		const char *key = strchr(a.by[j], '=') + 1;
		const struct ks_collector *col = NULL;
		char want[128];

		for (int i = 0; i < st->n; i++)
			if (!strncmp(a.by[j], st->in[i].col->spec.name, (size_t)(key - 1 - a.by[j])) &&
			    strlen(st->in[i].col->spec.name) == (size_t)(key - 1 - a.by[j]))
				col = st->in[i].col;
		snprintf(want, sizeof(want), "|%s|", key);
		if (!col) {
			p_err("serve: --by '%s': no such collector among --collectors", KS_ESC(a.by[j]));
			ret = 2;
			goto out;
		}
		{
			char words[256], keys[260];
			const char *w = ks_spec_by_keys(&col->spec, words, sizeof(words));

			snprintf(keys, sizeof(keys), "|%s|", w ? w : "");
			if (!strstr(keys, want)) {
				p_err("serve: --by '%s': %s keys are %s", KS_ESC(a.by[j]), col->spec.name,
				      w ? w : "none");
				ret = 2;
				goto out;
			}
		}
	}
	/* funclat's targets resolved before anything loads: a bad one is bad usage, nothing attached */
	err = ks_instances_targets(st->in, st->n, &a.fl, "serve");
	if (err) {
		ret = err == -EINVAL ? 2 : 1;
		goto out;
	}
	/* signals are read from a signalfd in the run loop only: block them before any thread starts */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (a.pin) {
		ret = 1;
		st->pin = ks_pinstate_open(a.pin);
		if (!st->pin)
			goto out; /* said why */
		err = ks_pinstate_load(st->pin, st->acc, st->names, st->n, st->drains);
		if (err < 0) {
			p_err("serve: cannot read the counters saved under '%s': %s; 'ksight unpin %s' starts afresh", a.pin,
			      strerror(-err), a.pin);
			goto out;
		}
		if (err)
			fprintf(stderr, "ksight: resumed the counters of %d collectors saved under %s\n", err, a.pin);
		ks_pin_scope(a.pin);
	}
	st->no_pprof = a.no_pprof;
	st->max_memory = c.max_memory;
	err = share_budget(st, &f);
	if (err) {
		ret = err == -E2BIG ? 2 : 1;
		goto out;
	}
	st->pin_dir = a.pin;
	if (ks_drive_open(st->in, st->n, &f, serve_opened, st, &(int){ 0 }))
		goto out;
	/* a first snapshot (empty counters) before the first scrape can come */
	err = collect_once(st);
	if (err) {
		p_err("serve: cannot collect: %s", strerror(-err));
		goto out;
	}
	lfd = listen_on(&ss, sslen, &port);
	if (lfd < 0) {
		p_err("serve: cannot listen on '%s': %s", KS_ESC(a.listen), strerror(-lfd));
		goto out;
	}
	if (!a.keep_caps) {
		err = drop_caps(a.drop_caps ? 0 : caps_needed(st, a.pin));
		if (err) {
			p_err("serve: cannot drop capabilities: %s", strerror(-err));
			goto out;
		}
		st->caps_dropped = a.drop_caps;
	}
	d = start_http(st, lfd);
	if (!d) {
		p_err("serve: cannot start the HTTP server on '%s'%s", KS_ESC(a.listen),
		      st->web.cert_pem ? " (is the TLS key pair valid?)" : "");
		goto out;
	}
	lfd = -1; /* the daemon's now */
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
	ks_drive_say(st->in, st->n, "serving", a.pin ? ", pinned" : "", a.pin ? ", pinned" : "");
	fprintf(stderr, "ksight: listening on %s://%s%s%s:%d/metrics\n", st->web.cert_pem ? "https" : "http",
		ss.ss_family == AF_INET6 ? "[" : "", addr, ss.ss_family == AF_INET6 ? "]" : "", port);
	{
		/* a drain each period from the end of the last one; the signals on a signalfd, in this thread only */
		struct ks_loop_opts lo = { .duration = c.duration, .interval = st->period, .tick_from_end = true };
		struct ks_loop l;

		sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
		if (sfd < 0) {
			p_err("serve: cannot take signals: %s", strerror(errno));
			goto out;
		}
		ks_loop_init(&l, &lo);
		ks_loop_add_fd(&l, sfd);
		ret = ks_loop_run(&l, &serve_engine, st);
	}
out:
	if (d) {
		/* a profile being taken ends now, and its suspended connection is answered before the daemon stops */
		ks_stop_signal = SIGTERM;
		for (int i = 0; i < 500 && atomic_load(&st->prof_busy); i++)
			usleep(10000);
		MHD_stop_daemon(d);
	}
	reaper_stop(&st->rp);
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	ks_drive_close(st->in, st->n);
	for (int i = 0; i < st->n; i++)
		ks_accum_free(&st->acc[i]);
	snapshot_free(st->snap);
	ks_pinstate_close(st->pin); /* after the accumulators: restored rows point into it */
	for (int i = 0; i < MAX_COLS; i++)
		free(st->drains[i].cursor);
	if (pin_lock >= 0)
		close(pin_lock);
	ks_pin_scope(NULL);
	ks_web_config_free(&st->web);
	ks_arglist_free(&a.fl);
	pthread_rwlock_destroy(&st->lock);
	pthread_mutex_destroy(&st->web_lock);
	free(st);
	return ret;
}
