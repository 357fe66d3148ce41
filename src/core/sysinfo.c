/* Environment capture from /proc and /sys, relative to a root so fixture trees can stand in for the machine. */
#include <ctype.h>
#include <errno.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/capability.h>
#include <unistd.h>
#include <zlib.h>
#include "core/parse.h"
#include "core/procfs.h"
#include "core/sysinfo.h"

/* Enough for the largest machines Linux runs on today. */
#define MAX_CPUS 8192

static const char *const kconfig_names[KS_KCFG_COUNT] = {
	[KS_KCFG_DEBUG_INFO_BTF] = "CONFIG_DEBUG_INFO_BTF",
	[KS_KCFG_KPROBES] = "CONFIG_KPROBES",
	[KS_KCFG_KPROBE_EVENTS] = "CONFIG_KPROBE_EVENTS",
	[KS_KCFG_FUNCTION_TRACER] = "CONFIG_FUNCTION_TRACER",
	[KS_KCFG_FTRACE_DIRECT_CALLS] = "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS",
	[KS_KCFG_BPF_EVENTS] = "CONFIG_BPF_EVENTS",
	[KS_KCFG_UPROBE_EVENTS] = "CONFIG_UPROBE_EVENTS",
	[KS_KCFG_PERF_EVENTS] = "CONFIG_PERF_EVENTS",
};

const char *ks_kconfig_name(enum ks_kconfig k)
{
	return k < KS_KCFG_COUNT ? kconfig_names[k] : "?";
}

const char *ks_cgroup_mode_name(enum ks_cgroup_mode m)
{
	switch (m) {
	case KS_CG_V1: return "v1";
	case KS_CG_V2: return "v2";
	case KS_CG_HYBRID: return "hybrid";
	default: return "none";
	}
}

bool ks_sysinfo_has_cap(const struct ks_sysinfo *si, int cap)
{
	return si->caps_known && cap >= 0 && cap < 64 && (si->cap_eff >> cap & 1);
}

static void path_of(char *buf, size_t len, const char *root, const char *path)
{
	snprintf(buf, len, "%s%s", root, path);
}

static void strip(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
}

static int count_bits(const uint64_t *bits, int nbits)
{
	int n = 0;

	for (int i = 0; i < nbits / 64; i++)
		n += __builtin_popcountll(bits[i]);
	return n;
}

/* Number of entries in a cpulist-format file ("0-3,6"), 0 when unreadable. */
static int count_list(const char *root, const char *path, uint64_t *bits)
{
	char buf[4096];

	if (ks_procfs_line(root, path, buf, sizeof(buf)) || ks_parse_cpulist(buf, bits, MAX_CPUS))
		return 0;
	return count_bits(bits, MAX_CPUS);
}

/* True when @word is one of the space-separated words of @list. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (!p[n] || isspace((unsigned char)p[n])))
			return true;
	return false;
}

/* Copies with truncation: facts longer than their field are cut, not refused. */
static void copy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static void read_kernel(struct ks_sysinfo *si, const char *root)
{
	struct utsname u;

	ks_procfs_line(root, "/proc/sys/kernel/version", si->version, sizeof(si->version));
	/* the arch sysctl is recent; the live system always has uname */
	if (ks_procfs_line(root, "/proc/sys/kernel/arch", si->machine, sizeof(si->machine)) && !*root &&
	    !uname(&u))
		copy(si->machine, sizeof(si->machine), u.machine);
}

static void read_kconfig(struct ks_sysinfo *si, const char *root)
{
	char p[512], line[512];
	gzFile f;

	/* gzread passes uncompressed files through, so /boot's plain copy works too */
	path_of(p, sizeof(p), root, "/proc/config.gz");
	f = gzopen(p, "rb");
	if (!f) {
		char b[256];

		snprintf(b, sizeof(b), "/boot/config-%s", si->release);
		path_of(p, sizeof(p), root, b);
		f = gzopen(p, "rb");
	}
	if (!f)
		return;
	copy(si->kconfig_src, sizeof(si->kconfig_src), p + strlen(root));
	/* an option absent from a readable config is not set */
	memset(si->kconfig, 'n', sizeof(si->kconfig));
	while (gzgets(f, line, sizeof(line))) {
		for (int k = 0; k < KS_KCFG_COUNT; k++) {
			size_t n = strlen(kconfig_names[k]);

			if (!strncmp(line, kconfig_names[k], n) && line[n] == '=') {
				si->kconfig[k] = line[n + 1] == 'y' || line[n + 1] == 'm' ? line[n + 1] : 'n';
				break;
			}
		}
	}
	gzclose(f);
}

int ks_caps_effective(uint64_t *eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	return 0;
}

static void read_status(struct ks_sysinfo *si, const char *root)
{
	char p[512], line[256];
	unsigned long long v;
	FILE *f;

	/* the live process asks the kernel: the bits it will be judged by */
	if (!*root && !ks_caps_effective(&si->cap_eff)) {
		si->caps_known = true;
		return;
	}
	path_of(p, sizeof(p), root, "/proc/self/status");
	f = fopen(p, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &v) == 1) {
			si->cap_eff = v;
			si->caps_known = true;
			break;
		}
	}
	fclose(f);
}

static void read_mounts(struct ks_sysinfo *si, const char *root)
{
	char p[512];
	struct mntent *m;
	FILE *f;

	path_of(p, sizeof(p), root, "/proc/self/mounts");
	f = setmntent(p, "r");
	if (!f)
		return;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_type, "tracefs") && !si->tracefs[0])
			copy(si->tracefs, sizeof(si->tracefs), m->mnt_dir);
		else if (!strcmp(m->mnt_type, "securityfs") && !si->securityfs[0])
			copy(si->securityfs, sizeof(si->securityfs), m->mnt_dir);
		else if (!strcmp(m->mnt_type, "cgroup2") && !si->cgroup2[0])
			copy(si->cgroup2, sizeof(si->cgroup2), m->mnt_dir);
		else if (!strcmp(m->mnt_type, "cgroup") && si->ncgroup_v1 < KS_SI_MAX_CGROUP_V1)
			copy(si->cgroup_v1[si->ncgroup_v1++], sizeof(si->cgroup_v1[0]), m->mnt_dir);
	}
	endmntent(f);
	if (si->cgroup2[0])
		si->cgroup = si->ncgroup_v1 ? KS_CG_HYBRID : KS_CG_V2;
	else
		si->cgroup = si->ncgroup_v1 ? KS_CG_V1 : KS_CG_NONE;
}

/* "none [integrity] confidentiality": the bracketed word is the active mode. */
static void read_lockdown(struct ks_sysinfo *si, const char *root)
{
	char p[256], buf[128], *a, *b;

	if (!si->securityfs[0])
		return;
	/* the mount point is already a path on the machine; only fixtures prefix it */
	snprintf(p, sizeof(p), "%s/lockdown", si->securityfs);
	if (ks_procfs_line(root, p, buf, sizeof(buf)))
		return;
	a = strchr(buf, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b) {
		*b = 0;
		copy(si->lockdown, sizeof(si->lockdown), a + 1);
	}
}

static void read_cpuinfo(struct ks_sysinfo *si, const char *root)
{
	char p[512], *line = NULL;
	size_t cap = 0;
	FILE *f;

	path_of(p, sizeof(p), root, "/proc/cpuinfo");
	f = fopen(p, "r");
	if (!f)
		return;
	/* the first processor's block is enough: flags are the same on every CPU */
	while (getline(&line, &cap, f) > 0) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		if (!si->cpu_model[0] && !strncmp(line, "model name", 10)) {
			copy(si->cpu_model, sizeof(si->cpu_model), colon + 1 + (colon[1] == ' '));
			strip(si->cpu_model);
		} else if (!si->cpu_flags_known && !strncmp(line, "flags", 5)) {
			si->cpu_flags_known = true;
			si->tsc = has_word(colon + 1, "tsc");
			si->constant_tsc = has_word(colon + 1, "constant_tsc");
			si->nonstop_tsc = has_word(colon + 1, "nonstop_tsc");
			si->tsc_reliable = has_word(colon + 1, "tsc_reliable");
			si->hypervisor = has_word(colon + 1, "hypervisor");
		}
		if (si->cpu_model[0] && si->cpu_flags_known)
			break;
	}
	free(line);
	fclose(f);
}

struct core_id {
	int pkg, die, core;
};

static void add_governor(struct ks_sysinfo *si, const char *g)
{
	for (int i = 0; i < si->ngovernors; i++)
		if (!strcmp(si->governors[i], g))
			return;
	if (si->ngovernors < KS_SI_MAX_GOVERNORS)
		copy(si->governors[si->ngovernors++], sizeof(si->governors[0]), g);
}

/* Sockets and cores are counted over online CPUs: an offline CPU's topology files are gone. */
static int read_cpus(struct ks_sysinfo *si, const char *root)
{
	uint64_t *online = calloc(MAX_CPUS / 64, sizeof(uint64_t));
	struct core_id *ids = NULL;
	int *pkgs = NULL, nids = 0, npkgs = 0, err = 0;

	if (!online)
		return -ENOMEM;
	si->cpus_possible = count_list(root, "/sys/devices/system/cpu/possible", online);
	si->cpus_online = count_list(root, "/sys/devices/system/cpu/online", online);
	ids = calloc((size_t)si->cpus_online + 1, sizeof(*ids));
	pkgs = calloc((size_t)si->cpus_online + 1, sizeof(*pkgs));
	if (!ids || !pkgs) {
		err = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < MAX_CPUS && si->cpus_online; c++) {
		struct core_id id = { 0, 0, 0 };
		char p[128], gov[32];
		int i;

		if (!(online[c / 64] >> (c % 64) & 1))
			continue;
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
		if (!ks_procfs_line(root, p, gov, sizeof(gov))) {
			si->cpufreq_cpus++;
			add_governor(si, gov);
			if (!si->cpufreq_driver[0]) {
				snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_driver", c);
				ks_procfs_line(root, p, si->cpufreq_driver, sizeof(si->cpufreq_driver));
			}
		}
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		if (ks_procfs_int(root, p, &id.pkg))
			continue;
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/topology/die_id", c);
		ks_procfs_int(root, p, &id.die); /* absent before 5.2: one die per package */
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
		if (ks_procfs_int(root, p, &id.core))
			continue;
		for (i = 0; i < npkgs && pkgs[i] != id.pkg; i++)
			;
		if (i == npkgs)
			pkgs[npkgs++] = id.pkg;
		for (i = 0; i < nids; i++)
			if (ids[i].pkg == id.pkg && ids[i].die == id.die && ids[i].core == id.core)
				break;
		if (i == nids)
			ids[nids++] = id;
	}
	si->sockets = npkgs;
	si->cores = nids;
	/* without CONFIG_NUMA there is no node directory and the machine is one node */
	si->numa_nodes = count_list(root, "/sys/devices/system/node/online", online);
	if (!si->numa_nodes)
		si->numa_nodes = 1;
out:
	free(ids);
	free(pkgs);
	free(online);
	return err;
}

int ks_sysinfo_gather(struct ks_sysinfo *si, const char *root)
{
	char p[512];
	int err;

	if (!root)
		root = "";
	memset(si, 0, sizeof(*si));
	si->perf_event_paranoid = si->kptr_restrict = si->unprivileged_bpf_disabled = KS_SI_UNKNOWN;
	err = ks_procfs_line(root, "/proc/sys/kernel/osrelease", si->release, sizeof(si->release));
	if (err)
		return err;
	read_kernel(si, root);
	read_kconfig(si, root);
	path_of(p, sizeof(p), root, "/sys/kernel/btf/vmlinux");
	si->btf_vmlinux = !access(p, R_OK);
	read_status(si, root);
	ks_procfs_int(root, "/proc/sys/kernel/perf_event_paranoid", &si->perf_event_paranoid);
	ks_procfs_int(root, "/proc/sys/kernel/kptr_restrict", &si->kptr_restrict);
	ks_procfs_int(root, "/proc/sys/kernel/unprivileged_bpf_disabled", &si->unprivileged_bpf_disabled);
	read_mounts(si, root);
	if (!*root) {
		struct stat st;

		si->euid = (unsigned int)geteuid();
		si->egid = (unsigned int)getegid();
		if (si->tracefs[0] && !stat(si->tracefs, &st)) {
			si->tracefs_mode = st.st_mode & 07777;
			si->tracefs_uid = (unsigned int)st.st_uid;
			si->tracefs_gid = (unsigned int)st.st_gid;
			snprintf(p, sizeof(p), "%s/events", si->tracefs);
			si->tracefs_readable = !faccessat(AT_FDCWD, p, R_OK | X_OK, AT_EACCESS);
		}
	}
	if (sscanf(si->release, "%d.%d", &si->kernel_major, &si->kernel_minor) != 2)
		si->kernel_major = si->kernel_minor = 0;
	read_lockdown(si, root);
	ks_procfs_line(root, "/sys/devices/system/clocksource/clocksource0/current_clocksource", si->clocksource,
		  sizeof(si->clocksource));
	ks_procfs_line(root, "/sys/devices/system/clocksource/clocksource0/available_clocksource", si->clocksources,
		  sizeof(si->clocksources));
	si->tsc_clocksource = has_word(si->clocksources, "tsc");
	read_cpuinfo(si, root);
	return read_cpus(si, root);
}
