# Test helper: copies a ksight recording with some manifest values replaced (KEY=VALUE), CRCs recomputed: a recording "from another host".
import struct
import sys

HDR = 64   # struct ks_rec_header
CHUNK = struct.Struct("<IIQIIQQQII")  # struct ks_rec_chunk: magic type seq cpu count first last lost len crc


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def main():
    src, dst, edits = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
    data = open(src, "rb").read()
    out = bytearray(data[:HDR])
    off = HDR
    while off + CHUNK.size <= len(data):
        f = list(CHUNK.unpack_from(data, off))
        payload = data[off + CHUNK.size: off + CHUNK.size + f[8]]
        if f[1] == 1:  # the manifest
            lines = []
            for line in payload.decode().split("\n"):
                k, _, v = line.partition("\t")
                lines.append(f"{k}\t{edits[k]}" if k in edits else line)
            payload = "\n".join(lines).encode()
            f[8] = len(payload)
            f[9] = 0
            f[9] = crc32c(payload, crc32c(CHUNK.pack(*f)))
        out += CHUNK.pack(*f) + payload
        off += CHUNK.size + len(data[off + CHUNK.size: off + CHUNK.size + CHUNK.unpack_from(data, off)[8]])
    open(dst, "wb").write(out)


main()
