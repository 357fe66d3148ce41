/* record --filter, --trigger and --trigger-latency: compiled or checked against the recorded events' formats before anything is loaded or attached. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "core/log.h"
#include "core/parse.h"
#include "events/filter.h"
#include "record/recorder.h"

struct ks_flt_prog *ks_rec_filters(const char *text, const struct ks_rec_tps *tps)
{
	struct ks_flt_err err;
	struct ks_flt_expr *x = ks_flt_parse(text, &err);
	struct ks_flt_prog *progs = NULL;

	if (x)
		progs = calloc((size_t)tps->n, sizeof(*progs));
	if (x && !progs) {
		err.col = -1;
		snprintf(err.msg, sizeof(err.msg), "out of memory");
	}
	/* every event must have the fields: the first that lacks one is named */
	for (int i = 0; progs && i < tps->n; i++)
		if (ks_flt_compile_format(x, tps->v[i].sys, tps->v[i].format, &progs[i], &err)) {
			free(progs);
			progs = NULL;
		}
	if (!progs)
		ks_flt_report("--filter", text, &err);
	ks_flt_expr_free(x);
	return progs;
}

struct ks_flt_prog *ks_rec_triggers(const char *text, const struct ks_rec_tps *tps)
{
	struct ks_flt_err err, first = { .col = -1 };
	struct ks_flt_expr *x = ks_flt_parse(text, &err);
	struct ks_flt_prog *progs = NULL;
	int ok = 0;

	if (!x) {
		ks_flt_report("--trigger", text, &err);
		return NULL;
	}
	progs = calloc((size_t)tps->n, sizeof(*progs));
	/* a trigger names a marker event's fields: the other events simply never trigger */
	for (int i = 0; progs && i < tps->n; i++) {
		if (!ks_flt_compile_format(x, tps->v[i].sys, tps->v[i].format, &progs[i], &err))
			ok++;
		else if (first.col == -1 && !first.msg[0])
			first = err;
	}
	if (progs && !ok) {
		ks_flt_report("--trigger", text, &first);
		free(progs);
		progs = NULL;
	}
	ks_flt_expr_free(x);
	return progs;
}

void ks_rec_latency_free(struct ks_rec_latency *l)
{
	if (l->tep)
		tep_free(l->tep);
	free(l->pair_text);
	free(l->keys);
	memset(l, 0, sizeof(*l));
}

/* One side of the pair: a single event, added to the recorded ones when -e did not name it. */
static int latency_event(const char *arg, struct ks_rec_tps *tps, const char *ev, size_t len)
{
	char name[256];
	int err;

	if (len >= sizeof(name) || strcspn(ev, "*?[") < len) {
		p_err("invalid --trigger-latency '%s': '%.*s' must be one event, SUBSYSTEM:EVENT without globs",
		      KS_ESC(arg), (int)len, ev);
		return -EINVAL;
	}
	memcpy(name, ev, len);
	name[len] = '\0';
	err = ks_rec_tps_add(tps, name); /* says itself what is wrong */
	return err == -ENOENT ? -EINVAL : err;
}

int ks_rec_latency_parse(struct ks_rec_latency *l, const char *arg, struct ks_rec_tps *tps)
{
	const char *gt = strrchr(arg, '>'), *sp = strpbrk(arg, " \t"), *slash = strchr(arg, '/'), *keys;
	double sec;
	int err;

	memset(l, 0, sizeof(*l));
	if (!gt || !sp || sp > gt || !slash || slash > sp) {
		p_err("invalid --trigger-latency '%s': expected 'START/END KEYS>DURATION', e.g. "
		      "'raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>20ms'", KS_ESC(arg));
		return -EINVAL;
	}
	/* a unit is required: a bare ">20" (seconds, as elsewhere) is too easily meant as milliseconds */
	if (!*gt || !isalpha((unsigned char)gt[strlen(gt) - 1]) || ks_parse_seconds(gt + 1, &sec) || sec * 1e9 < 1 ||
	    sec > 3600) {
		p_err("invalid --trigger-latency duration '%s': expected a time from 1ns to 1h with its unit, "
		      "e.g. 20ms (ns, us, ms, s)", KS_ESC(gt + 1));
		return -EINVAL;
	}
	l->threshold_ns = (uint64_t)(sec * 1e9 + 0.5);
	for (keys = sp; isspace((unsigned char)*keys); keys++)
		;
	/* the spelling "key=pid": a leading "key=" names the keys (a field called key: key=key) */
	if (!strncmp(keys, "key=", 4))
		keys += 4;
	l->pair_text = strndup(arg, (size_t)(sp - arg));
	l->keys = strndup(keys, (size_t)(gt - keys));
	if (!l->pair_text || !l->keys) {
		ks_rec_latency_free(l);
		return -ENOMEM;
	}
	err = latency_event(arg, tps, arg, (size_t)(slash - arg));
	if (!err)
		err = latency_event(arg, tps, slash + 1, (size_t)(sp - slash - 1));
	if (!err && !(l->tep = tep_alloc()))
		err = -ENOMEM;
	for (int i = 0; !err && i < tps->n; i++)
		if (tep_parse_event(l->tep, tps->v[i].format, strlen(tps->v[i].format), tps->v[i].sys)) {
			p_err("cannot parse the format of %s:%s", tps->v[i].sys, tps->v[i].name);
			err = -EINVAL;
		}
	if (!err)
		err = ks_pair_parse_tep(&l->pair, l->tep, l->pair_text, l->keys, "--trigger-latency",
					"--trigger-latency keys", "recorded");
	if (err)
		ks_rec_latency_free(l);
	return err;
}
