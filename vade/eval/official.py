"""The benchmarks' own judge prompts, never our paraphrases.

Why: a judge's verdicts depend on its prompt's worked examples, so a score is the benchmark's
only when the prompt is. Two sources, in this order:

* lmms-eval's task utilities, where they carry the official text: MathVista's extraction prompt
  (``lmms_eval.tasks.mathvista.mathvista_evals.DEMO_PROMPT``, identical to lupantech/MathVista
  ``evaluation/prompts/ext_ans.py``) and its ``create_test_prompt``, imported.
* otherwise the official file, pinned to a commit and checked by sha256 (``PINNED``), which
  ``vade prefetch`` stages into ``<HF_HOME>/official/`` (``stage``) and jobs read offline
  (``official_text``). lmms-eval 0.7.3's MathVerse task judges with its own generic prompt, so
  MathVerse's two prompts come from ZrrSkywalker/MathVerse ``evaluation/prompts.py``. Its string
  constants are read with ``ast`` (the file is never imported or executed).

Only the transport (our local vLLM judge, ``vade.eval.judge_client``) is ours. The test-prompt
assembly around the official text is the official scripts' (``create_test_prompt`` of
``extract_answer_s1.py`` and ``score_answer_s2.py``), written here because no installed package
provides it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import shutil
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from vade.data.writer import file_sha256
from vade.eval.config import EvaluateConfig

__all__ = ["PINNED", "OfficialFile", "lmms_eval_task_file", "mathverse_extract_prompt",
           "mathverse_match_prompt", "mathvista_extract_prompt", "official_root", "official_text", "stage",
           "trunk_response"]


@dataclass(frozen=True)
class OfficialFile:
    """One file of a benchmark's repository at one commit."""

    repo: str
    commit: str
    path: str
    sha256: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    def under(self, root: Path) -> Path:
        return root / self.repo.replace("/", "+") / self.commit / self.path


PINNED: dict[str, OfficialFile] = {
    "mathverse_prompts": OfficialFile(
        "ZrrSkywalker/MathVerse", "ac31a9c8b92eb8eed87477ec7bc40b61ce5d9b61",
        "evaluation/prompts.py",
        "7f562598fa7a7dcd9ed89a80f3e0ffe0973778eb56c8613a2b975435fe9a8434"),
}
# the tasks whose scoring reads each pinned file (what `vade prefetch` stages for a config)
NEEDED_BY: dict[str, tuple[str, ...]] = {
    "mathverse_prompts": ("vade_mathverse_testmini", "vade_mathverse_testmini_cot",
                          "vade_mathverse_testmini_vision_only",
                          "vade_mathverse_testmini_vision_only_cot", "vade_mathvision_testmini"),
}
TRUNK_WORDS = 30  # MathVerse's README runs extract_answer_s1.py with --trunk_response 30


def official_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where staged files live: ``VADE_OFFICIAL_DIR``, else ``<HF_HOME>/official`` (jobs point
    HF_HOME at ``cluster.cache_dir``)."""
    env = os.environ if environ is None else environ
    if env.get("VADE_OFFICIAL_DIR"):
        return Path(env["VADE_OFFICIAL_DIR"])
    home = env.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home) / "official"


def official_text(name: str) -> dict[str, str]:
    """The module-level string constants of pinned file ``name`` (read, checked, parsed)."""
    return _read(name, str(PINNED[name].under(official_root())))


@cache
def _read(name: str, where: str) -> dict[str, str]:
    pin, path = PINNED[name], Path(where)
    if not path.is_file():
        raise FileNotFoundError(
            f"official file {pin.repo}@{pin.commit[:12]}:{pin.path} is not staged at {path}: "
            "run `vade prefetch` on a node with network (or copy it there)")
    got = file_sha256(path)
    if got != pin.sha256:
        raise ValueError(f"{path}: sha256 {got} is not the pinned {pin.sha256} "
                         f"({pin.repo}@{pin.commit[:12]}:{pin.path})")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.targets[0].id: n.value.value for n in tree.body
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)}


def _fetch(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=60) as resp:  # a pinned https URL
        dest.write_bytes(resp.read())


def stage(config: Mapping[str, Any], cache_dir: str | Path, *, local: str | None = None,
          fetch: Callable[[str, Path], None] = _fetch,
          log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Stage the pinned files the config's benchmarks read into ``<cache_dir>/official``
    (``local``: ``cluster.local_assets``, holding ``<owner>/<name>/<path>``). A file that
    cannot be fetched is logged and recorded as missing; the task that needs it refuses to
    score, naming it, so nothing is scored with another prompt."""
    ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
    tasks = {t for b in ev.benchmarks for t in b.tasks} if ev.kind == "paper" else set()
    root = Path(cache_dir) / "official"
    out = []
    for name, pin in PINNED.items():
        if not tasks & set(NEEDED_BY[name]):
            continue
        dest = pin.under(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        status = "staged"
        if not (dest.is_file() and file_sha256(dest) == pin.sha256):
            tmp = dest.with_name(dest.name + ".partial")
            try:
                if local is not None:
                    shutil.copyfile(Path(local) / pin.repo / pin.path, tmp)
                else:
                    fetch(pin.url, tmp)
                got = file_sha256(tmp)
                if got != pin.sha256:
                    raise ValueError(f"sha256 {got}, pinned {pin.sha256}")
                os.replace(tmp, dest)
            except (OSError, ValueError) as exc:
                status = f"missing ({type(exc).__name__}: {exc})"
            finally:
                tmp.unlink(missing_ok=True)
        log(f"official {pin.repo}@{pin.commit[:12]}:{pin.path}: {status}")
        out.append({"name": name, "repo": pin.repo, "commit": pin.commit, "path": pin.path,
                    "sha256": pin.sha256, "status": status})
    return out


# --- the prompts ----------------------------------------------------------------------------

@contextlib.contextmanager
def _import_env() -> Iterator[None]:
    """lmms-eval's MathVista module builds an OpenAI client when imported, which needs a key in
    the environment; outside a judged job there is none (the client is never used here)."""
    if os.environ.get("OPENAI_API_KEY"):
        yield
        return
    os.environ["OPENAI_API_KEY"] = "EMPTY"
    try:
        yield
    finally:
        os.environ.pop("OPENAI_API_KEY", None)


@cache
def lmms_eval_task_file(relpath: str) -> ModuleType:
    """One of lmms-eval's task utility files (``relpath`` under ``lmms_eval/tasks``), loaded on
    its own: importing it as ``lmms_eval.tasks.<...>`` first builds lmms-eval's whole task index
    (about 40 s), which these self-contained files do not need."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("lmms-eval is not installed (the scoring environment has it)")
    path = Path(spec.submodule_search_locations[0]) / "tasks" / relpath
    name = "_vade_lmms_eval_" + relpath.removesuffix(".py").replace("/", "_")
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    with _import_env():
        module_spec.loader.exec_module(module)
    return module


def _mathvista() -> tuple[str, Callable[..., str]]:
    evals = lmms_eval_task_file("mathvista/mathvista_evals.py")
    return evals.DEMO_PROMPT, evals.MathVistaEvaluator.create_test_prompt


def mathvista_extract_prompt(query: str, response: str) -> str:
    """MathVista's extraction prompt for one response, built by lmms-eval's own code."""
    demo, create = _mathvista()
    return create(None, demo, query, response)  # a method that does not read self


def trunk_response(response: str, words: int = TRUNK_WORDS) -> str:
    """MathVerse's ``trunk_response``: the last ``words`` space-separated words."""
    return response if words <= 0 else " ".join(response.split(" ")[-words:])


def mathverse_extract_prompt(response: str) -> str:
    """``extract_answer_s1.py``'s prompt for one (already truncated) response."""
    demo = official_text("mathverse_prompts")["demo_prompt_extract"].strip()
    return f"{demo}\n\nModel response: '{response}'\nExtracted Answer: "


def mathverse_match_prompt(question: str, answer: str, extraction: str) -> str:
    """``score_answer_s2.py``'s prompt: the official template, ``str.format``-filled."""
    demo = official_text("mathverse_prompts")["demo_prompt_score"].strip()
    return demo.format(question=question, gt=answer, extraction=extraction)
