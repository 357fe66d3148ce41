#!/bin/sh
# Installs every Debian 12 package that ksight's build, tests and benchmarks need; quiet when all are present.
set -e
# python3-prometheus-client: its strict OpenMetrics parser reads serve's OpenMetrics page (test_serve_hostile).
# libc6-dbg: libc's whole symbol table by build-id, so profiles name its local functions (the
# signal restorer __restore_rt, msort_with_tmp) as on this machine, and test_profile_cfi checks them.
# librsvg2-bin: rsvg-convert draws the SVG flame graph without a script, as an <img> shows it (test_profile_svg).
# groff man-db bsdextrautils (col) zsh: the man pages and shell completion are checked by the real tools (tests/golden).
# trace-cmd: bench/record.sh's anchor beside perf (ftrace's own ring buffer).
# libgnutls28-dev: serve links GnuTLS itself (SHA-256 and random bytes for the basic-auth cache), not only through libmicrohttpd.
# trace-cmd (above), libtracecmd-dev: report --trace-dat's file is read back by trace-cmd report and libtracecmd (test_tracedat).
PKGS="make gcc clang-14 llvm-14 libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libtraceevent-dev libtracefs-dev libdw-dev libmicrohttpd-dev libgnutls28-dev libjson-c-dev
jq iproute2 nftables util-linux procps iperf3 strace e2fsprogs
bpftrace libbpf-tools linux-perf trace-cmd
qemu-system-x86 busybox-static cpio binutils
curl openssl prometheus python3-prometheus-client libyaml-dev libcrypt-dev systemd golang-go libxml2-utils
nodejs libclang-rt-14-dev systemtap-sdt-dev runc chromium libc6-dbg librsvg2-bin
libncurses-dev tmux groff man-db bsdextrautils zsh
libtracecmd-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# kubectl (for `kubectl kustomize` of deploy/kubernetes) and npm: Debian's packages, unless the
# machine already has its own (a kubectl or a nodesource node of another origin)
command -v kubectl >/dev/null 2>&1 || missing="$missing kubernetes-client"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
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

# npm packages: real consumers of ksight's files, each set in the directory its tests look in.
# A failed install is not fatal: those tests skip and say why.
npm_dir() { # DIR CHECK_MODULE... -- PACKAGE...
	dir=$1
	shift
	need=
	while [ "$1" != -- ]; do
		[ -d "$dir/node_modules/$1" ] || need=1
		shift
	done
	shift
	[ -z "$need" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "setup: npm packages $* missing in $dir; run as root" >&2
		return 0
	fi
	echo "setup: npm install $* into $dir"
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" ||
		echo "setup: npm install $* failed: the tests that use them will skip" >&2
}
# the DevTools performance engine loads --perfetto files (test_perfetto_engine.sh)
npm_dir "${KS_NODE_PREFIX:-/opt/ksight-node}" @paulirish/trace_engine -- @paulirish/trace_engine
# speedscope (static build) and playwright-core, which drives Debian's chromium (test_profile_browser.sh)
npm_dir "${KS_NODE_DIR:-/var/cache/ksight-node}" speedscope playwright-core -- speedscope playwright-core
# pprof-format, a profile.proto decoder of its own, reads --pprof files (test_profile_pprof.sh)
npm_dir "${KS_NODE_DIR:-/var/cache/ksight-node}" pprof-format -- pprof-format
# the Kubernetes schema for deploy/kubernetes (test_deploy.sh)
npm_dir /opt/ksight-npm kubernetes-models js-yaml -- kubernetes-models@4 js-yaml@4
exit 0
