# Integration: every record in a recording fills its chunk at the stride its length gives, and the padding after it (to 8 bytes) is zero, never bytes of an earlier event: records are read straight into the ring with their last word masked.
. tests/lib.sh
need_root record
REC=$T_TMP/pad.ksr

# sched_wakeup and sched_waking are 36 bytes (4 of padding); system calls' arguments around them
# left their high halves in the scratch buffer the records were copied through before.  An exec
# of a 290-byte path makes a sched_process_exec record of over 256 bytes, which still goes
# through scratch.
LONG=$T_TMP/$(printf 'd%.0s' $(seq 120))/$(printf 'e%.0s' $(seq 150))
mkdir -p "$(dirname "$LONG")" && printf '#!/bin/sh\n:\n' >"$LONG" && chmod +x "$LONG"
"$KSIGHT" record -e raw_syscalls:sys_enter -e sched:sched_wakeup -e sched:sched_waking -e sched:sched_switch \
	-e sched:sched_process_exec -o "$REC" -- sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.01; '$LONG'; done" \
	2>"$T_TMP/err"
t_eq "record: the recording of a command ends cleanly" "0" "$?"
# shellcheck disable=SC2046
set -- $(python3 tests/integration/rec_padding.py "$REC")
n=${1:-?} padded=${2:-} bad=${3:-?} longest=${4:-0}
t_ok "records parsed at their stride, some with padding ($n records, ${padded:-?} padded)" test "${padded:-0}" -gt 0
t_ok "a record of over 256 bytes among them (the longest: $longest)" test "$longest" -gt 256
t_eq "no padding holds other bytes than zero" "0" "$bad"
