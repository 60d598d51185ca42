"""The user docs stay true: links resolve, marked commands run, the reproduction table matches the
paper config, and no page talks about how the work was organised.

Runnable blocks run for real (the ``vade`` command line of this venv) in a temporary folder that
holds a copy of ``config/``, a real (short) ``vade demo`` output, and small stand-ins for what
``make demo`` would have written: two run histories written by the project's own ``RunStore`` from
real samplers, a data catalog with the catalog's columns, and one evaluation file written by
``write_eval_results``. The stand-ins replace only the hours of training that would make those
files; every query runs against the real schema.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import yaml

from vade.cli import main as vade_main
from vade.cluster.bill import split_rows
from vade.config_io import read_yaml
from vade.data.config import data_config_from_mapping
from vade.eval.config import EvaluateConfig
from vade.eval.store import EvalRow, write_eval_results
from vade.models.tokenizer import DEFAULT_SYSTEM_PROMPT
from vade.rollout.difficulty import difficulty_config_from_section
from vade.sampling import make_sampler
from vade.store import RunStore
from vade.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*PAGES, ROOT / "config" / "README.md", ROOT / "data" / "README.md"]
REPRODUCTION = ROOT / "docs" / "reproduction.md"
PAPER_CONFIG = ROOT / "config" / "config.yaml"

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MARK = re.compile(r"^<!--\s*runnable\s*-->\s*$")
PROCESS_WORDS = re.compile(
    r"\bissues?\s*#?\d+|#\d{2,}\b|\bthis session\b|\bthe issue'?s?\b|\bwave\s*\d+|\bcoordinator\b",
    re.IGNORECASE)


# ----------------------------------------------------------------------------- markdown parsing
def _prose(text: str, *, keep_code: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks; inline code removed unless ``keep_code``
    (headings are slugged with their code text, links inside code are not links)."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            out.append((i, line if keep_code else re.sub(r"`[^`]*`", "", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose(path.read_text(), keep_code=True):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            base = slug(m.group(1).replace("`", ""))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(path: Path) -> list[tuple[int, str]]:
    return [(i, target) for i, line in _prose(path.read_text()) for target in LINK.findall(line)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def runnable_blocks() -> list[Any]:
    """Every ```bash block right after a ``<!-- runnable -->`` line, as a pytest param."""
    params = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if not MARK.match(line.strip()):
                continue
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or lines[j].strip() not in ("```bash", "```sh"):
                raise AssertionError(f"{page.relative_to(ROOT)}:{i + 1}: a runnable mark must "
                                     "precede a ```bash block")
            end = next(k for k in range(j + 1, len(lines)) if lines[k].strip().startswith("```"))
            params.append(pytest.param("\n".join(lines[j + 1:end]),
                                       id=f"{page.relative_to(ROOT)}:{j + 1}"))
    return params


# ----------------------------------------------------------------------------- links and words
@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for line, target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no heading #{anchor})")
    assert not broken, "\n".join(broken)


def test_the_link_checker_catches_a_broken_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Top\n## The bill: `vade plan`\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#the-bill-vade-plan) [bad](a.md#nope) [gone](c.md) "
                    "`[code](c.md)` [web](https://example.org)\n")
    links = relative_links(page)
    assert [t for _, t in links] == ["a.md#the-bill-vade-plan", "a.md#nope", "c.md"]
    assert anchors(tmp_path / "a.md") == {"top", "the-bill-vade-plan"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_process_words_in_user_docs(page: Path) -> None:
    hits = [f"{page.relative_to(ROOT)}:{i}: {m.group(0)!r}"
            for i, line in enumerate(page.read_text().splitlines(), 1)
            for m in PROCESS_WORDS.finditer(line)]
    assert not hits, "user docs name the work tracking:\n" + "\n".join(hits)


def test_process_words_are_found() -> None:
    for text in ("as issue 26 asked", "see #123", "in this session", "the issue's budget"):
        assert PROCESS_WORDS.search(text), text
    for text in ("a known problem", "Table 4", "step #1"):
        assert not PROCESS_WORDS.search(text), text


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_every_page_is_in_the_index() -> None:
    """A page no index links to is a page no user finds."""
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for _, t in relative_links(index)}
    missing = [p.name for p in PAGES if p.parent == index.parent and p != index
               and p.resolve() not in linked]
    assert not missing, f"docs/README.md does not link {missing}"


# ----------------------------------------------------------------------------- runnable blocks
def _history(path: Path, method: str, n: int = 300, b: int = 16, g: int = 8,
             steps: int = 6) -> None:
    """A real sampler driven by seeded outcomes, logged with the project's own writer (a DIVA
    run's levels too); the run id is the folder's name."""
    run_id = path.parent.name
    path.parent.mkdir(parents=True)
    rng = np.random.default_rng(len(run_id))
    init = rng.integers(0, g + 1, n).astype(float)
    sampler = make_sampler(method, n, b, seed=0, alpha=init, beta=g - init)
    with RunStore(path, run_id, snapshot_every=3) as store:
        store.start_run(method=method, sampler_config=sampler.config, config={"lr": 5e-5},
                        code_version="docs-test")
        store.log_initial_state(getattr(sampler, "alpha", None), getattr(sampler, "beta", None),
                                n_samples=n)
        for _ in range(steps):
            idx = sampler.select()
            obs = sampler.observe(idx, rng.integers(0, g + 1, len(idx)), g)
            store.log_step(obs, sampler_seconds=0.001, metrics={"val/acc": 0.5}, state=sampler)
            if method == "diva":
                store.log_levels(obs.step, idx, rng.integers(1, 10, len(idx)))


def _world(root: Path) -> None:
    """A folder that looks like a checkout after ``make demo`` and the study, in miniature."""
    shutil.copytree(ROOT / "config", root / "config")
    for name, run in (("tiny", "tiny-grpo-vade-s0"), ("tiny", "tiny-grpo-vanilla-s0"),
                      ("tiny-study", "tiny-grpo-diva-s0")):
        _history(root / "results" / name / "runs" / run / "history.duckdb", run.split("-")[2])
    # the demo itself, small: 50 steps reach its second whole-state snapshot
    assert vade_main(["demo", "--out", str(root / "reports" / "demo"), "--n-samples", "200",
                      "--batch-size", "16", "--steps", "50", "--methods", "vanilla", "vade",
                      "greso-skip"]) == 0
    catalog = root / "data" / "tiny" / "samples.duckdb"
    catalog.parent.mkdir(parents=True)
    with duckdb.connect(str(catalog)) as con:
        con.execute("CREATE TABLE samples (sample_id BIGINT PRIMARY KEY, uid VARCHAR, task VARCHAR,"
                    " domain VARCHAR, split VARCHAR, answer_type VARCHAR)")
        domains = ("math", "chart", "science")
        con.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, 'train', 'choice')",
                        [(i, f"t:{i}", f"synthetic/{domains[i % 3]}", domains[i % 3])
                         for i in range(300)])
    write_eval_results(root / "results" / "tiny" / "eval" / "tiny-grpo-vade-s0.duckdb", [
        EvalRow("tiny-grpo-vade-s0", "tiny", "grpo", "vade", 0, bench, r, r, 50.0 + r, 60,
                "final", f"vade_{bench}")
        for bench in ("math", "chart") for r in range(2)])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs-world")
    _world(root)
    return root


@pytest.mark.e2e
@pytest.mark.parametrize("code", runnable_blocks())
def test_runnable_block_runs(code: str, world: Path, tmp_path: Path) -> None:
    """Each marked block runs with ``bash -e`` in a copy of the miniature checkout (seconds per
    block: every ``vade`` command is a process of its own)."""
    cwd = tmp_path / "checkout"
    shutil.copytree(world, cwd)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MLFLOW_TRACKING_URI": (tmp_path / "mlruns").as_uri()}
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip(), "the block printed nothing"


# what ``make demo`` (config/tiny.yaml) and ``vade demo`` write; anything else is a study's output
DEMO_OUTPUTS = ("results/tiny/", "data/tiny/", "reports/demo/")


@pytest.mark.parametrize("code", runnable_blocks())
def test_a_runnable_block_reads_the_demos_outputs_or_names_its_study(code: str) -> None:
    """A reader runs a block after ``make demo`` or ``vade demo``: a ``--db`` outside their
    outputs (a study's, hours of training) is allowed only in a block whose comment says
    "needs the ... study's outputs"."""
    elsewhere = [db for db in re.findall(r"--db\s+(\S+)", code)
                 if not db.startswith(DEMO_OUTPUTS)]
    named = re.search(r"^#.*needs the .* study's outputs", code, re.MULTILINE)
    assert not elsewhere or named, (f"--db {elsewhere[0]} is no demo's output: read the "
                                    "demo's, or say which study makes it")


@pytest.mark.e2e
def test_a_failing_block_fails(world: Path) -> None:
    """The runner's ``bash -e`` stops at the first failing command (a query on a missing view)."""
    vade = Path(sys.executable).parent / "vade"
    code = f"{vade} sql 'SELECT * FROM nope' --db results/tiny/runs/; echo reached"
    proc = subprocess.run(["bash", "-e", "-c", code], cwd=world, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode != 0 and "reached" not in proc.stdout


# ----------------------------------------------------------------------------- reproduction notes
def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf keys as dotted paths; a list of mappings is indexed (``grid[0].models``)."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, (list, tuple)) and value and all(isinstance(x, Mapping) for x in value):
        for i, x in enumerate(value):
            out.update(flatten(x, f"{prefix}[{i}]"))
    else:
        out[prefix] = list(value) if isinstance(value, tuple) else value
    return out


def loaded_paper_config() -> tuple[dict[str, Any], set[str]]:
    """(every setting's loaded value, the keys the page must cover), from the project's readers."""
    raw = read_yaml(PAPER_CONFIG)
    train = TrainConfig.from_config(raw).to_dict()
    for per_run in ("algorithm", "method"):  # set per grid cell, from `experiments`
        train.pop(per_run)
    top = {k: train.pop(k) for k in ("name", "seed", "sampler", "dapo", "diva", "tracking")}
    train_keys = flatten({"train": train, **top})
    evaluate = asdict(EvaluateConfig.from_dict(raw["evaluate"]))
    for derived in ("benchmarks", "model_args"):
        evaluate.pop(derived)
    data = data_config_from_mapping(raw)
    values = {**flatten({"evaluate": evaluate}),
              **flatten({"difficulty": asdict(difficulty_config_from_section(raw["difficulty"]))}),
              "data.prompt_template": data.prompt_template, "data.val_fraction": data.val_fraction,
              **flatten(raw), **train_keys}
    return values, set(flatten(raw)) | set(train_keys)


def table_rows(path: Path) -> dict[str, list[str]]:
    """Rows whose first cell is one backticked key: key -> the other cells."""
    rows: dict[str, list[str]] = {}
    for _, line in _prose(path.read_text(), keep_code=True):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        m = re.fullmatch(r"`([^`]+)`", cells[0]) if cells else None
        if m and len(cells) == 4:
            assert m.group(1) not in rows, f"{m.group(1)} has two rows"
            rows[m.group(1)] = cells[1:]
    return rows


def same(cell: str, expected: Any) -> bool:
    m = re.fullmatch(r"`(.*)`", cell)
    if not m:
        return False
    got = yaml.safe_load(m.group(1))
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return not isinstance(got, bool) and math.isclose(float(got), expected, rel_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return got == expected


def _number(cell: str) -> float | None:
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        return None


def test_reproduction_notes_match_the_paper_config() -> None:
    values, required = loaded_paper_config()
    rows = table_rows(REPRODUCTION)
    problems = [f"{key}: in config/config.yaml or its loaded defaults but not in "
                f"docs/reproduction.md (add a row: ours {values[key]!r}, the paper's value or "
                "'not stated', and why)" for key in sorted(required - set(rows))]
    for key, (ours, paper, why) in rows.items():
        if key not in values:
            problems.append(f"{key}: a row in docs/reproduction.md but no such setting is loaded")
        elif not same(ours, values[key]):
            problems.append(f"{key}: docs/reproduction.md says {ours}, the config loads "
                            f"{values[key]!r}")
        if not paper or not why:
            problems.append(f"{key}: the paper's value and the reason must both be given")
        theirs = _number(paper)
        mine = values.get(key)
        if (theirs is not None and isinstance(mine, (int, float)) and not isinstance(mine, bool)
                and not math.isclose(theirs, mine) and "differs" not in why):
            problems.append(f"{key}: the paper's {paper} differs from ours; say why ('differs')")
    assert not problems, "\n".join(problems)


def test_the_unkeyed_settings_and_the_epochs_hold() -> None:
    """Two rows the key check cannot reach: the system prompt the chat template inserts, and
    240 steps being the paper's 15 epochs of the training split at B = 512."""
    text = REPRODUCTION.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| system prompt |"))
    assert f'"{DEFAULT_SYSTEM_PROMPT}"' in row
    raw = read_yaml(PAPER_CONFIG)
    n_train, _, _ = split_rows(raw)
    assert f"{n_train:,} training rows" in text
    assert raw["train"]["steps"] == 15 * (n_train // raw["train"]["batch_size"])


def test_the_reproduction_check_catches_drift(tmp_path: Path) -> None:
    """A changed value, a missing key and an unexplained difference are each named."""
    values, required = loaded_paper_config()
    assert {"train.lr", "train.weight_decay", "train.verl.entropy_coeff", "sampler.lambda1",
            "evaluate.judge.model", "experiments.grid[1].methods"} <= required
    assert same("`1.0e-6`", values["train.lr"]) and not same("`1.0e-5`", values["train.lr"])
    assert same("`[symmetric, greedy, last-update]`", values["experiments.grid[1].methods"])
    page = tmp_path / "r.md"
    page.write_text("| `train.lr` | `1.0e-5` | 1e-6 | Table 4 |\n| `x` | `1` | 2 |\n")
    assert table_rows(page) == {"train.lr": ["`1.0e-5`", "1e-6", "Table 4"]}
