# Test helper: from a record --profile recording, writes hostile copies into DIR, each with its stacks chunk broken one way and its CRC made right (bad-crc: left wrong; cut: the file ends inside it).
import os
import struct
import sys
import zlib

from ksrec import CHUNK, HDR, crc32c

STACKS = 6  # KS_REC_STACKS


def split(payload):
    head, _, rest = payload.partition(b"\n\n")
    kv = dict(line.split(b"\t", 1) for line in head.split(b"\n"))
    return kv, zlib.decompress(rest)


def join(kv, body, deflate=True):
    z = zlib.compress(body) if deflate else body
    kv[b"raw_len"] = str(len(body)).encode()
    kv[b"zlib_len"] = str(len(z)).encode()
    return b"".join(k + b"\t" + v + b"\n" for k, v in kv.items()) + b"\n" + z


def frames_end(kv, body):
    """The offset of the first stack: after every frame (u32 length, u8 kind, name)."""
    off = 0
    for _ in range(int(kv[b"frames"])):
        n = struct.unpack_from("<I", body, off)[0]
        off += 5 + n
    return off


def truncated(p):
    kv, body = split(p)
    return join(kv, body[:len(body) - 3])


def trailing(p):
    kv, body = split(p)
    return join(kv, body + b"\0\0\0\0")


def frame_id_out(p):
    kv, body = split(p)
    at = frames_end(kv, body) + 12  # the first stack's first frame id
    return join(kv, body[:at] + struct.pack("<I", 0x7FFFFFFF) + body[at + 4:])


def depth_huge(p):
    kv, body = split(p)
    at = frames_end(kv, body)
    return join(kv, body[:at] + struct.pack("<I", 0xFFFFFFFF) + body[at + 4:])


def name_long(p):
    kv, body = split(p)
    return join(kv, struct.pack("<I", 0xFFFFFFF0) + body[4:])


def name_ctrl(p):
    kv, body = split(p)
    n = struct.unpack_from("<I", body, 0)[0]
    return join(kv, body[:5] + b"\x1b" + body[6:]) if n else None


def kind_odd(p):
    kv, body = split(p)
    return join(kv, body[:4] + b"\x09" + body[5:])


def total_off(p):
    kv, body = split(p)
    kv[b"total"] = str(int(kv[b"total"]) + 1).encode()
    return join(kv, body)


def zlib_bomb(p):
    # declares 2^40 bytes: refused before anything is inflated
    kv, body = split(p)
    out = join(kv, body)
    return out.replace(b"raw_len\t" + str(len(body)).encode(), b"raw_len\t" + str(1 << 40).encode(), 1)


def zlib_garbage(p):
    kv, body = split(p)
    z = bytearray(zlib.compress(body))
    z[len(z) // 2] ^= 0xFF
    return join(kv, bytes(z), deflate=False).replace(b"raw_len\t" + str(len(z)).encode(),
                                                      b"raw_len\t" + str(len(body)).encode(), 1)


def version_2(p):
    kv, body = split(p)
    kv[b"version"] = b"2"
    return join(kv, body)


def type_odd(p):
    kv, body = split(p)
    kv[b"sample_type"] = b"\x1b[2Jbogus"
    return join(kv, body)


def no_end(p):
    return p.partition(b"\n\n")[0] + b"\n"


EDITS = {"truncated": truncated, "trailing": trailing, "frame-id-out": frame_id_out, "depth-huge": depth_huge,
         "name-long": name_long, "name-ctrl": name_ctrl, "kind-odd": kind_odd, "total-off": total_off,
         "zlib-bomb": zlib_bomb, "zlib-garbage": zlib_garbage, "version-2": version_2, "type-odd": type_odd,
         "no-end": no_end, "bad-crc": None, "cut": None}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    data = open(src, "rb").read()
    for name, edit in EDITS.items():
        out = bytearray(data[:HDR])
        off, done = HDR, False
        while off + CHUNK.size <= len(data):
            f = list(CHUNK.unpack_from(data, off))
            payload = data[off + CHUNK.size: off + CHUNK.size + f[8]]
            off += CHUNK.size + f[8]
            if f[1] == STACKS and not done:
                done = True
                if name == "cut":
                    out += (CHUNK.pack(*f) + payload)[:CHUNK.size + len(payload) // 2]
                    break
                if edit is None:
                    payload = payload[:-1] + bytes([payload[-1] ^ 1])
                else:
                    payload = edit(payload)
                    f[8] = len(payload)
                    f[9] = 0
                    f[9] = crc32c(payload, crc32c(CHUNK.pack(*f)))
            out += CHUNK.pack(*f) + payload
        if not done:
            sys.exit("no stacks chunk in " + src)
        open(os.path.join(dst, name), "wb").write(out)


main()
