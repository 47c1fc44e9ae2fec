"""Regenerate the kernelspec logos: ``python kernelspec/make_logos.py``.

Stdlib only. The mark is a dark rounded square with a light "λ" and a small
accent bar (a prompt underscore): lackpy is Python that lacks most of Python.
Shapes are described once in a 64-unit coordinate system and rendered to
``logo-32x32.png`` and ``logo-64x64.png`` (RGBA, 4x4 supersampled for smooth
edges) and to ``logo-svg.svg``.
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNITS = 64.0

BACKGROUND = (30, 41, 59)  # slate
FOREGROUND = (241, 245, 249)  # near white
ACCENT = (250, 204, 21)  # amber

# Rounded square: margin and corner radius, in units.
SQUARE_MARGIN = 2.0
SQUARE_RADIUS = 12.0

# The "λ": thick strokes between points, in units (x right, y down).
STROKE = 6.0
LAMBDA = [
    ((13.0, 14.0), (21.0, 14.0)),  # the hook at the top
    ((19.0, 14.0), (38.0, 50.0)),  # the long stroke
    ((26.5, 28.0), (13.0, 50.0)),  # the short leg
]
# The accent bar: x0, y0, x1, y1.
BAR = (43.0, 45.0, 53.0, 51.0)


def _in_rounded_square(x: float, y: float) -> bool:
    lo, hi = SQUARE_MARGIN, UNITS - SQUARE_MARGIN
    if not (lo <= x <= hi and lo <= y <= hi):
        return False
    r = SQUARE_RADIUS
    cx = min(max(x, lo + r), hi - r)
    cy = min(max(y, lo + r), hi - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def _near_segment(x: float, y: float, a: tuple[float, float], b: tuple[float, float], width: float) -> bool:
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)
    t = min(max(t, 0.0), 1.0)
    px, py = ax + t * dx, ay + t * dy
    return math.hypot(x - px, y - py) <= width / 2


def _colour_at(x: float, y: float) -> tuple[int, int, int, int]:
    if not _in_rounded_square(x, y):
        return (0, 0, 0, 0)
    x0, y0, x1, y1 = BAR
    if x0 <= x <= x1 and y0 <= y <= y1:
        return (*ACCENT, 255)
    if any(_near_segment(x, y, a, b, STROKE) for a, b in LAMBDA):
        return (*FOREGROUND, 255)
    return (*BACKGROUND, 255)


def render(size: int, samples: int = 4) -> list[list[tuple[int, int, int, int]]]:
    """The logo as ``size`` rows of ``size`` RGBA pixels."""
    scale = UNITS / size
    rows = []
    for py in range(size):
        row = []
        for px in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(samples):
                for sx in range(samples):
                    x = (px + (sx + 0.5) / samples) * scale
                    y = (py + (sy + 0.5) / samples) * scale
                    r, g, b, a = _colour_at(x, y)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            n = samples * samples
            alpha = acc[3] / n
            if acc[3]:
                pixel = tuple(round(c / acc[3]) for c in acc[:3]) + (round(alpha),)
            else:
                pixel = (0, 0, 0, 0)
            row.append(pixel)
        rows.append(row)
    return rows


def png_bytes(rows: list[list[tuple[int, int, int, int]]]) -> bytes:
    """Encode RGBA rows as a PNG (8-bit, colour type 6, no filtering)."""
    height, width = len(rows), len(rows[0])

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(c for pixel in row for c in pixel) for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def svg_text() -> str:
    def hex_colour(rgb: tuple[int, int, int]) -> str:
        return "#{:02x}{:02x}{:02x}".format(*rgb)

    side = UNITS - 2 * SQUARE_MARGIN
    lines = "".join(
        f'    <line x1="{a[0]:g}" y1="{a[1]:g}" x2="{b[0]:g}" y2="{b[1]:g}"/>\n' for a, b in LAMBDA
    )
    x0, y0, x1, y1 = BAR
    bar = f'x="{x0:g}" y="{y0:g}" width="{x1 - x0:g}" height="{y1 - y0:g}"'
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 {UNITS:g} {UNITS:g}">\n'
        f'  <rect x="{SQUARE_MARGIN:g}" y="{SQUARE_MARGIN:g}" width="{side:g}" height="{side:g}" '
        f'rx="{SQUARE_RADIUS:g}" fill="{hex_colour(BACKGROUND)}"/>\n'
        f'  <g stroke="{hex_colour(FOREGROUND)}" stroke-width="{STROKE:g}" stroke-linecap="round">\n'
        + lines
        + "  </g>\n"
        f'  <rect {bar} fill="{hex_colour(ACCENT)}"/>\n'
        "</svg>\n"
    )


def main() -> None:
    for size in (32, 64):
        path = HERE / f"logo-{size}x{size}.png"
        path.write_bytes(png_bytes(render(size)))
        print(f"wrote {path}")
    path = HERE / "logo-svg.svg"
    path.write_text(svg_text(), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
