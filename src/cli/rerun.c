/* `ksight rerun FILE -o NEW`: records the same session again from the arguments a recording's manifest kept. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/file.h"
#include "core/log.h"
#include "core/opts.h"
#include "format/recfile.h"

/* its own -o: NEW is a recording, read back by path, so "-" (stdout for every other -o) is refused */
static const struct ks_optdef rerun_opts[] = {
	{ "output", 'o', "NEW", "record into NEW (a path; not -)" },
	{ 0 },
};

static int rerun_opt(void *vctx, int id, const char *arg)
{
	const char **out = vctx;

	if (id != 'o')
		return -EINVAL;
	if (ks_file_is_stdout(arg)) {
		p_err("rerun -o -: a recording is written to a file, not to standard output; give a path");
		return -EINVAL;
	}
	*out = arg;
	return 0;
}

static const struct ks_cmd_spec rerun_spec = {
	.name = "rerun",
	.summary = "Record the session of FILE again into NEW (-o): the same events, filters, sample rate, buffer "
		   "sizes and duration (-d overrides it), from FILE's manifest. Warns where the kernel, host or CPU "
		   "count differ from the recording's. A recording of one process (-p) needs -p PID, the process to "
		   "follow now, when its own is gone; one made with -- CMD runs CMD again.",
	.args = "FILE",
	.common = KS_O_DURATION | KS_O_PID,
	.opts = rerun_opts,
};

/* The manifest text of @file (malloc'd, *@len bytes), or NULL after p_err. */
static char *read_manifest(const char *file, size_t *len)
{
	struct ks_rec_reader r;
	void *p = NULL;
	int err = ks_rec_open(&r, file);

	if (err) {
		p_err(err == -EBADMSG || err == -EPROTO ? "'%s' is not a ksight recording this version reads"
							: "cannot read '%s': %s",
		      file, ks_rec_strerror(err));
		return NULL;
	}
	for (size_t i = 0; i < r.nchunks && !p; i++)
		if (r.chunks[i].hdr.type == KS_REC_MANIFEST && !ks_rec_read(&r, i, &p))
			*len = r.chunks[i].hdr.len;
	ks_rec_free(&r);
	if (!p)
		p_err("'%s' has no intact manifest: nothing to rerun", file);
	return p;
}

struct args {
	char **v;
	int n, cap;
	bool oom;
};

static void args_push(struct args *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 32;
		char **n = realloc(a->v, (size_t)cap * sizeof(*n));

		if (!n) {
			a->oom = true;
			return;
		}
		a->v = n;
		a->cap = cap;
	}
	a->v[a->n] = strdup(s);
	if (!a->v[a->n]) {
		a->oom = true;
		return;
	}
	a->v[++a->n] = NULL;
}

static void args_free(struct args *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

static void collect_arg(void *ctx, const char *key, const char *val)
{
	if (!strcmp(key, "arg"))
		args_push(ctx, val);
}

/* True when @arg is option @s / @l (then *@val is its value, or NULL when it is the next argument). */
static bool is_opt(const char *arg, char s, const char *l, const char **val)
{
	size_t n = strlen(l);

	if (arg[0] == '-' && arg[1] == s) {
		*val = arg[2] ? arg + 2 : NULL;
		return true;
	}
	if (!strncmp(arg, "--", 2) && !strncmp(arg + 2, l, n) && (arg[2 + n] == '\0' || arg[2 + n] == '=')) {
		*val = arg[2 + n] == '=' ? arg + 3 + n : NULL;
		return true;
	}
	return false;
}

static void warn_differs(const char *m, size_t len, const char *key, const char *now, const char *what)
{
	char was[256];

	if (ks_rec_kv_get(m, len, key, was, sizeof(was)) && strcmp(was, now))
		p_warn("%s differs: the recording's was '%s', this one's is '%s'", what, was, now);
}

struct ev_list {
	char buf[8192];
	size_t len;
};

static void collect_event(void *ctx, const char *key, const char *val)
{
	struct ev_list *l = ctx;

	if (!strcmp(key, "event") && l->len + strlen(val) + 2 < sizeof(l->buf))
		l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "%s ", val);
}

/* After the new recording: say if its globs resolved to other events than the old one's. */
static void compare_events(const char *old, size_t oldlen, const char *newfile)
{
	struct ev_list a = { .len = 0 }, b = { .len = 0 };
	size_t nlen = 0;
	char *nm;

	if (access(newfile, F_OK))
		return; /* --rotate: NEW.0, NEW.1... */
	nm = read_manifest(newfile, &nlen);
	if (!nm)
		return;
	ks_rec_kv_each(old, oldlen, collect_event, &a);
	ks_rec_kv_each(nm, nlen, collect_event, &b);
	if (strcmp(a.buf, b.buf))
		p_warn("the events differ from the recording's (a glob matched others on this kernel): was %s now %s",
		       a.buf, b.buf);
	free(nm);
}

int cmd_rerun(int argc, char **argv)
{
	struct args a = { 0 }, rec = { 0 };
	struct ks_common c;
	struct utsname u;
	const char *file, *val;
	char *m, buf[64], pid[32];
	size_t mlen = 0;
	int rc, cmd;

	ks_common_init(&c);
	file = parse_file_args(&rerun_spec, argc, argv, &c, rerun_opt, &c.output, &rc);
	if (!file)
		return rc;
	if (!c.output) {
		p_err("rerun needs -o NEW, the file to record into");
		return 2;
	}
	m = read_manifest(file, &mlen);
	if (!m)
		return 2;
	ks_rec_kv_each(m, mlen, collect_arg, &a);
	if (a.oom || !a.n) {
		p_err(a.oom ? "out of memory" : "'%s' keeps no arguments in its manifest (made by an older ksight)", file);
		free(m);
		args_free(&a);
		return a.oom ? 1 : 2;
	}
	if (!uname(&u)) {
		warn_differs(m, mlen, "kernel.release", u.release, "kernel release");
		warn_differs(m, mlen, "host", u.nodename, "host");
	}
	snprintf(buf, sizeof(buf), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	warn_differs(m, mlen, "cpu.online", buf, "online CPU count");
	if (!c.pid && ks_rec_kv_get(m, mlen, "filter.pid", pid, sizeof(pid)) && kill(atoi(pid), 0) && errno == ESRCH) {
		p_err("the recording followed -p %s, which is not running here: give -p PID, the process to follow now",
		      pid);
		free(m);
		args_free(&a);
		return 2;
	}
	if (ks_rec_kv_get(m, mlen, "anonymized", buf, sizeof(buf)))
		p_warn("'%s' is anonymized: filters on names in its arguments may hold tokens, not names", file);

	/* the recorded options, less the output (and the duration or pid when given anew), then the new ones,
	 * then "-- CMD" as it was: the command's own arguments are not ksight's options */
	for (cmd = 0; cmd < a.n && strcmp(a.v[cmd], "--"); cmd++)
		;
	args_push(&rec, "record");
	for (int i = 0; i < cmd; i++) {
		if (is_opt(a.v[i], 'o', "output", &val) || (c.duration > 0 && is_opt(a.v[i], 'd', "duration", &val)) ||
		    (c.pid && is_opt(a.v[i], 'p', "pid", &val))) {
			if (!val)
				i++;
			continue;
		}
		args_push(&rec, a.v[i]);
	}
	args_push(&rec, "-o");
	args_push(&rec, c.output);
	if (c.duration > 0) {
		snprintf(buf, sizeof(buf), "%.9g", c.duration);
		args_push(&rec, "-d");
		args_push(&rec, buf);
	}
	if (c.pid) {
		snprintf(pid, sizeof(pid), "%u", c.pid);
		args_push(&rec, "-p");
		args_push(&rec, pid);
	}
	for (int i = cmd; i < a.n; i++)
		args_push(&rec, a.v[i]);
	args_free(&a);
	if (rec.oom) {
		p_err("out of memory");
		rc = 1;
	} else {
		fprintf(stderr, "ksight: rerun of %s:", file);
		for (int i = 0; i < rec.n; i++)
			fprintf(stderr, " %s", rec.v[i]);
		fputc('\n', stderr);
		rc = cmd_record(rec.n, rec.v);
		if (!rc)
			compare_events(m, mlen, c.output);
	}
	args_free(&rec);
	free(m);
	return rc;
}
