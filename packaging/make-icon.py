#!/usr/bin/env python3
# Made packaging/icon.png (run from packaging/). Kept so the icon can be remade or changed;
# the committed PNG is what bundles ship.
# Draws the bundle icon: a white six-armed snowflake on a rounded blue square, 512x512 RGBA (the size Claude Desktop recommends),
# antialiased by distance. Pure standard library (zlib + struct), so it is reproducible.
import math, struct, zlib

N = 512
S = N / 256  # the geometry below is drawn for 256 pixels and scaled
C = (N - 1) / 2

def seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))

segments = []
for k in range(6):
    a = math.pi / 2 + k * math.pi / 3
    ux, uy = math.cos(a), -math.sin(a)
    tip = 92 * S
    segments.append((C, C, C + ux * tip, C + uy * tip))
    for at, length in ((48 * S, 30 * S), (72 * S, 20 * S)):
        bx, by = C + ux * at, C + uy * at
        for side in (-1, 1):
            b = a + side * math.pi / 3
            segments.append((bx, by, bx + math.cos(b) * length, by - math.sin(b) * length))

def rounded_square_alpha(x, y):
    r, half = 44 * S, N / 2
    qx, qy = abs(x - C) - (half - r), abs(y - C) - (half - r)
    d = math.hypot(max(qx, 0), max(qy, 0)) + min(max(qx, qy), 0) - r
    return max(0.0, min(1.0, 0.5 - d))

rows = []
for y in range(N):
    row = bytearray([0])
    for x in range(N):
        bg = rounded_square_alpha(x, y)
        t = y / (N - 1)
        r, g, b = 40 + 30 * t, 110 + 40 * t, 210 - 20 * t
        d = min(seg_dist(x, y, *s) for s in segments)
        w = max(0.0, min(1.0, 9.0 * S - d))
        dot = max(0.0, min(1.0, 15.0 * S - math.hypot(x - C, y - C)))
        w = max(w, dot)
        r, g, b = (r + (255 - r) * w, g + (255 - g) * w, b + (255 - b) * w)
        row += bytes((round(r), round(g), round(b), round(255 * bg)))
    rows.append(bytes(row))

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", N, N, 8, 6, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
open("icon.png", "wb").write(png)
