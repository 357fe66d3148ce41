/* Unit test: the doctor's writers on fixture checks, and its judgement on fixture facts and probe results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/checks.h"
#include "output/doctor.h"

#define FIXTURE "tests/unit/fixtures/sysinfo"

static int failed;

static void check(const char *name, int ok)
{
	printf("%s: %s\n", ok ? "PASS" : "FAIL", name);
	failed |= !ok;
}

static void check_str(const char *name, const char *want, const char *got)
{
	if (strcmp(want, got))
		printf("FAIL: %s:\n--- expected\n%s\n--- got\n%s\n", name, want, got);
	else
		printf("PASS: %s\n", name);
	failed |= !!strcmp(want, got);
}

static void check_status(const struct ks_checks *l, const char *name, enum ks_status want)
{
	const struct ks_check *c = ks_checks_find(l, name);
	char n[96];

	snprintf(n, sizeof(n), "%s is %s", name, ks_status_name(want));
	if (!c)
		printf("FAIL: %s: no such check\n", n);
	else if (c->status != want)
		printf("FAIL: %s: got %s (%s)\n", n, ks_status_name(c->status), c->value);
	else
		printf("PASS: %s\n", n);
	failed |= !c || c->status != want;
}

/* The fix of check @name contains @part. */
static void check_fix(const struct ks_checks *l, const char *name, const char *part)
{
	const struct ks_check *c = ks_checks_find(l, name);
	char n[128];

	snprintf(n, sizeof(n), "%s fix mentions '%s'", name, part);
	check(n, c && strstr(c->fix, part));
	if (c && !strstr(c->fix, part))
		printf("  fix was: %s\n", c->fix);
}

typedef int (*writer)(const struct ks_checks *l, FILE *out, bool verbose);

/* Renders @l with @w into a string the caller frees. */
static char *render(writer w, const struct ks_checks *l, bool verbose)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	if (w(l, m, verbose))
		printf("FAIL: writer returned an error\n");
	fclose(m);
	return buf;
}

static void test_writers(void)
{
	static struct ks_checks l;
	struct ks_check *c;
	char *s;

	ks_checks_init(&l, "6.1.0-fixture");
	c = ks_checks_add(&l, "tp_btf", KS_ST_OK, "attached to %s", "sched_switch");
	ks_check_set_detail(c, "probe loaded and attached");
	c = ks_checks_add(&l, "cpufreq", KS_ST_WARN, "no cpufreq");
	ks_check_set_impact(c, "policy invisible");
	ks_check_set_fix(c, "none inside the VM");
	c = ks_checks_add(&l, "kprobe", KS_ST_MISSING, "not available (%s failed)", "attach");
	ks_check_set_impact(c, "no \"kprobe\" fallback");
	ks_check_set_fix(c, "use CONFIG_KPROBES=y");
	ks_check_set_detail(c, "probe step 'attach' failed: No such file or directory (ENOENT)");
	/* an OK check keeps whatever impact text it was given out of the output */
	ks_check_set_impact(&l.c[0], "never shown");
	l.tracing_possible = true;
	snprintf(l.summary, sizeof(l.summary), "tracing is possible; kernel hooks: tp_btf");

	/* the expected text in pieces: -v inserts the detail lines between them */
#define T_HEAD "ksight doctor: Linux 6.1.0-fixture\n\n" \
	       "OK       tp_btf                    attached to sched_switch\n"
#define T_MID "WARN     cpufreq                   no cpufreq\n" \
	      "         impact: policy invisible\n" \
	      "         fix:    none inside the VM\n" \
	      "MISSING  kprobe                    not available (attach failed)\n" \
	      "         impact: no \"kprobe\" fallback\n" \
	      "         fix:    use CONFIG_KPROBES=y\n"
#define T_FOOT "\ntracing is possible; kernel hooks: tp_btf\n(1 OK, 1 WARN, 1 MISSING)\n"
	s = render(ks_checks_write_text, &l, false);
	check_str("text", T_HEAD T_MID T_FOOT, s ? s : "");
	free(s);

	s = render(ks_checks_write_text, &l, true);
	check_str("text -v adds detail lines",
		  T_HEAD "         detail: probe loaded and attached\n" T_MID
			 "         detail: probe step 'attach' failed: No such file or directory (ENOENT)\n" T_FOOT,
		  s ? s : "");
	free(s);

	s = render(ks_checks_write_json, &l, false);
	check_str("json", "{\"kernel\":\"6.1.0-fixture\",\"checks\":["
			  "{\"name\":\"tp_btf\",\"status\":\"OK\",\"value\":\"attached to sched_switch\",\"impact\":null,\"fix\":null},"
			  "{\"name\":\"cpufreq\",\"status\":\"WARN\",\"value\":\"no cpufreq\",\"impact\":\"policy invisible\",\"fix\":\"none inside the VM\"},"
			  "{\"name\":\"kprobe\",\"status\":\"MISSING\",\"value\":\"not available (attach failed)\",\"impact\":\"no \\\"kprobe\\\" fallback\",\"fix\":\"use CONFIG_KPROBES=y\"}],"
			  "\"tracing_possible\":true,\"summary\":\"tracing is possible; kernel hooks: tp_btf\"}\n",
		  s ? s : "");
	free(s);

	s = render(ks_checks_write_json, &l, true);
	check("json -v: detail member", s && strstr(s, "\"fix\":null,\"detail\":\"probe loaded and attached\"}"));
	check("json -v: empty detail is null", s && strstr(s, "\"fix\":\"none inside the VM\",\"detail\":null}"));
	free(s);

	l.n = KS_MAX_CHECKS;
	errno = 0;
	check("full list refuses with ENOSPC", !ks_checks_add(&l, "x", KS_ST_OK, "x") && errno == ENOSPC);
}

/* Every check that is not OK says what is lost and how to fix it. */
static bool all_explained(const struct ks_checks *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->c[i].status != KS_ST_OK && (!l->c[i].impact[0] || !l->c[i].fix[0])) {
			printf("  %s has no impact or fix\n", l->c[i].name);
			return false;
		}
	return true;
}

static void set_all(struct ks_doctor_input *in, bool ok, int err, const char *step)
{
	for (int f = 0; f < KS_FEAT_COUNT; f++)
		in->probe[f] = (struct ks_probe_result){ .ok = ok, .err = ok ? 0 : err, .step = step };
}

/* An unprivileged user on the fixture machine: every BPF load refused, BTF readable. */
static void test_unprivileged(void)
{
	static struct ks_sysinfo si;
	static struct ks_checks l;
	struct ks_doctor_input in = { .si = &si, .tracefs_err = -EPERM };
	char *s;

	if (ks_sysinfo_gather(&si, FIXTURE)) {
		check("fixture readable", 0);
		return;
	}
	set_all(&in, false, -EPERM, "load");
	in.probe[KS_FEAT_BTF] = (struct ks_probe_result){ .ok = true, .step = "load" };
	check("evaluate", ks_checks_evaluate(&in, &l) == 0);
	check("unprivileged: tracing not possible", !l.tracing_possible);
	check_str("unprivileged: summary",
		  "tracing is not possible: not privileged (see capabilities)", l.summary);
	check_status(&l, "kernel", KS_ST_OK);
	check_status(&l, "btf", KS_ST_OK);
	check_status(&l, "capabilities", KS_ST_MISSING);
	check_status(&l, "tp_btf", KS_ST_MISSING);
	/* the privilege fix wins over the kernel-config one: root may well have fentry */
	check_fix(&l, "fentry", "run as root, or give ksight CAP_BPF and CAP_PERFMON");
	check_fix(&l, "capabilities", "setcap cap_bpf,cap_perfmon+ep");
	check_fix(&l, "capabilities", "run as root");
	check_status(&l, "perf_event_paranoid", KS_ST_WARN);
	check_status(&l, "kptr_restrict", KS_ST_WARN);
	check_fix(&l, "kptr_restrict", "CAP_SYSLOG");
	check_status(&l, "unprivileged_bpf_disabled", KS_ST_WARN);
	check_status(&l, "lockdown", KS_ST_OK);
	check_status(&l, "tracefs", KS_ST_MISSING);
	check_str("tracefs: mounting needs CAP_SYS_ADMIN", "not mounted; mounting it needs CAP_SYS_ADMIN",
		  ks_checks_find(&l, "tracefs")->value);
	check_fix(&l, "tracefs", "mount -t tracefs -o gid=");
	check_status(&l, "clocksource", KS_ST_WARN);
	check_fix(&l, "clocksource", "echo tsc >");
	check_status(&l, "tsc", KS_ST_WARN);
	check_status(&l, "cpus", KS_ST_OK);
	check_str("cpus value: uneven SMT shown as threads",
		  "4 online of 8 possible; 2 sockets, 3 cores, 4 threads; 2 NUMA nodes; Test CPU @ 2.00GHz",
		  ks_checks_find(&l, "cpus")->value);
	check_status(&l, "cpufreq", KS_ST_WARN);
	check_str("cpufreq value", "performance, powersave on 3 of 4 CPUs (driver intel_pstate)",
		  ks_checks_find(&l, "cpufreq")->value);
	check_status(&l, "cgroup", KS_ST_OK);
	check("every non-OK check has impact and fix", all_explained(&l));

	s = render(ks_checks_write_json, &l, false);
	check("json carries the system facts", s && strstr(s, ",\"system\":{\"kernel\":{\"release\":\"6.1.0-test-amd64\""));
	check("json tracing_possible false", s && strstr(s, "\"tracing_possible\":false"));
	free(s);
}

/* Root on a kernel without kprobes and trampolines (the development machine's situation). */
static void test_root_without_kprobes(void)
{
	static struct ks_sysinfo si;
	static struct ks_checks l;
	struct ks_doctor_input in = { .si = &si, .tracefs_mounted = true };

	if (ks_sysinfo_gather(&si, FIXTURE)) {
		check("fixture readable", 0);
		return;
	}
	si.cap_eff = ~0ull;
	si.kconfig[KS_KCFG_KPROBES] = 'n';
	snprintf(si.tracefs, sizeof(si.tracefs), "/sys/kernel/tracing");
	set_all(&in, true, 0, "attach");
	in.probe[KS_FEAT_FENTRY] = (struct ks_probe_result){ .err = -EPERM, .step = "load" };
	in.probe[KS_FEAT_KPROBE] = (struct ks_probe_result){ .err = -ENOENT, .step = "attach" };
	check("evaluate", ks_checks_evaluate(&in, &l) == 0);
	check("root: tracing possible", l.tracing_possible);
	check_str("root: summary", "tracing is possible; kernel hooks: tp_btf raw_tp tracepoint", l.summary);
	check_status(&l, "capabilities", KS_ST_OK);
	check_status(&l, "fentry", KS_ST_MISSING);
	check_status(&l, "kprobe", KS_ST_MISSING);
	check_str("kprobe value names the failed step", "not available (attach failed)", ks_checks_find(&l, "kprobe")->value);
	check_str("kprobe detail has the errno", "probe step 'attach' failed: No such file or directory (ENOENT)",
		  ks_checks_find(&l, "kprobe")->detail);
	/* the fixture config lacks CONFIG_FUNCTION_TRACER and CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS */
	check_fix(&l, "fentry", "CONFIG_FUNCTION_TRACER, CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS");
	check_fix(&l, "kprobe", "without CONFIG_KPROBES (/boot/config-6.1.0-test-amd64)");
	check_status(&l, "perf_event_paranoid", KS_ST_OK);
	check_status(&l, "kptr_restrict", KS_ST_OK);
	check_status(&l, "tracefs", KS_ST_OK);
	check_str("tracefs says it was mounted", "not mounted: ksight mounts it at /sys/kernel/tracing for itself while it runs",
		  ks_checks_find(&l, "tracefs")->value);

	/* without BTF nothing CO-RE loads, whatever the hooks say */
	in.probe[KS_FEAT_BTF] = (struct ks_probe_result){ .err = -ENOENT, .step = "load" };
	ks_checks_evaluate(&in, &l);
	check("no BTF: tracing not possible", !l.tracing_possible);
	check_status(&l, "btf", KS_ST_MISSING);
}

/*
 * A user with CAP_BPF and CAP_PERFMON, tracefs root's (0700), and a config
 * with every option: the refusals are permissions, never a kernel to rebuild.
 */
static void test_bpf_perfmon_user(void)
{
	static struct ks_sysinfo si;
	static struct ks_checks l;
	struct ks_doctor_input in = { .si = &si };

	if (ks_sysinfo_gather(&si, FIXTURE)) {
		check("fixture readable", 0);
		return;
	}
	si.cap_eff = 1ull << KS_CAP_BPF | 1ull << KS_CAP_PERFMON;
	memset(si.kconfig, 'y', sizeof(si.kconfig));
	snprintf(si.tracefs, sizeof(si.tracefs), "/sys/kernel/tracing");
	si.tracefs_mode = 0700;
	si.tracefs_readable = false;
	si.euid = si.egid = 1001;
	set_all(&in, true, 0, "attach");
	in.probe[KS_FEAT_FENTRY] = (struct ks_probe_result){ .err = -EPERM, .step = "load" };
	in.probe[KS_FEAT_TP] = (struct ks_probe_result){ .err = -EACCES, .step = "attach" };
	in.probe[KS_FEAT_UPROBE] = (struct ks_probe_result){ .err = -EACCES, .step = "attach" };
	in.probe[KS_FEAT_KPROBE] = (struct ks_probe_result){ .err = -EACCES, .step = "attach" };
	check("evaluate", ks_checks_evaluate(&in, &l) == 0);
	check("bpf+perfmon: tracing possible", l.tracing_possible);
	check("bpf+perfmon: summary says classic tracepoints are out",
	      strstr(l.summary, "not classic tracepoints, as tracefs is not readable") != NULL);
	check_status(&l, "capabilities", KS_ST_OK);
	check_str("capabilities: the five", "CAP_BPF yes, CAP_PERFMON yes, CAP_SYS_ADMIN no, CAP_DAC_READ_SEARCH no, "
					      "CAP_SYS_RESOURCE no", ks_checks_find(&l, "capabilities")->value);
	check_status(&l, "tracefs", KS_ST_MISSING);
	check_str("tracefs: mode and uid", "mounted at /sys/kernel/tracing, mode 0700, owner 0:0: not readable by uid 1001",
		  ks_checks_find(&l, "tracefs")->value);
	check_fix(&l, "tracefs", "add CAP_DAC_READ_SEARCH, or as root: mount -o remount,gid=1001,mode=0750");
	check_fix(&l, "tracepoint", "see the tracefs line");
	check_fix(&l, "uprobe", "the kernel has it (CONFIG_UPROBE_EVENTS=y in /boot/config-6.1.0-test-amd64) but "
				"refused this process: run as root (CAP_SYS_ADMIN)");
	check_fix(&l, "kprobe", "refused this process");
	/* the hooks: each refused, none for want of a kernel option */
	for (int i = 0; i < l.n; i++) {
		char what[96];

		if (!strstr(" fentry tp_btf raw_tp tracepoint kprobe uprobe perf_event ", l.c[i].name))
			continue;

		snprintf(what, sizeof(what), "%s: no kernel to rebuild", l.c[i].name);
		check(what, !strstr(l.c[i].fix, "use a kernel") && !strstr(l.c[i].fix, "built without"));
	}
}

/* kernel_min: a release below the minimum warns; a BTF member a collector needs, when absent, is its own MISSING line. */
static void test_kernel_min(void)
{
	static struct ks_sysinfo si;
	static struct ks_checks l;
	struct ks_doctor_input in = { .si = &si };
	const struct ks_check *c;

	if (ks_sysinfo_gather(&si, FIXTURE)) {
		check("fixture readable", 0);
		return;
	}
	set_all(&in, true, 0, "attach");
	check("evaluate 6.1", ks_checks_evaluate(&in, &l) == 0);
	check_status(&l, "kernel_min", KS_ST_OK);
	c = ks_checks_find(&l, "kernel_min");
	check_str("kernel_min: value", "6.1 >= minimum 5.15", c ? c->value : "");
	check("no member lines while unknown", !ks_checks_find(&l, "biolat_btf"));

	si.kernel_major = 5;
	si.kernel_minor = 10;
	in.btf_needs_known = true;
	in.btf_needs[0] = 0; /* request_queue.disk */
	in.btf_needs[1] = 1;
	check("evaluate 5.10", ks_checks_evaluate(&in, &l) == 0);
	check_status(&l, "kernel_min", KS_ST_WARN);
	check_fix(&l, "kernel_min", "run on Linux 5.15 or later");
	check_status(&l, "biolat_btf", KS_ST_MISSING);
	c = ks_checks_find(&l, "biolat_btf");
	check_str("biolat_btf: value", "no member request_queue.disk in the kernel BTF", c ? c->value : "");
	check_fix(&l, "biolat_btf", "came with Linux 5.15");

	in.btf_needs[0] = 1;
	check("evaluate with both members", ks_checks_evaluate(&in, &l) == 0);
	check("no member line when present", !ks_checks_find(&l, "biolat_btf"));
}

int main(void)
{
	test_kernel_min();
	test_bpf_perfmon_user();
	test_writers();
	test_unprivileged();
	test_root_without_kprobes();
	return failed;
}
