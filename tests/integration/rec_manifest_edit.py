# Test helper: copies a ksight recording with some manifest values replaced (KEY=VALUE), CRCs recomputed: a recording "from another host".
import sys

from ksrec import CHUNK, HDR, crc32c


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
