"""``vade build-variants``: the texts DIVA-GRPO's variants of the paper's data need, written offline.

DIVA's hint variants show the first k steps of a solution and its D = 0 variant is a rephrasing
(``vade.diva.plan_variant``). On the synthetic set the renderer writes both exactly; for the paper's
data the reference work had LLMs write them offline. This command asks an OpenAI-compatible chat
endpoint (the judge's serving mechanism: ``vade judge`` or any vLLM server) once per training row
for numbered solution steps and once for a rephrasing, and writes ``variants.parquet`` beside the
data (index, uid, steps, rephrasing, model). Image perturbations and the question drawn into the
image need no model and are made at training time, so a training run needs no extra service.

Every reply is cached as one JSON line (``variants.cache.jsonl``) the moment it arrives, keyed by the
row's uid, the kind of text and the prompt's version, so an interrupted build resumes without asking
again and loses nothing already received. Replies are only ever text: parsed with a regular
expression, length-capped, never executed. A reply without numbered steps, or an empty rephrasing,
is an error naming the row; the parquet is written only when every row has both texts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from vade.data.records import read_examples

__all__ = ["PROMPT_VERSION", "Endpoint", "add_arguments", "build_variant_texts", "parse_steps",
           "run"]

PROMPT_VERSION = "v1"  # part of the cache key: a changed prompt asks again
MAX_STEPS, MAX_CHARS = 8, 600
STEPS_PROMPT = (
    "Solve the following problem about the image step by step. Write the solution as numbered "
    "steps, one per line ('1. ...', '2. ...'), at most {max_steps} steps, the last one stating "
    "the final answer.\n\nProblem: {question}\nCorrect answer: {answer}")
REPHRASE_PROMPT = (
    "Rephrase the following question so that it asks exactly the same thing and has the same "
    "answer. Keep any answer options and their letters. Reply with the rephrased question only."
    "\n\nQuestion: {question}")
_STEP = re.compile(r"^\s*(?:step\s*)?(\d{1,2})\s*[.):]\s+(\S.*?)\s*$", re.IGNORECASE)


def parse_steps(reply: str) -> list[str]:
    """Numbered lines of a reply, in order from 1, capped at ``MAX_STEPS`` steps of ``MAX_CHARS``.

    Numbering must start at 1 and go up by one; text after a gap is ignored (a second list in the
    reply is not part of the solution). Returns [] when the reply holds no step 1.
    """
    steps: list[str] = []
    for line in reply.splitlines():
        m = _STEP.match(line)
        if m and int(m.group(1)) == len(steps) + 1:
            steps.append(m.group(2)[:MAX_CHARS])
            if len(steps) == MAX_STEPS:
                break
    return steps


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    base_url: str
    model: str
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    retries: int = 3

    def chat(self, prompt: str) -> str:
        body = json.dumps({"model": self.model, "temperature": self.temperature,
                           "max_tokens": self.max_tokens,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        url = self.base_url.rstrip("/") + "/chat/completions"
        last: Exception | None = None
        for attempt in range(self.retries):
            req = urllib.request.Request(url, data=body,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    payload = json.loads(resp.read().decode())
                return str(payload["choices"][0]["message"]["content"] or "")
            except (urllib.error.URLError, TimeoutError, KeyError, IndexError,
                    json.JSONDecodeError) as exc:
                last = exc
                time.sleep(min(2.0**attempt, 10.0))
        raise RuntimeError(f"endpoint {url} failed {self.retries} times: {last}")


def _key(uid: str, kind: str) -> str:
    return f"{uid}|{kind}|{PROMPT_VERSION}"


def _load_cache(path: Path) -> dict[str, str]:
    cache: dict[str, str] = {}
    if path.is_file():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                cache[rec["key"]] = str(rec["reply"])
            except (json.JSONDecodeError, KeyError, TypeError):
                # a line cut by a crash mid-write: that reply is asked for again
                print(f"{path}:{n}: unreadable cache line skipped")
    return cache


def build_variant_texts(train: Path, out: Path, endpoint: Endpoint, *, limit: int | None = None,
                        progress: bool = True) -> dict[str, Any]:
    """Ask for (or reuse) every row's steps and rephrasing; write ``out`` when all are valid."""
    examples = read_examples(train)[:limit]
    cache_path = out.with_name(out.stem + ".cache.jsonl")
    cache = _load_cache(cache_path)
    asked, errors, rows = 0, [], []
    out.parent.mkdir(parents=True, exist_ok=True)
    with cache_path.open("a", encoding="utf-8") as log, tqdm(
            examples, desc="build-variants", unit="row", disable=not progress) as bar:
        for ex in bar:
            if not ex.question:
                errors.append(f"row index={ex.index}: no question in extra_info")
                continue
            replies = {}
            for kind, prompt in (("steps", STEPS_PROMPT.format(max_steps=MAX_STEPS,
                                                               question=ex.question,
                                                               answer=ex.ground_truth)),
                                 ("rephrase", REPHRASE_PROMPT.format(question=ex.question))):
                key = _key(ex.uid, kind)
                if key not in cache:
                    cache[key] = endpoint.chat(prompt)
                    asked += 1
                    log.write(json.dumps({"key": key, "reply": cache[key]}) + "\n")
                    log.flush()
                replies[kind] = cache[key]
            steps = parse_steps(replies["steps"])
            rephrasing = replies["rephrase"].strip()[:MAX_CHARS * 2]
            if not steps:
                errors.append(f"row index={ex.index} (uid {ex.uid}): the steps reply has no "
                              f"numbered step 1: {replies['steps'][:80]!r}")
            if not rephrasing:
                errors.append(f"row index={ex.index} (uid {ex.uid}): empty rephrasing")
            rows.append({"index": ex.index, "uid": ex.uid, "steps": steps,
                         "rephrasing": rephrasing, "model": endpoint.model,
                         "prompt_version": PROMPT_VERSION})
    if errors:
        raise ValueError(f"{len(errors)} of {len(examples)} rows lack variant texts (replies "
                         f"kept in {cache_path}; delete their lines to ask again): "
                         + "; ".join(errors[:5]))
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, out)
    return {"rows": len(rows), "asked": asked, "reused": 2 * len(rows) - asked,
            "out": str(out), "cache": str(cache_path)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True, metavar="DIR",
                        help="data/<name> (its train.parquet gets variant texts)")
    parser.add_argument("--endpoint", required=True, metavar="URL",
                        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="served model name at the endpoint")
    parser.add_argument("--out", metavar="FILE",
                        help="output parquet (default: <data-dir>/variants.parquet)")
    parser.add_argument("--limit", type=int, help="first N rows only (a trial)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    data = Path(args.data_dir)
    out = Path(args.out) if args.out else data / "variants.parquet"
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    summary = build_variant_texts(data / "train.parquet", out,
                                  Endpoint(args.endpoint, args.model), limit=args.limit,
                                  progress=not args.no_progress)
    print(f"vade build-variants: {summary['rows']} rows -> {summary['out']} "
          f"({summary['asked']} replies asked, {summary['reused']} reused from "
          f"{summary['cache']})")
    return 0
