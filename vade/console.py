"""Progress output that reads well both in a terminal and in a log file.

Under Snakemake every command's stderr is a log file. Progress bars (ours and the libraries': tqdm
in lmms-eval, datasets, transformers) redraw a terminal line with carriage returns and move the
cursor with ANSI codes, so a log became one enormous ``\\r``-joined line full of ``ESC[A``. While a
command runs with stderr not on a terminal, ``log_friendly_output`` puts a filter in front of it:
each redraw becomes its own line, and cursor codes, colour codes and blank lines are dropped. On a
terminal nothing changes.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["LogLines", "log_friendly_output"]

# CSI sequences: cursor moves (ESC[A), erase (ESC[K, ESC[2K), colours (ESC[31m) ...
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class LogLines(io.TextIOBase):
    """A text stream that writes redraws as lines: ``\\r`` starts a new line, CSI codes vanish."""

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self._line = ""  # the line being written; written out when it ends
        self._drawn = False  # whether that line is a progress bar's redraw (began with \r)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        text_ = _CSI.sub("", text).replace("\r\n", "\n")
        if self._drawn and not text_.startswith(("\r", "\n")):
            text_ = "\n" + text_  # other output after a bar's redraw starts a line of its own
        if "\r" in text_ or "\n" in text_:
            self._drawn = text_.rfind("\r") > text_.rfind("\n")
        cleaned = text_.replace("\r", "\n")
        *ended, self._line = (self._line + cleaned).split("\n")
        kept = [line.rstrip() for line in ended if line.strip()]  # blanking a bar: spaces only
        if kept:
            self.target.write("\n".join(kept) + "\n")
        return len(text)

    def close_line(self) -> None:
        """Write out an unfinished last line (a bar's final state that no newline ended)."""
        if self._line.strip():
            self.target.write(self._line.rstrip() + "\n")
        self._line, self._drawn = "", False
        self.target.flush()

    def flush(self) -> None:
        self.target.flush()

    def fileno(self) -> int:
        return self.target.fileno()


@contextmanager
def log_friendly_output(stream_name: str = "stderr") -> Iterator[bool]:
    """Filter ``sys.<stream_name>`` through ``LogLines`` unless it is a terminal; yields whether
    it did. Bars created inside write through the filter (tqdm looks up ``sys.stderr`` when a bar
    is made). Also slows tqdm's default redraw to every 10 s where tqdm is not imported yet."""
    stream = getattr(sys, stream_name)
    if stream.isatty():
        yield False
        return
    set_interval = "tqdm" not in sys.modules and "TQDM_MININTERVAL" not in os.environ
    if set_interval:
        os.environ["TQDM_MININTERVAL"] = "10"
    setattr(sys, stream_name, LogLines(stream))
    try:
        yield True
    finally:
        getattr(sys, stream_name).close_line()
        setattr(sys, stream_name, stream)
        if set_interval:
            os.environ.pop("TQDM_MININTERVAL", None)
