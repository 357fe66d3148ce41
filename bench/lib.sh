# Shared by the collector benchmarks (bench/biolat.sh, bench/tcp.sh): floors, tracer start/stop, paired rounds, medians.
#
# The caller defines tool_def NAME (sets CMD, READY, READY_ON, DESC; 1 for
# unknown names), loop (one untraced-or-traced run of the workload, prints
# ns per operation) and seen NAME OUT ERR (how many operations the tool's
# report shows, -1 when not checked), then calls bench_rounds and
# bench_summary.

die() { echo "bench: $*" >&2; exit 1; }

B=build/bench
FLOOR=$B/objfloor

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

# Starts tool $1; sets T_PID, T_OUT, T_ERR.  1 when it did not attach in 30 s.
t_start() {
	local log i=0
	tool_def "$1"
	T_OUT=$TMP/$1.out
	T_ERR=$TMP/$1.err
	stdbuf -oL -eL "${CMD[@]}" >"$T_OUT" 2>"$T_ERR" &
	T_PID=$!
	log=$T_ERR
	[ "$READY_ON" = out ] && log=$T_OUT
	while ! grep -q "$READY" "$log" 2>/dev/null; do
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
	sleep "${SETTLE:-0.3}"
}

# Stops the tool; prints what `seen` makes of its report.
t_stop() {
	kill -INT "$T_PID"
	wait "$T_PID"
	T_PID=""
	seen "$1" "$T_OUT" "$T_ERR"
}

# One traced run: prints "ns_per_op ops_seen".
tool_run() {
	local ns n
	t_start "$1" || return 1
	ns=$(loop)
	n=$(t_stop "$1")
	echo "$ns $n"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Paired rounds over TOOLS: untraced and traced runs of `loop` back to back,
# their order alternating by round.  A tool whose report shows fewer than
# $1 operations fails the benchmark.  Results in $TMP/results.
bench_rounds() {
	local need=$1 r t base traced
	: >"$TMP/results"
	for r in $(seq 1 "$ROUNDS"); do
		for t in $TOOLS; do
			if [ $((r % 2)) = 1 ]; then
				base=$(loop)
				traced=$(tool_run "$t") || die "$t failed"
			else
				traced=$(tool_run "$t") || die "$t failed"
				base=$(loop)
			fi
			set -- $traced
			# a tracer that missed the workload measures nothing; a few operations
			# short (a loss it reports, or a request of someone else's at the
			# same place) still measure its cost
			[ "$2" = -1 ] || [ "$2" -ge $((need - need / 100)) ] ||
				die "$t saw $2 of $need operations: $(jq -c '.lost_by // empty' "$TMP/$t.out" 2>/dev/null)"
			[ "$2" = -1 ] || [ "$2" -ge "$need" ] ||
				echo "bench: $t saw $2 of $need operations $(jq -c '.lost_by // empty' "$TMP/$t.out" 2>/dev/null)" >&2
			echo "$t $r $base $1 $2" >>"$TMP/results"
			printf 'bench: round %d %-12s untraced %8.0f ns  traced %8.0f ns  extra %7.0f ns\n' \
				"$r" "$t" "$base" "$1" "$(echo "$1 $base" | awk '{ print $1 - $2 }')" >&2
		done
	done
}

# Writes $OUT: per tool the medians of untraced, traced and paired differences, plus EXTRA_JSON
# (a jq expression over $e, the tools' extra_ns by name); prints a table.
bench_summary() {
	local t b x d
	: >"$TMP/json"
	for t in $TOOLS; do
		tool_def "$t"
		b=$(awk -v t="$t" '$1 == t { print $3 }' "$TMP/results" | median)
		x=$(awk -v t="$t" '$1 == t { print $4 }' "$TMP/results" | median)
		d=$(awk -v t="$t" '$1 == t { print $4 - $3 }' "$TMP/results" | median)
		jq -n --arg t "$t" --arg desc "$DESC" --argjson b "$b" --argjson x "$x" --argjson d "$d" \
			'{tool: $t, desc: $desc, untraced_ns: $b, traced_ns: $x, extra_ns: $d}' >>"$TMP/json"
	done
	jq -s --arg what "$WHAT" --argjson rounds "$ROUNDS" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
		"(map({(.tool): .extra_ns}) | add) as \$e |
		 {workload: \$what, rounds: \$rounds, load_after: \$load, tools: .} + ($EXTRA_JSON)" "$TMP/json" >"$OUT"
	printf '\n%-13s %12s %12s %10s  %s\n' tool untraced_ns traced_ns extra_ns description
	jq -r '.tools[] | [.tool, .untraced_ns, .traced_ns, .extra_ns, .desc] | @tsv' "$OUT" |
		while IFS=$'\t' read -r t b x d desc; do
			printf '%-13s %12.0f %12.0f %10.0f  %s\n' "$t" "$b" "$x" "$d" "$desc"
		done
}
