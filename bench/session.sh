#!/bin/bash
# Benchmark: issue 26's 300 s session: `record --collect syscalls,runqlat,offcpu,biolat,mem,tcp -i 1 --profile -F 99` under a mixed load; the file's size, then report --html's time, the page's size and Chromium's open time (bench/report_html.sh on the recording).
# Root; run from the repo.  SECS (300), COLLECT (the six), FREQ (99), KEEP=DIR keeps the recording.
# Goals: recording < 20 MB, report --html < 2 s, page < 5 MB, open in Chromium < 1 s.
set -u
SECS=${SECS:-300}
COLLECT=${COLLECT:-syscalls,runqlat,offcpu,biolat,mem,tcp}
FREQ=${FREQ:-99}
KSIGHT=${KSIGHT:-./ksight}
TMP=$(mktemp -d /tmp/ksight-bench-session.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# The load, all inside the session (-- CMD): 1 ms then 20 ms sleeps (hm_phases) for runqlat/offcpu/syscalls,
# fsync'd writes for biolat, a directory walk for mem, and loopback TCP (bash's /dev/tcp to a local
# listener) for tcp; each collector gets rows every interval.
cat >"$TMP/load.sh" <<SH
build/workloads/hm_phases $((SECS / 2)) $((SECS - SECS / 2)) >/dev/null &
end=\$((\$(date +%s) + $SECS))
while [ \$(date +%s) -lt \$end ]; do
	dd if=/dev/zero of=$TMP/dd bs=64k count=64 conv=fsync 2>/dev/null
	find /usr/lib -maxdepth 3 >/dev/null
	python3 -c 'import socket; s = socket.create_server(("127.0.0.1", 0)); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); [c.sendall(b"x" * 65536) or a.recv(65536) for _ in range(64)]' 2>/dev/null
	sleep 0.2
done
wait
SH
load0=$(cut -d' ' -f1-3 /proc/loadavg)
s=$(date +%s%N)
"$KSIGHT" record --collect "$COLLECT" -i 1 --profile -F "$FREQ" -o "$TMP/s.ksr" -- bash "$TMP/load.sh" 2>"$TMP/rec.err" ||
	{ echo "bench: record failed: $(tail -1 "$TMP/rec.err")" >&2; exit 1; }
wall=$((($(date +%s%N) - s) / 1000000))
bytes=$(stat -c %s "$TMP/s.ksr")
echo "session: $SECS s ($wall ms wall), $COLLECT at -i 1, --profile -F $FREQ; load average $load0 -> $(cut -d' ' -f1-3 /proc/loadavg)"
echo "recording: $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }') MiB; $(awk -v b="$bytes" -v s="$SECS" 'BEGIN { printf "%.0f", b / s }') bytes/s)"
"$KSIGHT" info "$TMP/s.ksr" 2>&1 | head -20
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$TMP/s.ksr" "$KEEP/"
REC=$TMP/s.ksr KEEP=${KEEP:-} bash bench/report_html.sh
