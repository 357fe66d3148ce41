/* `ksight list [GLOB] [-v]`: the kernel's tracepoints from tracefs, with -v their fields parsed by libtraceevent. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include <tracefs.h>
#include "cli/commands.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/tracefs.h"

static const struct ks_cmd_spec list_spec = {
	.name = "list",
	.summary = "List tracepoints as SYSTEM:EVENT, all or those matching GLOB (e.g. 'sched:*', "
		   "'block:block_rq_*', 'sched_switch'); -v adds each event's fields with type, offset and size.",
	.args = "[GLOB]",
	.common = KS_O_JSON | KS_O_OUTPUT,
};

struct match {
	char *system, *event;
};

struct matches {
	struct match *m;
	size_t n, cap;
};

static int add_match(struct matches *ms, const char *sys, const char *ev)
{
	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 256;
		struct match *n = realloc(ms->m, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ms->m = n;
		ms->cap = cap;
	}
	ms->m[ms->n].system = strdup(sys);
	ms->m[ms->n].event = strdup(ev);
	if (!ms->m[ms->n].system || !ms->m[ms->n].event) {
		free(ms->m[ms->n].system);
		free(ms->m[ms->n].event);
		return -ENOMEM;
	}
	ms->n++;
	return 0;
}

static int cmp_match(const void *a, const void *b)
{
	const struct match *x = a, *y = b;
	int c = strcmp(x->system, y->system);

	return c ? c : strcmp(x->event, y->event);
}

/*
 * "SYS:EVENT" globs each part; a glob without ':' is matched against the
 * event name in every system, so 'sched_switch' finds sched:sched_switch.
 */
static int find_events(const char *dir, const char *glob, struct matches *ms)
{
	char *sys_glob = NULL, *ev_glob = NULL, **systems;
	int err = 0;

	if (glob) {
		const char *colon = strchr(glob, ':');

		sys_glob = strndup(glob, colon ? (size_t)(colon - glob) : 0);
		ev_glob = strdup(colon ? colon + 1 : glob);
		if (!sys_glob || !ev_glob) {
			err = -ENOMEM;
			goto out;
		}
	}
	systems = tracefs_event_systems(dir);
	if (!systems) {
		err = errno ? -errno : -ENOENT;
		goto out;
	}
	for (int i = 0; systems[i] && !err; i++) {
		char **events;

		if (sys_glob && sys_glob[0] && fnmatch(sys_glob, systems[i], 0))
			continue;
		events = tracefs_system_events(dir, systems[i]);
		for (int j = 0; events && events[j] && !err; j++)
			if (!ev_glob || !fnmatch(ev_glob, events[j], 0))
				err = add_match(ms, systems[i], events[j]);
		tracefs_list_free(events);
	}
	tracefs_list_free(systems);
	/* no match leaves ms->m NULL, which qsort must not be given even for 0 elements */
	if (ms->n)
		qsort(ms->m, ms->n, sizeof(ms->m[0]), cmp_match);
out:
	free(sys_glob);
	free(ev_glob);
	return err;
}

/* The systems of @ms, each once, NULL-terminated, for loading only their formats. */
static const char **systems_of(const struct matches *ms)
{
	const char **s = calloc(ms->n + 1, sizeof(*s));
	size_t n = 0;

	if (!s)
		return NULL;
	for (size_t i = 0; i < ms->n; i++)
		if (!n || strcmp(s[n - 1], ms->m[i].system))
			s[n++] = ms->m[i].system; /* ms is sorted by system */
	return s;
}

static void field_text(FILE *out, const struct tep_format_field *f)
{
	char decl[160];

	/* the format's declaration, as "type name" or "type name[len]" */
	snprintf(decl, sizeof(decl), "%s %s%s", f->type, f->name,
		 (f->flags & TEP_FIELD_IS_ARRAY) && !strchr(f->type, '[') && f->arraylen ? "[]" : "");
	fprintf(out, "    %-44s offset:%-4d size:%-4d%s\n", decl, f->offset, f->size,
		(f->flags & TEP_FIELD_IS_SIGNED) ? " signed" : "");
}

static void field_json(struct ks_json *j, const struct tep_format_field *f)
{
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "name", f->name);
	ks_json_kv_str(j, "type", f->type);
	ks_json_kv_u64(j, "offset", (uint64_t)f->offset);
	ks_json_kv_u64(j, "size", (uint64_t)f->size);
	ks_json_key(j, "signed");
	ks_json_bool(j, (f->flags & TEP_FIELD_IS_SIGNED) != 0);
	ks_json_obj_end(j);
}

/* Writes every match; with @tep, each with its fields (common ones left out). */
static int write_list(FILE *out, const struct matches *ms, struct tep_handle *tep, bool json)
{
	struct ks_json *j = NULL;

	if (json) {
		j = ks_json_new(out);
		if (!j)
			return -ENOMEM;
		ks_json_obj_begin(j);
		ks_json_key(j, "events");
		ks_json_arr_begin(j);
	}
	for (size_t i = 0; i < ms->n; i++) {
		struct tep_event *ev = tep ? tep_find_event_by_name(tep, ms->m[i].system, ms->m[i].event) : NULL;
		struct tep_format_field **fields = ev ? tep_event_fields(ev) : NULL;

		if (json) {
			ks_json_obj_begin(j);
			ks_json_kv_str(j, "system", ms->m[i].system);
			ks_json_kv_str(j, "event", ms->m[i].event);
			if (ev) {
				ks_json_kv_u64(j, "id", (uint64_t)ev->id);
				ks_json_key(j, "fields");
				ks_json_arr_begin(j);
				for (int f = 0; fields && fields[f]; f++)
					field_json(j, fields[f]);
				ks_json_arr_end(j);
			}
			ks_json_obj_end(j);
		} else {
			fprintf(out, "%s:%s\n", ms->m[i].system, ms->m[i].event);
			for (int f = 0; fields && fields[f]; f++)
				field_text(out, fields[f]);
			if (tep && !ev)
				fprintf(out, "    (format not readable)\n");
		}
		free(fields);
	}
	if (json) {
		ks_json_arr_end(j);
		ks_json_obj_end(j);
		ks_json_free(j);
		fputc('\n', out);
	}
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

int cmd_list(int argc, char **argv)
{
	struct ks_common c;
	struct matches ms = { 0 };
	struct tep_handle *tep = NULL;
	const char *glob = NULL, *dir;
	FILE *out = stdout;
	int idx, err, ret = 1;

	ks_common_init(&c);
	idx = ks_opts_parse(&list_spec, argc, argv, &c, NULL, NULL);
	if (idx == KS_OPTS_HELP)
		return 0;
	if (idx < 0)
		return 2;
	if (idx < argc) {
		/* options may follow the GLOB ("list sched:* -v"): parse the rest
		 * with the GLOB standing in for the command name */
		int rest;

		glob = argv[idx];
		rest = ks_opts_parse(&list_spec, argc - idx, argv + idx, &c, NULL, NULL);
		if (rest == KS_OPTS_HELP)
			return 0;
		if (rest < 0)
			return 2;
		idx += rest;
	}
	if (idx < argc) {
		p_err("list: unexpected argument '%s'; one GLOB at most, see 'ksight list -h'", KS_ESC(argv[idx]));
		return 2;
	}
	dir = ks_tracefs_dir(NULL);
	err = ks_tracefs_access();
	if (!dir || err) {
		char why[320];

		p_err("list: %s", ks_tracefs_explain(err ? err : -ENODEV, why, sizeof(why)));
		return 1;
	}
	err = find_events(dir, glob, &ms);
	if (err) {
		p_err("list: cannot read the events under '%s': %s", dir, strerror(-err));
		goto out;
	}
	if (!ms.n) {
		p_err("list: no tracepoint matches '%s'; try 'ksight list' for all", KS_ESC(glob ? glob : ""));
		goto out;
	}
	if (ks_verbose) {
		const char **systems = systems_of(&ms);

		tep = systems ? tracefs_local_events_system(dir, systems) : NULL;
		free(systems);
		if (!tep) {
			p_err("list: cannot parse the event formats under '%s': %s", dir, strerror(errno ? errno : EINVAL));
			goto out;
		}
	}
	if (c.output) {
		out = ks_file_fopen(c.output, KS_FILE_TRUNC);
		if (!out) {
			p_err("list: cannot open output '%s': %s", KS_ESC(c.output), ks_file_strerror(c.output, -errno));
			ret = 2;
			goto out;
		}
	}
	err = write_list(out, &ms, tep, c.json);
	if (err)
		p_err("list: cannot write the list: %s", strerror(-err));
	else
		ret = 0;
	if (out != stdout && fclose(out)) {
		p_err("list: cannot write '%s': %s", KS_ESC(c.output), strerror(errno));
		ret = 1;
	}
out:
	tep_free(tep);
	for (size_t i = 0; i < ms.n; i++) {
		free(ms.m[i].system);
		free(ms.m[i].event);
	}
	free(ms.m);
	return ret;
}
