/* Container and Kubernetes pod attribution from cgroup paths and kubelet's /var/log/pods tree (no API server). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve/k8s.h"

/*
 * The hex id of a runtime scope: cri-containerd-<id>.scope, crio-<id>.scope,
 * docker-<id>.scope, or a bare id; @k's runtime as kube-state-metrics names
 * it in container_id ("containerd://<id>"), "" for a bare id.
 */
static bool container_id(const char *seg, size_t n, struct ks_k8s *kk)
{
	static const char *const prefixes[][2] = {
		{ "cri-containerd-", "containerd" }, { "crio-", "cri-o" }, { "docker-", "docker" },
		{ "containerd-", "containerd" },     { "", "" },
	};
	char *out = kk->container_id;
	size_t len = sizeof(kk->container_id);

	if (n > 6 && !strncmp(seg + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t p = strlen(prefixes[i][0]), k;

		if (n <= p || strncmp(seg, prefixes[i][0], p))
			continue;
		for (k = p; k < n; k++)
			if (!((seg[k] >= '0' && seg[k] <= '9') || (seg[k] >= 'a' && seg[k] <= 'f')))
				break;
		if (k == n && n - p >= 12 && n - p < len) {
			snprintf(out, len, "%.*s", (int)(n - p), seg + p);
			snprintf(kk->runtime, sizeof(kk->runtime), "%s", prefixes[i][1]);
			return true;
		}
	}
	return false;
}

int ks_k8s_parse(const char *path, struct ks_k8s *k)
{
	const char *s = path;

	memset(k, 0, sizeof(*k));
	while (*s) {
		const char *e = strchr(s, '/'), *pod;
		size_t n;

		if (!e)
			e = s + strlen(s);
		n = (size_t)(e - s);
		/* systemd driver: kubepods-burstable-pod<uid with _>.slice; cgroupfs: pod<uid> */
		pod = memmem(s, n, "-pod", 4);
		pod = pod ? pod + 1 : n > 3 && !strncmp(s, "pod", 3) ? s : NULL;
		if (pod && !k->pod_uid[0]) {
			size_t m = n - (size_t)(pod + 3 - s);

			if (m > 6 && !strncmp(pod + 3 + m - 6, ".slice", 6))
				m -= 6;
			if (m >= 32 && m < sizeof(k->pod_uid)) {
				snprintf(k->pod_uid, sizeof(k->pod_uid), "%.*s", (int)m, pod + 3);
				for (char *c = k->pod_uid; *c; c++)
					if (*c == '_')
						*c = '-';
			}
		}
		if (n)
			container_id(s, n, k);
		s = *e ? e + 1 : e;
	}
	return k->pod_uid[0] || k->container_id[0] ? 0 : -ENOENT;
}

int ks_k8s_lookup(const char *pods_dir, struct ks_k8s *k)
{
	char want[64], sub[4096];
	struct dirent *e;
	DIR *d;
	int found = -ENOENT;

	if (!k->pod_uid[0] || !(d = opendir(pods_dir)))
		return -ENOENT;
	snprintf(want, sizeof(want), "_%s", k->pod_uid);
	/* kubelet's directory: NAMESPACE_PODNAME_UID (names cannot hold '_') */
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name), w = strlen(want);
		char *us;

		if (n <= w || strcmp(e->d_name + n - w, want))
			continue;
		us = strchr(e->d_name, '_');
		if (!us || us >= e->d_name + n - w)
			continue;
		snprintf(k->namespace, sizeof(k->namespace), "%.*s", (int)(us - e->d_name), e->d_name);
		snprintf(k->pod, sizeof(k->pod), "%.*s", (int)(e->d_name + n - w - us - 1), us + 1);
		snprintf(sub, sizeof(sub), "%s/%s", pods_dir, e->d_name);
		found = 0;
		break;
	}
	closedir(d);
	if (found)
		return found;
	/* the container: the pod's only container directory, or the one whose log links name the id */
	d = opendir(sub);
	if (d) {
		int ndirs = 0;
		char only[sizeof(k->container)] = "";

		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			ndirs++;
			snprintf(only, sizeof(only), "%.63s", e->d_name);
		}
		closedir(d);
		if (ndirs == 1)
			snprintf(k->container, sizeof(k->container), "%s", only);
	}
	return 0;
}
