# Integration: `ksight report F`'s ftrace text carries the kernel's irq-info columns (hardirq/softirq, need-resched, preempt-depth, migrate-disable), equal event by event to the kernel's own trace file of the same events.
. tests/lib.sh
need_root "report irq-info"
if [ "$(uname -m)" != x86_64 ]; then
	t_skip "report irq-info" "the preempt count is read on x86-64 only"
	exit 0
fi
command -v python3 >/dev/null 2>&1 || { t_skip "report irq-info" "no python3"; exit 0; }
EV="timer:hrtimer_expire_entry irq:softirq_entry sched:sched_switch syscalls:sys_enter_clock_nanosleep"

# The kernel's trace (an instance of a tracefs mounted in a mount namespace of its own, on the
# monotonic clock ksight records with) and ksight's recording of the same events over the same
# second, with a workload that sleeps (hrtimers, their softirqs, switches) on every CPU.
cat >"$T_TMP/both.sh" <<EOS
set -e
mkdir -p "$T_TMP/tr"
mount -t tracefs nodev "$T_TMP/tr"
T="$T_TMP/tr/instances/ksight-irqflags-\$\$"
mkdir "\$T"
trap 'echo 0 >"\$T/tracing_on"; for e in $EV; do echo 0 >"\$T/events/\$(echo \$e | tr : /)/enable"; done; rmdir "\$T"' EXIT
echo mono >"\$T/trace_clock"
echo 0 >"\$T/tracing_on"
for e in $EV; do echo 1 >"\$T/events/\$(echo \$e | tr : /)/enable"; done
echo 1 >"\$T/tracing_on"
"$KSIGHT" record $(for e in $EV; do printf -- '-e %s ' "$e"; done) -o "$T_TMP/r.ksr" -d 1 2>"$T_TMP/rec.err" &
KP=\$!
for c in \$(seq \$(nproc)); do (i=0; while [ \$i -lt 150 ]; do sleep 0.002; i=\$((i + 1)); done) & done
wait \$KP
wait
echo 0 >"\$T/tracing_on"
cat "\$T/trace" >"$T_TMP/kernel.txt"
EOS
unshare -m sh "$T_TMP/both.sh"
t_eq "kernel trace and ksight record of the same second: exit 0" "0 " "$? $(grep -i error "$T_TMP/rec.err")"
"$KSIGHT" report "$T_TMP/r.ksr" >"$T_TMP/ours.txt"
t_eq "report: exit 0" 0 "$?"
t_ok "report: the kernel's irq-info header" grep -q '^#                              ||| / _-=> migrate-disable$' "$T_TMP/ours.txt"

# Event by event: the same CPU, event and fields within 100 us (the two clocks are read a few
# microseconds apart); columns 2-5 equal, and irqs-off equal where ksight can tell (not 'X').
python3 - "$T_TMP/kernel.txt" "$T_TMP/ours.txt" >"$T_TMP/cmp.txt" <<'EOP'
import re, sys
line = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\] (\S{5}) +(\d+)\.(\d+): (\w+)(?:: |\()(.*)$')
def read(p):
    out = {}
    for l in open(p):
        m = line.match(l)
        if m:
            ts = int(m.group(5)) * 1000000 + int(m.group(6))
            # the kernel prints hashed pointers and symbols where ksight prints the values: keyed by the rest
            info = re.sub(r'(hrtimer|function)=\S+ ?', '', m.group(8))
            ev = m.group(7)
            if ev.startswith('sys_'):
                # the kernel's "sys_clock_nanosleep(which_clock: 0, ...)", ksight's libtraceevent
                # "sys_enter_clock_nanosleep: which_clock: 0x00000000, ...": by thread and rqtp
                ev = 'sys_enter_' + ev[len('sys_enter_') if ev.startswith('sys_enter_') else 4:]
                info = m.group(2) + ' ' + ''.join(re.findall(r'rqtp: (0x[0-9a-f]+)', info))
            out.setdefault((m.group(3), ev, info), []).append((ts, m.group(4)))
    return out
k, o = read(sys.argv[1]), read(sys.argv[2])
n = same = irq = irqsame = 0
bad = []
for key, evs in o.items():
    for ts, cols in evs:
        near = [c for t, c in k.get(key, []) if abs(t - ts) <= 100]
        if len(near) != 1:
            continue
        n += 1
        if cols[1:] == near[0][1:]:
            same += 1
        elif len(bad) < 3:
            bad.append('%s %s: ours %s kernel %s' % (key[1], key[2][:40], cols, near[0]))
        if cols[0] != 'X':
            irq += 1
            irqsame += cols[0] == near[0][0]
kinds = {key[1] for key, evs in o.items() for ts, cols in evs if cols[2] in 'hs'}
sysn = sum(1 for key, evs in o.items() if key[1].startswith('sys_enter') for ts, cols in evs
           if len([c for t, c in k.get(key, []) if abs(t - ts) <= 100]) == 1)
print(n, same, irq, irqsame, ','.join(sorted(kinds)), sysn, '; '.join(bad))
EOP
read -r N SAME IRQ IRQSAME KINDS SYSN BAD <"$T_TMP/cmp.txt"
[ "${N:-0}" -ge 50 ] && t_pass "$N events found in both traces" || t_fail "events in both traces" "$(cat "$T_TMP/cmp.txt")"
# need-resched is the preempt count's folded bit: the kernel's 'n' (set, not yet folded) reads '.'
# here, which a wakeup from another CPU leaves for a moment; allow 1 in 50 of those
[ "${N:-0}" -gt 0 ] && [ $((SAME * 50)) -ge $((N * 49)) ] &&
	t_pass "need-resched, hardirq/softirq, preempt-depth, migrate-disable: $SAME of $N as the kernel's" ||
	t_fail "irq-info columns as the kernel's" "$(cat "$T_TMP/cmp.txt")"
t_eq "irqs-off, where ksight gives it (hardirq, $IRQ events): as the kernel's" "$IRQ" "$IRQSAME"
t_eq "hardirq and softirq events seen as such" "hrtimer_expire_entry,softirq_entry" "$KINDS"
[ "${SYSN:-0}" -ge 10 ] && t_pass "$SYSN system-call events (the raw sys_enter path) among them" ||
	t_fail "system-call events in both traces" "$(cat "$T_TMP/cmp.txt")"
t_ok "irqs-off outside hardirq reads X (not readable from BPF)" grep -q '^ *.*-[0-9]* *\[[0-9]*\] X.\.' "$T_TMP/ours.txt"
exit $T_FAILED
