#!/bin/bash
# Overhead benchmark of `ksight syscalls` against an empty-program floor, libbpf-tools syscount and bpftrace on a getppid loop.
#
# For every tracer: start it, wait for the line it prints once attached, run
# the pinned getppid loop, stop it.  Each tracer run is paired with a run of
# the same loop without any tracer, in alternating order (baseline first in
# one round, tracer first in the next), and the reported cost is the median
# over ROUNDS of (tracer - its own baseline) ns per call: the machine is
# shared and noisy, a difference of adjacent runs cancels slow drift and a
# median drops the rounds hit by someone else's burst.  A pair is retried
# when a foreign program on the syscall hooks (another user's tracer) comes
# or goes during it.  Start-up time (exec to the attached line), peak RSS (VmHWM just
# before stopping) and kernel map memory come from the same runs.  A last
# pass turns on the kernel's BPF run-time statistics (restored afterwards) for
# a second, in-kernel measure of each program's cost per event, and records
# each program's instruction count and helper calls.
#
# Environment: ROUNDS (7), CALLS per repetition (100000), REPS per run (15),
# CPU for the loop (the last), TOOLS (space-separated names, see tool_def),
# SETTLE seconds between attach and loop (0.3), WAIT_CLEAN seconds to wait
# for other users' syscall tracers to go before a pair (120), KSIGHT (./ksight),
# STATS_ROUNDS (rounds of the bpf_stats pass, 3; 0: none), OUT (build/bench/syscalls.json),
# VARIANTS ("NAME=PATH ...": other ksight builds, measured in the same run as
# the tools ksight@NAME, ksight_L@NAME and ksight_pid@NAME, e.g. to try a change to the BPF side;
# ksight_pid, not in the default TOOLS, is syscalls --by pid).
set -u
cd "$(dirname "$0")/.." || exit 1

B=build/bench
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-100000}
REPS=${REPS:-15}
CPU=${CPU:-$(($(nproc) - 1))}
TOOLS=${TOOLS:-"floor2 floor1 floor2_tp ksight ksight_L syscount_L syscount bpftrace"}
SETTLE=${SETTLE:-0.3}
WAIT_CLEAN=${WAIT_CLEAN:-120}
KSIGHT=${KSIGHT:-./ksight}
VARIANTS=${VARIANTS:-}
STATS_ROUNDS=${STATS_ROUNDS:-3}
OUT=${OUT:-$B/syscalls.json}
SYSCOUNT=${SYSCOUNT:-/usr/sbin/syscount}
NR_GETPPID=110
BT_PROG='tracepoint:raw_syscalls:sys_enter { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ { @lat[args->id] = hist(nsecs - @start[tid]); delete(@start[tid]); }
END { clear(@start); }'

die() { echo "bench: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs)"
FLOOR=$B/objfloor
FLOOR_OBJ=$B/bpf/floor.bpf.o
for f in "$B/getppid_loop" "$FLOOR" "$KSIGHT"; do
	[ -x "$f" ] || die "'$f' is missing; run 'make bench'"
done
[ -e "$FLOOR_OBJ" ] || die "'$FLOOR_OBJ' is missing; run 'make bench'"
for c in jq bpftool stdbuf; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
TMP=$(mktemp -d /tmp/ksight-bench.XXXXXX)
STATS_SAVED=""
cleanup() {
	[ -n "${T_PID:-}" ] && kill -INT "$T_PID" 2>/dev/null && wait "$T_PID" 2>/dev/null
	[ -n "$STATS_SAVED" ] && echo "$STATS_SAVED" >/proc/sys/kernel/bpf_stats_enabled
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The hook ksight picks on this kernel; the floors use the same one.
HOOK=$("$KSIGHT" syscalls -d 0.1 -j 2>&1 >/dev/null | sed -n 's/.*tracing syscalls (hook \([a-z_]*\)).*/\1/p')
[ -n "$HOOK" ] || die "ksight syscalls does not start: $("$KSIGHT" syscalls -d 0.1 2>&1 | head -1)"

# tool_def NAME: sets CMD (argv), READY (the attached line's marker), READY_ON
# (the stream it comes on), SEEN (how to count the loop's getppid calls in
# the report), DESC; 1 for unknown names.
tool_def() {
	local k=$KSIGHT v
	SEEN=none
	READY_ON=err
	# ksight@NAME and ksight_L@NAME: the build NAME of VARIANTS
	if [[ $1 == ksight*@* ]]; then
		k=""
		for v in $VARIANTS; do
			[ "${v%%=*}" = "${1#*@}" ] && k=${v#*=}
		done
		[ -n "$k" ] || return 1
	fi
	case ${1%@*} in
	floor2) CMD=("$FLOOR" --hook "$HOOK" "$FLOOR_OBJ"); READY=tracing
		DESC="empty programs on sys_enter+sys_exit ($HOOK)" ;;
	floor1) CMD=("$FLOOR" --skip sys_enter --hook "$HOOK" "$FLOOR_OBJ"); READY=tracing
		DESC="empty program on sys_exit only ($HOOK)" ;;
	floor2_tp) CMD=("$FLOOR" --hook tp "$FLOOR_OBJ"); READY=tracing
		DESC="empty programs on sys_enter+sys_exit (classic tracepoint, syscount's hook type)" ;;
	ksight) CMD=("$k" syscalls -j -n 0); READY=tracing; SEEN=ksight
		DESC="ksight syscalls (counts, errors, latency histogram) [$k]" ;;
	ksight_L) CMD=("$k" syscalls -L -j -n 0); READY=tracing; SEEN=ksight
		DESC="ksight syscalls -L (count only) [$k]" ;;
	ksight_pid) CMD=("$k" syscalls --by pid -j -n 0); READY=tracing
		DESC="ksight syscalls --by pid (a hash row per process: ks_map_lookup_or_init's hit path) [$k]" ;;
	syscount_L) CMD=("$SYSCOUNT" -L -T 512); READY=Tracing; READY_ON=out; SEEN=syscount
		DESC="libbpf-tools syscount -L (counts and latency)" ;;
	syscount) CMD=("$SYSCOUNT" -T 512); READY=Tracing; READY_ON=out; SEEN=syscount
		DESC="libbpf-tools syscount (count only)" ;;
	bpftrace) CMD=(bpftrace -e "$BT_PROG"); READY=Attaching; READY_ON=out; SEEN=bpftrace
		DESC="bpftrace one-liner: @start[tid] at sys_enter, hist per syscall id at sys_exit" ;;
	*) return 1 ;;
	esac
}

for t in $TOOLS; do
	tool_def "$t" || die "unknown tool '$t'"
	[ -x "${CMD[0]}" ] || command -v "${CMD[0]}" >/dev/null || die "'${CMD[0]}' is missing; run 'make setup'"
done

# ids of the BPF programs, and the memlock of the maps, that process $1 holds
prog_ids() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un
}
map_kb() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null |
		awk '$1 == "map_id:" { m = 1 } $1 == "memlock:" { v = $2 } $1 == "pos:" { if (m) s += v; m = 0 }
		     END { if (m) s += v; printf "%d", s / 1024 }'
}

# Ids of the programs on the syscall hooks that are not ours (other users'
# tracers), comma-separated; by name, since bpftrace's perf-event attachments
# show in no link list.  $1: our own ids.
foreign() {
	bpftool -j prog show 2>/dev/null | jq -r --argjson mine "[${1:-}]" \
		'[.[] | select(.type == "tracing" or .type == "raw_tracepoint" or .type == "tracepoint")
		      | select((.name // "") | test("^sys_e|raw_sys|sys_enter|sys_exit"))
		      | .id | select(. as $i | $mine | index($i) | not)] | sort | map(tostring) | join(",")'
}

# Waits up to WAIT_CLEAN seconds for the syscall hooks to be free of foreign
# programs; a set that outlasted the wait once is accepted from then on.
ACCEPTED=""
wait_clean() {
	local i=0 f
	f=$(foreign)
	while [ -n "$f" ] && [ "$f" != "$ACCEPTED" ]; do
		if [ $i = 0 ]; then echo "bench: foreign programs on the syscall hooks ($f); waiting up to ${WAIT_CLEAN}s" >&2; fi
		i=$((i + 1))
		if [ $i -gt "$WAIT_CLEAN" ]; then
			echo "bench: still there; going on: a pair stays valid while that set does not change" >&2
			ACCEPTED=$f
			return 1
		fi
		sleep 1
		f=$(foreign)
	done
	return 0
}

# Runs the loop once; prints its result as a JSON object.
loop() {
	"$B/getppid_loop" -n "$CALLS" -r "$REPS" -c "$CPU" |
		sed -n 's/^ns_per_call //p' | tr ' ' '\n' |
		jq -R 'split("=") | {(.[0]): (.[1] | tonumber)}' | jq -sc 'add'
}

# Starts tool $1; sets T_PID, T_OUT (its stdout), T_ERR, T_STARTUP_MS.  1 when
# it did not attach.  The stream with the ready line goes through a fifo, so
# the moment it arrives is taken as it is read, not by polling a file.
t_start() {
	local fifo=$TMP/fifo line t0 t1 fd log
	tool_def "$1"
	T_OUT=$TMP/$1.out
	T_ERR=$TMP/$1.err
	: >"$T_OUT"
	: >"$T_ERR"
	rm -f "$fifo"
	mkfifo "$fifo"
	# stdbuf: syscount prints its ready line with stdio, block-buffered into a pipe
	t0=$EPOCHREALTIME
	if [ "$READY_ON" = err ]; then
		log=$T_ERR
		stdbuf -oL -eL "${CMD[@]}" >"$T_OUT" 2>"$fifo" &
	else
		log=$T_OUT
		stdbuf -oL -eL "${CMD[@]}" >"$fifo" 2>"$T_ERR" &
	fi
	T_PID=$!
	exec {fd}<"$fifo"
	t1=""
	while IFS= read -r -t 60 line <&$fd; do
		printf '%s\n' "$line" >>"$log"
		if [[ $line == *"$READY"* ]]; then
			t1=$EPOCHREALTIME
			break
		fi
	done
	# the rest of its output (the report at exit) is drained into the log
	cat <&$fd >>"$log" &
	T_CAT=$!
	exec {fd}<&-
	if [ -z "$t1" ]; then
		kill -INT "$T_PID" 2>/dev/null
		wait "$T_PID" 2>/dev/null
		wait "$T_CAT"
		T_PID=""
		echo "bench: $1 did not attach: $(cat "$T_ERR" "$T_OUT" | head -3)" >&2
		return 1
	fi
	T_STARTUP_MS=$(echo "$t0 $t1" | awk '{ printf "%.1f", ($2 - $1) * 1000 }')
	sleep "$SETTLE"
}

# Stops the tool (in this shell: the tool is its child); sets T_SEEN, how many
# getppid calls its report shows (-1: not checked), and waits until the
# kernel has freed its programs, so that they are not taken for a foreign
# tracer in the next run.
t_stop() {
	local ids i=0
	ids=$(prog_ids "$T_PID" | paste -sd,)
	kill -INT "$T_PID"
	wait "$T_PID"
	wait "$T_CAT"
	T_PID=""
	while [ -n "$ids" ] && bpftool -j prog show 2>/dev/null |
		jq -e --argjson ids "[$ids]" 'any(.[]; .id as $i | $ids | index($i))' >/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && break
		sleep 0.05
	done
	case $SEEN in
	ksight) T_SEEN=$(jq -s "[.[].rows[]? | select(.nr == $NR_GETPPID) | .count] | add // 0" "$T_OUT" 2>/dev/null || echo 0) ;;
	syscount) T_SEEN=$(awk '$1 == "getppid" { n += $2 } END { print n + 0 }' "$T_OUT") ;;
	bpftrace) T_SEEN=$(awk -v key="@lat[$NR_GETPPID]:" '$1 ~ /^@/ { on = ($1 == key) }
			on && /^\[/ { l = $0; sub(/\|.*/, "", l); k = split(l, a, " "); n += a[k] }
			END { print n + 0 }' "$T_OUT") ;;
	*) T_SEEN=-1 ;;
	esac
}

# One tracer run: start, loop, sample memory, stop.  Prints a JSON object.
tool_run() {
	local t=$1 ids res rss mkb seen f0 f1
	t_start "$t" || return 1
	ids=$(prog_ids "$T_PID" | paste -sd,)
	f0=$(foreign "$ids")
	res=$(loop)
	rss=$(awk '/^VmHWM:/ { print $2 }' /proc/"$T_PID"/status)
	mkb=$(map_kb "$T_PID")
	f1=$(foreign "$ids")
	t_stop
	seen=$T_SEEN
	jq -nc --argjson r "$res" --argjson st "$T_STARTUP_MS" --argjson rss "${rss:-0}" --argjson mkb "${mkb:-0}" \
		--argjson seen "${seen:-0}" --arg f0 "$f0" --arg f1 "$f1" --arg ids "$ids" \
		'$r + {startup_ms: $st, rss_kb: $rss, map_kb: $mkb, seen_getppid: $seen, foreign: [$f0, $f1], prog_ids: $ids}'
}

base_run() {
	local f0 f1 res
	f0=$(foreign)
	res=$(loop)
	f1=$(foreign)
	jq -nc --argjson r "$res" --arg f0 "$f0" --arg f1 "$f1" '$r + {foreign: [$f0, $f1]}'
}

PAIRS=$TMP/pairs.jsonl
: >"$PAIRS"
DIRTY=()

# measure_seq ROUND ATTEMPT TOOL...: runs B T1 B T2 ... Tn B (B: the loop
# without a tracer) and records each tracer run with the baselines on both
# sides of it; a tracer whose neighbourhood saw a foreign tracer come or go
# is appended to DIRTY.
measure_seq() {
	local r=$1 attempt=$2 prev t tr next clean
	shift 2
	wait_clean
	prev=$(base_run)
	for t in "$@"; do
		tr=$(tool_run "$t") || die "$t failed"
		next=$(base_run)
		clean=$(jq -n --argjson a "$prev" --argjson b "$tr" --argjson c "$next" \
			'$a.foreign + $b.foreign + $c.foreign | unique | length == 1')
		jq -nc --argjson a "$prev" --argjson b "$tr" --argjson c "$next" --arg tool "$t" \
			--argjson round "$r" --argjson attempt "$attempt" --argjson clean "$clean" \
			'def mid(k): ($a[k] + $c[k]) / 2;
			 {tool: $tool, round: $round, attempt: $attempt, clean: $clean,
			  alone: ($clean and $a.foreign[0] == ""), before: $a, run: $b, after: $c,
			  base: {median: mid("median"), min: mid("min"), cpu_median: mid("cpu_median"), cpu_min: mid("cpu_min")}}' >>"$PAIRS"
		printf 'bench: round %d %-12s base %7.1f tool %7.1f ns/call (cpu %7.1f %7.1f) start %6.1f ms%s\n' "$r" "$t" \
			"$(jq -nr --argjson a "$prev" --argjson c "$next" '($a.median + $c.median) / 2')" "$(jq -r .median <<<"$tr")" \
			"$(jq -nr --argjson a "$prev" --argjson c "$next" '($a.cpu_median + $c.cpu_median) / 2')" "$(jq -r .cpu_median <<<"$tr")" \
			"$(jq -r .startup_ms <<<"$tr")" "$([ "$clean" = true ] || echo ' (foreign tracers changed: again)')" >&2
		[ "$clean" = true ] || DIRTY+=("$t")
		prev=$next
	done
}

ntools=$(wc -w <<<"$TOOLS")
echo "bench: $ntools tracers x $ROUNDS rounds, loop ${CALLS} calls x $REPS reps on cpu $CPU, hook $HOOK" >&2
read -ra tools <<<"$TOOLS"
for ((r = 0; r < ROUNDS; r++)); do
	# rotate the order every round, so no tracer always follows the same one
	order=()
	for ((k = 0; k < ntools; k++)); do
		order+=("${tools[$(((k + r) % ntools))]}")
	done
	DIRTY=()
	measure_seq "$r" 1 "${order[@]}"
	for attempt in 2 3; do
		[ ${#DIRTY[@]} = 0 ] && break
		again=("${DIRTY[@]}")
		DIRTY=()
		measure_seq "$r" "$attempt" "${again[@]}"
	done
done

# The in-kernel pass: run time per program invocation from bpf_stats, and
# each program's size and helper calls; STATS_ROUNDS rounds, rotated.
STATSF=$TMP/stats.jsonl
: >"$STATSF"
if [ "$STATS_ROUNDS" -gt 0 ]; then
	STATS_SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	for ((r = 0; r < STATS_ROUNDS; r++)); do
		for ((k = 0; k < ntools; k++)); do
			t=${tools[$(((k + r) % ntools))]}
			t_start "$t" || die "$t failed"
			ids=$(prog_ids "$T_PID")
			for id in $ids; do
				bpftool -j prog show id "$id" >"$TMP/p0.$id"
			done
			res=$(loop)
			for id in $ids; do
				bpftool -j prog show id "$id" >"$TMP/p1.$id"
				bpftool prog dump xlated id "$id" >"$TMP/x.$id"
				insns=$(grep -cE '^ *[0-9]+: ' "$TMP/x.$id")
				helpers=$(sed -n 's/.*call \([a-z_0-9]*\)#.*/\1/p' "$TMP/x.$id" | jq -Rsc 'split("\n") | map(select(. != ""))')
				jq -nc --slurpfile a "$TMP/p0.$id" --slurpfile b "$TMP/p1.$id" --arg tool "$t" \
					--argjson insns "$insns" --argjson helpers "$helpers" --argjson loop "$res" --argjson round "$r" \
					'$a[0] as $a | $b[0] as $b |
					 {tool: $tool, round: $round, prog: $b.name, type: $b.type, xlated_insns: $insns,
					  bytes_jited: $b.bytes_jited, helpers: $helpers, run_cnt: (($b.run_cnt // 0) - ($a.run_cnt // 0)),
					  run_time_ns: (($b.run_time_ns // 0) - ($a.run_time_ns // 0)), loop: $loop}' >>"$STATSF"
			done
			t_stop
			echo "bench: bpf_stats round $r $t done" >&2
		done
	done
	echo "$STATS_SAVED" >/proc/sys/kernel/bpf_stats_enabled
	STATS_SAVED=""
fi

# Everything below is arithmetic on the recorded runs.
DESCS=$(for t in "${tools[@]}"; do tool_def "$t"; jq -nc --arg t "$t" --arg d "$DESC" '{($t): $d}'; done | jq -sc add)
mkdir -p "$(dirname "$OUT")"
jq -s --slurpfile stats "$STATSF" --argjson descs "$DESCS" --arg hook "$HOOK" \
	--argjson calls "$CALLS" --argjson reps "$REPS" --argjson rounds "$ROUNDS" --argjson cpu "$CPU" \
	--arg kernel "$(uname -r)" --arg date "$(date -u +%FT%TZ)" --arg order "$TOOLS" '
	def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def q(p): sort | if length == 0 then null else .[((length - 1) * p) | round] end;
	def r1: if . == null then null else (. * 10 | round) / 10 end;
	def r2: if . == null then null else (. * 100 | round) / 100 end;
	. as $all
	| [$all[] | select(.clean)] as $clean
	| ($order | split(" ") | map(select(. != ""))) as $names
	| [$names[] as $t | ([$clean[] | select(.tool == $t)] | if length >= 3 then . else [$all[] | select(.tool == $t)] end) as $p
	   | ([$stats[] | select(.tool == $t)]) as $s
	   | {key: $t, value: {
		desc: $descs[$t],
		extra_ns: ([$p[] | .run.median - .base.median] | median | r1),
		extra_ns_q25: ([$p[] | .run.median - .base.median] | q(0.25) | r1),
		extra_ns_q75: ([$p[] | .run.median - .base.median] | q(0.75) | r1),
		extra_cpu_ns: ([$p[] | .run.cpu_median - .base.cpu_median] | median | r1),
		extra_min_ns: ([$p[] | .run.min - .base.min] | median | r1),
		tool_ns: ([$p[] | .run.median] | median | r1),
		base_ns: ([$p[] | .base.median] | median | r1),
		extra_cpu_ns_q25: ([$p[] | .run.cpu_median - .base.cpu_median] | q(0.25) | r1),
		extra_cpu_ns_q75: ([$p[] | .run.cpu_median - .base.cpu_median] | q(0.75) | r1),
		pairs: ($p | length),
		pairs_clean: ([$p[] | select(.clean)] | length),
		startup_ms: ([$p[] | .run.startup_ms] | median | r1),
		startup_ms_min: ([$p[] | .run.startup_ms] | min),
		startup_ms_max: ([$p[] | .run.startup_ms] | max),
		peak_rss_kb: ([$p[] | .run.rss_kb] | max),
		map_kb: ([$p[] | .run.map_kb] | max),
		seen_getppid_min: ([$p[] | .run.seen_getppid] | min),
		loop_calls: ($calls * ($reps + 1)),
		bpf_stats: {
			rounds: ([$s[] | .round] | unique | length),
			ns_per_event: ([$s | group_by(.round)[] | select(([.[] | .run_cnt] | max) > 0)
				| ([.[] | .run_time_ns] | add) / ([.[] | .run_cnt] | max)] | median | r1),
			programs: [$s | group_by(.prog)[] | {prog: .[0].prog, type: .[0].type, xlated_insns: .[0].xlated_insns,
				bytes_jited: .[0].bytes_jited, helpers: .[0].helpers, run_cnt: ([.[] | .run_cnt] | add),
				ns_per_run: ([.[] | select(.run_cnt > 0) | .run_time_ns / .run_cnt] | median | r1)}]
		}
	   }}] | from_entries
	| . as $t
	| {
		kernel: $kernel, date: $date, hook: $hook, cpu: $cpu, rounds: $rounds,
		calls_per_rep: $calls, reps_per_run: $reps,
		noise: {
			base_ns_median: ([$all[] | .before.median] | median | r1),
			base_ns_q10: ([$all[] | .before.median] | q(0.1) | r1),
			base_ns_q90: ([$all[] | .before.median] | q(0.9) | r1),
			base_ns_min: ([$all[] | .before.median] | min),
			base_ns_max: ([$all[] | .before.median] | max),
			base_cpu_ns_median: ([$all[] | .before.cpu_median] | median | r1),
			base_cpu_ns_q10: ([$all[] | .before.cpu_median] | q(0.1) | r1),
			base_cpu_ns_q90: ([$all[] | .before.cpu_median] | q(0.9) | r1),
			base_step_ns_median: ([$all[] | .after.median - .before.median | fabs] | median | r1),
			base_step_cpu_ns_median: ([$all[] | .after.cpu_median - .before.cpu_median | fabs] | median | r1),
			pairs_total: ($all | length),
			pairs_retried: ([$all[] | select(.clean | not)] | length),
			pairs_with_foreign_tracer: ([$all[] | select(.clean and (.alone | not))] | length)
		},
		tools: $t,
		ratios: (
			def ratio(a; b): if ($t[a] and $t[b] and ($t[b].extra_ns // 0) > 0) then $t[a].extra_ns / $t[b].extra_ns | r2 else null end;
			def ratio_cpu(a; b): if ($t[a] and $t[b] and ($t[b].extra_cpu_ns // 0) > 0) then $t[a].extra_cpu_ns / $t[b].extra_cpu_ns | r2 else null end;
			{
			ksight_vs_floor2: ratio("ksight"; "floor2"),
			ksight_vs_syscount_L: ratio("ksight"; "syscount_L"),
			ksight_L_vs_floor1: ratio("ksight_L"; "floor1"),
			ksight_L_vs_floor2: ratio("ksight_L"; "floor2"),
			ksight_L_vs_syscount: ratio("ksight_L"; "syscount"),
			cpu_ksight_vs_floor2: ratio_cpu("ksight"; "floor2"),
			cpu_ksight_vs_syscount_L: ratio_cpu("ksight"; "syscount_L"),
			cpu_ksight_L_vs_floor1: ratio_cpu("ksight_L"; "floor1"),
			cpu_ksight_L_vs_floor2: ratio_cpu("ksight_L"; "floor2"),
			cpu_ksight_L_vs_syscount: ratio_cpu("ksight_L"; "syscount")
			})
	  }
	| .ratios as $r
	| .targets = ([
		["ksight <= 0.7 x syscount -L extra", "ksight_vs_syscount_L", 0.7],
		["ksight <= 2.5 x two-hook floor", "ksight_vs_floor2", 2.5],
		["ksight -L <= 1.5 x one-hook floor", "ksight_L_vs_floor1", 1.5],
		["ksight -L <= 1.5 x two-hook floor", "ksight_L_vs_floor2", 1.5]
	  ] | map(. as [$n, $k, $l] | {target: $n, limit: $l, wall: $r[$k], cpu: $r["cpu_" + $k]})) +
	  [{target: "ksight start-up < 100 ms", limit: 100, wall: .tools.ksight.startup_ms, cpu: null},
	   {target: "ksight start-up <= syscount -L start-up (ratio)", limit: 1,
	    wall: (if .tools.ksight.startup_ms and .tools.syscount_L.startup_ms
		   then .tools.ksight.startup_ms / .tools.syscount_L.startup_ms | r2 else null end), cpu: null}]
	| .targets |= map(.met_wall = (if .wall == null then null else .wall <= .limit end)
		| .met_cpu = (if .cpu == null then null else .cpu <= .limit end))
	| .notes = {
		extra_ns: "median over pairs of (tracer run - its baseline run), each run the median of its repetitions, wall clock (CLOCK_MONOTONIC) ns per getppid call",
		extra_cpu_ns: "the same from the loop thread CPU time (CLOCK_THREAD_CPUTIME_ID): leaves out time other tasks held the CPU, so it is the steadier figure on a shared machine",
		extra_min_ns: "median over pairs of (fastest repetition with tracer - fastest without)",
		bpf_stats: "kernel.bpf_stats_enabled pass: ns_per_event is the run time of all the tool programs over the run count of the busiest one, i.e. BPF time per syscall, without the hook dispatch cost and with the stats clock reads included",
		startup_ms: "exec to the line the tool prints when attached (bpftrace prints it before attaching); includes a stdbuf exec",
		peak_rss_kb: "VmHWM of the tool just before it is stopped",
		map_kb: "memlock of the BPF maps the tool holds (kernel memory, not in RSS)",
		pairs: "pairs whose set of foreign syscall tracers did not change; retried otherwise"
	  }
	| .pairs = $all
	' "$PAIRS" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT" || die "cannot write '$OUT'"

# The human table.
jq -r '
	"ksight syscalls overhead, getppid loop on cpu \(.cpu), kernel \(.kernel), hook \(.hook), \(.rounds) rounds",
	"baseline \(.noise.base_ns_median) ns/call wall (10-90%: \(.noise.base_ns_q10)-\(.noise.base_ns_q90)), \(.noise.base_cpu_ns_median) cpu (\(.noise.base_cpu_ns_q10)-\(.noise.base_cpu_ns_q90))",
	"two baselines around one tracer run differ by \(.noise.base_step_ns_median) ns wall, \(.noise.base_step_cpu_ns_median) ns cpu (median): the noise floor of one pair",
	"pairs: \(.noise.pairs_total), retried because a foreign syscall tracer came or went: \(.noise.pairs_retried), valid but with a foreign tracer attached throughout: \(.noise.pairs_with_foreign_tracer)",
	""' "$OUT"
jq -r '
	def f: if . == null then "-" else tostring end;
	def pad($n): tostring | if length < $n then . + (" " * ($n - length)) else . end;
	def row: [.[0] | pad(14)] + (.[1:] | map(pad(16))) | join("") | sub(" +$"; "");
	(["tracer", "wall ns", "q25..q75", "cpu ns", "q25..q75", "bpf ns/call", "start ms", "rss KiB", "map KiB", "pairs"] | row),
	(.tools | to_entries[] | .value as $v |
		[.key, ($v.extra_ns | f), "\($v.extra_ns_q25 | f)..\($v.extra_ns_q75 | f)", ($v.extra_cpu_ns | f),
		 "\($v.extra_cpu_ns_q25 | f)..\($v.extra_cpu_ns_q75 | f)",
		 ($v.bpf_stats.ns_per_event | f), ($v.startup_ms | f), ($v.peak_rss_kb | f), ($v.map_kb | f),
		 "\($v.pairs_clean)/\($v.pairs)"] | row)' "$OUT"
jq -r '
	def f: if . == null then "-" else tostring end;
	"",
	"extra ns per getppid call: median over rounds of (tracer run - mean of the baseline runs on either side);",
	"wall from CLOCK_MONOTONIC, cpu from the loop thread CPU clock (steadier on a shared machine);",
	"bpf ns/call: the tool programs run time per syscall from kernel.bpf_stats_enabled (no hook dispatch cost)",
	"",
	"ratios of extra cost (wall; cpu in brackets):",
	"  ksight / two-hook floor      \(.ratios.ksight_vs_floor2 | f) (\(.ratios.cpu_ksight_vs_floor2 | f))",
	"  ksight / syscount -L         \(.ratios.ksight_vs_syscount_L | f) (\(.ratios.cpu_ksight_vs_syscount_L | f))",
	"  ksight -L / one-hook floor   \(.ratios.ksight_L_vs_floor1 | f) (\(.ratios.cpu_ksight_L_vs_floor1 | f))",
	"  ksight -L / two-hook floor   \(.ratios.ksight_L_vs_floor2 | f) (\(.ratios.cpu_ksight_L_vs_floor2 | f))",
	"  ksight -L / syscount         \(.ratios.ksight_L_vs_syscount | f) (\(.ratios.cpu_ksight_L_vs_syscount | f))",
	"",
	(.tools | to_entries[] | select(.value.seen_getppid_min >= 0 and .value.seen_getppid_min < .value.loop_calls)
		| "WARNING: \(.key) saw only \(.value.seen_getppid_min) of the loop'"'"'s \(.value.loop_calls) getppid calls in some run"),
	"targets (wall, cpu):",
	(.targets[] | def m: if . == null then "n/a" elif . then "met" else "MISS" end;
		"  \(.target): \(.wall | f) \(.met_wall | m), \(.cpu | f) \(.met_cpu | m)")
' "$OUT"
echo "bench: results in $OUT" >&2
