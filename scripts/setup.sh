#!/bin/sh
# Installs every Debian 12 package that ksight's build, tests and benchmarks need; quiet when all are present.
set -e
PKGS="make gcc clang-14 llvm-14 libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libtraceevent-dev libtracefs-dev libdw-dev libmicrohttpd-dev
jq iproute2 nftables util-linux procps iperf3 strace e2fsprogs
bpftrace libbpf-tools linux-perf
qemu-system-x86 busybox-static cpio binutils
curl openssl prometheus libyaml-dev libcrypt-dev systemd golang-go libxml2-utils"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# kubectl (for `kubectl kustomize` of deploy/kubernetes) and node/npm (to validate the manifests with
# kubernetes-models): Debian's packages, unless the machine already has its own
command -v kubectl >/dev/null 2>&1 || missing="$missing kubernetes-client"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
# npm packages of the tests, in one directory tests find them in (NODE_PATH)
NPM_DIR=/opt/ksight-npm
NPM_PKGS="kubernetes-models@4 js-yaml@4"
npm_missing=
[ -d "$NPM_DIR/node_modules/kubernetes-models" ] && [ -d "$NPM_DIR/node_modules/js-yaml" ] || npm_missing=1
[ -z "$missing" ] && [ -z "$npm_missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "setup: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$missing" ]; then
	apt-get install -y -qq --no-install-recommends $missing
fi
if [ -n "$npm_missing" ]; then
	echo "setup: installing npm packages $NPM_PKGS into $NPM_DIR"
	mkdir -p "$NPM_DIR"
	npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent $NPM_PKGS
fi
