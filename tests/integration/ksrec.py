# Test helper module: the recording's layout (header size, chunk header) and its CRC32C, for the scripts that make edited recordings.
import struct

HDR = 64   # struct ks_rec_header
CHUNK = struct.Struct("<IIQIIQQQII")  # struct ks_rec_chunk: magic type seq cpu count first last lost len crc


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF
