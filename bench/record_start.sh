#!/bin/bash
# Benchmark: `ksight record` start-up against `perf record` on raw_syscalls:sys_enter: from the spawn to the first event recorded, and the record program's load (verifier instructions, BPF_PROG_LOAD time, sizes).
#
# Spawn to recorded: the rec_spawn workload spawns the recorder (-p on itself) and makes a marked
# getppid every 100 us carrying the microseconds since the spawn; the first marked call in the file
# is when recording began (within 0.1 ms plus the workload's scheduling).  Tools interleaved per
# round, medians.  Load: one recording per binary, without and with --filter: the program's
# verified instructions (-v), xlated and jited bytes (bpftool), and the BPF_PROG_LOAD call's time
# (strace -T, bpf calls only).  KSIGHT_OLD=path adds an older binary to every row.  Root; run from the repo.
set -u
ROUNDS=${ROUNDS:-5}
TOTAL_MS=${TOTAL_MS:-3000}
KSIGHT=${KSIGHT:-./ksight}
OLD=${KSIGHT_OLD:-}
SPAWN=build/workloads/rec_spawn
TMP=$(mktemp -d /tmp/ksight-bench-recstart.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

[ -x "$SPAWN" ] || make -s "$SPAWN" || exit 1
command -v perf >/dev/null || { echo "bench: perf is needed" >&2; exit 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the first marked call's microseconds since the spawn, in a ksight recording or a perf.data
first_ksight() {
	"$KSIGHT" report -j "$1" 2>/dev/null |
		jq -s '[.[] | select(.fields.args[0] == 6209758 and .fields.args[1] == 1) | .fields.args[2]] | min // empty'
}
first_perf() {
	local h
	h=$(perf script -i "$1" -F trace 2>/dev/null | grep -o '(5ec0de, 1, [0-9a-f]*' | head -n 1 | sed 's/.*, //')
	[ -n "$h" ] && echo $((16#$h))
}

TOOLS="ksight perf"
[ -n "$OLD" ] && TOOLS="ksight-old $TOOLS"
for r in $(seq "$ROUNDS"); do
	for t in $TOOLS; do
		f=$TMP/$t.data
		rm -f "$f"
		case $t in
		ksight|ksight-old)
			bin=$KSIGHT
			[ "$t" = ksight-old ] && bin=$OLD
			"$SPAWN" ticks "$TOTAL_MS" -- "$bin" record -e raw_syscalls:sys_enter -p %p -o "$f" >/dev/null 2>&1
			us=$(first_ksight "$f") ;;
		perf)
			"$SPAWN" ticks "$TOTAL_MS" -- perf record -q -e raw_syscalls:sys_enter -p %p -o "$f" >/dev/null 2>&1
			us=$(first_perf "$f") ;;
		esac
		echo "${us:-nan}" >>"$TMP/$t.start"
	done
done

# xlated and jited bytes of the ks_record program PID holds
prog_sizes() {
	local id
	id=$(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u |
		while read -r i; do bpftool -j prog show id "$i" 2>/dev/null; done |
		jq -r 'select(.name == "ks_record") | .id' | head -n 1)
	bpftool -j prog show id "$id" | jq -r '"\(.bytes_xlated) \(.bytes_jited)"'
}
load_row() { # NAME BIN [ARGS...]: verified instructions from -v (bpftool 7.1 does not show them; older binaries do not say)
	local name=$1 bin=$2 kp sizes ms insns
	shift 2
	strace -f --seccomp-bpf -T -e trace=bpf -o "$TMP/strace" \
		"$bin" record -v -e raw_syscalls:sys_enter -o "$TMP/l.ksr" -d 1 "$@" 2>"$TMP/err" &
	kp=$!
	while ! grep -q tracing "$TMP/err" 2>/dev/null; do
		kill -0 $kp 2>/dev/null || break
		sleep 0.02
	done
	sizes=$(prog_sizes "$(pgrep -P $kp | head -n 1)")
	wait $kp
	insns=$(sed -n 's/.*record: ks_record: \([0-9]*\) instructions verified.*/\1/p' "$TMP/err")
	ms=$(grep 'prog_name="ks_record"' "$TMP/strace" | sed -n 's/.*<\([0-9.]*\)>$/\1/p' | awk '{ printf "%.1f", $1 * 1e3 }')
	printf "%-26s %14s %14s %12s %16s\n" "$name" "${insns:-?}" $sizes "$ms"
}

printf "%-12s %22s %10s\n" tool "spawn to recorded, ms" rounds
for t in $TOOLS; do
	printf "%-12s %22s %10s\n" "$t" "$(awk '$1 != "nan" { print $1 / 1000 }' "$TMP/$t.start" | median)" \
		"$(awk '$1 != "nan"' "$TMP/$t.start" | wc -l)/$ROUNDS"
done
echo
printf "%-26s %14s %14s %12s %16s\n" program "verified insns" "xlated bytes" "jited bytes" "PROG_LOAD ms"
for b in ${OLD:+old} new; do
	bin=$KSIGHT
	[ "$b" = old ] && bin=$OLD
	load_row "$b" "$bin"
	load_row "$b --filter" "$bin" --filter 'args[0] == 1 || comm ~ "x*"'
done
echo "(medians of $ROUNDS rounds, tools interleaved; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F))"
