/* Unit tests of container and pod attribution: cgroup path layouts of the systemd and cgroupfs drivers, kubelet's /var/log/pods tree. */
#include <sys/stat.h>
#include "test.h"
#include "serve/k8s.h"

#define UID_ "1f2e3d4c-5b6a-4789-9abc-def012345678"
#define UIDU "1f2e3d4c_5b6a_4789_9abc_def012345678"
#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(systemd_driver)
{
	struct ks_k8s k;

	ASSERT_EQ_INT(ks_k8s_parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
				   ".slice/cri-containerd-" CID ".scope", &k), 0);
	EXPECT_EQ_STR(k.pod_uid, UID_);
	EXPECT_EQ_STR(k.container_id, CID);
	/* the runtime, as kube-state-metrics prefixes container_id with it */
	EXPECT_EQ_STR(k.runtime, "containerd");
	ASSERT_EQ_INT(ks_k8s_parse("/kubepods.slice/kubepods-pod" UIDU ".slice/crio-" CID ".scope", &k), 0);
	EXPECT_EQ_STR(k.runtime, "cri-o");
	EXPECT_EQ_STR(k.container_id, CID);
}

TEST(cgroupfs_driver_and_plain_runtimes)
{
	struct ks_k8s k;

	ASSERT_EQ_INT(ks_k8s_parse("/kubepods/besteffort/pod" UID_ "/" CID, &k), 0);
	EXPECT_EQ_STR(k.pod_uid, UID_);
	EXPECT_EQ_STR(k.container_id, CID);
	/* the cgroupfs driver's bare id does not say which runtime made it */
	EXPECT_EQ_STR(k.runtime, "");
	ASSERT_EQ_INT(ks_k8s_parse("/system.slice/docker-" CID ".scope", &k), 0);
	EXPECT_EQ_STR(k.pod_uid, "");
	EXPECT_EQ_STR(k.container_id, CID);
	EXPECT_EQ_STR(k.runtime, "docker");
	EXPECT_EQ_INT(ks_k8s_parse("/user.slice/user-0.slice/session-3.scope", &k), -ENOENT);
	EXPECT_EQ_INT(ks_k8s_parse("/", &k), -ENOENT);
	/* "pod" inside a word is not a pod slice */
	EXPECT_EQ_INT(ks_k8s_parse("/system.slice/ipodder.service", &k), -ENOENT);
}

TEST(pods_dir)
{
	char dir[] = "/tmp/ksight-k8s.XXXXXX", p[512];
	struct ks_k8s k;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/shop_web-7d9f_" UID_, dir);
	ASSERT_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/shop_web-7d9f_" UID_ "/nginx", dir);
	ASSERT_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/other_db-0_00000000-0000-0000-0000-000000000000", dir);
	ASSERT_EQ_INT(mkdir(p, 0755), 0);
	ASSERT_EQ_INT(ks_k8s_parse("/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" CID ".scope", &k), 0);
	ASSERT_EQ_INT(ks_k8s_lookup(dir, &k), 0);
	EXPECT_EQ_STR(k.namespace, "shop");
	EXPECT_EQ_STR(k.pod, "web-7d9f");
	EXPECT_EQ_STR(k.container, "nginx");
	snprintf(k.pod_uid, sizeof(k.pod_uid), "%s", "11111111-0000-0000-0000-000000000000");
	EXPECT_EQ_INT(ks_k8s_lookup(dir, &k), -ENOENT);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	EXPECT_EQ_INT(system(p), 0);
}
