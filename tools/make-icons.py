#!/usr/bin/env python3
# tools/make-icons.py — draws web/icons/wick-{192,512}.png (the page's flame on a dark square, the
# same path as the favicon in web/index.html) for the web app manifest. Plain Python: zlib + PNG chunks.
import math, struct, sys, zlib
from pathlib import Path

BG, FLAME, CORE = (0x1b, 0x1d, 0x22), (0xe0, 0x89, 0x2c), (0xf6, 0xc4, 0x5a)

def inside_flame(x, y, scale):
    # the favicon's flame in a 16-unit box: a drop from (8, 1) down to a circle of radius 4 at (8, 9)
    u, v = x / scale * 16, y / scale * 16
    if v >= 9:
        return (u - 8) ** 2 + (v - 9) ** 2 <= 16
    if v < 1:
        return False
    half = 4 * math.sin((v - 1) / 8 * math.pi / 2)  # widens from the tip to the circle
    return abs(u - 8) <= half

def png(size):
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            # a safe zone for maskable icons: the flame fills the middle 70%
            m = size * 0.15
            fx, fy = x - m, y - m
            color = BG
            if 0 <= fx < size * 0.7 and 0 <= fy < size * 0.7 and inside_flame(fx, fy, size * 0.7):
                inner = inside_flame((fx - size * 0.14) / 0.6, (fy - size * 0.2) / 0.6, size * 0.7)
                color = CORE if inner else FLAME
            row += bytes(color)
        rows.append(bytes(row))
    def chunk(tag, data):
        return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', size, size, 8, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(b''.join(rows), 9)) + chunk(b'IEND', b''))

out = Path(sys.argv[1] if len(sys.argv) > 1 else 'web/icons')
out.mkdir(parents=True, exist_ok=True)
for size in (192, 512):
    (out / f'wick-{size}.png').write_bytes(png(size))
