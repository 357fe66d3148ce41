/* Container and Kubernetes pod attribution from cgroup paths and kubelet's /var/log/pods tree. */
#ifndef KS_SERVE_K8S_H
#define KS_SERVE_K8S_H

#include <stdbool.h>

struct ks_k8s {
	char pod_uid[48];
	char container_id[80];
	char runtime[16]; /* "containerd", "cri-o", "docker" from the scope's prefix; "" when the path does not say */
	char namespace[64];
	char pod[256];
	char container[64];
};

/*
 * The pod UID and container id a cgroup path shows:
 * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope
 * (systemd driver, '_' in the UID for '-'), /kubepods/burstable/pod<uid>/<id> (cgroupfs driver),
 * or a runtime scope alone (docker-<id>.scope).  0, or -ENOENT when it shows neither.
 */
int ks_k8s_parse(const char *path, struct ks_k8s *k);
/*
 * Namespace and pod name from kubelet's @pods_dir/NAMESPACE_POD_UID directory and the
 * container name when the pod has one container directory.  0 or -ENOENT.
 */
int ks_k8s_lookup(const char *pods_dir, struct ks_k8s *k);

#endif
