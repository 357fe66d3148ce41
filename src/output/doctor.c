/* Doctor's renderings: the checks (core/checks.c judges them) as text or one JSON document, with the machine's facts (core/sysinfo.c gathers them). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/json.h"
#include "output/doctor.h"

/* A string member, null when the fact is unknown. */
static void kv_str_or_null(struct ks_json *j, const char *k, const char *v)
{
	ks_json_key(j, k);
	if (v && *v)
		ks_json_str(j, v);
	else
		ks_json_null(j);
}

static void kv_int_or_null(struct ks_json *j, const char *k, int v)
{
	ks_json_key(j, k);
	if (v == KS_SI_UNKNOWN)
		ks_json_null(j);
	else
		ks_json_i64(j, v);
}

static void kv_bool(struct ks_json *j, const char *k, bool v)
{
	ks_json_key(j, k);
	ks_json_bool(j, v);
}

void ks_sysinfo_write_json(const struct ks_sysinfo *si, struct ks_json *j)
{
	char hex[20];

	ks_json_obj_begin(j);
	ks_json_key(j, "kernel");
	ks_json_obj_begin(j);
	kv_str_or_null(j, "release", si->release);
	kv_str_or_null(j, "version", si->version);
	kv_str_or_null(j, "machine", si->machine);
	kv_bool(j, "btf", si->btf_vmlinux);
	ks_json_key(j, "config");
	if (si->kconfig_src[0]) {
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "source", si->kconfig_src);
		for (int k = 0; k < KS_KCFG_COUNT; k++) {
			char v[2] = { si->kconfig[k], 0 };

			ks_json_kv_str(j, ks_kconfig_name((enum ks_kconfig)k), v);
		}
		ks_json_obj_end(j);
	} else {
		ks_json_null(j);
	}
	ks_json_obj_end(j);

	ks_json_key(j, "cap_eff");
	if (si->caps_known) {
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)si->cap_eff);
		ks_json_str(j, hex);
	} else {
		ks_json_null(j);
	}
	kv_int_or_null(j, "perf_event_paranoid", si->perf_event_paranoid);
	kv_int_or_null(j, "kptr_restrict", si->kptr_restrict);
	kv_int_or_null(j, "unprivileged_bpf_disabled", si->unprivileged_bpf_disabled);
	kv_str_or_null(j, "lockdown", si->lockdown);
	kv_str_or_null(j, "tracefs", si->tracefs);

	ks_json_key(j, "clocksource");
	ks_json_obj_begin(j);
	kv_str_or_null(j, "current", si->clocksource);
	ks_json_key(j, "available");
	ks_json_arr_begin(j);
	for (const char *p = si->clocksources; *p;) {
		size_t n = strcspn(p, " ");
		char w[sizeof(si->clocksources)];

		if (n) {
			memcpy(w, p, n);
			w[n] = 0;
			ks_json_str(j, w);
		}
		p += n + (p[n] == ' ');
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);

	ks_json_key(j, "cpu");
	ks_json_obj_begin(j);
	kv_str_or_null(j, "model", si->cpu_model);
	ks_json_kv_u64(j, "online", (uint64_t)si->cpus_online);
	ks_json_kv_u64(j, "possible", (uint64_t)si->cpus_possible);
	ks_json_kv_u64(j, "sockets", (uint64_t)si->sockets);
	ks_json_kv_u64(j, "cores", (uint64_t)si->cores);
	ks_json_kv_u64(j, "numa_nodes", (uint64_t)si->numa_nodes);
	ks_json_key(j, "tsc");
	if (si->cpu_flags_known) {
		ks_json_obj_begin(j);
		kv_bool(j, "tsc", si->tsc);
		kv_bool(j, "constant_tsc", si->constant_tsc);
		kv_bool(j, "nonstop_tsc", si->nonstop_tsc);
		kv_bool(j, "tsc_reliable", si->tsc_reliable);
		ks_json_obj_end(j);
	} else {
		ks_json_null(j);
	}
	kv_bool(j, "hypervisor", si->hypervisor);
	ks_json_obj_end(j);

	ks_json_key(j, "cpufreq");
	if (si->cpufreq_cpus) {
		ks_json_obj_begin(j);
		kv_str_or_null(j, "driver", si->cpufreq_driver);
		ks_json_kv_u64(j, "cpus", (uint64_t)si->cpufreq_cpus);
		ks_json_key(j, "governors");
		ks_json_arr_begin(j);
		for (int i = 0; i < si->ngovernors; i++)
			ks_json_str(j, si->governors[i]);
		ks_json_arr_end(j);
		ks_json_obj_end(j);
	} else {
		ks_json_null(j);
	}

	ks_json_key(j, "cgroup");
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "mode", ks_cgroup_mode_name(si->cgroup));
	kv_str_or_null(j, "v2", si->cgroup2);
	ks_json_key(j, "v1");
	ks_json_arr_begin(j);
	for (int i = 0; i < si->ncgroup_v1; i++)
		ks_json_str(j, si->cgroup_v1[i]);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
}

int ks_checks_write_text(const struct ks_checks *l, FILE *out, bool verbose)
{
	int warn = 0, missing = 0;

	fprintf(out, "ksight doctor: Linux %s\n\n", l->kernel);
	for (int i = 0; i < l->n; i++) {
		const struct ks_check *c = &l->c[i];

		fprintf(out, "%-8s %-25s %s\n", ks_status_name(c->status), c->name, c->value);
		if (c->status != KS_ST_OK) {
			if (c->impact[0])
				fprintf(out, "%-8s impact: %s\n", "", c->impact);
			if (c->fix[0])
				fprintf(out, "%-8s fix:    %s\n", "", c->fix);
		}
		if (verbose && c->detail[0])
			fprintf(out, "%-8s detail: %s\n", "", c->detail);
		warn += c->status == KS_ST_WARN;
		missing += c->status == KS_ST_MISSING;
	}
	fprintf(out, "\n%s\n(%d OK, %d WARN, %d MISSING)\n", l->summary, l->n - warn - missing, warn, missing);
	return ferror(out) ? -EIO : 0;
}

/* A member that is a string when set and null when empty. */
static void kv_opt(struct ks_json *j, const char *k, const char *v)
{
	ks_json_key(j, k);
	if (*v)
		ks_json_str(j, v);
	else
		ks_json_null(j);
}

int ks_checks_write_json(const struct ks_checks *l, FILE *out, bool verbose)
{
	struct ks_json *j = ks_json_new(out);

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "kernel", l->kernel);
	ks_json_key(j, "checks");
	ks_json_arr_begin(j);
	for (int i = 0; i < l->n; i++) {
		const struct ks_check *c = &l->c[i];

		ks_json_obj_begin(j);
		ks_json_kv_str(j, "name", c->name);
		ks_json_kv_str(j, "status", ks_status_name(c->status));
		ks_json_kv_str(j, "value", c->value);
		kv_opt(j, "impact", c->status == KS_ST_OK ? "" : c->impact);
		kv_opt(j, "fix", c->status == KS_ST_OK ? "" : c->fix);
		if (verbose)
			kv_opt(j, "detail", c->detail);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_key(j, "tracing_possible");
	ks_json_bool(j, l->tracing_possible);
	ks_json_kv_str(j, "summary", l->summary);
	if (l->si) {
		ks_json_key(j, "system");
		ks_sysinfo_write_json(l->si, j);
	}
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
