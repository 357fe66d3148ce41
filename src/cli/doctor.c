/* `ksight doctor`: what this kernel and machine can trace (filled in by the doctor work). */
#include <stdio.h>
#include "cli/commands.h"
#include "core/probe.h"

int cmd_doctor(int argc, char **argv)
{
	int ok = 1;

	(void)argc;
	(void)argv;
	for (int f = 0; f < KS_FEAT_COUNT; f++) {
		const struct ks_probe_result *r = ks_probe(f);

		printf("%-14s %s\n", ks_feature_name(f), r->ok ? "OK" : "MISSING");
	}
	return ok ? 0 : 1;
}
