"""Tables 1, 2 and 5, the run inventory and the rollout headline, as Markdown.

Each cell is the seed mean of the runs' average@k scores. A cell none of whose runs has a score
reads ``missing``; a cell averaged over fewer runs than the row holds carries ``*`` and the row's
footnote names the runs left out; a partial run's score carries ``†``. Every row ends with the
run ids its numbers come from, and a paper row cites the paper's table, row and column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vade.methods import METHODS, names_where
from vade.report import paper
from vade.report.collect import Curve, Inputs, RunInfo, RunKey
from vade.report.curves import RolloutRatio, rollout_ratio

__all__ = ["ABLATIONS", "METHOD_LABELS", "headline", "inventory", "table1", "table2", "table5"]

METHOD_LABELS = {"base": "Base Model", **{m.name: m.label for m in METHODS.values()}}
# Table 1's rows (DIVA-GRPO's appear when run) and Table 2's: vade/methods.py says which
MAIN = names_where(table="main")
ABLATIONS = names_where(table="ablation")


@dataclass(frozen=True)
class Cell:
    value: float | None
    used: tuple[str, ...]      # run ids averaged
    lacking: tuple[str, ...]   # run ids of the row without a score here
    partial: bool

    def text(self, decimals: int) -> str:
        if self.value is None:
            return "missing"
        return (f"{self.value:.{decimals}f}" + ("*" if self.lacking else "")
                + ("†" if self.partial else ""))


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    esc = [[str(c).replace("|", "\\|") for c in r] for r in [header, *rows]]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def _group(inputs: Inputs, model: str, algorithm: str, method: str) -> list[RunInfo]:
    return [inputs.runs[k.run_id] for k in inputs.run_keys()
            if (k.model, k.algorithm, k.method) == (model, algorithm, method)]


def _cell(inputs: Inputs, runs: list[RunInfo], benchmark: str) -> Cell:
    used, lacking, vals, partial = [], [], [], False
    for r in runs:
        row = inputs.evals.get((r.key.run_id, benchmark))
        if row is None or row["score"] is None:
            lacking.append(r.key.run_id)
            continue
        used.append(r.key.run_id)
        vals.append(float(row["score"]))
        partial |= r.status != "complete"
    value = float(np.mean(vals)) if vals else None
    return Cell(value, tuple(used), tuple(lacking), partial)


def _avg(cells: list[Cell]) -> Cell:
    """AVG over benchmarks: missing if any benchmark is missing (never an average of a subset)."""
    if not cells or any(c.value is None for c in cells):
        return Cell(None, (), tuple(sorted({r for c in cells for r in c.lacking})), False)
    return Cell(float(np.mean([c.value for c in cells])),
                tuple(sorted({r for c in cells for r in c.used})),
                tuple(sorted({r for c in cells for r in c.lacking})),
                any(c.partial for c in cells))


def _delta(cell: Cell, ref: Cell | None, decimals: int) -> str:
    if ref is None or cell.value is None or ref.value is None:
        return cell.text(decimals)
    d = round(cell.value - ref.value, decimals)  # as printed: 65.83 - 65.83 is 0, never -0.00
    mark = "▲" if d > 0 else ("▼" if d < 0 else "=")
    return f"{cell.text(decimals)} {mark}{d + 0.0:+.{decimals}f}"


def _pairs(inputs: Inputs, methods: Sequence[str]) -> list[tuple[str, str]]:
    return sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method in methods})


def _footnotes(rows: list[tuple[str, list[Cell]]]) -> list[str]:
    out = []
    for label, cells in rows:
        lacking = sorted({r for c in cells for r in c.lacking})
        if lacking and any(c.value is not None for c in cells):
            out.append(f"- \\* {label}: no score from {', '.join(lacking)} in some cells")
    return out


def _benchmark_table(inputs: Inputs, title: str, methods: Sequence[str], reference: str,
                     paper_table: dict | None, decimals: int, with_base: bool) -> str:
    cols = list(inputs.benchmarks) + ["AVG"]
    header = ["Model", "Algo.", "Method", *cols, "runs"]
    body: list[list[str]] = []
    notes: list[tuple[str, list[Cell]]] = []
    pairs = _pairs(inputs, methods)
    if not pairs:
        return f"### {title}\n\nNo runs of methods {', '.join(methods)} were found or expected.\n"
    for model in sorted({m for m, _ in pairs}):
        rows_spec = [("", "base")] if with_base else []
        rows_spec += [(a, m) for mm, a in pairs if mm == model for m in methods]
        ref_cells: dict[str, list[Cell]] = {}
        for algo, method in rows_spec:
            runs = _group(inputs, model, algo, method)
            if not runs:
                if method == "base":
                    runs = [RunInfo(RunKey(model, "", "base", -1, f"{model}-base"), "missing")]
                else:
                    continue
            cells = [_cell(inputs, runs, b) for b in inputs.benchmarks]
            cells.append(_avg(cells))
            if method == reference:
                ref_cells[algo] = cells
            ref = ref_cells.get(algo) if method != reference and method != "base" else None
            texts = [_delta(c, ref[i] if ref else None, decimals) for i, c in enumerate(cells)]
            ids = ", ".join(r.key.run_id + ("" if r.status == "complete" else f" ({r.status})")
                            for r in runs)
            body.append([model, algo.upper() or "-", METHOD_LABELS[method], *texts, ids])
            notes.append((f"{model} {algo.upper()} {METHOD_LABELS[method]}".replace("  ", " "),
                          cells))
            if paper_table is not None:
                pv = [paper.paper_value(paper_table, model, algo, method, c) for c in cols]
                if any(v is not None for v in pv):
                    src = next(v for v in pv if v is not None)
                    body.append(["", "", "↳ paper", *[f"{v.value:.2f}" if v else "-" for v in pv],
                                 f"paper {src.table}, row '{src.row}'"])
    out = [f"### {title}", "", _md(header, body), ""]
    out.append(f"Cells: mean over seeds of average@k (percent); ▲/▼ = difference to "
               f"{METHOD_LABELS[reference]} of the same model and algorithm; 'missing' = no "
               "score; * = averaged over fewer runs than the row lists; † = from a partial run.")
    out += [""] + _footnotes(notes) if _footnotes(notes) else []
    return "\n".join(out) + "\n"


def table1(inputs: Inputs, decimals: int = 2, compare_paper: bool = False) -> str:
    return _benchmark_table(inputs, "Table 1: benchmarks x methods", MAIN, "vanilla",
                            paper.TABLE1 if compare_paper else None, decimals, with_base=True)


def table5(inputs: Inputs, decimals: int = 2, compare_paper: bool = False) -> str:
    return _benchmark_table(inputs, "Table 5: ablations on every benchmark",
                            ("vade", *ABLATIONS), "vade",
                            paper.TABLE5 if compare_paper else None, decimals, with_base=False)


def table2(inputs: Inputs, decimals: int = 2, compare_paper: bool = False) -> str:
    pairs = [p for p in _pairs(inputs, ABLATIONS)]
    if not pairs:
        return ("### Table 2: ablations (average)\n\nNo ablation runs "
                f"({', '.join(ABLATIONS)}) were found or expected.\n")
    header = ["Model", "Algo.", "Method", "AVG", "Δ vs Ours", "runs"]
    if compare_paper:
        header[5:5] = ["paper AVG", "paper Δ"]
    body = []
    for model, algo in pairs:
        ref_val = None
        ref_paper = paper.paper_value(paper.TABLE2, model, algo, "vade", "AVG")
        for method in ("vade", *ABLATIONS):
            runs = _group(inputs, model, algo, method)
            if not runs:
                continue
            avg = _avg([_cell(inputs, runs, b) for b in inputs.benchmarks])
            if method == "vade":
                ref_val = avg.value
            delta = ("-" if method == "vade" or ref_val is None or avg.value is None
                     else f"{avg.value - ref_val:+.{decimals}f}")
            row = [model, algo.upper(), METHOD_LABELS[method], avg.text(decimals), delta]
            if compare_paper:
                pv = paper.paper_value(paper.TABLE2, model, algo, method, "AVG")
                row += [f"{pv.value:.2f}" if pv else "-",
                        f"{pv.value - ref_paper.value:+.2f}" if pv and ref_paper
                        and method != "vade" else "-"]
            row.append(", ".join(r.key.run_id + ("" if r.status == "complete"
                                                 else f" ({r.status})") for r in runs))
            body.append(row)
    note = ("AVG = mean over benchmarks of the seed-mean average@k; Δ in percentage points "
            "(the paper prints these as %).")
    if compare_paper:
        note += " Paper values: paper Table 2, column 'AVG' (Qwen2.5-VL-7B-Instruct, GRPO)."
    return "\n".join(["### Table 2: ablations (average)", "", _md(header, body), "", note]) + "\n"


def inventory(inputs: Inputs) -> str:
    header = ["run", "model", "algo.", "method", "seed", "status", "last step",
              "evaluated benchmarks (k)", "metrics"]
    body = []
    for key in inputs.run_keys():
        info = inputs.runs[key.run_id]
        ev = [f"{b} ({inputs.evals[(key.run_id, b)]['k']})" for b in inputs.benchmarks
              if (key.run_id, b) in inputs.evals]
        metrics = ", ".join(f"{n} [{c.source}]" for n, c in sorted(info.curves.items())
                            if n not in ("effective_ratio", "effective_ratio_generated",
                                          "rollouts_cumulative"))
        body.append([key.run_id, key.model, key.algorithm.upper() or "-",
                     METHOD_LABELS.get(key.method, key.method),
                     "-" if key.seed < 0 else str(key.seed), info.status,
                     str(info.last_step) if info.path else "-", ", ".join(ev) or "none",
                     metrics or "-"])
    return "\n".join(["## Runs", "", _md(header, body), ""]) + "\n"


def _reach(r: RolloutRatio, fmt: str) -> list[str]:
    """The 'VADE rollouts to target' and 'ratio' cells of one headline comparison."""
    return [f"{r.vade_rollouts_to_target:.0f}" if r.reached
            else f"never reached (best {fmt.format(r.vade_best)})",
            f"{r.ratio:.3f}" if r.ratio is not None else "never reached"]


def _no_ratio(dapo: Curve, fraction: float, fmt: str, exc: ValueError) -> list[str]:
    """The 8 comparison cells of a seed with no ratio: DAPO's peak and target where they exist,
    the reason in words in the ratio column, '-' elsewhere (a short demo's DAPO never beats its
    step-0 score: its peak is at 0 rollouts and VADE has nothing to be faster than)."""
    scores = dapo.value[~np.isnan(dapo.value)]
    at_start = "at 0 cumulative rollouts" in str(exc)
    reason = ("no ratio: DAPO's best score is its step-0 one (0 rollouts), nothing to beat"
              if at_start else f"no ratio: {exc}")
    peak = ([fmt.format(scores.max()), fmt.format(fraction * scores.max())] if scores.size
            else ["-", "-"])
    return [*peak, *(["0", "0"] if at_start else ["-", "-"]), "-", reason, "-", "-"]


def headline(inputs: Inputs, val_metric: str, fraction: float, decimals: int = 2) -> str:
    """Per (model, algorithm, seed): rollouts VADE needs to reach ``fraction`` of DAPO's peak."""
    header = ["Model", "Algo.", "seed", "DAPO peak", "target", "DAPO rollouts to peak",
              "DAPO rollouts to target", "VADE rollouts to target", "ratio (VADE / DAPO peak)",
              "VADE, every rollout", "ratio, every rollout", "runs"]
    body, unpaired = [], {}
    keys = inputs.run_keys()
    for model, algo in _pairs(inputs, ("dapo", "vade")):
        planned = {m: {k.seed for k in keys if (k.model, k.algorithm, k.method) == (model, algo, m)}
                   for m in ("dapo", "vade")}
        # a seed the grid runs for one of the two only has nothing to compare: no row
        if one_only := planned["dapo"] ^ planned["vade"]:
            unpaired[f"{model} {algo.upper()}"] = sorted(one_only)
        for seed in sorted(planned["dapo"] & planned["vade"]):
            ids = [f"{model}-{algo}-{m}-s{seed}" for m in ("dapo", "vade")]
            d, v = (inputs.runs[i] for i in ids)
            dc, vc = d.curves.get(val_metric), v.curves.get(val_metric)
            why = [f"{rid}: {info.status}, no '{val_metric}' curve"
                   for rid, info, c in zip(ids, (d, v), (dc, vc)) if c is None]
            why += [f"{rid}: no cumulative rollouts" for rid, c in zip(ids, (dc, vc))
                    if c is not None and np.isnan(c.rollouts).all()]  # both curves: x axis
            runs = ", ".join(i + ("" if inputs.runs[i].status == "complete"
                                  else f" ({inputs.runs[i].status})") for i in ids)
            if why:  # the reason in words where the ratio would be, the other cells empty
                body.append([model, algo.upper(), str(seed), *["-"] * 5,
                             "no comparison: " + "; ".join(why), "-", "-", runs])
                continue
            f = f"{{:.{decimals + 1}f}}"  # scores in [0, 1]: one more digit shows the target
            try:
                r = rollout_ratio(dc.rollouts, dc.value, vc.rollouts, vc.value, fraction)
            except ValueError as exc:  # e.g. DAPO peaks at step 0: a row that says so, no crash
                body.append([model, algo.upper(), str(seed), *_no_ratio(dc, fraction, f, exc),
                             runs])
                continue
            with_initial = (["n/a (no difficulty file)"] * 2
                            if inputs.initial_rollouts_of(v.key) is None else _reach(
                rollout_ratio(inputs.cost(d.key, dc), dc.value, inputs.cost(v.key, vc),
                              vc.value, fraction), f))
            body.append([model, algo.upper(), str(seed), f.format(r.dapo_peak),
                         f.format(r.target), f"{r.dapo_rollouts_to_peak:.0f}",
                         f"{r.dapo_rollouts_to_target:.0f}", *_reach(r, f), *with_initial, runs])
    text = [f"## Headline: rollouts to {fraction * 100:g}% of DAPO's peak validation score", ""]
    if not body:
        text.append("No seed runs both DAPO and VADE: nothing to compare." if unpaired
                    else "No DAPO or VADE runs were found or expected.")
    else:
        text += [_md(header, body), "",
                 (f"Validation metric '{val_metric}'; rollouts are cumulative generated "
                  "rollouts (DAPO counts the ones it filtered out). A curve 'reaches' the target "
                  "at its first validation point at or above it (no interpolation). Paper: "
                  "about 1/3 (Section 4.3). 'every rollout' adds what each method consumed "
                  "besides its generated rollouts (report.cost_axis 'all', vade.report.cost): "
                  "VADE's initial difficulty rollouts (G per training sample, Algorithm 1 "
                  "lines 1-2, about one epoch, from the difficulty file); the first two ratio "
                  "columns leave them out. Where peers run, 'VADE vs each peer' states the same "
                  "headline against DAPO's plateau instead of its peak, on the seeds where the "
                  "plateau rule holds.")]
    if unpaired:
        text += ["", "No row for the seeds the grid runs only one of DAPO and VADE on: "
                 + "; ".join(f"{pair}: {', '.join(map(str, seeds))}"
                             for pair, seeds in unpaired.items()) + "."]
    return "\n".join(text) + "\n"
