# Integration: `ksight rerun FILE -o NEW` records again with the manifest's events, filters, sample rate, buffer sizes and duration.
. tests/lib.sh
need_root rerun

A=$T_TMP/a.ksr
B=$T_TMP/b.ksr
# the manifest lines that make up a session's settings, as `info` prints them (repeated keys kept)
settings() {
	"$KSIGHT" info "$1" | grep -E '^  (event|rings|ring_bytes|ring_count|sample|duration_s|filter\.[a-z]+) ' | sort
}

"$KSIGHT" record -e 'sched:sched_wak*' -e raw_syscalls:sys_enter --sample 3 -b 64K --ring shared -C 0-1 \
	--comm ksrerun -d 0.5 -o "$A" 2>"$T_TMP/a.err"
t_eq "rerun: the original records" "0" "$?"
"$KSIGHT" rerun "$A" -o "$B" 2>"$T_TMP/b.err"
t_eq "rerun: exits 0" "0" "$?"
t_ok "rerun: settings found in the original ($(settings "$A" | wc -l) lines)" [ "$(settings "$A" | wc -l)" -ge 9 ]
t_eq "rerun: the same settings (events, rings, sample, filters, duration)" "$(settings "$A")" "$(settings "$B")"
t_eq "rerun: the glob resolved to the same events" "0" "$(grep -c 'events differ' "$T_TMP/b.err")"
t_eq "rerun: same host and kernel, no warning" "0" "$(grep -c 'differs' "$T_TMP/b.err")"

# -d overrides the duration, and the new recording lasts it
"$KSIGHT" rerun "$A" -d 1.5 -o "$B" 2>"$T_TMP/c.err"
t_eq "rerun -d: the new duration in the manifest" "1.5" "$("$KSIGHT" info -j "$B" | jq -r '.manifest.duration_s')"
t_eq "rerun -d: the other settings unchanged" "$(settings "$A" | grep -v duration_s)" "$(settings "$B" | grep -v duration_s)"
t_eq "rerun -d: recorded for 1.5 s (clock start to end)" "true" \
	"$("$KSIGHT" info -j "$B" | jq '((.trailer["clock.end.monotonic_ns"] | tonumber) - (.manifest["clock.start.monotonic_ns"] | tonumber)) / 1e9 | . >= 1.5 and . < 10')"

# a recording made elsewhere: kernel and host differ -> warnings, the run still happens
python3 tests/integration/rec_manifest_edit.py "$A" "$T_TMP/other.ksr" kernel.release=9.9.9-other host=elsewhere cpu.online=64
"$KSIGHT" rerun "$T_TMP/other.ksr" -d 0.2 -o "$B" 2>"$T_TMP/d.err"
t_eq "rerun elsewhere: exit 0" "0" "$?"
t_eq "rerun elsewhere: warns on kernel, host and CPU count" "1 1 1" \
	"$(grep -c "kernel release differs: the recording's was '9.9.9-other'" "$T_TMP/d.err") $(grep -c "host differs" "$T_TMP/d.err") $(grep -c "online CPU count differs: the recording's was '64'" "$T_TMP/d.err")"

# bad input
"$KSIGHT" rerun "$A" 2>"$T_TMP/e"
t_eq "rerun without -o: exit 2" "2 1" "$? $(grep -c 'needs -o' "$T_TMP/e")"
"$KSIGHT" rerun /etc/hostname -o "$B" 2>"$T_TMP/e"
t_eq "rerun of a non-recording: exit 2" "2 1" "$? $(grep -c 'not a ksight recording' "$T_TMP/e")"
# a recording of one process (-p): its process is gone, so rerun needs -p PID to follow now
w_start -n 300
k_start record -e raw_syscalls:sys_enter --filter 'id == 110' -p "$W_PID" -o "$T_TMP/p.ksr"
w_go
wait "$K_PID"
"$KSIGHT" rerun "$T_TMP/p.ksr" -o "$B" 2>"$T_TMP/e"
t_eq "rerun of a -p recording whose process is gone: exit 2, one line naming -p PID" "2 1 1" \
	"$? $(wc -l <"$T_TMP/e") $(grep -c 'give -p PID' "$T_TMP/e")"
w_start -n 200
k_start rerun "$T_TMP/p.ksr" -p "$W_PID" -o "$B"
w_go
wait "$K_PID"
t_eq "rerun -p NEW: exit 0 when that process ends" 0 "$?"
t_eq "rerun -p NEW: exactly its 200 getppid, under its pid" "200 true" \
	"$("$KSIGHT" report -j "$B" | jq -rs "\"\(length) \(all(.pid == $W_PID))\"")"
t_eq "rerun -p NEW: the manifest names the new pid" "$W_PID" "$("$KSIGHT" info -j "$B" | jq -r '.manifest["filter.pid"]')"
t_no_leaks ks_record
