/* The set-up and teardown every driver shares: -- CMD, the output, the announcement, collector instances from names to close. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/cmd.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/parse.h"
#include "core/pin.h"
#include "drive/setup.h"

/* One name: refused when unknown, given twice or one too many; else initialised at the end. */
static int add_one(struct ks_instance *in, int *n, int max, const char *name, const char *driver)
{
	const struct ks_collector *col = ks_collector_find(name);
	int err;

	if (!col) {
		p_err("%s: unknown collector '%s'; see 'ksight -h'", driver, KS_ESC(name));
		return -EINVAL;
	}
	for (int i = 0; i < *n; i++)
		if (in[i].col == col) {
			p_err("%s: collector '%s' given twice", driver, name);
			return -EINVAL;
		}
	if (*n == max) {
		p_err("%s: too many collectors", driver);
		return -EINVAL;
	}
	err = ks_instance_init(&in[*n], col);
	if (err) {
		p_err("%s: cannot set up: %s", name, strerror(-err));
		return err;
	}
	(*n)++;
	return 0;
}

int ks_drive_add(struct ks_instance *in, int *n, int max, const char *list, const char *driver)
{
	char *dup = strdup(list), *save = NULL;
	int err = 0;

	if (!dup) {
		p_err("out of memory");
		return -ENOMEM;
	}
	for (char *t = strtok_r(dup, ",", &save); t && !err; t = strtok_r(NULL, ",", &save))
		err = add_one(in, n, max, t, driver);
	free(dup);
	return err;
}

int ks_drive_add_funclat(struct ks_instance *in, int *n, int max, const char *driver)
{
	for (int i = 0; i < *n; i++)
		if (in[i].col == ks_collector_find("funclat"))
			return 0;
	return add_one(in, n, max, "funclat", driver);
}

int ks_drive_open(struct ks_instance *in, int n, const struct ks_filter *f, ks_drive_opened_fn opened, void *ctx,
		  int *tried)
{
	int err = 0;

	*tried = 0;
	for (int i = 0; i < n && !err; i++) {
		/* a prepare that took over pinned programs counts itself: compared around this one open */
		unsigned int adoptions = ks_pin_adoptions();

		(*tried)++;
		err = ks_instance_open(&in[i], f);
		if (err) {
			ks_report_open_error(in[i].col, err);
			break;
		}
		if (opened)
			err = opened(ctx, i, ks_pin_adoptions() != adoptions);
	}
	return err;
}

void ks_drive_say(const struct ks_instance *in, int n, const char *verb, const char *each, const char *last)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "ksight: %s %s (hook %s)%s\n", verb, in[i].col->spec.name,
			in[i].col->hook ? in[i].col->hook(in[i].ctx) : "?", i + 1 < n ? each : last);
}

void ks_drive_close(struct ks_instance *in, int n)
{
	for (int i = 0; i < n; i++)
		ks_instance_close(&in[i]);
}

int ks_drive_spawn(struct ks_common *c, struct ks_cmd *cmd)
{
	int err;

	if (!c->cmd_argv)
		return 0;
	err = ks_cmd_spawn(cmd, c->cmd_argv);
	if (err)
		return err == -EINVAL ? 2 : 1;
	c->cmd = cmd;
	return 0;
}

int ks_drive_sink(struct ks_sink *s, const char *path)
{
	if (path)
		return ks_sink_open(s, path, &ks_stop_signal);
	ks_sink_stdout(s, &ks_stop_signal);
	return 0;
}

const char *ks_drive_until(const struct ks_common *c)
{
	return c->duration ? "" : c->pid ? "; Ctrl-C or the process's exit ends"
			 : c->cmd ? "; Ctrl-C or the command's exit ends" : "; Ctrl-C to end";
}
