#!/bin/bash
# Reproducer for silently lost block completions: counts the completed requests of one disk three ways (ksight biolat, a bpftrace count of block:block_rq_complete, /proc/diskstats) over one interval of CPU load plus sync()/fsync pressure, and prints them with ksight's counted losses.
#
# Usage: bench/biolat_lost.sh [SECONDS]   (default 8)
# Environment: DISK (empty: a loop device over a 64 MiB file in /dev/shm with
# ext4 on it, which nobody else writes to, so the edges of the interval add
# no stranger's requests; or a whole disk such as vda, shared with everyone),
# KSIGHT (./ksight), KSARGS (more biolat options: "--by op", the default, compares
# flushes and writes with diskstats' own; "--by pid" keeps requests in a
# hash map), LOAD ("stress-ng --io 2 --cpu 2": sync() callers and CPU
# hogs), FSYNCERS (2: loops of 16 KiB writes each followed by an fsync, dd
# conv=fsync, on the loop device's file system or in /tmp), DBGC (set: a
# debugging build of biolat.bpf.c has a per-CPU array map named dbgc whose
# slots it bumps where it likes, e.g. slot 1 at the entry of on_complete()
# and slot 2 in account(); its per-slot sums are printed for the diskstats
# interval, exact there, and at the end: a "programs entered" count tells a
# program never run from a program that ran and dropped the event).
#
# Counting rules, so the three agree when nothing is lost: diskstats counts
# reads + writes + discards + flushes; bpftrace counts block_rq_complete of
# the disk minus those that are a flush sequence's data step (nr_sector > 0
# with the RQF_FLUSH_SEQ flag cannot be told from a tracepoint, so bpftrace's
# figure is printed raw: it is >= diskstats by the number of FUA/preflush
# writes with data); ksight counts rows' requests and its losses
# (lost_by) apart.  The snapshots are taken with the load stopped and the
# disk idle, so requests in flight at either edge are few (ksight counts
# those it never saw issued as unmatched_completions).
set -u
cd "$(dirname "$0")/.." || exit 1
SECS=${1:-8}
DISK=${DISK:-}
KSIGHT=${KSIGHT:-./ksight}
LOAD=${LOAD:-stress-ng --io 2 --cpu 2}
FSYNCERS=${FSYNCERS:-2}
T=$(mktemp -d /tmp/ksight-lost.XXXXXX)
PIDS=()
LOOP=
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$T/mnt" && umount "$T/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -f "/dev/shm/ksight-lost-$$.img"
	rm -rf "$T"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
WDIR=$T
if [ -z "$DISK" ]; then
	img=/dev/shm/ksight-lost-$$.img
	dd if=/dev/zero of="$img" bs=1M count=64 status=none
	LOOP=$(losetup -f --show "$img") || exit 1
	DISK=${LOOP#/dev/}
	mkfs.ext4 -q "$LOOP" && mkdir "$T/mnt" && mount "$LOOP" "$T/mnt" || exit 1
	WDIR=$T/mnt
fi
echo "disk $DISK ($(cat /sys/block/$DISK/queue/write_cache), scheduler $(cat /sys/block/$DISK/queue/scheduler))"
mm=$(cat "/sys/block/$DISK/dev") || exit 1
KDEV=$(( (${mm%:*} << 20) | ${mm#*:} ))

ds() {
	awk -v d="$DISK" '$3 == d { print $4 + $8 + (NF >= 15 ? $15 : 0) + (NF >= 19 ? $19 : 0) }' /proc/diskstats
}
# reads writes discards flushes
ds_ops() {
	awk -v d="$DISK" '$3 == d { print $4, $8, (NF >= 15 ? $15 : 0), (NF >= 19 ? $19 : 0) }' /proc/diskstats
}

"$KSIGHT" biolat --disk "$DISK" -n 0 ${KSARGS:---by op} -j >"$T/ks" 2>"$T/ks.err" &
KS=$!
PIDS+=("$KS")
for _ in $(seq 100); do grep -q tracing "$T/ks.err" && break; sleep 0.1; done
bpftrace -e "tracepoint:block:block_rq_complete /args->dev == $KDEV/ { @c[cpu] = count(); @all = count(); }
tracepoint:block:block_rq_issue /args->dev == $KDEV/ { @i = count(); }" >"$T/bt" 2>&1 &
BT=$!
PIDS+=("$BT")
for _ in $(seq 100); do
	grep -q Attaching "$T/bt" && grep -q tracing "$T/ks.err" && break
	sleep 0.1
done
sync
sleep 1
d0=$(ds)
o0=$(ds_ops)
dbg_snap() { [ -n "${DBGC:-}" ] && bpftool map dump name dbgc -j | jq -c 'def le: reduce (reverse | .[]) as $b (0; . * 256 + ($b | ltrimstr("0x") | explode | map(if . >= 97 then . - 87 else . - 48 end) | .[0] * 16 + .[1])); [.[] | [.values[].value | le] | add]'; }
s0=$(dbg_snap)

$LOAD --timeout "${SECS}s" >/dev/null 2>&1 &
L=$!
for i in $(seq "$FSYNCERS"); do
	(end=$((SECONDS + SECS)); while [ $SECONDS -lt $end ]; do
		dd if=/dev/zero of="$WDIR/f$i" bs=4k count=4 conv=fsync status=none
	done) &
	PIDS+=("$!")
done
wait "$L"
wait "${PIDS[@]:2}" 2>/dev/null
sync
sleep 2
d1=$(ds)
o1=$(ds_ops)
s1=$(dbg_snap)
[ -n "${DBGC:-}" ] && echo "dbgc deltas between the diskstats snapshots: $(jq -nc --argjson a "$s0" --argjson b "$s1" '[range(16)] | map($b[.] - $a[.])')"
# bpftrace's interval lies within ksight's: every count of ksight's is at least bpftrace's
kill -INT "$BT"
wait "$BT"
# DBGC=1: a debugging build's per-CPU counters (map dbgc), read while ksight still holds them
[ -n "${DBGC:-}" ] && bpftool map dump name dbgc -j | jq -c 'def le: reduce (reverse | .[]) as $b (0; . * 256 + ($b | ltrimstr("0x") | explode | map(if . >= 97 then . - 87 else . - 48 end) | .[0] * 16 + .[1])); [.[] | [(.key | le), [.values[].value | le]]]' > "$T/dbgc" 2>/dev/null
kill -INT "$KS"
wait "$KS"

echo "diskstats completed: $((d1 - d0)) (read write discard flush: $(echo "$o0 $o1" | awk '{ print $5 - $1, $6 - $2, $7 - $3, $8 - $4 }'))"
echo "bpftrace: $(grep -E '^@(all|i)' "$T/bt" | tr '\n' ' ')"
grep '^@c' "$T/bt" | tr '\n' ' '
echo
jq -c '{count: ([.rows[].count] | add), by_op: ([.rows[] | select(.op) | {(.op): .count}] | add), lost, lost_by, counters}' "$T/ks"
[ -s "$T/dbgc" ] && echo "dbgc (index, per-CPU): $(cat "$T/dbgc")"
