# Shared by the benchmarks bench/biolat.sh, bench/tcp.sh and bench/hookcost.sh: floors, tracer start/stop, paired rounds, medians.
#
# The caller defines tool_def NAME (sets CMD, READY, READY_ON, DESC; 1 for
# unknown names), loop (one untraced-or-traced run of the workload, prints
# one number per word of METRICS, default "ns": ns per operation) and seen
# NAME OUT ERR (how many operations the tool's report shows, -1 when not
# checked), then calls bench_rounds and bench_summary (and, for the
# in-kernel cost of each program, bench_bpf_stats before bench_summary).

die() { echo "bench: $*" >&2; exit 1; }

B=build/bench
FLOOR=$B/objfloor

# Stops a tracer left running by an interrupted round (see t_start).
bench_stop_tracer() {
	local p
	p=$(cat "$TMP/tracer.pid" 2>/dev/null) || return 0
	kill -INT "$p" 2>/dev/null
	while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	rm -f "$TMP/tracer.pid"
}

# Ids of the BPF programs process $1 holds, one a line.
bench_prog_ids() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un
}

# Builds the floor loader and the floor object bench/$1.bpf.c when missing or stale.
bench_floor() {
	mkdir -p "$B"
	if [ ! -x "$FLOOR" ] || [ bench/objfloor.c -nt "$FLOOR" ]; then
		${CC:-cc} -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -Ibuild/skel \
			-o "$FLOOR" bench/objfloor.c build/libksight.a -lbpf -lelf -lz -lm || die "cannot build $FLOOR"
	fi
	if [ ! -e "$B/$1.bpf.o" ] || [ "bench/$1.bpf.c" -nt "$B/$1.bpf.o" ]; then
		clang-14 -g -O2 -target bpf -D__TARGET_ARCH_x86 -Ibpf -Iinclude -Wall -Werror \
			-c "bench/$1.bpf.c" -o "$B/$1.bpf.o" || die "cannot build $B/$1.bpf.o"
	fi
}

# Whether the tool started by t_start has printed READY in $1 (and, with
# ATTACHED=perf, holds a perf-event attachment).
t_ready() {
	grep -q "$READY" "$1" 2>/dev/null || return 1
	[ "$ATTACHED" != perf ] || bpftool -j perf show 2>/dev/null | jq -e --argjson p "$T_PID" 'any(.[]; .pid == $p)' >/dev/null
}

# Starts tool $1; sets T_PID, T_OUT, T_ERR, T_IDS (its programs).  1 when
# it did not attach in 30 s.  A tool_def that sets ATTACHED=perf (a tool
# that prints its line before it attaches, as bpftrace does) is waited for
# until bpftool lists a perf-event attachment of its.
t_start() {
	local log i=0
	ATTACHED=""
	tool_def "$1"
	T_OUT=$TMP/$1.out
	T_ERR=$TMP/$1.err
	stdbuf -oL -eL "${CMD[@]}" >"$T_OUT" 2>"$T_ERR" &
	T_PID=$!
	# runs in a $(...) subshell: the file tells the caller's clean-up what to stop
	echo "$T_PID" >"$TMP/tracer.pid"
	log=$T_ERR
	[ "$READY_ON" = out ] && log=$T_OUT
	while ! t_ready "$log"; do
		i=$((i + 1))
		if [ $i -gt 3000 ] || ! kill -0 "$T_PID" 2>/dev/null; then
			echo "bench: $1 did not attach: $(head -3 "$T_ERR" "$T_OUT")" >&2
			kill -INT "$T_PID" 2>/dev/null
			wait "$T_PID" 2>/dev/null
			T_PID=""
			return 1
		fi
		sleep 0.01
	done
	T_IDS=$(bench_prog_ids "$T_PID" | paste -sd,)
	sleep "${SETTLE:-0.3}"
}

# Stops the tool and waits (5 s at most) until the kernel has freed its
# programs, so that their release does not fall into the next run; sets
# T_SEEN to what `seen` makes of its report.  Runs in the shell that ran
# t_start (not in a $(...)): only there is the tool a child to wait for,
# and its report complete.
t_stop() {
	local i=0
	kill -INT "$T_PID"
	wait "$T_PID"
	T_PID=""
	rm -f "$TMP/tracer.pid"
	while [ -n "$T_IDS" ] && [ $i -lt 100 ] && bpftool -j prog show 2>/dev/null |
		jq -e --argjson ids "[$T_IDS]" 'any(.[]; .id as $i | $ids | index($i))' >/dev/null; do
		i=$((i + 1))
		sleep 0.05
	done
	T_SEEN=$(seen "$1" "$T_OUT" "$T_ERR")
}

# One traced run: prints "ops_seen METRICS...".
tool_run() {
	local m
	t_start "$1" || return 1
	m=$(loop) || return 1
	t_stop "$1"
	echo "$T_SEEN $m"
}

# Drops from TOOLS the tools that do not attach on this kernel (say, a
# kprobe-only tool where there are no kprobes); each goes to $TMP/skipped
# with the first line of its complaint.
bench_usable_tools() {
	local t ok=""
	: >"$TMP/skipped"
	for t in $TOOLS; do
		if (t_start "$t" 2>/dev/null && t_stop "$t"); then
			ok="$ok $t"
		else
			# t_start names the files $TMP/NAME.out and .err; libbpf's lines only say where
			why=$(cat "$TMP/$t.err" "$TMP/$t.out" 2>/dev/null | grep -v '^libbpf: ' | head -1)
			jq -nc --arg t "$t" --arg why "$why" '{tool: $t, reason: $why}' >>"$TMP/skipped"
			echo "bench: $t skipped: it does not attach here: $why" >&2
		fi
	done
	TOOLS=${ok# }
	[ -n "$TOOLS" ] || die "no tool attaches"
}

# Paired rounds over TOOLS: untraced and traced runs of `loop` back to back,
# their order alternating by round, the order of the tools rotating by round
# (no tool always follows the same one).  A tool whose report shows fewer
# than $1 operations fails the benchmark.  Results in $TMP/results, one
# JSON object a run pair.
bench_rounds() {
	local need=$1 r k t base traced seen tools n
	read -ra tools <<<"$TOOLS"
	n=${#tools[@]}
	BENCH_LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	: >"$TMP/results"
	for r in $(seq 1 "$ROUNDS"); do
		for ((k = 0; k < n; k++)); do
			t=${tools[$(((k + r - 1) % n))]}
			# loop runs in a subshell: its die ends only that, so its status is checked
			if [ $((r % 2)) = 1 ]; then
				base=$(loop) || die "the untraced run failed"
				traced=$(tool_run "$t") || die "$t failed"
			else
				traced=$(tool_run "$t") || die "$t failed"
				base=$(loop) || die "the untraced run failed"
			fi
			set -- $traced
			seen=$1
			shift
			# a tracer that missed the workload measures nothing; a few operations
			# short (a loss it reports, or a request of someone else's at the
			# same place) still measure its cost
			[ "$seen" = -1 ] || [ "$seen" -ge $((need - need / 100)) ] ||
				die "$t saw $seen of $need operations: $(jq -c '.lost_by // empty' "$TMP/$t.out" 2>/dev/null)"
			[ "$seen" = -1 ] || [ "$seen" -ge "$need" ] ||
				echo "bench: $t saw $seen of $need operations $(jq -c '.lost_by // empty' "$TMP/$t.out" 2>/dev/null)" >&2
			jq -nc --arg t "$t" --argjson r "$r" --argjson seen "$seen" --arg b "$base" --arg x "$*" \
				'{tool: $t, round: $r, seen: $seen, base: ($b | split(" ") | map(tonumber)),
				  traced: ($x | split(" ") | map(tonumber))}' >>"$TMP/results"
			printf 'bench: round %d %-12s untraced %s  traced %s  extra %s\n' "$r" "$t" "$base" "$*" \
				"$(jq -nr --arg b "$base" --arg x "$*" '[$b, $x | split(" ") | map(tonumber)] | transpose |
					map(.[1] - .[0] | round | tostring) | join(" ")')" >&2
		done
	done
}

# The in-kernel pass: with kernel.bpf_stats_enabled on (restored by
# bench_stats_restore, which the caller's clean-up runs too), $1 rounds of
# every tool over one run of `loop` each, recording each program's run
# count and run time (bpftool) in $TMP/stats.  Every BPF program on the
# machine pays for the statistics while they are on, so the pass is short.
bench_bpf_stats() {
	local rounds=$1 r k t id tools n
	: >"$TMP/stats"
	[ "$rounds" -gt 0 ] || return 0
	read -ra tools <<<"$TOOLS"
	n=${#tools[@]}
	BENCH_STATS_SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < n; k++)); do
			t=${tools[$(((k + r) % n))]}
			(
				t_start "$t" || exit 1
				for id in ${T_IDS//,/ }; do bpftool -j prog show id "$id"; done >"$TMP/p0"
				loop >/dev/null || exit 1
				for id in ${T_IDS//,/ }; do bpftool -j prog show id "$id"; done >"$TMP/p1"
				t_stop "$t"
				jq -nc --slurpfile a "$TMP/p0" --slurpfile b "$TMP/p1" --arg t "$t" --argjson r "$r" \
					'$b[] as $p | ($a[] | select(.id == $p.id)) as $q |
					 {tool: $t, round: $r, prog: $p.name, type: $p.type,
					  run_cnt: (($p.run_cnt // 0) - ($q.run_cnt // 0)),
					  run_time_ns: (($p.run_time_ns // 0) - ($q.run_time_ns // 0))}' >>"$TMP/stats"
			) || die "$t failed in the bpf_stats pass"
			echo "bench: bpf_stats round $((r + 1)) $t done" >&2
		done
	done
	bench_stats_restore
}

bench_stats_restore() {
	[ -n "${BENCH_STATS_SAVED:-}" ] && echo "$BENCH_STATS_SAVED" >/proc/sys/kernel/bpf_stats_enabled
	BENCH_STATS_SAVED=""
}

# Writes $OUT: per tool and per word m of METRICS the medians of untraced_m,
# traced_m and of the paired differences extra_m (with quartiles), the
# bpf_stats figures per operation ($1 operations a run) when there are any,
# plus EXTRA_JSON (a jq expression over $e, the tools' extra_ns, the first
# metric, by name); prints a table.  A bpf_stats round whose programs ran
# under 90% of the tool's fullest round is left out: the statistics were
# switched off during it (the sysctl is machine-wide, and another user's
# benchmark restores it), which once made every median 0.
bench_summary() {
	local ops=${1:-1} t
	for t in $TOOLS; do
		tool_def "$t"
		jq -nc --arg t "$t" --arg d "$DESC" '{($t): $d}'
	done | jq -sc add >"$TMP/descs"
	[ -e "$TMP/stats" ] || : >"$TMP/stats"
	[ -e "$TMP/skipped" ] || : >"$TMP/skipped"
	jq -s --arg what "$WHAT" --argjson rounds "$ROUNDS" --arg metrics "${METRICS:-ns}" --argjson ops "$ops" \
		--arg load0 "${BENCH_LOAD_BEFORE:-}" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
		--slurpfile descs "$TMP/descs" --slurpfile stats "$TMP/stats" --slurpfile skipped "$TMP/skipped" --arg order "$TOOLS" "
		def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
			else (.[length / 2 - 1] + .[length / 2]) / 2 end;
		def q(p): sort | if length == 0 then null else .[((length - 1) * p) | round] end;
		def r1: if . == null then null else (. * 10 | round) / 10 end;
		. as \$all | (\$metrics | split(\" \") | map(select(. != \"\"))) as \$ms
		| [\$order | split(\" \")[] | select(. != \"\") as \$t | [\$all[] | select(.tool == \$t)] as \$p
		   | [\$stats[] | select(.tool == \$t)] as \$s0
		   | ([\$s0 | group_by(.round)[] | [.[] | .run_cnt] | add] | max // 0) as \$full
		   | [\$s0 | group_by(.round)[] | select(([.[] | .run_cnt] | add) >= 0.9 * \$full)[]] as \$s
		   | {tool: \$t, desc: \$descs[0][\$t], pairs: (\$p | length)}
		   + ([range(\$ms | length) as \$i | \$ms[\$i] as \$m |
			{(\"untraced_\" + \$m): ([\$p[] | .base[\$i]] | median | r1),
			 (\"traced_\" + \$m): ([\$p[] | .traced[\$i]] | median | r1),
			 (\"extra_\" + \$m): ([\$p[] | .traced[\$i] - .base[\$i]] | median | r1),
			 (\"extra_\" + \$m + \"_q25\"): ([\$p[] | .traced[\$i] - .base[\$i]] | q(0.25) | r1),
			 (\"extra_\" + \$m + \"_q75\"): ([\$p[] | .traced[\$i] - .base[\$i]] | q(0.75) | r1)}] | add)
		   + (if (\$s | length) == 0 then {} else {bpf_stats: {
			rounds: ([\$s[] | .round] | unique | length),
			ns_per_op: ([\$s | group_by(.round)[] | ([.[] | .run_time_ns] | add) / \$ops] | median | r1),
			programs: [\$s | group_by(.prog)[] | {prog: .[0].prog, type: .[0].type,
				runs_per_op: ([.[] | .run_cnt / \$ops] | median | (. * 100 | round) / 100),
				ns_per_run: ([.[] | select(.run_cnt > 0) | .run_time_ns / .run_cnt] | median | r1),
				ns_per_op: ([.[] | .run_time_ns / \$ops] | median | r1)}]}} end)]
		| (map({(.tool): .extra_ns}) | add) as \$e
		| {workload: \$what, rounds: \$rounds, metrics: \$ms, load_before: \$load0, load_after: \$load,
		   tools: ., skipped: \$skipped, pairs: \$all} + ($EXTRA_JSON)" "$TMP/results" >"$OUT"
	jq -r '
		def f: if . == null then "-" else (. | round | tostring) end;
		def pad($n): tostring | if length < $n then (" " * ($n - length)) + . else . end;
		(["tool"] + (.metrics | map("untraced_" + ., "traced_" + ., "extra_" + ., "q25..q75")) + ["bpf ns/op"]
			| .[0] |= (. + " " * (13 - length)) | [.[0]] + (.[1:] | map(pad(16))) | join(" ")),
		(.metrics as $ms | .tools[] | . as $v |
			[(.tool + " " * (13 - (.tool | length)))]
			+ ([$ms[] | ($v["untraced_" + .] | f), ($v["traced_" + .] | f), ($v["extra_" + .] | f),
				"\($v["extra_" + . + "_q25"] | f)..\($v["extra_" + . + "_q75"] | f)"] | map(pad(16)))
			+ [($v.bpf_stats.ns_per_op | f | pad(16))] | join(" ")),
		"",
		(.tools[] | "\(.tool): \(.desc)"),
		(.skipped[] | "\(.tool): skipped, does not attach on this kernel (\(.reason))")' "$OUT"
}
