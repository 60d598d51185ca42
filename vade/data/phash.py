"""A perceptual image hash (difference hash) and a nearest-key index, so re-encoded copies match.

Why not the pixel sha256 alone (``items.image_hash``): a benchmark that stores a training source's
picture as JPEG, or at another size, has other pixels, and an exact hash misses it. The difference
hash (dHash) keeps only which of two neighbouring cells of a small grey thumbnail is brighter, so
re-compression and rescaling change few bits while a different picture changes many. No library
for it is in the project's lock (``imagehash`` is not), so this is the textbook algorithm in
PIL + numpy: ``HASH_SIZE`` x ``HASH_SIZE`` bits from a (``HASH_SIZE`` + 1) x ``HASH_SIZE``
thumbnail. Two images match when their hashes differ in at most ``max_distance`` bits.

A near-uniform picture (a blank page, one flat colour) has almost no brighter-neighbour bits, so
its hash says little and would match every other near-blank picture: such hashes are marked
uninformative and never match by distance (the exact pixel hash still applies to them).
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np

__all__ = ["HASH_SIZE", "MIN_BITS", "DHashIndex", "dhash", "hamming", "informative"]

HASH_SIZE = 16                    # 256-bit hashes: 64 bits collide too often on line drawings
MIN_BITS = HASH_SIZE * HASH_SIZE // 32   # fewer set (or unset) bits than this: uninformative


def dhash(data: bytes) -> str:
    """The difference hash of encoded image bytes, as hex (``HASH_SIZE**2 / 4`` characters)."""
    from PIL import Image  # lazy: pillow, the cpu extra

    with Image.open(io.BytesIO(data)) as img:
        img = img.convert("RGBA")
        flat = Image.new("RGBA", img.size, (255, 255, 255, 255))  # transparency on white
        grey = Image.alpha_composite(flat, img).convert("L")
        small = grey.resize((HASH_SIZE + 1, HASH_SIZE), Image.Resampling.LANCZOS)
    px = np.asarray(small, dtype=np.int16)
    bits = (px[:, 1:] > px[:, :-1]).ravel()
    return np.packbits(bits).tobytes().hex()


def _bits(hexes: Iterable[str]) -> np.ndarray:
    rows = [np.frombuffer(bytes.fromhex(h), dtype=np.uint8) for h in hexes]
    if not rows:
        return np.zeros((0, HASH_SIZE * HASH_SIZE // 8), dtype=np.uint8)
    return np.stack(rows)


_POPCOUNT = np.array([i.bit_count() for i in range(256)], dtype=np.uint16)


def hamming(a: str, b: str) -> int:
    """Bits in which two hashes differ."""
    return int(_POPCOUNT[_bits([a])[0] ^ _bits([b])[0]].sum())


def informative(h: str) -> bool:
    """False for the hash of a near-uniform picture (see the module docstring)."""
    n = int(_POPCOUNT[_bits([h])[0]].sum())
    return MIN_BITS <= n <= HASH_SIZE * HASH_SIZE - MIN_BITS


class DHashIndex:
    """Benchmark hashes held as one bit matrix: the nearest key of a training image in one pass."""

    def __init__(self, hashes: Iterable[str], max_distance: int) -> None:
        keep = sorted({h for h in hashes if informative(h)})
        self.hashes = keep
        self.max_distance = max_distance
        self._matrix = _bits(keep)

    def __len__(self) -> int:
        return len(self.hashes)

    def nearest(self, h: str) -> tuple[str, int] | None:
        """(matching benchmark hash, distance) when one is within ``max_distance``; else None."""
        if not self.hashes or not informative(h):
            return None
        dist = _POPCOUNT[self._matrix ^ _bits([h])[0]].sum(axis=1)
        k = int(np.argmin(dist))
        return (self.hashes[k], int(dist[k])) if dist[k] <= self.max_distance else None
