"""One sample before it becomes a verl row, and the checks every source row must pass.

Builders turn source rows into ``Item`` (question text, ground truth, answer type, encoded image
bytes). A row that cannot become a valid ``Item`` raises ``InvalidRow`` with a reason from
``INVALID_REASONS``; the build either stops on it (naming source, row id and reason) or, with
``--skip-invalid``, drops it and counts it per reason in the manifest.
"""

from __future__ import annotations

import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "INVALID_REASONS",
    "InvalidRow",
    "Item",
    "check_image",
    "clean_question",
    "image_hash",
    "normalise_question",
]

INVALID_REASONS = ("missing_image", "corrupt_image", "empty_question", "no_answer", "duplicate_id")


class InvalidRow(ValueError):
    """A source row that cannot be used; ``reason`` is one of ``INVALID_REASONS``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in INVALID_REASONS, reason
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True)
class Item:
    """A validated sample. ``question`` is what the prompt template receives (no <image>)."""

    task: str
    domain: str
    row_id: str
    question: str
    answer: str
    answer_type: str
    images: tuple[bytes, ...]
    source_question: str = ""       # the source's own question text, for benchmark overlap
    difficulty: float | None = None  # synthetic only: the rendering parameter in [0, 1]

    @property
    def uid(self) -> str:
        return f"{self.task}:{self.row_id}"


def check_image(data: object) -> bytes:
    """Encoded image bytes that PIL fully decodes; ``InvalidRow`` otherwise."""
    from PIL import Image, UnidentifiedImageError  # lazy: pillow, the cpu extra

    if isinstance(data, dict):  # datasets' undecoded Image: bytes inline, or a file path
        path = data.get("path")
        data = data.get("bytes")
        if data is None and isinstance(path, str) and path:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as exc:
                raise InvalidRow("missing_image", f"{path}: {exc.strerror}") from None
    if data is None or (isinstance(data, (bytes, bytearray)) and not data):
        raise InvalidRow("missing_image")
    if not isinstance(data, (bytes, bytearray)):
        raise InvalidRow("corrupt_image", f"not encoded bytes: {type(data).__name__}")
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            if img.width < 1 or img.height < 1:
                raise InvalidRow("corrupt_image", "empty image")
    except InvalidRow:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InvalidRow("corrupt_image", f"{type(exc).__name__}: {exc}") from None
    return bytes(data)


def image_hash(data: bytes) -> str:
    """sha256 of the decoded RGB pixels and size: equal for re-encodings of the same picture.

    Hashing pixels rather than file bytes makes a benchmark image match its training copy when
    only the container changed (PNG re-saved, metadata stripped); a JPEG re-compression or a
    rescale changes pixels, which the perceptual hash (``vade.data.phash``) catches instead.
    """
    from PIL import Image  # lazy: pillow, the cpu extra

    with Image.open(io.BytesIO(data)) as img:
        rgb = img.convert("RGB")
        h = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode())
        h.update(rgb.tobytes())
    return h.hexdigest()


_PLACEHOLDERS = re.compile(r"<image>|<video>")
_NON_WORD = re.compile(r"[^0-9a-z]+")


def clean_question(text: object) -> str:
    """Question text without image/video placeholders; ``InvalidRow('empty_question')`` if empty."""
    if not isinstance(text, str):
        raise InvalidRow("empty_question", f"question is {type(text).__name__}")
    text = _PLACEHOLDERS.sub("", text).strip()
    if not text:
        raise InvalidRow("empty_question")
    return text


def normalise_question(text: str) -> str:
    """Lower case, accents folded, placeholders and punctuation dropped, spaces collapsed."""
    text = _PLACEHOLDERS.sub(" ", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return " ".join(_NON_WORD.sub(" ", text).split())
