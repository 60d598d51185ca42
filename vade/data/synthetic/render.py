"""Render one synthetic item from a difficulty ``d`` in [0, 1]: (image, question, answer, type).

The images are laid out on the vision tower's grid: at 56x56 with 14-pixel patches each of the
four bar slots is one patch column and each dot cell one patch, so the answer is a simple function
of per-patch features. ``d`` controls the cue (d=0: obvious; d=1: at or below one pixel, so the
answer is near chance) and the pixel noise (``noise * d``); the mapping is linear, so a Beta
spread of ``d`` is directly the spread of item difficulty.

* math / ``synthetic/count``: "How many dots?" 1..max_count dots, one per grid cell; d shrinks
  and fades the dots.
* chart / ``synthetic/chart``: four bars (or a four-point line chart) A-D left to right, "which is
  tallest?"; d shrinks the gap between the two tallest from 40% of the image to 1 pixel.
* science / ``synthetic/balance``: a two-pan balance, "which side is heavier? A. left B. right";
  d shrinks the beam's tilt from 20 degrees to 1 degree.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "RENDERERS",
    "TASKS",
    "Rendered",
    "balance_angle",
    "chart_gap",
    "encode_png",
    "render_balance",
    "render_chart",
    "render_count",
]

LETTERS = "ABCD"


@dataclass(frozen=True)
class Rendered:
    pixels: np.ndarray   # (S, S, 3) uint8
    question: str
    answer: str
    answer_type: str


def _lerp(a: float, b: float, d: float) -> float:
    return a + (b - a) * d


def _finish(img, rng: np.random.Generator, d: float, noise: float) -> np.ndarray:
    arr = np.asarray(img, dtype=np.float64)
    std = noise * d * 255.0
    if std > 0:
        arr = arr + rng.normal(0.0, std, size=arr.shape[:2])[..., None]
    return np.clip(np.rint(arr), 0, 255).astype(np.uint8)


def encode_png(pixels: np.ndarray) -> bytes:
    from PIL import Image  # lazy: pillow, the cpu extra

    buf = io.BytesIO()
    Image.fromarray(pixels, mode="RGB").save(buf, format="PNG")
    return buf.getvalue()


def chart_gap(d: float, size: int) -> int:
    """Pixels between the tallest and second-tallest bar at difficulty ``d``."""
    return round(_lerp(0.4 * size, 1.0, d))


def balance_angle(d: float) -> float:
    """Beam tilt in degrees at difficulty ``d``."""
    return _lerp(20.0, 1.0, d)


def render_count(rng: np.random.Generator, d: float, size: int, noise: float,
                 max_count: int = 5, **_: object) -> Rendered:
    from PIL import Image, ImageDraw  # lazy: pillow, the cpu extra

    img = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    cell = size / 4.0
    k = int(rng.integers(1, max_count + 1))
    cells = rng.choice(16, size=k, replace=False)
    radius = _lerp(0.3, 0.12, d) * cell
    level = round(_lerp(30.0, 180.0, d))  # dot grey level: dark (easy) -> faint (hard)
    slack = max(0.0, cell / 2 - radius - 1)
    for c in cells:
        cx = (int(c) % 4 + 0.5) * cell + rng.uniform(-slack, slack) * 0.6
        cy = (int(c) // 4 + 0.5) * cell + rng.uniform(-slack, slack) * 0.6
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius],
                     fill=(level, level, level))
    return Rendered(_finish(img, rng, d, noise), "How many dots are in the picture?", str(k),
                    "number")


def render_chart(rng: np.random.Generator, d: float, size: int, noise: float,
                 styles: tuple[str, ...] = ("bar", "line"), **_: object) -> Rendered:
    from PIL import Image, ImageDraw  # lazy: pillow, the cpu extra

    style = styles[int(rng.integers(len(styles)))]
    top_max = size - 6
    h_min = max(3, size // 10)
    gap = chart_gap(d, size)
    top = int(rng.integers(h_min + 1 + gap, top_max + 1))
    second = top - gap
    others = rng.integers(h_min, second, size=2)  # strictly below the second-tallest
    winner = int(rng.integers(4))
    rest = [second, int(others[0]), int(others[1])]
    rng.shuffle(rest)
    heights = rest[:winner] + [top] + rest[winner:]
    img = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    slot = size / 4.0
    base = size - 2
    half = max(1.0, slot * 0.3)
    points = []
    for i, h in enumerate(heights):
        cx = (i + 0.5) * slot
        if style == "bar":
            draw.rectangle([round(cx - half), base - h, round(cx + half) - 1, base - 1],
                           fill=(40, 40, 40))
        points.append((cx, base - h))
    if style == "line":
        draw.line(points, fill=(120, 120, 120), width=1)
        for cx, y in points:
            draw.rectangle([round(cx) - 2, y - 1, round(cx) + 1, y + 2], fill=(20, 20, 20))
        question = "Which point is highest? Points are A, B, C, D from left to right."
    else:
        question = "Which bar is tallest? Bars are A, B, C, D from left to right."
    draw.line([(0, base), (size - 1, base)], fill=(90, 90, 90), width=1)
    return Rendered(_finish(img, rng, d, noise), question, LETTERS[winner], "choice")


def render_balance(rng: np.random.Generator, d: float, size: int, noise: float,
                   **_: object) -> Rendered:
    from PIL import Image, ImageDraw  # lazy: pillow, the cpu extra

    img = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    left_down = bool(rng.integers(2))
    theta = math.radians(balance_angle(d)) * (1 if left_down else -1)
    cx = size / 2 + rng.uniform(-0.06, 0.06) * size
    cy = size * rng.uniform(0.38, 0.48)
    half = size * rng.uniform(0.36, 0.42)
    dx, dy = half * math.cos(theta), half * math.sin(theta)
    left, right = (cx - dx, cy + dy), (cx + dx, cy - dy)
    draw.polygon([(cx, cy), (cx - size * 0.1, size - 3), (cx + size * 0.1, size - 3)],
                 fill=(150, 150, 150))
    draw.line([left, right], fill=(30, 30, 30), width=max(2, size // 28))
    for (x, y) in (left, right):
        w = size * rng.uniform(0.07, 0.1)
        draw.line([(x, y), (x, y + size * 0.12)], fill=(60, 60, 60), width=1)
        top = y + size * 0.12
        if rng.integers(2):
            draw.rectangle([x - w, top - 2 * w, x + w, top], fill=(70, 70, 70))
        else:
            draw.ellipse([x - w, top - 2 * w, x + w, top], fill=(70, 70, 70))
    question = "Which side of the balance is heavier?\nA. left\nB. right"
    return Rendered(_finish(img, rng, d, noise), question, "A" if left_down else "B", "choice")


RENDERERS = {"math": render_count, "chart": render_chart, "science": render_balance}
TASKS = {"math": "synthetic/count", "chart": "synthetic/chart", "science": "synthetic/balance"}
