/* `ksight top`: a live terminal view, one more engine on the run loop: syscalls, runqlat and biolat by pid plus /proc's CPU time, and wall by thread, redrawn each interval with ncurses. */
#include <ctype.h>
#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/collector.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/procfs.h"
#include "output/tui.h"

static const struct ks_cmd_spec top_spec = {
	.name = "top",
	.summary = "A live view of where each process's time goes: on-CPU (/proc), waiting for a CPU\n"
		   "(runqlat), inside system calls (syscalls) and block I/O (biolat), one view per\n"
		   "collector, and each thread's states in % (wall), redrawn every -i (default 1s).\n"
		   "Keys: q quits, Tab or 0-4 switch views, / filters by name, c w s t i o p n sort\n"
		   "(see docs/top.md).  Needs a terminal.",
	.common = KS_O_DURATION | KS_O_INTERVAL | KS_O_CGROUP | KS_O_MEMORY,
};

static const char *const top_collectors[] = { "syscalls", "runqlat", "biolat", "wall" };
#define TOP_N (int)(sizeof(top_collectors) / sizeof(top_collectors[0]))

/* CPU ticks (utime + stime) of one process at the last sample. */
struct tick_sample {
	uint32_t pid;
	uint64_t ticks;
};

struct top {
	struct ks_instance in[TOP_N];
	int n;
	struct ks_filter f;
	const char *cgroup;
	SCREEN *scr;
	struct ks_tui_state st;
	struct ks_tui_frame fr;
	struct ks_report reports[TOP_N];
	bool have_reports;
	struct tick_sample *prev; /* sorted by pid */
	int nprev;
	uint64_t self_ticks, bpf_ns, bpf_runs;
	char *lines;
	size_t stride;
	int lh;
	int empty; /* readiness in a row with no key read: the terminal hung up */
};

static int sample_cmp(const void *a, const void *b)
{
	const struct tick_sample *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * Fields 14 and 15 of /proc/PID/stat (utime, stime), counted after the
 * last ')' since a comm may hold one; @comm gets the name between the
 * parentheses (raw).  0 or negative errno.
 */
static int read_stat(const char *path, uint64_t *ticks, char *comm, size_t len)
{
	char buf[1024], *open_p, *close_p;
	unsigned long long ut, st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return -EINVAL;
	if (comm)
		snprintf(comm, len, "%.*s", (int)(close_p - open_p - 1), open_p + 1);
	/* after ") ": state(3) ... utime(14) stime(15) */
	if (sscanf(close_p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	*ticks = ut + st;
	return 0;
}

/* With --cgroup: whether @pid is in that very cgroup (the collectors' filter is the same id). */
static bool in_cgroup(const struct top *t, uint32_t pid)
{
	char path[64], line[1024], full[1400];
	const char *mnt = ks_cgroup2_mount();
	__u64 id;
	FILE *fp;
	bool ok = false;

	if (!t->cgroup)
		return true;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	fp = fopen(path, "re");
	if (!fp || !mnt) {
		if (fp)
			fclose(fp);
		return false;
	}
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(full, sizeof(full), "%s%s", mnt, line + 3);
		ok = !ks_cgroup_id(full, &id) && id == t->f.cgroup_id;
	}
	fclose(fp);
	return ok;
}

/*
 * Samples every process's CPU ticks from /proc; with @f, adds each one that
 * ran since the last sample to it (on-CPU ns).  The samples replace the
 * previous ones.  0 or -ENOMEM.
 */
static int sample_cpu(struct top *t, struct ks_tui_frame *f)
{
	static long hz;
	struct tick_sample *cur = NULL;
	int ncur = 0, cap = 0, err = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], comm[64];
		uint64_t ticks;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (read_stat(path, &ticks, comm, sizeof(comm)))
			continue; /* gone since readdir */
		if (ncur == cap) {
			void *np = realloc(cur, (size_t)(cap = cap ? cap * 2 : 512) * sizeof(*cur));

			if (!np) {
				err = -ENOMEM;
				break;
			}
			cur = np;
		}
		cur[ncur] = (struct tick_sample){ .pid = (uint32_t)strtoul(de->d_name, NULL, 10), .ticks = ticks };
		if (f) {
			struct tick_sample *old = bsearch(&cur[ncur], t->prev, (size_t)t->nprev, sizeof(*t->prev), sample_cmp);

			/* a process born in the window is not counted: its ticks since birth would be more than the window */
			if (old && ticks > old->ticks && in_cgroup(t, cur[ncur].pid)) {
				struct ks_tui_proc *p = ks_tui_proc_get(f, cur[ncur].pid, comm);

				if (!p) {
					err = -ENOMEM;
					break;
				}
				p->cpu_ns = (ticks - old->ticks) * (1000000000ull / (uint64_t)hz);
			}
		}
		ncur++;
	}
	closedir(d);
	if (err) {
		free(cur);
		return err;
	}
	qsort(cur, (size_t)ncur, sizeof(*cur), sample_cmp);
	free(t->prev);
	t->prev = cur;
	t->nprev = ncur;
	return 0;
}

/*
 * ksight's own cost: its CPU ticks (/proc/self/stat) and its BPF programs'
 * run time and runs, summed from the fdinfo of every program fd it holds
 * (run_time_ns, run_cnt: counted only while kernel.bpf_stats_enabled is 1).
 */
static void self_cost(uint64_t *ticks, uint64_t *bpf_ns, uint64_t *runs)
{
	DIR *d = opendir("/proc/self/fdinfo");
	struct dirent *de;

	*bpf_ns = *runs = 0;
	if (read_stat("/proc/self/stat", ticks, NULL, 0))
		*ticks = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[300], line[128];
		unsigned long long v;
		FILE *fp;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		fp = fopen(path, "re");
		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			if (sscanf(line, "run_time_ns: %llu", &v) == 1)
				*bpf_ns += v;
			else if (sscanf(line, "run_cnt: %llu", &v) == 1)
				*runs += v;
		}
		fclose(fp);
	}
	closedir(d);
}

static bool bpf_stats_on(void)
{
	uint64_t v = 0;

	return !ks_procfs_u64(NULL, "sys/kernel/bpf_stats_enabled", &v) && v == 1;
}

/* Draws the last frame as the keys left it; ncurses sends only what changed, so nothing flickers. */
static int paint(struct top *t)
{
	int h, w;

	getmaxyx(stdscr, h, w);
	if (h < 1 || w < 1)
		return 0;
	if (h > t->lh || (size_t)w * 4 + 1 > t->stride) {
		size_t stride = (size_t)w * 4 + 1;
		char *nl = realloc(t->lines, stride * (size_t)h);

		if (!nl)
			return -ENOMEM;
		t->lines = nl;
		t->stride = stride;
		t->lh = h;
	}
	ks_tui_render(&t->fr, &t->st, w, h, t->lines, t->stride);
	for (int y = 0; y < h; y++) {
		mvaddnstr(y, 0, t->lines + (size_t)y * t->stride, -1);
		clrtoeol();
	}
	move(h - 1, 0);
	refresh();
	return 0;
}

static void free_reports(struct top *t)
{
	if (!t->have_reports)
		return;
	for (int i = 0; i < t->n; i++)
		ks_report_free(&t->reports[i]);
	t->have_reports = false;
}

static int top_tick(void *ctx, struct ks_loop *l)
{
	struct top *t = ctx;
	int errs[TOP_N] = { 0 };
	uint64_t ticks, bpf_ns, runs;
	double window = l->now - l->last;
	int err;

	free_reports(t);
	ks_tui_frame_free(&t->fr);
	for (int i = 0; i < t->n; i++)
		ks_instance_report_init(&t->in[i], &t->reports[i]);
	t->have_reports = true;
	ks_instances_collect(t->in, t->n, t->reports, errs);
	t->fr = (struct ks_tui_frame){ .reports = t->reports, .nreports = t->n, .tick = l->ticks, .window_s = window, .cgroup = t->cgroup };
	for (int i = 0; i < t->n; i++) {
		if (errs[i])
			return errs[i];
		ks_report_sort(&t->reports[i]);
		t->fr.lost += t->reports[i].lost;
		err = ks_tui_merge(&t->fr, &t->reports[i]);
		if (err)
			return err;
	}
	err = sample_cpu(t, &t->fr);
	if (err)
		return err;
	self_cost(&ticks, &bpf_ns, &runs);
	t->fr.self_cpu = window > 0 ? (double)(ticks - t->self_ticks) * 100.0 / (double)sysconf(_SC_CLK_TCK) / window : 0;
	t->fr.bpf_known = bpf_stats_on();
	t->fr.bpf_ns = bpf_ns - t->bpf_ns;
	t->fr.bpf_runs = runs - t->bpf_runs;
	t->self_ticks = ticks;
	t->bpf_ns = bpf_ns;
	t->bpf_runs = runs;
	return paint(t);
}

/* Every key waiting (and a resize, which ncurses reports as a key); q ends the run. */
static int top_keys(void *ctx, struct ks_loop *l)
{
	struct top *t = ctx;
	bool redraw = false;
	int k;

	(void)l;
	while ((k = getch()) != ERR) {
		if (k == KEY_RESIZE)
			redraw = true;
		else if (k == KEY_BACKSPACE)
			redraw |= ks_tui_key(&t->st, 127, t->n + 1);
		else if (k >= 0 && k < 256)
			redraw |= ks_tui_key(&t->st, k, t->n + 1);
		if (t->st.quit)
			return KS_LOOP_DONE;
	}
	return redraw ? paint(t) : 0;
}

/*
 * The terminal is readable.  A hung-up one stays readable with nothing to
 * read (with SIGHUP ignored, as under nohup): after many such wake-ups in a
 * row the run ends rather than spinning.
 */
static int top_ready(void *ctx, struct ks_loop *l, int fd)
{
	struct top *t = ctx;
	int k = getch();

	(void)fd;
	if (k == ERR)
		return ++t->empty > 100 ? KS_LOOP_DONE : 0;
	t->empty = 0;
	ungetch(k);
	return top_keys(ctx, l);
}

/* The terminal is put back whatever ended the run; the instances close after. */
static int top_close(void *ctx, struct ks_loop *l)
{
	(void)ctx;
	endwin();
	if (l->why == KS_LOOP_ERROR) {
		p_err("top: %s", strerror(-l->err));
		return 1;
	}
	return 0;
}

/* ncurses on stdout and stdin, in UTF-8 when the locale allows, keys without waiting. */
static int screen_open(struct top *t)
{
	if (!setlocale(LC_CTYPE, "") || strcmp(nl_langinfo(CODESET), "UTF-8"))
		setlocale(LC_CTYPE, "C.UTF-8");
	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		p_err("top: cannot use terminal '%s'", KS_ESC(getenv("TERM") ? getenv("TERM") : ""));
		return -ENOTTY;
	}
	cbreak(); /* Ctrl-C stays a signal: the loop ends the run and close restores the terminal */
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	return 0;
}

static int run_top(struct top *t, const struct ks_common *c)
{
	static const struct ks_engine eng = { .tick = top_tick, .ready = top_ready, .wake = top_keys, .close = top_close };
	struct ks_loop_opts o = { .duration = c->duration, .interval = c->interval };
	struct ks_loop l;
	int err;

	for (; t->n < TOP_N; t->n++) {
		err = ks_instance_init(&t->in[t->n], ks_collector_find(top_collectors[t->n]));
		if (err) {
			p_err("%s: cannot set up: %s", top_collectors[t->n], strerror(-err));
			return 1;
		}
		t->in[t->n].c = *c;
		/* wall's view is per thread: the split of each thread's time */
		t->in[t->n].c.by = strcmp(top_collectors[t->n], "wall") ? "pid" : "tid";
	}
	err = ks_instances_share(t->in, t->n, &t->f, c->max_memory, NULL);
	if (err)
		return err == -E2BIG ? 2 : 1;
	/* handlers before anything attaches, and before ncurses, which then leaves SIGINT to them */
	ks_stop_install();
	for (int i = 0; i < t->n; i++) {
		err = ks_instance_open(&t->in[i], &t->f);
		if (err) {
			ks_report_open_error(t->in[i].col, err);
			return 1;
		}
	}
	self_cost(&t->self_ticks, &t->bpf_ns, &t->bpf_runs);
	if (sample_cpu(t, NULL) || screen_open(t))
		return 1;
	ks_loop_init(&l, &o);
	err = ks_loop_add_fd(&l, STDIN_FILENO);
	if (!err) {
		paint(t);
		err = ks_loop_run(&l, &eng, t);
	} else {
		endwin();
	}
	return err < 0 ? 1 : err;
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .n = 0 };
	struct ks_common c;
	int err, ret;

	ks_common_init(&c);
	err = ks_opts_parse_noargs(&top_spec, argc, argv, &c, NULL, NULL);
	if (err)
		return err == KS_OPTS_HELP ? 0 : 2;
	/* bad input is said as such first, terminal or not */
	if (ks_filter_build(&c, &t.f))
		return 2;
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		p_err("top needs a terminal; use 'ksight run -i 1 syscalls,runqlat,biolat' for reports");
		return 2;
	}
	if (!c.interval)
		c.interval = 1;
	t.cgroup = c.cgroup;
	ks_tui_state_init(&t.st);
	ret = run_top(&t, &c);
	free_reports(&t);
	for (int i = 0; i < t.n; i++)
		ks_instance_close(&t.in[i]);
	if (t.scr)
		delscreen(t.scr);
	ks_tui_frame_free(&t.fr);
	free(t.prev);
	free(t.lines);
	return ret;
}
