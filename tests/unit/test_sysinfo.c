/* Unit test: environment capture read from a fixture /proc and /sys tree (topology, governors, cgroups, kconfig). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/json.h"
#include "core/sysinfo.h"
#include "output/doctor.h"

#define FIXTURE "tests/unit/fixtures/sysinfo"

static int failed;

static void check(const char *name, int ok)
{
	printf("%s: %s\n", ok ? "PASS" : "FAIL", name);
	failed |= !ok;
}

static void check_int(const char *name, long long want, long long got)
{
	if (want != got)
		printf("FAIL: %s: expected %lld, got %lld\n", name, want, got);
	else
		printf("PASS: %s\n", name);
	failed |= want != got;
}

static void check_str(const char *name, const char *want, const char *got)
{
	if (strcmp(want, got))
		printf("FAIL: %s: expected '%s', got '%s'\n", name, want, got);
	else
		printf("PASS: %s\n", name);
	failed |= !!strcmp(want, got);
}

int main(void)
{
	static struct ks_sysinfo si;
	char *buf = NULL;
	size_t len = 0;
	struct ks_json *j;
	FILE *m;

	check_int("gather from fixture", 0, ks_sysinfo_gather(&si, FIXTURE));
	check_str("release", "6.1.0-test-amd64", si.release);
	check_str("version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.99-1 (2024-07-01)", si.version);
	check_str("machine from the arch sysctl", "x86_64", si.machine);

	/* no /proc/config.gz in the fixture: the /boot copy is the fallback */
	check_str("kconfig source", "/boot/config-6.1.0-test-amd64", si.kconfig_src);
	check_int("CONFIG_KPROBES=y", 'y', si.kconfig[KS_KCFG_KPROBES]);
	check_int("CONFIG_UPROBE_EVENTS=m", 'm', si.kconfig[KS_KCFG_UPROBE_EVENTS]);
	check_int("'is not set' reads as n", 'n', si.kconfig[KS_KCFG_FUNCTION_TRACER]);
	check_int("absent option reads as n", 'n', si.kconfig[KS_KCFG_FTRACE_DIRECT_CALLS]);
	check("btf file present", si.btf_vmlinux);

	check("CapEff read", si.caps_known && si.cap_eff == 0);
	check("no CAP_BPF", !ks_sysinfo_has_cap(&si, KS_CAP_BPF));
	check_int("perf_event_paranoid", 3, si.perf_event_paranoid);
	check_int("kptr_restrict", 1, si.kptr_restrict);
	check_int("missing sysctl is unknown", KS_SI_UNKNOWN, si.unprivileged_bpf_disabled);

	check_str("securityfs mount", "/sys/kernel/security", si.securityfs);
	check_str("lockdown: the bracketed mode", "integrity", si.lockdown);
	check_str("no tracefs mount", "", si.tracefs);

	check_str("clocksource", "hpet", si.clocksource);
	check("tsc is an available clock source", si.tsc_clocksource);
	check_str("cpu model", "Test CPU @ 2.00GHz", si.cpu_model);
	check("x86 flags found", si.cpu_flags_known);
	/* "constant_tsc" and "tsc_known_freq" contain "tsc" but are other words */
	check("tsc flag matched as a whole word", !si.tsc);
	check("constant_tsc", si.constant_tsc);
	check("no nonstop_tsc", !si.nonstop_tsc);
	check("no hypervisor", !si.hypervisor);

	check_int("cpus online", 4, si.cpus_online);
	check_int("cpus possible", 8, si.cpus_possible);
	check_int("sockets", 2, si.sockets);
	/* cpu0 and cpu1 are SMT siblings of one core */
	check_int("cores", 3, si.cores);
	check_int("numa nodes", 2, si.numa_nodes);

	check_int("cpus with cpufreq", 3, si.cpufreq_cpus);
	check_str("cpufreq driver", "intel_pstate", si.cpufreq_driver);
	check_int("distinct governors", 2, si.ngovernors);
	check_str("first governor", "performance", si.governors[0]);
	check_str("second governor", "powersave", si.governors[1]);

	check_int("cgroup mode v2", KS_CG_V2, si.cgroup);
	check_str("cgroup2 mount", "/sys/fs/cgroup", si.cgroup2);
	check_int("no v1 mounts", 0, si.ncgroup_v1);

	check_int("missing root fails with ENOENT", -ENOENT, ks_sysinfo_gather(&si, FIXTURE "/nonexistent"));

	/* the JSON form, as a recording manifest will embed it */
	ks_sysinfo_gather(&si, FIXTURE);
	m = open_memstream(&buf, &len);
	j = ks_json_new(m);
	ks_sysinfo_write_json(&si, j);
	ks_json_free(j);
	fclose(m);
	check("json: kernel object", strstr(buf, "\"kernel\":{\"release\":\"6.1.0-test-amd64\"") != NULL);
	check("json: unknown sysctl is null", strstr(buf, "\"unprivileged_bpf_disabled\":null") != NULL);
	check("json: cpu counts", strstr(buf, "\"online\":4,\"possible\":8,\"sockets\":2,\"cores\":3,\"numa_nodes\":2") != NULL);
	check("json: governors", strstr(buf, "\"governors\":[\"performance\",\"powersave\"]") != NULL);
	check("json: cgroup", strstr(buf, "\"cgroup\":{\"mode\":\"v2\",\"v2\":\"/sys/fs/cgroup\",\"v1\":[]}") != NULL);
	check("json: clock sources as a list", strstr(buf, "\"clocksource\":{\"current\":\"hpet\",\"available\":[\"tsc\",\"hpet\",\"acpi_pm\"]}") != NULL);
	check("json: tracefs null", strstr(buf, "\"tracefs\":null") != NULL);
	free(buf);
	return failed;
}
