/* `ksight unpin DIR`: removes what `serve --pin DIR` left in bpffs (links, programs, maps, saved counters), detaching the programs. */
#include <errno.h>
#include <stdio.h>
#include "cli/commands.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/pin.h"

static const struct ks_cmd_spec unpin_spec = {
	.name = "unpin",
	.args = "DIR",
	.summary = "Remove what 'ksight serve --pin DIR' left pinned: its links (the programs detach),\n"
		   "programs, maps and saved counters, then DIR.  Pins ksight did not make are left alone.",
};

int cmd_unpin(int argc, char **argv)
{
	struct ks_common c;
	int idx, err;

	ks_common_init(&c);
	idx = ks_opts_parse(&unpin_spec, argc, argv, &c, NULL, NULL);
	if (idx == KS_OPTS_HELP)
		return 0;
	if (idx < 0)
		return 2;
	if (idx != argc - 1) {
		p_err("unpin: expected one DIR, the one given to 'serve --pin'; see 'ksight unpin -h'");
		return 2;
	}
	err = ks_pin_remove(argv[idx]);
	return err == -EINVAL ? 2 : err ? 1 : 0;
}
