# Test helper: checks every event record of a ksight recording: the stride its length gives fills the chunk exactly, and the padding after each record is zero; prints "records with_padding bad_padding longest".
import struct
import sys

HDR = 64   # struct ks_rec_header
CHUNK = struct.Struct("<IIQIIQQQII")  # struct ks_rec_chunk: magic type seq cpu count first last lost len crc
EVENT = struct.Struct("<QIHH16s")     # struct ks_rec_event: ts tgid len cpu comm


def main():
    data = open(sys.argv[1], "rb").read()
    off, n, padded, bad, longest = HDR, 0, 0, 0, 0
    while off + CHUNK.size <= len(data):
        f = CHUNK.unpack_from(data, off)
        payload = data[off + CHUNK.size: off + CHUNK.size + f[8]]
        off += CHUNK.size + f[8]
        if f[1] != 3:  # events
            continue
        at = 0
        for _ in range(f[4]):
            _ts, _tgid, length, _cpu, _comm = EVENT.unpack_from(payload, at)
            stride = EVENT.size + (length + 7) // 8 * 8
            pad = payload[at + EVENT.size + length: at + stride]
            n += 1
            longest = max(longest, length)
            padded += 1 if pad else 0
            bad += 1 if pad.strip(b"\0") else 0
            at += stride
        if at != len(payload):
            print(f"chunk {f[2]}: records end at {at} of {len(payload)} bytes")
            sys.exit(1)
    print(n, padded, bad, longest)


main()
