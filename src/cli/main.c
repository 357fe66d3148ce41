/* ksight's entry point: the command table, top-level help, dispatch to commands and collectors. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/collector.h"
#include "core/file.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/parse.h"
#include "drive/driver.h"

/* Commands that are not collectors; collectors come from the registry. */
static const struct ks_command commands[] = {
	{ "doctor", cmd_doctor, "what this kernel and machine can trace, and how to fix what is missing" },
	{ "list", cmd_list, "list tracepoints (-v: with their fields and types)" },
	{ "record", cmd_record, "record tracepoint events into a file (report, info read it)" },
	{ "report", cmd_report, "print a recording: events in time order, latency pairs, a Perfetto timeline" },
	{ "info", cmd_info, "describe a recording: manifest, event counts, losses per CPU, span" },
	{ "rerun", cmd_rerun, "record the same session again from a recording's manifest" },
	{ "diff", cmd_diff, "compare two recordings: event rates, paired latencies, a significance test" },
	{ "profile", cmd_profile, "on-CPU stacks sampled at -F HZ: folded stacks, JSON, SVG flame graph, pprof" },
	{ "run", ks_multi_run, "run several collectors in one process, one report each" },
	{ "serve", cmd_serve, "export the collectors to Prometheus (/metrics, native histograms)" },
	{ "top", cmd_top, "a live terminal view: processes by on-CPU, run-queue, syscall and block I/O time" },
	{ "unpin", cmd_unpin, "remove what 'serve --pin DIR' left pinned in bpffs (its programs detach)" },
	{ "version", cmd_version, "print the version" },
	{ "offcpu", cmd_offcpu, NULL }, /* the collector, or its --stacks mode: listed under Collectors */
	{ "syscalls", cmd_syscalls, NULL },
	{ "biolat", cmd_biolat, NULL },
	{ "wall", cmd_wall, NULL },
	{ NULL, NULL, NULL },
};

static const struct ks_cmd_spec version_spec = { .name = "version", .summary = "Print the version." };

int cmd_version(int argc, char **argv)
{
	struct ks_common c;
	int err;

	ks_common_init(&c);
	err = ks_opts_parse_noargs(&version_spec, argc, argv, &c, NULL, NULL);
	if (err)
		return err == KS_OPTS_HELP ? 0 : 2;
	printf("ksight %s\n", KSIGHT_VERSION);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: ksight COMMAND [OPTIONS]\n\n"
		     "Where does the time go: scheduler, block I/O, network, syscalls, memory, CPU.\n\n"
		     "Commands:\n");
	for (const struct ks_command *c = commands; c->name; c++)
		if (c->summary)
			fprintf(out, "  %-12s %s\n", c->name, c->summary);
	fprintf(out, "\nCollectors:\n");
	for (int i = 0; ks_collectors[i]; i++)
		fprintf(out, "  %-12s %s\n", ks_collectors[i]->spec.name, ks_collectors[i]->spec.summary);
	fprintf(out, "\n'ksight COMMAND -h' or 'ksight help COMMAND' shows the options of a command;\n"
		     "'ksight -V' the version.\n");
}

#if defined(__SANITIZE_ADDRESS__)
#define KS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KS_SANITIZED 1
#endif
#endif

#ifndef KS_SANITIZED /* the sanitizers report crashes better themselves */
/*
 * A crash says where: the stack goes to stderr (addresses as BINARY(+OFFSET), for
 * addr2line), then the signal is raised again for its default action (core, status).
 * A process run with capabilities by another user is not dumpable, so without this a
 * crash there (test_privilege once: exit 139) leaves nothing to go on.
 */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	char head[PATH_MAX + 160];
	void *pcs[64], *pc = NULL;
	int n = backtrace(pcs, 64), len;
	Dl_info where = { 0 };

	(void)uc;
#if defined(__x86_64__)
	pc = uc ? (void *)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] : NULL;
#endif
	/* the faulting instruction and address first: a jump to a bad address unwinds no further */
	if (pc && dladdr(pc, &where) && where.dli_fname)
		len = snprintf(head, sizeof(head), "ksight: fatal signal %d at %s(+%#lx), address %p; stack:\n", sig,
			       where.dli_fname, (unsigned long)((char *)pc - (char *)where.dli_fbase), si->si_addr);
	else
		len = snprintf(head, sizeof(head), "ksight: fatal signal %d at pc %p, address %p; stack:\n", sig, pc,
			       si->si_addr);
	if (len > 0 && write(STDERR_FILENO, head, (size_t)len) > 0)
		backtrace_symbols_fd(pcs, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}
#endif

static void fatal_handlers(void)
{
#ifndef KS_SANITIZED
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa = { .sa_sigaction = on_fatal, .sa_flags = SA_RESETHAND | SA_SIGINFO };
	void *pc;

	/* backtrace() loads libgcc on first use: not inside the handler */
	backtrace(&pc, 1);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
#endif
}

/* Commands that end on SIGINT/SIGTERM with a final report (they call ks_stop_install); collectors too. */
static const char *const stoppable[] = { "record", "rerun", "profile", "run", "serve", "top", NULL };

/*
 * SIGINT and SIGTERM as the parent left them may be ignored or blocked (a
 * background job of a non-interactive shell starts with SIGINT ignored), and
 * one sent before the command's ks_stop_install was lost.  As timeout(1) and
 * perf do, they are unblocked and reset at once: a command that runs until
 * stopped takes them from here (the run then ends at its start, with a
 * report); any other dies of them, as by default.
 */
static void stop_signals(const char *name)
{
	sigset_t set;
	bool stops = ks_collector_find(name);

	for (int i = 0; !stops && stoppable[i]; i++)
		stops = !strcmp(stoppable[i], name);
	if (stops) {
		ks_stop_install();
	} else {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Runs command or collector @name with @argv (@argv[0] its name); 2 for an unknown one. */
static int dispatch(const char *name, int argc, char **argv)
{
	const struct ks_collector *col;

	for (const struct ks_command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c->fn(argc, argv);
	col = ks_collector_find(name);
	if (!col) {
		p_err("unknown command '%s'; see 'ksight -h'", KS_ESC(name));
		return 2;
	}
	return ks_collector_run(col, argc, argv);
}

int main(int argc, char **argv)
{
	const char *name;
	int ret;

	/* before anything is opened: a closed stderr must not become the -o file's number */
	if (ks_reserve_stdio()) {
		fprintf(stderr, "ksight: error: cannot open /dev/null for a closed stdin, stdout or stderr\n");
		return 1;
	}
	fatal_handlers();
	ks_log_setup_libbpf();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	name = argv[1];
	stop_signals(name);
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || (!strcmp(name, "help") && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "help") && argv[2][0] == '-') {
		ret = ks_help_gen(commands, dispatch, argc, argv);
	} else if (!strcmp(name, "help")) {
		/* 'ksight help CMD' is 'ksight CMD -h' */
		char *hargv[] = { argv[2], "-h", NULL };

		if (argc > 3) {
			p_err("help takes one command; see 'ksight -h'");
			return 2;
		}
		ret = dispatch(argv[2], 2, hargv);
	} else {
		if (!strcmp(name, "--version") || !strcmp(name, "-V"))
			name = "version";
		ret = dispatch(name, argc - 1, argv + 1);
	}
	/* a report lost to a full disk or closed pipe is a failure (said once: a failed command has said why) */
	if ((fflush(stdout) || ferror(stdout)) && ret == 0) {
		fprintf(stderr, "ksight: error: cannot write to stdout: %s\n", strerror(errno));
		return 1;
	}
	return ret;
}
