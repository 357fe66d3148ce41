#!/bin/sh
# /init of the test guest (dash, busybox applets): mounts what ksight needs, runs the integration tests, reports on ttyS1.
/bin/busybox --install -s /bin
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
chmod 1777 /tmp

. /ksight/guest.env
# for tests that must relax timing under emulation, with the reason in their SKIP
if dmesg | grep -q 'Hypervisor detected: KVM'; then KSIGHT_ACCEL=kvm; else KSIGHT_ACCEL=tcg; fi
export KSIGHT_ACCEL

# The same cgroup layout as the development machine unless the descriptor asks for v2 alone.
if [ "$KS_CGROUP" = unified ]; then
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
else
	mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
	mkdir -p /sys/fs/cgroup/unified /sys/fs/cgroup/memory
	mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
	mount -t cgroup -o memory memory /sys/fs/cgroup/memory
fi

# what went wrong in setting up, shown by the host beside the results
notes=
ip link set lo up || notes="$notes|cannot bring lo up"
# modules.dep for the few modules shipped, so the kernel's own request_module works too
if [ -d "/lib/modules/$(uname -r)" ]; then
	depmod
	for m in $KS_MODULES; do
		modprobe "$m" 2>/dev/null || notes="$notes|cannot load module $m"
	done
fi

# The result channel: the second serial port, free of kernel messages; the console if it is missing.
out=/dev/ttyS1
if ! stty -F "$out" raw -echo 2>/dev/null; then
	out=/dev/console
fi

cd /ksight || exit 1
{
	read -r up _ </proc/uptime
	echo "KS-BEGIN $(uname -r) uptime=$up"
	echo "${notes#|}" | tr '|' '\n' | sed -n 's/^./KS-NOTE &/p'
	[ -n "$KS_CMD" ] && KS_TESTS=none && sh -c "$KS_CMD" </dev/null 2>&1 | cat
	for t in tests/integration/test_*.sh; do
		name=${t#tests/integration/}
		# the guest's own driver must not recurse into another guest
		[ "$name" = test_kernels.sh ] && continue
		base=${name#test_}
		base=${base%.sh}
		if [ -n "$KS_TESTS" ]; then
			case " $KS_TESTS " in *" $base "*) ;; *) continue ;; esac
		fi
		# a re-run after a guest died inside test KS_FROM starts there
		if [ -n "${KS_FROM:-}" ]; then
			[ "$base" = "$KS_FROM" ] || continue
			KS_FROM=
		fi
		echo "KS-TEST $name"
		if [ -n "${KS_SELFTEST_DIE:-}" ] && [ "$base" = "$KS_SELFTEST_DIE" ]; then
			echo c >/proc/sysrq-trigger
		fi
		start=$(cut -d' ' -f1 /proc/uptime)
		# through a pipe, as on the host: not a tty, so no tool changes its output
		{
			timeout "$KS_TEST_TIMEOUT" /bin/sh "$t" </dev/null 2>&1
			echo $? >/run/ks-rc
		} | cat
		rc=$(cat /run/ks-rc)
		end=$(cut -d' ' -f1 /proc/uptime)
		# on a line of its own even when the test's output did not end with one
		printf '\nKS-RC %s %s %s %s\n' "$name" "$rc" "$start" "$end"
	done
	read -r up _ </proc/uptime
	printf '\nKS-END uptime=%s\n' "$up"
} >"$out" 2>&1
sync
poweroff -f
