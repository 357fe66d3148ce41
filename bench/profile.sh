#!/bin/bash
# Benchmark: `ksight profile -F 99` system-wide (fp, dwarf and cfi) against `perf record -F 99 -g` + `perf script` and `perf record --call-graph dwarf` + `perf script` on one busy workload; funclat's uprobe cost per call against bpftrace's.
#
# Usage: bash bench/profile.sh [SECONDS [ROUNDS]]   (root; make all first; default 10 s, 3 rounds)
#   TOOLS="ksight-fp perf-fp"   only these (default: ksight-fp ksight-dwarf ksight-cfi perf-fp perf-dwarf; also
#                               ksight-fp-noinl: fp with --no-inline, as perf script here shows no inlined calls)
#   KSIGHT_BASE=FILE            another ksight binary (an older build) as ksight-fp-base, in the same
#                               alternating rounds: a before/after figure on the same load and noise
#   CHURN=1                     many short-lived processes too (a loop of ls, python3 -c pass, sh -c :),
#                               which every tool must capture or record
#   UPROBES=0                   leaves out the uprobe part
#
# Profiling: two prof_qsort processes keep both CPUs busy (hot_spin reached through libc's qsort,
# no frame pointers).  Each tool profiles the whole machine for SECONDS at 99 Hz, rounds
# alternating the tools; per tool the medians of: the tool's own CPU time (user + system, from
# start to its report or `perf script`'s end: symbolization included), the in-kernel BPF time of
# ksight's program (kernel.bpf_stats_enabled) in all and per run of the program (bpf_ns_run:
# run_time_ns / run_cnt, the in-kernel cost of a sample: cfi walks the user stack there), the
# user-space unwinding per sample (uw_ns: dwarf's libdw unwind), samples, and the mean stack depth
# of the samples of prof_qsort (frames below the comm).  perf's kernel-side cost (copying stacks at each
# sample, in the interrupted task) is not in its figure, as ksight's BPF time is shown apart.
#
# uprobes: fl_calls calls a trivial function N times back to back, untraced, under `ksight
# funclat` (uprobe + uretprobe, histogram) and under bpftrace's equivalent one-liner (uprobe +
# uretprobe, hist of nsecs): ns per call, medians of ROUNDS.
set -u
cd "$(dirname "$0")/.." || exit 1
SECS=${1:-10}
ROUNDS=${2:-3}
K=./ksight
W=build/workloads
TMP=$(mktemp -d /tmp/ksight-bench-profile.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
for f in $K $W/prof_qsort $W/fl_calls; do [ -x "$f" ] || { echo "bench: no $f (make all)" >&2; exit 1; }; done
command -v perf >/dev/null || echo "bench: no perf (linux-perf): its rows are skipped" >&2

median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit } print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# CPU seconds (user + system) of a finished command, from GNU time's output file $1
cpu_of() { awk '{ print $1 + $2 }' "$1"; }

# peak resident MiB of a finished command (GNU time's %M, KiB), the larger of the files given
rss_of() { awk '$3 > m { m = $3 } END { printf "%.0f\n", m / 1024 }' "$@"; }

# one profiling run of TOOL; appends "tool cpu_s bpf_ns samples depth rss_mib" to $TMP/prof.txt
prof_once() {
	local tool=$1 out=$TMP/$1.out data=$TMP/perf.data cpu bpf=0 samples depth rss bpfrun=- uw=-
	$W/prof_qsort $((SECS + 4)) >/dev/null &
	$W/prof_qsort $((SECS + 4)) >/dev/null &
	if [ "${CHURN:-0}" = 1 ]; then
		(end=$((SECONDS + SECS + 3)); while [ $SECONDS -lt $end ]; do ls / >/dev/null; python3 -c pass; sh -c :; done) &
	fi
	sleep 1
	case $tool in
	ksight-fp | ksight-dwarf | ksight-cfi | ksight-fp-base | ksight-fp-noinl)
		local cg=${tool#ksight-} bin=$K more=
		[ "$tool" = ksight-fp-base ] && { cg=fp; bin=$KSIGHT_BASE; }
		[ "$tool" = ksight-fp-noinl ] && { cg=fp; more=--no-inline; }
		sysctl -qw kernel.bpf_stats_enabled=1
		/usr/bin/time -f "%U %S %M" -o "$TMP/time" "$bin" profile -F 99 -d "$SECS" --call-graph "$cg" $more -j >"$out" 2>"$TMP/err" &
		local tp=$!
		sleep 1
		# the profile program's run time, read just before it ends
		local kp
		kp=$(pgrep -P "$tp") # this run's own (other ksight processes may be running; KSIGHT_BASE's has another name)
		sleep $((SECS - 2))
		read -r bpf bpfrun < <(cat /proc/"$kp"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u |
			while read -r id; do bpftool -j prog show id "$id" 2>/dev/null; done |
			jq -rs '([.[] | .run_time_ns // 0] | add // 0) as $t | ([.[] | .run_cnt // 0] | add // 0) as $c |
				"\($t) \(if $c > 0 then ($t / $c | floor) else "-" end)"')
		wait $tp
		sysctl -qw kernel.bpf_stats_enabled=0
		cpu=$(cpu_of "$TMP/time")
		rss=$(rss_of "$TMP/time")
		samples=$(jq '.samples' "$out")
		[ "$tool" = ksight-dwarf ] && uw=$(jq '.unwind.user_ns_per_sample | floor' "$out")
		depth=$(jq '[.stacks[] | select(.frames[0].name == "prof_qsort") | {c: .count, d: ((.frames | length) - 1)}] | (map(.c * .d) | add) / (map(.c) | add)' "$out")
		;;
	perf-fp | perf-dwarf)
		local cg=-g
		[ "$tool" = perf-dwarf ] && cg="--call-graph dwarf"
		/usr/bin/time -f "%U %S %M" -o "$TMP/time.rec" perf record -F 99 $cg -a -q -o "$data" -- sleep "$SECS" 2>"$TMP/err"
		/usr/bin/time -f "%U %S %M" -o "$TMP/time.scr" perf script -i "$data" >"$out" 2>/dev/null
		cpu=$(awk '{ s += $1 + $2 } END { print s }' "$TMP/time.rec" "$TMP/time.scr")
		rss=$(rss_of "$TMP/time.rec" "$TMP/time.scr")
		# samples: header lines; depth: frame lines under prof_qsort's headers
		read -r samples depth < <(awk '/^[^ \t]/ { n++; inq = ($1 == "prof_qsort"); if (inq) q++; next }
			/^[ \t]+[0-9a-f]+ / { if (inq) f++ } END { printf "%d %.1f\n", n, q ? f / q : 0 }' "$out")
		rm -f "$data"
		;;
	esac
	wait
	echo "$tool $cpu $bpf $samples $depth $rss $bpfrun $uw" >>"$TMP/prof.txt"
}

tools="ksight-fp ksight-dwarf ksight-cfi"
command -v perf >/dev/null && tools="$tools perf-fp perf-dwarf"
tools=${TOOLS:-$tools}
if [ -n "${KSIGHT_BASE:-}" ]; then
	[ -x "$KSIGHT_BASE" ] || { echo "bench: KSIGHT_BASE $KSIGHT_BASE is not executable" >&2; exit 1; }
	tools="$tools ksight-fp-base"
fi
echo "== profile: $ROUNDS rounds of ${SECS}s at 99 Hz, 2 busy CPUs (prof_qsort x2)$([ "${CHURN:-0}" = 1 ] && echo ", churn")"
for r in $(seq "$ROUNDS"); do
	for t in $tools; do
		prof_once "$t"
	done
done
printf "%-13s %10s %10s %9s %12s %9s %11s %8s\n" tool "cpu_s" "bpf_ms" samples "mean_depth" "rss_mib" bpf_ns_run uw_ns
for t in $tools; do
	printf "%-13s %10s %10s %9s %12s %9s %11s %8s\n" "$t" \
		"$(awk -v t="$t" '$1 == t { print $2 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t { print $3 / 1e6 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t { print $4 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t { print $5 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t { print $6 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t && $7 != "-" { print $7 }' "$TMP/prof.txt" | median)" \
		"$(awk -v t="$t" '$1 == t && $8 != "-" { print $8 }' "$TMP/prof.txt" | median)"
done
# every round, for the spread behind the medians
sed 's/^/# /' "$TMP/prof.txt"
# each round's ratio of ksight fp's CPU to perf -g's (the rounds alternate the tools), then the median
for k in ksight-fp ksight-fp-noinl ksight-fp-base ksight-cfi ksight-dwarf; do
	for pf in perf-fp perf-dwarf; do
		grep -q "^$k " "$TMP/prof.txt" && grep -q "^$pf " "$TMP/prof.txt" || continue
		echo "$k / $pf CPU, median of the rounds' ratios: $(awk -v k="$k" -v pf="$pf" '$1 == k { a[++na] = $2 } $1 == pf { p[++np] = $2 }
			END { for (i = 1; i <= na && i <= np; i++) if (p[i] > 0) print a[i] / p[i] }' "$TMP/prof.txt" | median)"
	done
done
[ "${UPROBES:-1}" = 0 ] && exit 0

# uprobes: ns per call of a trivial function
N=200000
BIN=$(readlink -f $W/fl_calls)
echo "== uprobe cost: $N calls of fl_tiny_a, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	$W/fl_calls $N 0 tight | awk '{ print "none", $2 }' >>"$TMP/up.txt"
	$K funclat "$BIN:fl_tiny_a" >"$TMP/k.out" 2>"$TMP/k.err" &
	kp=$!
	until grep -q tracing "$TMP/k.err" 2>/dev/null; do sleep 0.05; done
	$W/fl_calls $N 0 tight | awk '{ print "ksight", $2 }' >>"$TMP/up.txt"
	kill -INT $kp
	wait $kp
	if command -v bpftrace >/dev/null; then
		bpftrace -e "uprobe:$BIN:fl_tiny_a { @s[tid] = nsecs; } uretprobe:$BIN:fl_tiny_a /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }" >"$TMP/b.out" 2>&1 &
		bp=$!
		until grep -q Attaching "$TMP/b.out" 2>/dev/null; do sleep 0.05; done
		sleep 1
		$W/fl_calls $N 0 tight | awk '{ print "bpftrace", $2 }' >>"$TMP/up.txt"
		kill -INT $bp
		wait $bp
	fi
done
for t in none ksight bpftrace; do
	m=$(awk -v t="$t" '$1 == t { print $2 }' "$TMP/up.txt" | median)
	[ "$m" = - ] || echo "$t: $m ns per call"
done
