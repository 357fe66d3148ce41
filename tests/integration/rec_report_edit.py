# Test helper: from a record --collect recording, writes hostile copies into DIR, each with its first interval report chunk broken one way and its CRC made right (bad-crc: left wrong).
import os
import sys
import zlib

from ksrec import CHUNK, HDR, crc32c

REPORT = 5  # KS_REC_REPORT


def split(payload):
    """The lines as a dict and the renderings, inflated."""
    head, _, rest = payload.partition(b"\n\n")
    kv = dict(line.split(b"\t", 1) for line in head.split(b"\n"))
    return kv, zlib.decompress(rest) if b"zlib_len" in kv else rest


def join(kv, rest, deflate=True):
    if deflate:
        rest = zlib.compress(rest)
        kv[b"zlib_len"] = str(len(rest)).encode()
    return b"".join(k + b"\t" + v + b"\n" for k, v in kv.items()) + b"\n" + rest


def lengths_over(p):
    kv, rest = split(p)
    kv[b"json_len"] = str(int(kv[b"json_len"]) + 1).encode()
    return join(kv, rest)


def lengths_short(p):
    kv, rest = split(p)
    kv[b"text_len"] = str(int(kv[b"text_len"]) - 1).encode()
    return join(kv, rest)


def ctrl_byte(p):
    kv, rest = split(p)
    at = int(kv[b"json_len"])
    return join(kv, rest[:at] + b"\x1b[2J" + rest[at + 4:])


def kind_odd(p):
    kv, rest = split(p)
    kv[b"kind"] = b"weird"
    return join(kv, rest)


def no_end(p):
    return p.partition(b"\n\n")[0] + b"\n"


def zlib_bomb(p):
    # declares 2^40 bytes of text: refused before anything is inflated
    kv, rest = split(p)
    kv[b"text_len"] = str(1 << 40).encode()
    return join(kv, rest)


def zlib_garbage(p):
    kv, rest = split(p)
    z = bytearray(zlib.compress(rest))
    z[len(z) // 2] ^= 0xFF
    kv[b"zlib_len"] = str(len(z)).encode()
    return join(kv, bytes(z), deflate=False)


def zlib_len_off(p):
    kv, rest = split(p)
    out = join(kv, rest)
    return out.replace(b"zlib_len\t", b"zlib_len\t1", 1)


def plain(p):
    # not deflated, whole: read as it is
    kv, rest = split(p)
    del kv[b"zlib_len"]
    return join(kv, rest, deflate=False)


EDITS = {"lengths-over": lengths_over, "lengths-short": lengths_short, "ctrl-byte": ctrl_byte,
         "kind-odd": kind_odd, "no-end": no_end, "zlib-bomb": zlib_bomb, "zlib-garbage": zlib_garbage,
         "zlib-len-off": zlib_len_off, "plain": plain, "bad-crc": None}


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
            if f[1] == REPORT and not done and b"kind\tinterval\n" in payload:
                done = True
                if edit is None:
                    payload = payload[:-1] + bytes([payload[-1] ^ 1])
                else:
                    payload = edit(payload)
                    f[8] = len(payload)
                    f[9] = 0
                    f[9] = crc32c(payload, crc32c(CHUNK.pack(*f)))
            out += CHUNK.pack(*f) + payload
        if not done:
            sys.exit("no interval report chunk in " + src)
        open(os.path.join(dst, name), "wb").write(out)


main()
