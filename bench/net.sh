#!/bin/bash
# In-kernel cost of `ksight net` per packet against a bpftrace script that times the same stages the same way (stamps in maps keyed by skb,
# by thread, by CPU), on a loopback UDP ping-pong (netudp: a datagram and its one-byte reply per round trip): each program's run time and
# runs (BPF run-time statistics, held on by bench/wall_stats' fd so kernel.bpf_stats_enabled is left alone), over an empty-program floor on
# the same tracepoints (bench/net_floor.bpf.c), in alternating rounds; medians.
# Usage: bench/net.sh [REPS] [ROUND_TRIPS]; KSIGHT_BASE=BINARY adds another build of ksight to the same rounds ("base": before/after).
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh
REPS=${1:-5}
N=${2:-20000}
B=build/bench
KS=${KSIGHT_BIN:-./ksight}
BASE=${KSIGHT_BASE:-}
PORT=$((30000 + $$ % 20000))
TMP=$(mktemp -d)
PIDS=
trap 'for p in $PIDS $STATS_PID; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "bench: needs bpftrace" >&2; exit 1; }
make -s ksight build/workloads/netudp "$B/objfloor" "$B/bpf/net_floor.bpf.o" "$B/wall_stats" || exit 1

# waits until LOG says WORD (30 s at most: bpftrace compiles for a while)
ready() {
	for _ in $(seq 1 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "bench: no '$2' in $1: $(head -2 "$1")" >&2
	return 1
}

# The reference: ksight net's default mode (by stage) in bpftrace, the same stamps and stage ends.
cat >"$TMP/ref.bt" <<'BT'
tracepoint:syscalls:sys_enter_sendto, tracepoint:syscalls:sys_enter_sendmsg, tracepoint:syscalls:sys_enter_sendmmsg { @snd[tid] = nsecs; }
tracepoint:syscalls:sys_exit_sendto, tracepoint:syscalls:sys_exit_sendmsg, tracepoint:syscalls:sys_exit_sendmmsg { delete(@snd[tid]); }
tracepoint:net:net_dev_queue { $t = @snd[tid]; if ($t) { @st["send"] = hist(nsecs - $t); } @q[args->skbaddr] = nsecs; }
tracepoint:qdisc:qdisc_dequeue { $t = @q[args->skbaddr]; if ($t) { @st["qdisc"] = hist(nsecs - $t); @q[args->skbaddr] = nsecs; } }
tracepoint:net:net_dev_xmit { $t = @q[args->skbaddr]; if ($t) { @st["xmit"] = hist(nsecs - $t); delete(@q[args->skbaddr]); } }
tracepoint:net:netif_receive_skb { @r[args->skbaddr] = nsecs; @cur[cpu] = args->skbaddr; }
tracepoint:sock:sk_data_ready { $k = @cur[cpu]; $t = @r[$k]; if ($t) { @st["rx"] = hist(nsecs - $t); delete(@r[$k]); @sq[args->skaddr, @tail[args->skaddr]] = nsecs; @tail[args->skaddr]++; } }
tracepoint:sock:sock_recv_length { $n = @head[args->sk]; $t = @sq[args->sk, $n]; if ($t) { @st["read"] = hist(nsecs - $t); delete(@sq[args->sk, $n]); @head[args->sk]++; } }
tracepoint:skb:skb_copy_datagram_iovec { $t = @r[args->skbaddr]; if ($t) { @st["read"] = hist(nsecs - $t); delete(@r[args->skbaddr]); } }
tracepoint:skb:kfree_skb { $t = @r[args->skbaddr]; if ($t) { @st["drop"] = hist(nsecs - $t); delete(@r[args->skbaddr]); } }
tracepoint:skb:consume_skb { delete(@r[args->skbaddr]); }
tracepoint:irq:softirq_entry /args->vec == 2 || args->vec == 3/ { @si[cpu, args->vec] = nsecs; }
tracepoint:irq:softirq_exit /args->vec == 2 || args->vec == 3/ { $t = @si[cpu, args->vec]; if ($t) { @soft[cpu, args->vec] = hist(nsecs - $t); } }
BT

$B/wall_stats 2>"$TMP/stats.log" &
STATS_PID=$!
ready "$TMP/stats.log" enabled || exit 1

# start CONFIG: its tracer in the background (PIDS) once it traces; IDS, the programs it holds (other helpers
# may load programs of the same names meanwhile)
start() {
	case $1 in
	floor) $B/objfloor "$B/bpf/net_floor.bpf.o" >/dev/null 2>"$TMP/f.log" & PIDS=$!; ready "$TMP/f.log" tracing ;;
	ksight) $KS net >/dev/null 2>"$TMP/k.log" & PIDS=$!; ready "$TMP/k.log" tracing ;;
	base) $BASE net >/dev/null 2>"$TMP/k.log" & PIDS=$!; ready "$TMP/k.log" tracing ;;
	bpftrace) bpftrace "$TMP/ref.bt" >/dev/null 2>"$TMP/b.log" & PIDS=$!
		# bpftrace prints "Attaching N probes..." before it attaches: wait for its 15 perf events
		for _ in $(seq 1 600); do
			[ "$(bpftool -j perf show 2>/dev/null | jq --argjson p "$PIDS" '[.[] | select(.pid == $p)] | length')" -ge 15 ] && break
			sleep 0.05
		done ;;
	esac
	IDS=$(bench_prog_ids "$PIDS" | paste -sd,)
	sleep 0.3
}

# the tracer's SIGINT path, waited for: its programs go before the next round starts
stop() {
	[ -n "$PIDS" ] && kill -INT "$PIDS" 2>/dev/null && wait "$PIDS" 2>/dev/null
	PIDS=
}

# "stage run_time_ns run_cnt" of the running tracer's programs: ksight's and the floor's by name, bpftrace's by tracepoint
progs() {
	if [ "$1" = bpftrace ]; then
		bpftool -j perf show | jq -r --argjson p "$PIDS" '.[] | select(.pid == $p) | "\(.prog_id) \(.tracepoint)"' |
			while read -r id tp; do
				bpftool -j prog show id "$id" | jq -r --arg tp "$tp" '"\($tp) \(.run_time_ns // 0) \(.run_cnt // 0)"'
			done
	else
		bpftool -j prog show | jq -r --argjson ids "[$IDS]" '.[] | select(.id as $i | $ids | index($i)) |
			"\(.name | sub("^(net|nf)_"; "") | sub("__(tp_btf|raw_tp)$"; "")) \(.run_time_ns // 0) \(.run_cnt // 0)"'
	fi
}

# one round: N round trips over loopback
load() {
	PORT=$((PORT + 2))
	: >"$TMP/recv.out"
	build/workloads/netudp recv 127.0.0.1 $PORT "$N" -r >"$TMP/recv.out" &
	local r=$!
	ready "$TMP/recv.out" ready || return 1
	build/workloads/netudp send 127.0.0.1 $PORT "$N" 64 -w >/dev/null
	wait $r
}

# the same tracepoints under their names in each tracer
canon() {
	sed -e 's/^net_dev_queue /queue /; s/^qdisc_dequeue /dequeue /; s/^net_dev_xmit /xmit /; s/^netif_receive_skb /receive /' \
		-e 's/^sk_data_ready /ready /; s/^sock_recv_length /recv /; s/^skb_copy_datagram_iovec /copy /; s/^kfree_skb /free /' \
		-e 's/^consume_skb /consume /; s/^softirq_entry /soft_in /; s/^softirq_exit /soft_out /' \
		-e 's/^sys_enter_\(send[a-z]*\) /\1_in /; s/^sys_exit_\(send[a-z]*\) /\1_out /'
}

for rep in $(seq 1 "$REPS"); do
	# alternating order: no tracer always runs first, after the machine's quiet spell
	order="floor ${BASE:+base }ksight bpftrace"
	[ $((rep % 2)) = 0 ] && order="bpftrace ksight ${BASE:+base }floor"
	for c in $order; do
		start $c || { stop; continue; }
		progs $c | canon | sort >"$TMP/before"
		load || { stop; continue; }
		progs $c | canon | sort >"$TMP/after"
		stop
		# per program: ns per run, and its ns per round trip; "total" the sum per round trip
		join "$TMP/before" "$TMP/after" | awk -v n="$N" -v c=$c -v r=$rep '{ dc = $5 - $3; dt = $4 - $2; if (dc <= 0) next
			printf "%s %s %s %.0f %.0f\n", c, r, $1, dt / dc, dt / n; s += dt } END { printf "%s %s total - %.0f\n", c, r, s / n }' >>"$TMP/all"
	done
done

median() { sort -n | awk '{a[NR] = $1} END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
med() { awk -v c="$1" -v s="$2" -v f="$3" '$1 == c && $3 == s { print $f }' "$TMP/all" | median; }
echo "in-kernel cost, medians of $REPS alternating rounds of $N loopback round trips (2 datagrams each):"
cols="floor ${BASE:+base }ksight bpftrace"
printf "  %-11s" program
for c in $cols; do printf " %22s" "$c ns/run (/trip)"; done
echo
for s in $(awk '$3 != "total" { print $3 }' "$TMP/all" | sort -u); do
	printf "  %-11s" "$s"
	for c in $cols; do printf " %22s" "$(med "$c" "$s" 4) ($(med "$c" "$s" 5))"; done
	echo
done
printf "  %-11s" "per trip"
for c in $cols; do printf " %22s" "$(med "$c" total 5)"; done
echo
f=$(med floor total 5) b=$(med bpftrace total 5)
for c in ${BASE:+base} ksight; do
	k=$(med "$c" total 5)
	awk -v c="$c" -v f="$f" -v k="$k" -v b="$b" 'BEGIN { if (b > f) printf "per packet: %s %.0f ns, bpftrace %.0f ns, floor %.0f ns; over the floor %.2f of bpftrace'"'"'s (target <= 0.5)\n", c, k / 2, b / 2, f / 2, (k - f) / (b - f) }'
done
