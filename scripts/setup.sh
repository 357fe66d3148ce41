#!/bin/sh
# Installs every Debian 12 package that ksight's build, tests and benchmarks need; quiet when all are present.
set -e
PKGS="make gcc clang-14 llvm-14 libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libtraceevent-dev libtracefs-dev libdw-dev libmicrohttpd-dev
jq iproute2 nftables util-linux procps iperf3 strace e2fsprogs
bpftrace libbpf-tools linux-perf
qemu-system-x86 busybox-static cpio binutils
curl openssl prometheus libyaml-dev libcrypt-dev systemd golang-go libxml2-utils
libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "setup: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
