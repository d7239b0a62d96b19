#!/usr/bin/env python3
"""png_check.py — a PNG screenshot, read with the standard library only
(zlib): its size, how many distinct colours it holds and how much of it
is not background, overall and in horizontal bands; or a crop of it
written back as a PNG (to look at part of a tall screenshot).

  png_check.py stats FILE [BANDS]      -> JSON: width, height, colours,
                                          ink (share of pixels unlike the
                                          most common colour), bands: [ink]
  png_check.py crop FILE Y0 Y1 OUT     -> rows [Y0, Y1) into OUT

Reads 8-bit greyscale, RGB and RGBA images, not interlaced (what
Chromium's --screenshot writes); anything else is an error.
"""
import json
import struct
import sys
import zlib
from collections import Counter


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    channels = {0: 1, 2: 3, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, type {ctype}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    rows, prev, p = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, channels, rows


def stats(path, bands=10):
    w, h, ch, rows = read_png(path)
    px = Counter()
    per_band = [Counter() for _ in range(bands)]
    for y, r in enumerate(rows):
        band = per_band[min(bands - 1, y * bands // h)]
        for x in range(0, len(r), ch * 2):  # every other pixel: fast enough
            v = r[x:x + ch]
            px[v] += 1
            band[v] += 1
    bg, _ = px.most_common(1)[0]
    total = sum(px.values())
    ink = [1 - b.get(bg, 0) / max(1, sum(b.values())) for b in per_band]
    return {"width": w, "height": h, "colours": len(px),
            "ink": round(1 - px[bg] / total, 4), "bands": [round(i, 4) for i in ink]}


def crop(path, y0, y1, out):
    w, h, ch, rows = read_png(path)
    ctype = {1: 0, 3: 2, 4: 6}[ch]
    body = b"".join(b"\x00" + r for r in rows[y0:y1])

    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload +
                struct.pack(">I", zlib.crc32(kind + payload) & 0xffffffff))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, y1 - y0, 8, ctype, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(body)) + chunk(b"IEND", b""))
    open(out, "wb").write(png)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "stats":
        print(json.dumps(stats(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)))
    elif len(sys.argv) == 6 and sys.argv[1] == "crop":
        crop(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(__doc__)
