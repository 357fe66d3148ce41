/* The live view's data and drawing apart from the terminal: per-process rows merged from collector reports and /proc, keys, and the screen as lines of text. */
#ifndef KS_OUTPUT_TUI_H
#define KS_OUTPUT_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/report.h"

/* One process in the processes view: what each source says about it in one window. */
struct ks_tui_proc {
	uint32_t pid;
	char comm[KS_KEY_STR]; /* raw bytes as the kernel or /proc gave them: sanitized when drawn */
	uint64_t cpu_ns;       /* on-CPU: utime+stime delta from /proc/PID/stat */
	uint64_t runq_ns;      /* runqlat --by pid total_wait_ns: time runnable, waiting for a CPU */
	uint64_t io_ns;	       /* biolat --by pid: the latency histogram's sum (issue to completion) */
	uint64_t io_count;     /* biolat --by pid: I/Os completed */
	uint64_t sc_count;     /* syscalls --by pid: calls returned */
	uint64_t sc_ns;	       /* syscalls --by pid: total_ns, time inside them */
};

/* The process view's columns, in screen order; the sort keys are their letters (ks_tui_key). */
enum ks_tui_col {
	KS_TUI_PID,
	KS_TUI_COMM,
	KS_TUI_CPU,
	KS_TUI_RUNQ,
	KS_TUI_SC_COUNT,
	KS_TUI_SC_TIME,
	KS_TUI_IO_COUNT,
	KS_TUI_IO_TIME,
	KS_TUI_NCOLS,
};

/* One window's data, owned by the caller; the reports are borrowed. */
struct ks_tui_frame {
	struct ks_tui_proc *procs;
	int nprocs, cap;
	const struct ks_report *reports; /* one per collector, the view after the processes */
	int nreports;
	int tick;	    /* the window's number, 1 first: shown so a reader (a test) knows a frame from the next */
	double window_s;    /* the window's length */
	uint64_t lost;	    /* every collector's losses in the window */
	double self_cpu;    /* ksight's own CPU in the window, percent of one core */
	bool bpf_known;	    /* kernel.bpf_stats_enabled was 1: bpf_ns counts */
	uint64_t bpf_ns;    /* its BPF programs' run time in the window */
	uint64_t bpf_runs;  /* their runs in the window */
	const char *cgroup; /* --cgroup, shown in the header; NULL: none */
};

#define KS_TUI_FILTER 32

/* What the keys change. */
struct ks_tui_state {
	int view;		  /* 0: processes; 1..nreports: that collector's rows */
	enum ks_tui_col sort;	  /* processes view's sort column */
	char filter[KS_TUI_FILTER]; /* `/`: rows whose comm contains it */
	bool editing;		  /* typing the filter */
	bool quit;
};

void ks_tui_state_init(struct ks_tui_state *s);
/*
 * One key (a byte; Tab 9, Enter 10/13, Escape 27, Backspace 127/8) for a
 * frame of @nviews views (1 + collectors).  Keys: q quits; Tab and 0-9
 * switch views; p c r s t i o sort by pid, comm, run-queue wait, ... (see
 * docs/top.md), C cpu; `/` starts the filter, Enter ends it, Escape clears
 * it.  Returns true when the screen changes.
 */
bool ks_tui_key(struct ks_tui_state *s, int key, int nviews);

/* Finds or adds @pid's row; NULL when out of memory. */
struct ks_tui_proc *ks_tui_proc_get(struct ks_tui_frame *f, uint32_t pid, const char *comm);
/*
 * Merges a collector report keyed by pid into @f's processes by its
 * collector's name (syscalls, runqlat, biolat; others are left out).
 * 0 or -ENOMEM.
 */
int ks_tui_merge(struct ks_tui_frame *f, const struct ks_report *r);
void ks_tui_frame_free(struct ks_tui_frame *f);

/*
 * Draws @f as @s shows it into @h lines of at most @w display columns
 * each: @lines is @h rows of @stride bytes (at least 4 * @w + 1, since a
 * sanitized name is UTF-8), each NUL-terminated.  Names are sanitized
 * (core/sanitize.h): no byte of a process name reaches the terminal as a
 * control character.  Returns the number of lines used.
 */
int ks_tui_render(const struct ks_tui_frame *f, const struct ks_tui_state *s, int w, int h, char *lines,
		  size_t stride);

#endif
