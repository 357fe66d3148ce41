# Integration: --heatmap on a workload whose sleeps are 1 ms, then 20 ms: every cell is the interval report's bucket, the bands lie in their buckets and time columns, the counts are the workload's; Chromium draws exactly the cells; bad input exits 2 with nothing attached.
. tests/lib.sh
need_root heatmap

t_orphans >"$T_TMP/orphans.before"
HM=$T_TMP/hm.svg
# 1 ms sleeps for 1.25 s, then 20 ms ones for 1.25 s, in half-second columns: two columns of each band alone
"$KSIGHT" syscalls -i 0.5 -n 3 --heatmap "$HM" -j -o "$T_TMP/r.json" -- "$WORKLOADS/hm_phases" 1.25 1.25 \
	>"$T_TMP/w.out" 2>"$T_TMP/k.err"
t_eq "heatmap: syscalls -i 0.5 --heatmap exits 0" "0" "$?"
t_ok "heatmap: the SVG is well-formed XML (xmllint)" xmllint --noout "$HM"

# the cells against the JSON reports of the same run and against the workload's own counts
python3 - "$HM" "$T_TMP/r.json" "$T_TMP/w.out" <<'PY' || t_fail "heatmap: the SVG against the reports" "a check above failed, or the checker stopped"
import json, re, sys, xml.etree.ElementTree as ET

svg, rep, wl = sys.argv[1:4]
NS = '{http://www.w3.org/2000/svg}'
failed = False

def check(name, ok, why=''):
    global failed
    print(('PASS: heatmap: ' + name) if ok else ('FAIL: heatmap: %s: %s' % (name, why)))
    failed |= not ok

def slot(v):  # include/ksight/hist.h's ks_hist_slot
    if v < 16:
        return v
    p = v.bit_length() - 1
    return ((p - 3) << 4) + ((v >> (p - 4)) & 15)

short, long_ns, switch = [], [], None
for l in open(wl):
    k, v = l.split()
    if k == 'switch':
        switch = float(v)
    else:
        (short if k == 's' else long_ns).append(int(v))
panels = [g for g in ET.parse(svg).getroot().iter(NS + 'g') if g.get('class') == 'panel']
mine = [g for g in panels if g.get('data-row', '').startswith('syscall=clock_nanosleep ')]
check('one panel for the clock_nanosleep row', len(mine) == 1, [g.get('data-row') for g in panels])
if not mine:
    sys.exit(1)
def slot_high(s):  # the largest value of slot s
    return (s + 1 if s + 1 < 16 else (1 << ((s + 1) // 16 + 3)) + (((s + 1) % 16) << ((s + 1) // 16 - 1))) - 1

cells = [dict(i=int(g.get('data-i')), t0=float(g.get('data-t0')), t1=float(g.get('data-t1')), lo=int(r.get('data-lo')),
              hi=slot_high(slot(int(r.get('data-lo')))), n=int(r.get('data-n')), title=r.find(NS + 'title').text)
         for g in mine[0].iter(NS + 'g') if g.get('class') == 'col' for r in g.iter(NS + 'rect') if r.get('class') == 'c']

# every interval report's clock_nanosleep buckets are that column's cells, exactly
reports = [json.loads(l) for l in open(rep)]
want, total = set(), 0
for r in reports:
    for row in r['rows']:
        if row.get('syscall') == 'clock_nanosleep':
            want |= {(r['interval'], lo, hi, n) for lo, hi, n in row['latency_ns']['buckets']}
            total += row['latency_ns']['count']
got = {(c['i'], c['lo'], c['hi'], c['n']) for c in cells}
check('each cell is its interval report\'s bucket (%d cells, %d reports)' % (len(cells), len(reports)),
      got == want and len(got) == len(cells), 'only in the SVG %s, only in JSON %s' % (sorted(got - want)[:4], sorted(want - got)[:4]))
check('the cells sum to the reports\' count (%d)' % total, sum(c['n'] for c in cells) == total == int(mine[0].get('data-total')),
      '%d cells, %s data-total' % (sum(c['n'] for c in cells), mine[0].get('data-total')))

# the two bands against the workload's own sleeps.  2^23 ns (8.4 ms) is a bucket boundary: a sleep
# measured below it by the workload is below it in the kernel too (they differ by microseconds);
# a loaded machine may stretch a 1 ms sleep past it, never a sleep below what it asked
B = 1 << 23
fast = sum(1 for v in short + long_ns if v < B)
check('below 8.4 ms: the workload\'s %d sleeps measured there' % fast, sum(c['n'] for c in cells if c['lo'] < B) == fast,
      sum(c['n'] for c in cells if c['lo'] < B))
check('at or above 8.4 ms: the workload\'s other %d' % (len(short) + len(long_ns) - fast),
      sum(c['n'] for c in cells if c['lo'] >= B) == len(short) + len(long_ns) - fast, sum(c['n'] for c in cells if c['lo'] >= B))
check('no cell below 1 ms; %d sleeps of 20 ms in buckets that reach 20 ms' % len(long_ns),
      all(c['hi'] >= 1000000 for c in cells) and sum(c['n'] for c in cells if c['hi'] >= 20000000) >= len(long_ns),
      [c['title'] for c in cells if c['hi'] < 1000000][:3])

def median_slot(band):
    band = sorted(band, key=lambda c: c['lo'])
    n, k = sum(c['n'] for c in band), 0
    for c in band:
        k += c['n']
        if 2 * k >= n:
            return slot(c['lo'])

for name, band, ref in (('1 ms', [c for c in cells if c['lo'] < B], short),
                        ('20 ms', [c for c in cells if c['lo'] >= 16 * 1000000], long_ns)):
    med = sorted(ref)[(len(ref) - 1) // 2]
    check('%s band: its median bucket holds the workload\'s median %d ns (one bucket either side)' % (name, med),
          abs(median_slot(band) - slot(med)) <= 1, 'slot %s, workload %d' % (median_slot(band), slot(med)))

# time columns: wholly before the switch the 1 ms band (and at most the stretched sleeps above
# 8.4 ms), wholly after it only the 20 ms band (0.1 s for the start's skew)
stretched = sum(1 for v in short if v >= B)
before = {c['i'] for c in cells if c['t1'] < switch - 0.1}
after = {c['i'] for c in cells if c['t0'] > switch + 0.1}
check('columns before the switch at %.2f s: %s, the 1 ms band (and at most the %d stretched sleeps)' % (switch, sorted(before), stretched),
      len(before) >= 2 and all(sum(c['n'] for c in cells if c['i'] == i and c['lo'] < B) > 0 for i in before)
      and sum(c['n'] for c in cells if c['i'] in before and c['lo'] >= B) <= stretched, sorted(before))
check('columns after it: %s, the 20 ms band only' % sorted(after),
      len(after) >= 2 and all(c['hi'] >= 20000000 for c in cells if c['i'] in after), sorted(after))
def title_ok(c):  # "T0-T1 s, LO-HI: N", the times to the hundredth, the bucket with its units
    m = re.match(r'^([0-9.]+)-([0-9.]+) s, [0-9.]+[num]?s-[0-9.]+[num]?s: ([0-9]+)$', c['title'])
    return m and abs(float(m[1]) - c['t0']) <= 0.006 and abs(float(m[2]) - c['t1']) <= 0.006 and int(m[3]) == c['n']

check('hover titles name the time range, the bucket range and the count',
      all(title_ok(c) for c in cells), [c['title'] for c in cells if not title_ok(c)][:3])
sys.exit(1 if failed else 0)
PY

# in Chromium: no console errors, each cell's pixel is its colour, nothing coloured elsewhere down the columns
NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
if command -v chromium >/dev/null 2>&1 && command -v node >/dev/null 2>&1 && [ -d "$NODE_DIR/node_modules/playwright-core" ]; then
	if NODE_PATH=$NODE_DIR/node_modules timeout 120 node tests/integration/chromium_check.js heatmap "$HM" "$T_TMP/hm.png" \
		>"$T_TMP/c.out" 2>"$T_TMP/c.err"; then
		set -- $(head -1 "$T_TMP/c.out")
		t_eq "heatmap in chromium: no console errors" "0" "$2"
		t_eq "heatmap in chromium: every cell's pixel is its colour ($4 cells)" "$4" "$6"
		t_eq "heatmap in chromium: no colour outside the cells ($8 coloured, ${10} blank pixels)" "0" "${12}"
	else
		t_fail "heatmap in chromium" "$(cat "$T_TMP/c.err")"
	fi
else
	t_skip "heatmap in chromium" "needs chromium, node and playwright-core in $NODE_DIR (scripts/setup.sh)"
fi

# --series-memory 1M: the kept intervals within 1 MiB, the oldest dropped whole and counted in -v and the title
# (by pid and syscall at -i 0.05, on a command that starts /bin/true and sleep ~50 times a second: each new
# process is ~20 rows, so 40 intervals hold well over 1 MiB and one well under, whatever else the machine does)
"$KSIGHT" syscalls -i 0.05 -d 2 --by pid,syscall --series-memory 1M -v -n 1 --heatmap "$T_TMP/sm.svg" -j -o "$T_TMP/sm.json" \
	-- sh -c 'while :; do /bin/true; sleep 0.01; done' 2>"$T_TMP/sm.err"
t_eq "heatmap: --series-memory 1M exits 0" "0" "$?"
set -- $(sed -n 's/^ksight: heatmap: \([0-9]*\) reports of \([0-9]*\) intervals kept in \([0-9]*\) KiB .*budget of \([0-9]*\) MiB), \([0-9]*\) intervals dropped.*/\1 \2 \3 \4 \5/p' "$T_TMP/sm.err")
if [ $# = 5 ]; then
	t_eq "heatmap: --series-memory 1M is the budget -v names" "1" "$4"
	t_ok "heatmap: the $1 reports kept fit in 1 MiB ($3 KiB)" test "$3" -le 1024
	t_ok "heatmap: intervals were dropped ($5) and kept ($2)" test "$5" -gt 0 -a "$2" -gt 0
	t_eq "heatmap: kept and dropped are every interval report" "$(grep -c '"interval": *[1-9]' "$T_TMP/sm.json")" "$(($2 + $5))"
	t_ok "heatmap: the title says how many were dropped" grep -q "; $5 intervals dropped to keep the series within 1 MiB" "$T_TMP/sm.svg"
else
	t_fail "heatmap: --series-memory -v line" "$(grep heatmap: "$T_TMP/sm.err")"
fi

# bad input: one line, exit 2, no file made, nothing attached
h_bad() {
	_n=$1
	shift
	timeout 20 "$KSIGHT" "$@" >"$T_TMP/b.out" 2>"$T_TMP/b.err" </dev/null
	_rc=$?
	if [ "$_rc" != 2 ] || [ "$(wc -l <"$T_TMP/b.err")" != 1 ] || ! grep -q '^ksight: error: ' "$T_TMP/b.err" ||
		[ -s "$T_TMP/b.out" ]; then
		t_fail "heatmap: $_n" "exit $_rc, stderr: $(tr '\n' '|' <"$T_TMP/b.err")"
	else
		t_pass "heatmap: $_n exits 2 with one line ($(cat "$T_TMP/b.err"))"
	fi
}
h_bad "without -i" syscalls -d 1 --heatmap "$T_TMP/no-i.svg"
t_ok "heatmap: without -i, no file" test ! -e "$T_TMP/no-i.svg"
h_bad "run without -i" run syscalls,runqlat -d 1 --heatmap "$T_TMP/no-i.svg"
h_bad "an unwritable path" syscalls -i 1 -d 1 --heatmap /proc/no-such-dir/h.svg
mkfifo "$T_TMP/fifo"
h_bad "a FIFO (refused, not waited on)" syscalls -i 1 -d 1 --heatmap "$T_TMP/fifo"
h_bad "the -o file" syscalls -i 1 -d 1 --heatmap "$T_TMP/same" -o "$T_TMP/same"
t_ok "heatmap: the -o file, not made" test ! -e "$T_TMP/same"
h_bad "an empty name" syscalls -i 1 -d 1 --heatmap ''
h_bad "--series-memory below 1M" syscalls -i 1 -d 1 --heatmap "$T_TMP/sm0.svg" --series-memory 1K
h_bad "--series-memory without --heatmap" syscalls -i 1 -d 1 --series-memory 64M
h_bad "-o unwritable after it" syscalls -i 1 -d 1 --heatmap "$T_TMP/o-bad.svg" -o /proc/no-such-dir/r.json
t_ok "heatmap: a run that never started leaves no heatmap file" test ! -e "$T_TMP/o-bad.svg"
t_no_leaks "heatmap: no BPF program or link left behind" "$T_TMP/orphans.before"
exit $T_FAILED
