#!/usr/bin/env python3
# Writes the hostile-recording reproducers of issue 22 from a real recording: one FORMAT field changed (its chunk's CRC fixed), a chunk repeated, a chunk removed.
# Usage: tests/fuzz/mkrepro.py RECORDING.ksr OUTDIR [--corpus]   (--corpus: each file gets fuzz_recfile's leading mode byte)
import re
import struct
import sys

HDR = 64  # struct ks_rec_header
CHUNK = struct.Struct('<IIQIIQQQII')  # struct ks_rec_chunk: magic type seq cpu count first_ts last_ts lost len crc
MAGIC, FORMAT, EVENTS = 0x4b43484b, 2, 3

# CRC32C (Castagnoli, reflected), as src/format/recfile.c
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)
    TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc = TABLE[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff


def chunks(d):
    off = HDR
    out = []
    while off + CHUNK.size <= len(d):
        f = list(CHUNK.unpack_from(d, off))
        if f[0] != MAGIC:
            sys.exit('mkrepro: no chunk at %d: not an intact recording' % off)
        out.append((f, d[off + CHUNK.size:off + CHUNK.size + f[8]]))
        off += CHUNK.size + f[8]
    return out


def pack(f, payload):
    f = list(f)
    f[8], f[9] = len(payload), 0
    f[9] = crc32c(payload, crc32c(CHUNK.pack(*f)))
    return CHUNK.pack(*f) + payload


def with_format(d, cs, pattern, repl):
    """The recording with the first FORMAT chunk that matches @pattern rewritten, its CRC fixed."""
    out = d[:HDR]
    done = False
    for f, p in cs:
        if f[1] == FORMAT and not done and re.search(pattern, p):
            p, done = re.sub(pattern, repl, p, count=1), True
        out += pack(f, p)
    if not done:
        sys.exit('mkrepro: no format matches %r' % pattern)
    return out


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    corpus = '--corpus' in sys.argv[3:]
    d = open(src, 'rb').read()
    cs = chunks(d)
    ev = [i for i, (f, _) in enumerate(cs) if f[1] == EVENTS and f[4]]
    if not ev:
        sys.exit('mkrepro: %s has no events chunk' % src)
    files = {
        # libtraceevent's tep_parse_event follows a print argument naming no field
        'printflags-nofield': with_format(d, cs, rb'__print_flags\(REC->\w+', b'__print_flags(REC->nosuchfield'),
        # tep_read_number reads the type of every record at this offset
        'common-type-2g': with_format(d, cs, rb'(common_type;\s*offset:)0;', rb'\g<1>2147483648;'),
        # offset + size wraps in 32 bits: a bounds check in unsigned int passes
        'offset-wrap': with_format(d, cs, rb'(\w+;\s*offset:)\d+(;\s*size:4;)(\s*signed:\d;\s*\n\s*\nprint)',
                                   rb'\g<1>4294967295\g<2>\g<3>'),
        # offset + size overflows a signed int
        'size-intmax': with_format(d, cs, rb'(;\s*size:)4(;\s*signed:\d;\s*\n\s*\nprint)', rb'\g<1>2147483647\g<2>'),
        # libtraceevent's tep_print_event reads __print_hex's length of bytes, past the record
        'print-hex-100000': with_format(d, cs, rb'print fmt: [^\n]*__get_str\(filename\)[^\n]*',
                                        b'print fmt: "%s", __print_hex(REC->pid, 100000)'),
        # an events chunk twice (as in `cat A A`, or a copy gone wrong), and one removed
        'chunk-repeat': d[:HDR] + b''.join(pack(f, p) * (2 if i == ev[0] else 1) for i, (f, p) in enumerate(cs)),
        'chunk-gap': d[:HDR] + b''.join(pack(f, p) for i, (f, p) in enumerate(cs) if i != ev[0]),
    }
    for name, data in files.items():
        with open('%s/repro-%s' % (outdir, name), 'wb') as o:
            o.write((b'\0' if corpus else b'') + data)


main()
