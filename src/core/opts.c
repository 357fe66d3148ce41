/* Shared option parsing with getopt_long, built from the common table and the command's own table. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/report.h"

enum { ID_COMM = 256, ID_BY, ID_MAXMEM, ID_SELF, ID_SORT, ID_HEATMAP, ID_SERIESMEM };

struct common_def {
	unsigned int bit;
	struct ks_optdef d;
};

static const struct common_def common_defs[] = {
	{ KS_O_DURATION, { "duration", 'd', "SEC", "stop after SEC seconds, > 0 (units: ms, s, m, h); no -d: at Ctrl-C" } },
	{ KS_O_INTERVAL, { "interval", 'i', "SEC", "report every SEC seconds (at least 10ms)" } },
	{ KS_O_PID, { "pid", 'p', "PID", "only this process" } },
	{ KS_O_TID, { "tid", 't', "TID", "only this thread" } },
	{ KS_O_CGROUP, { "cgroup", 'c', "PATH", "only tasks in this cgroup v2 directory" } },
	{ KS_O_CPU, { "cpu", 'C', "LIST", "only these CPUs, e.g. 0-3,6" } },
	{ KS_O_COMM, { "comm", ID_COMM, "NAME", "only tasks with this command name" } },
	{ KS_O_SELF, { "include-self", ID_SELF, NULL, "count ksight's own events too (left out by default)" } },
	{ KS_O_BY, { "by", ID_BY, "KEY", "aggregate by KEY" } },
	{ KS_O_TOP, { "top", 'n', "N", "show the top N rows (0: all; default 10)" } },
	{ KS_O_JSON, { "json", 'j', NULL, "JSON output (one document; one line per interval with -i)" } },
	{ KS_O_OUTPUT, { "output", 'o', "FILE", "write the report to FILE (-: standard output)" } },
	{ KS_O_MEMORY, { "max-memory", ID_MAXMEM, "SIZE", "budget for the BPF maps at the possible-CPU count (default 64M)" } },
	{ KS_O_SORT, { "sort", ID_SORT, "KEY", "order rows by KEY: count, total, errors, p50, p90, p99, max, mean or a column" } },
	{ KS_O_HEATMAP, { "heatmap", ID_HEATMAP, "FILE", "with -i: write an SVG heatmap of the top -n rows' histograms over the run to FILE" } },
	{ KS_O_HEATMAP, { "series-memory", ID_SERIESMEM, "SIZE", "with --heatmap: keep the run's intervals in SIZE (default 64M)" } },
	{ 0, { "verbose", 'v', NULL, "more messages (-vv: libbpf's too)" } },
	{ 0, { "help", 'h', NULL, "show this help" } },
};

#define NCOMMON (sizeof(common_defs) / sizeof(common_defs[0]))

/* -j of a command without -i: its help names no -i (one document is all it writes) */
static const struct ks_optdef json_once = { "json", 'j', NULL, "JSON output (one document)" };

/* Shared option @i as @spec's help shows it. */
static const struct ks_optdef *common_opt(const struct ks_cmd_spec *spec, size_t i)
{
	if (common_defs[i].bit == KS_O_JSON && !(spec->common & KS_O_INTERVAL))
		return &json_once;
	return &common_defs[i].d;
}
#define MAXOPTS 64

void ks_common_init(struct ks_common *c)
{
	memset(c, 0, sizeof(*c));
	c->top_n = 10;
}

static int nopts(const struct ks_optdef *o)
{
	int n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

static void print_opt(FILE *out, const struct ks_optdef *d)
{
	char left[64];

	if (d->id < 256)
		snprintf(left, sizeof(left), "-%c, --%s%s%s", d->id, d->name, d->arg ? " " : "",
			 d->arg ? d->arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
	fprintf(out, "  %-24s %s\n", left, d->help);
}

/* True when the command has an option named @name of its own, which then replaces the shared one. */
static bool own_opt(const struct ks_cmd_spec *spec, const char *name)
{
	for (const struct ks_optdef *o = spec->opts; o && o->name; o++)
		if (!strcmp(o->name, name))
			return true;
	return false;
}

int ks_by_parse(const struct ks_by_word *words, const char *by)
{
	const struct ks_by_word *w = words;

	for (; w->word; w++)
		if (by && !strcmp(by, w->word))
			return w->value;
	return by ? -EINVAL : w->value;
}

char *ks_by_format(const struct ks_by_word *words, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (const struct ks_by_word *w = words; w->word && n < len; w++) {
		int k = snprintf(buf + n, len - n, "%s%s", w == words ? "" : "|", w->word);

		if (k < 0)
			break;
		n += (size_t)k;
	}
	return buf;
}

/* The --by words of @spec as "a|b" in @buf, or NULL if it takes no --by. */
const char *ks_spec_by_keys(const struct ks_cmd_spec *spec, char *buf, size_t len)
{
	if (spec->by_words)
		return ks_by_format(spec->by_words, buf, len);
	return spec->by_keys;
}

void (*ks_opts_usage_hook)(const struct ks_cmd_spec *spec);

int ks_opts_list(const struct ks_cmd_spec *spec, const struct ks_optdef **defs, int max)
{
	int n = 0;

	for (const struct ks_optdef *o = spec->opts; o && o->name && n < max; o++)
		defs[n++] = o;
	for (size_t i = 0; i < NCOMMON && n < max; i++)
		if ((!common_defs[i].bit || (spec->common & common_defs[i].bit)) && !own_opt(spec, common_defs[i].d.name))
			defs[n++] = common_opt(spec, i);
	return n;
}

void ks_opts_usage(const struct ks_cmd_spec *spec, FILE *out)
{
	char keys[256];

	if (ks_opts_usage_hook) {
		ks_opts_usage_hook(spec);
		return;
	}

	fprintf(out, "Usage: ksight %s [OPTIONS]%s%s%s\n\n%s\n\nOptions:\n", spec->name,
		spec->args ? " " : "", spec->args ? spec->args : "", spec->common & KS_O_CMD ? " [-- CMD [ARG...]]" : "",
		spec->summary);
	for (const struct ks_optdef *o = spec->opts; o && o->name; o++)
		print_opt(out, o);
	for (size_t i = 0; i < NCOMMON; i++) {
		if ((common_defs[i].bit && !(spec->common & common_defs[i].bit)) || own_opt(spec, common_defs[i].d.name))
			continue;
		print_opt(out, common_opt(spec, i));
		if (common_defs[i].bit == KS_O_BY && ks_spec_by_keys(spec, keys, sizeof(keys)))
			fprintf(out, "  %-24s KEY: %s\n", "", ks_spec_by_keys(spec, keys, sizeof(keys)));
	}
	if (spec->common & KS_O_CMD)
		fprintf(out, "  %-24s %s\n", "-- CMD [ARG...]",
			"run CMD once attached (as the user who ran sudo); follow it and its children; end at its exit");
}

/*
 * After the last option: a "--" that getopt took as the end of the options
 * (not as an option's argument, @last_arg) starts the command.  Returns
 * argc when it did, @idx when there is none, -EINVAL after a one-line error.
 */
static int take_cmd(const struct ks_cmd_spec *spec, int argc, char **argv, int idx, const char *last_arg,
		    struct ks_common *c)
{
	if (!(spec->common & KS_O_CMD) || idx < 1 || idx > argc || strcmp(argv[idx - 1], "--") ||
	    argv[idx - 1] == last_arg)
		return idx;
	if (idx == argc) {
		p_err("%s: '--' needs a command after it, e.g. 'ksight %s -- sleep 1'", spec->name, spec->name);
		return -EINVAL;
	}
	/* -p and -t name processes that run already; -c a cgroup, which the command gets of its own */
	if (c->pid || c->tid || c->cgroup) {
		p_err("%s: -- CMD follows the command it starts: it goes without %s", spec->name,
		      c->pid ? "-p" : c->tid ? "-t" : "-c");
		return -EINVAL;
	}
	c->cmd_argv = &argv[idx];
	return argc;
}

/* True when @key is one of the '|'-separated words of @keys. */
static bool key_allowed(const char *keys, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = keys; p && *p;) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, key, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

static int parse_common(const struct ks_cmd_spec *spec, struct ks_common *c, int id, const char *arg)
{
	uint64_t v;
	int err;

	switch (id) {
	case 'd':
	case 'i':
		err = ks_parse_seconds(arg, id == 'd' ? &c->duration : &c->interval);
		/* -d 0 is not "forever" (that is no -d) */
		if (id == 'd' && (err || c->duration <= 0)) {
			p_err("invalid duration '%s': expected a positive number of seconds (omit -d to run until Ctrl-C)",
			      KS_ESC(arg));
			return -EINVAL;
		}
		/* shorter intervals measure little but ksight's own reports (a tight loop at 1e-9) */
		if (id == 'i' && (err || c->interval < KS_MIN_INTERVAL)) {
			p_err("invalid interval '%s': expected at least 10ms (units: ms, s, m, h)", KS_ESC(arg));
			return -EINVAL;
		}
		return 0;
	case 'p':
	case 't':
		if (ks_parse_u64(arg, 1, 0x7fffffff, &v)) {
			p_err("invalid %s '%s': expected a positive integer", id == 'p' ? "pid" : "tid", KS_ESC(arg));
			return -EINVAL;
		}
		*(id == 'p' ? &c->pid : &c->tid) = (uint32_t)v;
		return 0;
	case 'c':
		/* "" would resolve to the v2 mount itself: every task, which no one means */
		if (!*arg) {
			p_err("invalid cgroup '': expected a cgroup v2 directory, e.g. system.slice");
			return -EINVAL;
		}
		c->cgroup = arg;
		return 0;
	case 'C':
		if (ks_parse_cpulist(arg, c->cpus, KS_MAX_CPUS)) {
			p_err("invalid CPU list '%s': expected e.g. 0-3,6", KS_ESC(arg));
			return -EINVAL;
		}
		c->has_cpus = true;
		c->cpus_arg = arg;
		return 0;
	case ID_COMM:
		if (!*arg || strlen(arg) >= KS_COMM_LEN) {
			p_err("invalid comm '%s': expected 1 to %d characters", KS_ESC(arg), KS_COMM_LEN - 1);
			return -EINVAL;
		}
		memset(c->comm, 0, sizeof(c->comm));
		memcpy(c->comm, arg, strlen(arg));
		c->has_comm = true;
		return 0;
	case ID_BY:
		if (spec->by_words ? ks_by_parse(spec->by_words, arg) < 0 : !key_allowed(spec->by_keys, arg)) {
			char keys[256];

			p_err("invalid --by key '%s': expected one of %s", KS_ESC(arg),
			      ks_spec_by_keys(spec, keys, sizeof(keys)));
			return -EINVAL;
		}
		c->by = arg;
		return 0;
	case 'n':
		if (ks_parse_u64(arg, 0, 1000000, &v)) {
			p_err("invalid row count '%s': expected an integer >= 0", KS_ESC(arg));
			return -EINVAL;
		}
		c->top_n = (int)v;
		return 0;
	case 'j':
		c->json = true;
		ks_json = true;
		return 0;
	case 'o':
		c->output = arg;
		return 0;
	case ID_MAXMEM:
		/* below 1 MiB not even the smallest mode fits; above 1 TiB is a typo */
		if (ks_parse_size(arg, &v) || v < (1ull << 20) || v > (1ull << 40)) {
			p_err("invalid --max-memory '%s': expected a size from 1M to 1T, e.g. 64M", KS_ESC(arg));
			return -EINVAL;
		}
		c->max_memory = v;
		return 0;
	case ID_SELF:
		c->include_self = true;
		return 0;
	case ID_SORT:
		/* which columns exist is known once a report is drained: the driver refuses an unknown one */
		if (!ks_sort_key_valid(arg)) {
			p_err("invalid --sort key '%s': expected a column name such as count, total, p99 or max", arg);
			return -EINVAL;
		}
		c->sort = arg;
		return 0;
	case ID_HEATMAP:
		if (!*arg) {
			p_err("invalid --heatmap '': expected a file name (-: standard output)");
			return -EINVAL;
		}
		c->heatmap = arg;
		return 0;
	case ID_SERIESMEM:
		/* the newest interval is kept whatever the size: below 1 MiB a heatmap is one column */
		if (ks_parse_size(arg, &v) || v < (1ull << 20) || v > (1ull << 40)) {
			p_err("invalid --series-memory '%s': expected a size from 1M to 1T, e.g. 256M", KS_ESC(arg));
			return -EINVAL;
		}
		c->series_memory = v;
		return 0;
	case 'v':
		ks_verbose++;
		return 0;
	}
	return -EINVAL;
}

int ks_opts_check(const struct ks_common *c)
{
	/* a heatmap's columns are the interval reports: without -i there is one */
	if (c->heatmap && !c->interval) {
		p_err("--heatmap needs -i: its time columns are the interval reports, e.g. -i 1 --heatmap %s",
		      KS_ESC(c->heatmap));
		return -EINVAL;
	}
	if (c->series_memory && !c->heatmap) {
		p_err("--series-memory needs --heatmap: only the heatmap keeps the run's intervals");
		return -EINVAL;
	}
	/* the heatmap, written last, would replace the reports */
	if (c->heatmap && c->output && !strcmp(c->heatmap, c->output) && strcmp(c->output, "-")) {
		p_err("--heatmap and -o name the same file '%s': give each its own", KS_ESC(c->output));
		return -EINVAL;
	}
	return 0;
}

int ks_opts_parse(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
		  ks_opt_cb cb, void *ctx)
{
	struct option lopts[MAXOPTS + 1];
	char sopts[3 * MAXOPTS + 2];
	const struct ks_optdef *defs[MAXOPTS];
	bool is_common[MAXOPTS];
	const char *last_arg = NULL;
	int n = 0, sn = 0, opt, idx;

	sopts[sn++] = '+'; /* stop at the first positional argument */
	sopts[sn++] = ':'; /* report a missing argument as ':' */
	for (int pass = 0; pass < 2; pass++) {
		int cnt = pass ? (int)NCOMMON : nopts(spec->opts);

		for (int i = 0; i < cnt && n < MAXOPTS; i++) {
			const struct ks_optdef *d = pass ? &common_defs[i].d : &spec->opts[i];

			if (pass && ((common_defs[i].bit && !(spec->common & common_defs[i].bit)) || own_opt(spec, d->name)))
				continue;
			defs[n] = d;
			is_common[n] = pass;
			lopts[n] = (struct option){ d->name, d->arg ? required_argument : no_argument, NULL, d->id };
			if (d->id < 256) {
				sopts[sn++] = (char)d->id;
				if (d->arg)
					sopts[sn++] = ':';
			}
			n++;
		}
	}
	memset(&lopts[n], 0, sizeof(lopts[n]));
	sopts[sn] = 0;

	/*
	 * 0, not 1: glibc and musl then forget where they were inside a
	 * cluster of short options, which a failed parse of "-xj" leaves
	 * behind for the next parse in the same process.
	 */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, sopts, lopts, &idx)) != -1) {
		int i;

		if (opt == '?') {
			/* getopt sets optopt to the option's id for "--flag=value" */
			if (optopt && !strncmp(argv[optind - 1], "--", 2))
				p_err("%s: option '%s' takes no argument", spec->name, KS_ESC(argv[optind - 1]));
			else if (optopt && optopt < 256)
				p_err("%s: unknown option '-%s'; see 'ksight %s -h'", spec->name,
				      KS_ESC(((char[2]){ (char)optopt })), spec->name);
			else
				p_err("%s: unknown option '%s'; see 'ksight %s -h'", spec->name,
				      KS_ESC(argv[optind - 1]), spec->name);
			return -EINVAL;
		}
		if (opt == ':') {
			p_err("%s: option '%s' needs an argument", spec->name, KS_ESC(argv[optind - 1]));
			return -EINVAL;
		}
		if (opt == 'h') {
			ks_opts_usage(spec, stdout);
			return KS_OPTS_HELP;
		}
		for (i = 0; i < n; i++)
			if (defs[i]->id == opt)
				break;
		if (i == n)
			return -EINVAL;
		last_arg = optarg;
		if (is_common[i]) {
			if (parse_common(spec, c, opt, optarg))
				return -EINVAL;
		} else if (!cb) {
			return -EINVAL;
		} else {
			int err = cb(ctx, opt, optarg);

			if (err)
				return err < 0 && err != KS_OPTS_HELP ? err : -EINVAL;
		}
	}
	return take_cmd(spec, argc, argv, optind, last_arg, c);
}

int ks_opts_parse_noargs(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
			 ks_opt_cb cb, void *ctx)
{
	int idx = ks_opts_parse(spec, argc, argv, c, cb, ctx);

	if (idx < 0)
		return idx;
	if (idx < argc) {
		p_err("%s: unexpected argument '%s'; see 'ksight %s -h'", spec->name, KS_ESC(argv[idx]), spec->name);
		return -EINVAL;
	}
	return 0;
}
