/* `ksight doctor`: what this kernel and machine can trace, what is missing, and how to fix it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/bpfutil.h"
#include "core/checks.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/sysinfo.h"
#include "core/tracefs.h"
#include "output/doctor.h"

static const struct ks_cmd_spec doctor_spec = {
	.name = "doctor",
	.summary = "What this kernel and machine can trace: hooks, capabilities, settings, clocks, CPUs,\n"
		   "cgroups; each line OK, WARN or MISSING, with what is lost and how to fix it.\n"
		   "Mounts tracefs when it is absent. Exits 0 when tracing is possible, 1 when not.",
	.common = KS_O_JSON,
};

int cmd_doctor(int argc, char **argv)
{
	static struct ks_sysinfo si;
	static struct ks_checks checks;
	struct ks_doctor_input in = { .si = &si };
	struct ks_common c;
	int err;

	ks_common_init(&c);
	err = ks_opts_parse_noargs(&doctor_spec, argc, argv, &c, NULL, NULL);
	if (err)
		return err == KS_OPTS_HELP ? 0 : 2;

	/* tracefs first: the tracepoint probe needs it, and the mount shows in the facts below */
	if (!ks_tracefs_dir(&in.tracefs_mounted))
		in.tracefs_err = -errno;
	for (int f = 0; f < KS_FEAT_COUNT; f++)
		in.probe[f] = *ks_probe(f);
	in.btf_needs_known = in.probe[KS_FEAT_BTF].ok;
	for (size_t i = 0; i < sizeof(in.btf_needs); i++)
		in.btf_needs[i] = ks_btf_has_member(ks_btf_needs[i].type, ks_btf_needs[i].member) == 1;
	err = ks_sysinfo_gather(&si, NULL);
	if (err == -ENOMEM) {
		p_err("doctor: out of memory");
		return 1;
	}
	if (err) {
		p_err("doctor: cannot read /proc/sys/kernel/osrelease: %s; is /proc mounted?", strerror(-err));
		return 1;
	}
	err = ks_checks_evaluate(&in, &checks);
	if (err) {
		p_err("doctor: cannot evaluate the checks: %s", strerror(-err));
		return 1;
	}
	err = c.json ? ks_checks_write_json(&checks, stdout, ks_verbose > 0)
		     : ks_checks_write_text(&checks, stdout, ks_verbose > 0);
	if (err)
		return 1; /* main reports the failed write to stdout */
	return checks.tracing_possible ? 0 : 1;
}
