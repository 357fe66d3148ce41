# Compares `ksight report -j` with `trace-cmd report -R -t` of the --trace-dat file: events per type, timestamps to the ns, CPUs, pids, sched_switch and raw_syscalls fields.
import json
import re
import struct
import sys
from collections import Counter

LINE = re.compile(rb'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\S+):\s+(.*)$')
# trace-cmd -R prints NAME=VALUE pairs; a comm is anyone's bytes, so a value runs to the next " NAME="
PAIR = re.compile(rb'(\w+)=(.*?)(?= \w+=|$)')


def esc(b):
    """A comm's bytes as ksight's JSON writes them: printable ASCII as is, the rest \\xNN."""
    if b.startswith(b'ARRAY['):
        # -R prints a char array with an unprintable byte as its bytes in hex
        b = bytes(int(x, 16) for x in b[len('ARRAY['):-1].split(b', ')).split(b'\0', 1)[0]
    return ''.join(chr(c) if 0x20 <= c < 0x7f and c != 0x5c else '\\x%02x' % c for c in b)


def tc_fields(name, text):
    f = {k.decode(): v for k, v in PAIR.findall(text)}
    if name == 'sched_switch':
        return tuple([esc(f['prev_comm']), int(f['prev_pid']), int(f['prev_prio']), int(f['prev_state']),
                      esc(f['next_comm']), int(f['next_pid']), int(f['next_prio'])])
    if name == 'sys_enter':
        raw = bytes(int(x, 16) for x in f['args'].decode()[len('ARRAY['):-1].split(', '))
        return (int(f['id']), tuple(struct.unpack('<6Q', raw)))
    if name == 'sys_exit':
        return (int(f['id']), int(f['ret']))
    if name == 'sched_process_exec':
        return (f['filename'].decode(), int(f['pid']), int(f['old_pid']))
    return ()


def ks_fields(name, f):
    if name == 'sched_switch':
        return tuple(f[k] for k in ('prev_comm', 'prev_pid', 'prev_prio', 'prev_state', 'next_comm', 'next_pid',
                                    'next_prio'))
    if name == 'sys_enter':
        return (f['id'], tuple(f['args']))
    if name == 'sys_exit':
        return (f['id'], f['ret'])
    if name == 'sched_process_exec':
        return (f['filename'], f['pid'], f['old_pid'])
    return ()


def main():
    ks, tc = [], []
    with open(sys.argv[1], encoding='utf-8') as fh:
        for line in fh:
            e = json.loads(line)
            if 'ts_ns' not in e:
                continue
            name = e['event'].split(':', 1)[1]
            ks.append((e['ts_ns'], e['cpu'], e['pid'], name, ks_fields(name, e['fields'])))
    with open(sys.argv[2], 'rb') as fh:
        for line in fh:
            m = LINE.match(line.rstrip(b'\n'))
            if not m:
                continue
            name = m.group(6).decode()
            tc.append((int(m.group(4)) * 10**9 + int(m.group(5)), int(m.group(3)), int(m.group(2)), name,
                       tc_fields(name, m.group(7))))
    kc, tcc = Counter(e[3] for e in ks), Counter(e[3] for e in tc)
    print('events per type: ksight %s, trace-cmd %s' % (dict(sorted(kc.items())), dict(sorted(tcc.items()))))
    if kc != tcc:
        return 1
    ks.sort()
    tc.sort()
    for a, b in zip(ks, tc):
        if a != b:
            print('first difference:\n  ksight    %r\n  trace-cmd %r' % (a, b))
            return 1
    print('%d events alike' % len(ks))
    return 0


sys.exit(main())
