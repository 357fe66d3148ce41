#!/bin/sh
# Boots each kernel of the test matrix under qemu and runs the integration tests inside it; prints the guest's results.
#
# Usage: sh tests/kernels/run.sh [KERNEL...]   (default: $KERNELS, else "debian-6.1 debian-6.1-128cpu")
# A kernel is described by tests/kernels/KERNEL.conf (see docs/kernels.md).
# Environment: KS_TESTS="syscalls hooks" runs only those guest tests (see pick_tests); KS_TIMEOUT is the
# limit in seconds for one guest (boot to power-off), KS_TEST_TIMEOUT for one test in it;
# KS_CMD='shell command' runs that in the guest instead of the tests (to debug a guest);
# KS_SELFTEST_DIE=TEST makes the first guest panic when TEST starts (to try the re-run).
# Prints "PASS|FAIL|SKIP: KERNEL: TEST: name" lines; exits 1 if a guest test failed or a
# guest did not finish, 3 if a guest could not be started at all (no qemu, no kernel).
set -u
cd "$(dirname "$0")/../.." || exit 1

B=build/kernels
: "${KS_TIMEOUT:=900}"
: "${KS_TEST_TIMEOUT:=300}"
: "${KS_TESTS:=}"
: "${KS_CMD:=}"
: "${KS_SELFTEST_DIE:=}"
KS_FROM=
# Host tools the tests call, copied with their shared libraries when present; they come before
# busybox's applets of the same name, whose options differ (setpriv, ip, date +%N, ...).
# Not bpftrace or perf: LLVM and friends would make the initramfs ten times bigger.
GUEST_TOOLS="jq bpftool ip tc ss nft iperf3 setpriv unshare nsenter taskset chrt nice date timeout pgrep pkill losetup getconf"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ksight-kernels.XXXXXX") || exit 1
QEMU_PID=
cleanup() {
	if [ -n "$QEMU_PID" ]; then
		kill "$QEMU_PID" 2>/dev/null
		wait "$QEMU_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "== $*"; }
die() {
	echo "kernels: $*" >&2
	exit 3
}

# Reads one descriptor (tests/kernels/NAME.conf) into its variables, unset ones at their defaults.
load_conf() {
	DEB_META='' DEB_MATCH='' DEB_PACKAGE='' IMAGE='' CONFIG='' MODDIR='' MODULES='' CGROUP=hybrid EXPECT_FEATURES='' APPEND=''
	SMP=2 MAXCPUS='' MEM=1G TESTS='' SAME_KERNEL_AS='' TEST_TIMEOUT=''
	[ -f "tests/kernels/$1.conf" ] || die "no descriptor tests/kernels/$1.conf"
	. "./tests/kernels/$1.conf"
}

# The Debian package of the descriptor: DEB_PACKAGE as given, else what DEB_META depends on
# (the current ABI) when DEB_MATCH matches it, else the newest name matching DEB_MATCH apt knows.
deb_name() {
	if [ -n "$DEB_PACKAGE" ]; then
		echo "$DEB_PACKAGE"
		return
	fi
	_p=$(apt-cache depends "$DEB_META" 2>/dev/null | sed -n 's/^ *Depends: //p' | grep -E "$DEB_MATCH" | head -1)
	if [ -n "$_p" ]; then
		echo "$_p"
		return
	fi
	apt-cache pkgnames linux-image- 2>/dev/null | grep -E "$DEB_MATCH" | sort -V | tail -1
}

# Module files (paths under lib/modules/REL) of the names in $2 and of everything they depend on.
module_closure() {
	_root=$1 _want=$2 _seen=' '
	while :; do
		# shellcheck disable=SC2086
		set -- $_want
		[ $# -gt 0 ] || break
		_m=$1
		shift
		_want=$*
		case "$_seen" in *" $_m "*) continue ;; esac
		_seen="$_seen$_m "
		_f=$(find "$_root" -name "$_m.ko" -o -name "$(echo "$_m" | tr _ -).ko" | head -1)
		if [ -z "$_f" ]; then
			echo "kernels: module $_m not found (built in?)" >&2
			continue
		fi
		echo "${_f#"$_root"/}"
		_deps=$(objcopy -O binary -j .modinfo "$_f" /dev/stdout | tr '\0' '\n' | sed -n 's/^depends=//p' | tr , ' ')
		_want="$_want $_deps"
	done
}

# The release of an x86 boot image: its setup header (at 0x20e) points at the version string.
image_release() {
	_off=$(od -An -tu2 -j526 -N2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((_off + 512)) count=128 2>/dev/null | tr '\0' '\n' | head -1 | cut -d' ' -f1
}

# Fills $KDIR with vmlinuz, release, config and modules/ (the descriptor's modules); reuses what is there.
fetch() {
	# a descriptor booting another's kernel differently (more CPUs) shares its files
	KDIR=$B/${SAME_KERNEL_AS:-$1}
	mkdir -p "$KDIR"
	if [ -n "$IMAGE" ]; then
		[ -f "$IMAGE" ] || die "$1: image $IMAGE not found"
		cp "$IMAGE" "$KDIR/vmlinuz"
		rm -rf "$KDIR/modules" "$KDIR/config"
		[ -n "$CONFIG" ] && cp "$CONFIG" "$KDIR/config"
		image_release "$IMAGE" >"$KDIR/release"
		[ -n "$MODDIR" ] && copy_modules "$(dirname "$MODDIR")" "$(basename "$MODDIR")" "$KDIR/modules/lib/modules"
		return
	fi
	_have=$(cat "$KDIR/modules.list" 2>/dev/null)
	if [ -f "$KDIR/vmlinuz" ] && [ -f "$KDIR/config" ] && [ "$_have" = "$MODULES" ]; then
		return
	fi
	_deb=$(ls "$KDIR"/*.deb 2>/dev/null | tail -1)
	if [ -z "$_deb" ]; then
		_pkg=$(deb_name)
		# a machine set up without ever updating apt's lists knows no kernel packages yet
		if [ -z "$_pkg" ] && [ "$(id -u)" = 0 ]; then
			apt-get update -qq >/dev/null 2>&1
			_pkg=$(deb_name)
		fi
		[ -n "$_pkg" ] || die "$1: no package matches ${DEB_PACKAGE:-$DEB_MATCH}; run apt-get update"
		say "$1: fetching $_pkg"
		# into a directory of its own, so an interrupted download is never taken for the package
		rm -rf "$KDIR/dl"
		mkdir -p "$KDIR/dl"
		(cd "$KDIR/dl" && apt-get download -q "$_pkg" 2>&1) | grep -v '^W: Download is performed unsandboxed'
		mv "$KDIR"/dl/*.deb "$KDIR/" 2>/dev/null
		rm -rf "$KDIR/dl"
		_deb=$(ls "$KDIR"/*.deb 2>/dev/null | tail -1)
		[ -n "$_deb" ] || die "$1: cannot download $_pkg"
	fi
	rm -rf "$KDIR/x" "$KDIR/modules"
	dpkg-deb -x "$_deb" "$KDIR/x" || die "$1: cannot extract $_deb"
	_rel=$(ls "$KDIR/x/lib/modules" | head -1)
	cp "$KDIR/x/boot/vmlinuz-$_rel" "$KDIR/vmlinuz.tmp" || die "$1: no vmlinuz in $_deb"
	echo "$_rel" >"$KDIR/release"
	cp "$KDIR/x/boot/config-$_rel" "$KDIR/config" 2>/dev/null
	copy_modules "$KDIR/x/lib/modules" "$_rel" "$KDIR/modules/lib/modules"
	rm -rf "$KDIR/x"
	mv "$KDIR/vmlinuz.tmp" "$KDIR/vmlinuz"
	echo "$MODULES" >"$KDIR/modules.list"
}

# copy_modules SRC_MODULES_DIR REL DEST_MODULES_DIR: the descriptor's modules and their dependencies.
copy_modules() {
	for _f in $(module_closure "$1/$2" "$MODULES"); do
		mkdir -p "$3/$2/$(dirname "$_f")"
		cp "$1/$2/$_f" "$3/$2/$_f"
	done
	for _f in modules.order modules.builtin; do
		[ -f "$1/$2/$_f" ] && cp "$1/$2/$_f" "$3/$2/"
	done
}

# copy_bin SRC DST: a host binary to DST under $ROOT; copy_libs then adds the shared
# libraries of all of them (one ldd for all: a fork costs on a busy machine).
copy_bin() {
	mkdir -p "$(dirname "$ROOT$2")"
	cp -L "$1" "$ROOT$2"
	BINS="$BINS $1"
}

copy_libs() {
	# shellcheck disable=SC2086
	ldd $BINS 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} NF == 2 && $1 ~ /^\// {print $1}' |
		sort -u | xargs cp -L --parents -t "$ROOT"
}

# shvar NAME VALUE: an assignment the guest's shell reads back as VALUE, whatever its quotes.
shvar() {
	printf "%s='%s'\n" "$1" "$(printf '%s' "$2" | sed "s/'/'\\\\''/g")"
}

initramfs() {
	ROOT=$TMP/root BINS=
	rm -rf "$ROOT"
	mkdir -p "$ROOT"/bin "$ROOT"/sbin "$ROOT"/dev "$ROOT"/proc "$ROOT"/sys "$ROOT"/run "$ROOT"/tmp \
		"$ROOT"/root "$ROOT"/etc "$ROOT"/ksight/build/workloads "$ROOT"/ksight/tests/integration
	# busybox's applets are linked into /bin by the guest's init (busybox --install),
	# which leaves /bin/sh alone: dash, the host's /bin/sh, because busybox-static's ash
	# (and every applet that runs a program, such as timeout) prefers busybox's own
	# applets to PATH, so the tests would get busybox's ip instead of iproute2's
	cp /bin/busybox "$ROOT/bin/busybox"
	copy_bin /bin/dash /bin/sh
	# the kernel's request_module runs /sbin/modprobe
	ln -s ../bin/busybox "$ROOT/sbin/modprobe"
	for _t in $GUEST_TOOLS; do
		_p=$(command -v "$_t") && copy_bin "$_p" "$_p"
	done
	copy_bin ./ksight /ksight/ksight
	for _w in build/workloads/*; do
		[ -x "$_w" ] && copy_bin "$_w" "/ksight/$_w"
	done
	copy_libs
	cp tests/lib.sh "$ROOT/ksight/tests/"
	cp tests/integration/*.sh "$ROOT/ksight/tests/integration/"
	[ -d "$KDIR/modules" ] && cp -R "$KDIR/modules/lib" "$ROOT/"
	# where Debian keeps the kernel's configuration, for doctor's advice
	if [ -f "$KDIR/config" ] && [ -f "$KDIR/release" ]; then
		mkdir -p "$ROOT/boot"
		cp "$KDIR/config" "$ROOT/boot/config-$(cat "$KDIR/release")"
	fi
	cp tests/kernels/init.sh "$ROOT/init"
	chmod 755 "$ROOT/init"
	echo "root:x:0:0:root:/root:/bin/sh" >"$ROOT/etc/passwd"
	echo "root:x:0:" >"$ROOT/etc/group"
	{
		shvar KS_MODULES "$MODULES"
		shvar KS_CGROUP "$CGROUP"
		shvar KS_TESTS "$K_TESTS"
		shvar KS_FROM "$KS_FROM"
		shvar KS_TEST_TIMEOUT "${TEST_TIMEOUT:-$KS_TEST_TIMEOUT}"
		shvar KS_CMD "$KS_CMD"
		[ -z "$KS_FROM" ] && shvar KS_SELFTEST_DIE "$KS_SELFTEST_DIE"
		shvar KSIGHT_KERNEL "$1"
		shvar KSIGHT_EXPECT_FEATURES "$EXPECT_FEATURES"
		echo "export KSIGHT_KERNEL KSIGHT_EXPECT_FEATURES"
	} >"$ROOT/ksight/guest.env"
	(cd "$ROOT" && find . | cpio -o -H newc --quiet) >"$TMP/initrd" || die "$1: cannot build the initramfs"
}

# Prints the results of the test that ran last and counts them.  They are
# held until the test ends, so that a test the guest died in can be run
# again from its start without its first half counted twice.
test_flush() {
	[ -s "$TMP/tbuf" ] && cat "$TMP/tbuf"
	: >"$TMP/tbuf"
	G_NPASS=$((G_NPASS + G_TP)) G_NFAIL=$((G_NFAIL + G_TF)) G_NSKIP=$((G_NSKIP + G_TS))
	[ "$G_TF" -gt 0 ] && G_FAILED=1
	G_TP=0 G_TF=0 G_TS=0
}

# Turns one guest output line into host output; the state lives in G_* variables.
guest_line() {
	_l=$(printf '%s' "$1" | tr -d '\r')
	case "$_l" in
	KS-BEGIN*)
		set -- $_l
		G_BOOT=$(($(date +%s) - G_T0))
		say "$K: booted $2, guest uptime ${3#uptime=}s, ${G_BOOT}s since qemu started"
		;;
	KS-NOTE*)
		say "$K: guest: ${_l#KS-NOTE }"
		;;
	KS-TEST*)
		G_TMARK=$(date +%s)
		G_TEST=${_l#KS-TEST test_}
		G_TEST=${G_TEST%.sh}
		G_TFAIL=0 G_TP=0 G_TF=0 G_TS=0
		: >"$TMP/test.log"
		: >"$TMP/tbuf"
		;;
	KS-RC*)
		G_TMARK=$(date +%s)
		set -- $_l
		_s=$(awk -v a="$4" -v b="$5" 'BEGIN {printf "%.1f", b - a}')
		if [ "$3" != 0 ] && [ $G_TFAIL = 0 ]; then
			if [ "$3" = 143 ] || [ "$3" = 124 ]; then
				echo "FAIL: $K: $G_TEST: timed out after ${TEST_TIMEOUT:-$KS_TEST_TIMEOUT}s"
			else
				echo "FAIL: $K: $G_TEST: exited $3"
			fi
			tail -5 "$TMP/test.log" | sed 's/^/     | /'
			G_FAILED=1 G_NFAIL=$((G_NFAIL + 1))
		fi
		test_flush
		say "$K: $G_TEST took ${_s}s"
		;;
	KS-END*)
		G_DONE=1
		;;
	PASS:*)
		echo "PASS: $K: $G_TEST:${_l#*:}" >>"$TMP/tbuf"
		G_TP=$((G_TP + 1))
		;;
	SKIP:*)
		echo "SKIP: $K: $G_TEST:${_l#*:}" >>"$TMP/tbuf"
		G_TS=$((G_TS + 1))
		;;
	FAIL:*)
		echo "FAIL: $K: $G_TEST:${_l#*:}" >>"$TMP/tbuf"
		G_TFAIL=1 G_TF=$((G_TF + 1))
		;;
	"# "*)
		# a test's notes for the reader (test_budget's table), with its results
		echo "# $K: $G_TEST: ${_l#\# }" >>"$TMP/tbuf"
		echo "$_l" >>"$TMP/test.log"
		;;
	*)
		echo "$_l" >>"$TMP/test.log"
		[ -n "$KS_CMD" ] && echo "$_l"
		;;
	esac
}

# The tests the guest of the loaded descriptor runs, into K_TESTS (a list for the guest's
# init; empty: all of them; "none": do not boot it).  Without KS_TESTS: its TESTS (all if
# unset).  KS_TESTS=all: all.  KS_TESTS="a b": those of them this kernel lists in TESTS,
# and those no kernel of this run lists (not yet proven anywhere: tried on every kernel).
pick_tests() {
	if [ "$KS_TESTS" = all ]; then
		K_TESTS=
	elif [ -z "$KS_TESTS" ]; then
		K_TESTS=$TESTS
	elif [ -z "$TESTS" ]; then
		K_TESTS=$KS_TESTS
	else
		K_TESTS=
		for _t in $KS_TESTS; do
			case " $TESTS " in *" $_t "*) K_TESTS="$K_TESTS $_t" ;; esac
			case " $PROVEN " in *" $_t "*) ;; *) K_TESTS="$K_TESTS $_t" ;; esac
		done
		K_TESTS=${K_TESTS# }
		[ -n "$K_TESTS" ] || K_TESTS=none
	fi
}

# boot KERNEL [retry]: one guest run; with "retry", a guest that dies or
# hangs inside a test returns 2 instead of failing, to be run again from
# that test (see the main loop).
boot() {
	K=$1
	_retry=${2:-}
	G_WHY=
	LDIR=$B/$K
	mkdir -p "$LDIR"
	: >"$TMP/results"
	G_T0=$(date +%s) G_TMARK=$G_T0 G_DONE=0 G_FAILED=0 G_TEST=init G_TFAIL=0 G_NPASS=0 G_NFAIL=0 G_NSKIP=0
	G_TP=0 G_TF=0 G_TS=0
	: >"$TMP/tbuf"
	# shellcheck disable=SC2086
	qemu-system-x86_64 -nographic -no-reboot -m "$MEM" -smp "$SMP${MAXCPUS:+,maxcpus=$MAXCPUS}" \
		$_accel -cpu $_cpu -nic none -monitor none \
		-kernel "$KDIR/vmlinuz" -initrd "$TMP/initrd" \
		-append "console=ttyS0 panic=-1 $_quiet oops=panic softlockup_all_cpu_backtrace=1 $APPEND" \
		-serial "file:$TMP/console" -serial "file:$TMP/results" </dev/null >"$TMP/qemu.out" 2>&1 &
	QEMU_PID=$!
	_n=0
	while :; do
		_alive=0
		kill -0 "$QEMU_PID" 2>/dev/null && _alive=1
		_total=$(wc -l <"$TMP/results")
		if [ "$_total" -gt "$_n" ]; then
			sed -n "$((_n + 1)),${_total}p" "$TMP/results" >"$TMP/chunk"
			while IFS= read -r _line; do
				guest_line "$_line"
			done <"$TMP/chunk"
			_n=$_total
		fi
		[ $_alive = 0 ] && break
		_now=$(date +%s)
		if [ $((_now - G_T0)) -ge "$KS_TIMEOUT" ]; then
			G_WHY="guest did not finish within ${KS_TIMEOUT}s (last test: $G_TEST)"
			break
		fi
		# the guest ends a test after KS_TEST_TIMEOUT; no word for longer means the guest hangs
		if [ $((_now - G_TMARK)) -ge $((${TEST_TIMEOUT:-$KS_TEST_TIMEOUT} + 60)) ]; then
			G_WHY="guest hangs (nothing for $((_now - G_TMARK))s, last test: $G_TEST)"
			break
		fi
		sleep 1
	done
	if [ -n "$QEMU_PID" ]; then
		kill "$QEMU_PID" 2>/dev/null
		wait "$QEMU_PID"
		_rc=$?
		QEMU_PID=
	fi
	# the last run's logs stay for a look after a failure
	tr -d '\r' <"$TMP/console" >"$LDIR/console.log"
	tr -d '\r' <"$TMP/results" >"$LDIR/results.log"
	if [ $G_DONE = 0 ]; then
		: "${G_WHY:=guest stopped before finishing (qemu exit $_rc, last test: $G_TEST)}"
		if [ -n "$_retry" ] && [ "$G_TEST" != init ]; then
			# the dying test's results so far are dropped: it runs again whole
			cp "$LDIR/console.log" "$LDIR/console-died.log"
			say "$K: NOTE: $G_WHY; its console is kept in $LDIR/console-died.log:"
			grep -E 'BUG|lockup|stall|panic|Oops' "$LDIR/console-died.log" | head -5 | sed 's/^/     | console: /'
			say "$K: $G_NPASS passed, $G_NFAIL failed, $G_NSKIP skipped before that; booting again from $G_TEST"
			return 2
		fi
		test_flush
		echo "FAIL: $K: $G_WHY"
		G_FAILED=1 G_NFAIL=$((G_NFAIL + 1))
		tail -5 "$TMP/qemu.out" | sed 's/^/     | qemu: /'
		tail -20 "$LDIR/console.log" | sed 's/^/     | console: /'
		echo "     | (all of it in $LDIR/console.log)"
	fi
	say "$K: $G_NPASS passed, $G_NFAIL failed, $G_NSKIP skipped in $(($(date +%s) - G_T0))s from qemu start to power-off"
	return $G_FAILED
}

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing; run scripts/setup.sh"
# TCG by default: it boots 6.1 in seconds, and on this machine kind KVM
# cannot be trusted: /dev/kvm is there under a nested hypervisor that makes
# qemu abort with "-cpu max" (failed to set MSR 0x10a, ARCH_CAPABILITIES) and
# hang in the guest's early boot with "-cpu host,arch-capabilities=off".
# KS_KVM=1 asks for KVM where it works.
#
# One host thread for all vCPUs (thread=single), not one each (MTTCG): on this
# shared 2-core host a vCPU thread can be descheduled for seconds while the
# other spins with interrupts off waiting for it (an IPI, text_poke's sync when
# a probe is attached): both then report soft lockups and the RCU kthread
# starves, the freeze seen about once in ten runs.  Round-robin in one thread
# lets no vCPU outrun the other; measured as fast as MTTCG here (docs/kernels.md).
# KS_TCG_THREAD=multi asks for MTTCG.
#
# No "quiet": a lockup's or stall's backtraces (KERN_DEFAULT) reach the console
# (build/kernels/NAME/console.log, its lockup lines shown in the NOTE); the
# boot adds ~400 lines and no measurable time.  KS_QUIET=1 puts it back.
_accel="-accel tcg,thread=${KS_TCG_THREAD:-single}" _cpu=max
_quiet=${KS_QUIET:+quiet}
if [ -n "${KS_KVM:-}" ]; then
	_accel="-accel kvm" _cpu=host
fi
say "qemu: $_accel -cpu $_cpu"
[ -x ./ksight ] || die "./ksight missing; run make all"
failed=0 t0=$(date +%s)
KLIST=${*:-${KERNELS:-debian-6.1 debian-6.1-128cpu}}
# Every test some kernel of this run lists in its TESTS.
PROVEN=$(for k in $KLIST; do (load_conf "$k" && echo "$TESTS"); done | tr ' ' '\n' | sort -u | tr '\n' ' ')
for k in $KLIST; do
	load_conf "$k"
	pick_tests
	if [ "$K_TESTS" = none ]; then
		say "$k: not booted: none of KS_TESTS ($KS_TESTS) is among its tests ($TESTS)"
		continue
	fi
	fetch "$k"
	KS_FROM=
	initramfs "$k"
	boot "$k" retry
	case $? in
	0) ;;
	2)
		# Once, a guest that died or hung inside a test runs again from
		# that test: under TCG this happened about once in ten guest runs
		# here, with no sign of it in the test itself.  Said above as a NOTE;
		# a second death in the same kernel fails.
		KS_FROM=$G_TEST
		initramfs "$k"
		boot "$k" || failed=1
		;;
	*) failed=1 ;;
	esac
done
say "kernels: $(($(date +%s) - t0))s in all"
exit $failed
