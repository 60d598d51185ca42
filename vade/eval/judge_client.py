"""The judge as our judged tasks call it: one chat completion, and strict reading of its reply.

lmms-eval's judge helpers read any "1" in a reply as a pass (``llm_judge/utils.py``), so a judge
that rambles ("I cannot say; 1 of the 2 answers ...") passes items. Here a verdict is the reply
``0`` or ``1`` and nothing else (a leading ``Judgement:`` and a final period allowed, as the
official MathVerse scorer strips them); anything else is re-asked up to ``RETRIES`` times, as the
official scorer re-asks, and then counted as a judge error (``STATS``), which scores the item 0 and
counts toward ``evaluate.judge.max_error_fraction`` (``JudgeHandle.check``), never as a pass.

The endpoint is the one ``vade.eval.judge.running_judge`` sets in the environment (the counting
relay in front of the served judge): ``OPENAI_API_URL`` (base URL ending in ``/v1``),
``OPENAI_API_KEY``, ``MODEL_VERSION``. Transport errors are retried a few times, then raised as
``JudgeError`` (the relay has counted them).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

__all__ = ["RETRIES", "STATS", "JudgeError", "JudgeStats", "chat", "parse_verdict", "verdict"]

RETRIES = 2            # re-asks after a malformed verdict (the official scorer re-asks too)
TRANSPORT_TRIES = 3    # attempts per call when the endpoint fails
TIMEOUT_S = 120.0
MAX_TOKENS = 256       # the official extraction and match calls' budget


class JudgeError(RuntimeError):
    """The judge could not be reached or gave no usable reply."""


@dataclass
class JudgeStats:
    """Calls made and malformed verdicts given up on, in this process (thread-safe)."""

    calls: int = 0
    malformed: int = 0
    last_malformed: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, *, malformed: str | None = None) -> None:
        with self._lock:
            if malformed is None:
                self.calls += 1
            else:
                self.malformed += 1
                self.last_malformed = malformed[:200]

    def reset(self) -> None:
        with self._lock:
            self.calls = self.malformed = 0
            self.last_malformed = ""


STATS = JudgeStats()


def chat(prompt: str, *, max_tokens: int = MAX_TOKENS) -> str:
    """The judge's reply to one user message at temperature 0 (stripped; may be empty)."""
    base = os.environ.get("OPENAI_API_URL", "").rstrip("/")
    model = os.environ.get("MODEL_VERSION", "")
    if not base or not model:
        raise JudgeError("no judge endpoint: OPENAI_API_URL and MODEL_VERSION are unset "
                         "(vade evaluate sets them from evaluate.judge)")
    base = base.removesuffix("/chat/completions")
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "temperature": 0.0, "max_tokens": max_tokens}).encode("utf-8")
    headers = {"Content-Type": "application/json",
               "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'EMPTY')}"}
    last = ""
    for attempt in range(TRANSPORT_TRIES):
        request = urllib.request.Request(f"{base}/chat/completions", data=body, headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
            STATS.count()
            content = reply["choices"][0]["message"]["content"]
            return content.strip() if isinstance(content, str) else ""
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError,
                TypeError) as exc:
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(min(2.0 ** attempt, 8.0) * 0.5)
    raise JudgeError(f"judge at {base} failed {TRANSPORT_TRIES} times ({last})")


_VERDICT = re.compile(r"(?:judge?ment\s*:\s*)?([01])\s*\.?", re.IGNORECASE)


def parse_verdict(reply: str) -> int | None:
    """``0`` or ``1`` when the reply is exactly a verdict (see module doc), else None."""
    m = _VERDICT.fullmatch(reply.strip())
    return int(m.group(1)) if m else None


def verdict(prompt: str) -> int | None:
    """The judge's 0/1 verdict on ``prompt``; None after ``RETRIES`` malformed replies (counted
    in ``STATS``) or when the judge cannot be reached (counted by the relay)."""
    reply = ""
    for _ in range(RETRIES + 1):
        try:
            reply = chat(prompt)
        except JudgeError:
            return None
        found = parse_verdict(reply)
        if found is not None:
            return found
    STATS.count(malformed=reply)
    return None
