#!/bin/sh
# Installs every Debian 12 package that ksight's build, tests and benchmarks need; quiet when all are present.
set -e
PKGS="make gcc clang-14 llvm-14 libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libtraceevent-dev libtracefs-dev libdw-dev libmicrohttpd-dev
jq iproute2 nftables util-linux procps iperf3 strace e2fsprogs
bpftrace libbpf-tools linux-perf
qemu-system-x86 busybox-static cpio binutils
curl openssl prometheus libyaml-dev libcrypt-dev systemd golang-go libxml2-utils
systemtap-sdt-dev runc chromium"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# node and npm for the browser tests, unless a node of another origin (nodesource) is there
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing packages:$missing; run as root to install them" >&2
		exit 1
	fi
	echo "setup: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing
fi
# speedscope (static build) and playwright-core, which drives Debian's chromium: tests/integration/test_profile_browser.sh
NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
if [ ! -d "$NODE_DIR/node_modules/speedscope" ] || [ ! -d "$NODE_DIR/node_modules/playwright-core" ]; then
	[ "$(id -u)" = 0 ] || { echo "setup: speedscope and playwright-core missing in $NODE_DIR; run as root" >&2; exit 1; }
	echo "setup: npm install speedscope playwright-core into $NODE_DIR"
	mkdir -p "$NODE_DIR"
	npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error speedscope playwright-core ||
		echo "setup: npm install failed: the browser tests will skip" >&2
fi
