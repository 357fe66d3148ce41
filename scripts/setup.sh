#!/bin/sh
# Installs every Debian 12 package that ksight's build, tests and benchmarks need; quiet when all are present.
set -e
PKGS="make gcc clang-14 llvm-14 libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libtraceevent-dev libtracefs-dev libdw-dev libmicrohttpd-dev
jq iproute2 nftables util-linux procps iperf3 strace e2fsprogs
bpftrace libbpf-tools linux-perf
qemu-system-x86 busybox-static cpio binutils
curl openssl prometheus libyaml-dev libcrypt-dev systemd golang-go libxml2-utils
nodejs libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node modules of the tests (real consumers of ksight's files), under one prefix the tests look in
node_modules() {
	NODE_PREFIX=${KS_NODE_PREFIX:-/opt/ksight-node}
	[ -d "$NODE_PREFIX/node_modules/@paulirish/trace_engine" ] && return 0
	# Debian's npm package; a nodejs from elsewhere brings its own npm
	command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm
	mkdir -p "$NODE_PREFIX" && npm install --prefix "$NODE_PREFIX" --no-audit --no-fund -q @paulirish/trace_engine
}
if [ -z "$missing" ]; then
	node_modules
	exit $?
fi
if [ "$(id -u)" != 0 ]; then
	echo "setup: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
node_modules
