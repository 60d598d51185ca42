"""The paper's published numbers, transcribed once, so a report can print ours beside theirs.

Source: the VADE paper (arXiv 2511.18902), Tables 1, 2 and 5. Every value keeps where it
came from (table, row, column) so a comparison line in a report can cite it. Scores are
average@4 percentages. Model keys are the paper's model names; ``paper_model_for`` maps a run's
model name onto them by its size tag (``7b`` / ``3b``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BENCHMARKS",
    "TABLE1",
    "TABLE2",
    "TABLE5",
    "PaperValue",
    "paper_model_for",
    "paper_value",
]

BENCHMARKS = ("MathVista", "MathVerse", "MathVision", "ScienceQA", "ChartQA")
_COLUMNS = BENCHMARKS + ("AVG",)

MODEL_7B = "Qwen2.5-VL-7B-Instruct"
MODEL_3B = "Qwen2.5-VL-3B-Instruct"


@dataclass(frozen=True)
class PaperValue:
    value: float
    table: str   # "Table 1"
    row: str     # "Qwen2.5-VL-7B-Instruct / GRPO / Ours"
    column: str  # "MathVista"

    @property
    def source(self) -> str:
        return f"paper {self.table}, row '{self.row}', column '{self.column}'"


# Table 1, rows as printed: (model, algorithm, method) -> the six columns. The paper's method
# labels are mapped to ours: vanilla -> vanilla, DAPO -> dapo, Ours -> vade; Base Model -> base.
_T1_ROWS: dict[tuple[str, str, str], tuple[float, ...]] = {
    (MODEL_7B, "", "base"): (69.30, 40.36, 18.55, 84.53, 80.40, 58.63),
    (MODEL_7B, "grpo", "vanilla"): (72.85, 41.36, 20.71, 90.08, 84.12, 61.82),
    (MODEL_7B, "grpo", "dapo"): (71.80, 47.11, 24.16, 89.54, 85.72, 63.67),
    (MODEL_7B, "grpo", "vade"): (75.10, 45.65, 25.79, 91.67, 85.56, 64.75),
    (MODEL_7B, "gspo", "vanilla"): (71.88, 41.09, 23.29, 91.92, 84.60, 62.56),
    (MODEL_7B, "gspo", "dapo"): (73.35, 47.01, 24.13, 91.32, 86.04, 64.37),
    (MODEL_7B, "gspo", "vade"): (73.45, 45.70, 25.68, 91.77, 86.24, 64.57),
    (MODEL_3B, "", "base"): (63.15, 23.27, 11.29, 76.70, 78.84, 50.65),
    (MODEL_3B, "grpo", "vanilla"): (63.37, 33.40, 19.16, 85.08, 76.80, 55.56),
    (MODEL_3B, "grpo", "dapo"): (66.88, 38.03, 21.82, 83.64, 82.20, 58.51),
    (MODEL_3B, "grpo", "vade"): (63.62, 37.22, 18.92, 85.37, 81.48, 57.32),
    (MODEL_3B, "gspo", "vanilla"): (62.80, 33.47, 17.55, 84.09, 82.12, 56.01),
    (MODEL_3B, "gspo", "dapo"): (64.70, 32.08, 16.00, 81.36, 81.36, 55.10),
    (MODEL_3B, "gspo", "vade"): (63.82, 32.89, 19.20, 84.58, 81.40, 56.38),
}
_PAPER_METHOD = {"base": "Base Model", "vanilla": "vanilla", "dapo": "DAPO", "vade": "Ours",
                 "symmetric": "$p(1-p)$", "greedy": "greedy", "last-update": "last update"}

# Table 5 (Qwen2.5-VL-7B-Instruct, GRPO): the ablations on every benchmark.
_T5_ROWS: dict[str, tuple[float, ...]] = {
    "vade": (75.10, 45.65, 25.79, 91.67, 85.56, 64.75),
    "symmetric": (73.07, 45.57, 24.37, 90.38, 84.92, 63.66),
    "greedy": (73.15, 44.72, 24.74, 90.32, 84.30, 63.25),
    "last-update": (71.33, 45.11, 22.25, 91.22, 85.60, 63.10),
}
# Table 2 (Qwen2.5-VL-7B-Instruct, GRPO): the AVG column only (it repeats Table 5's AVG).
_T2_ROWS: dict[str, float] = {"vade": 64.75, "symmetric": 63.66, "greedy": 63.25,
                              "last-update": 63.10}


def _t1() -> dict[tuple[str, str, str, str], PaperValue]:
    out = {}
    for (model, algo, method), values in _T1_ROWS.items():
        label = " / ".join(x for x in (model, algo.upper(), _PAPER_METHOD[method]) if x)
        for col, v in zip(_COLUMNS, values):
            out[(model, algo, method, col)] = PaperValue(v, "Table 1", label, col)
    return out


def _t5() -> dict[tuple[str, str, str, str], PaperValue]:
    out = {}
    for method, values in _T5_ROWS.items():
        for col, v in zip(_COLUMNS, values):
            out[(MODEL_7B, "grpo", method, col)] = PaperValue(v, "Table 5", _PAPER_METHOD[method],
                                                              col)
    return out


TABLE1 = _t1()
TABLE5 = _t5()
TABLE2 = {(MODEL_7B, "grpo", m, "AVG"): PaperValue(v, "Table 2", _PAPER_METHOD[m], "AVG")
          for m, v in _T2_ROWS.items()}


def paper_model_for(model: str) -> str | None:
    """The paper's model a run's model name stands for (by its size tag), or None."""
    name = model.lower().replace("_", "-")
    if "7b" in name:
        return MODEL_7B
    if "3b" in name:
        return MODEL_3B
    return None


def paper_value(table: dict, model: str, algorithm: str, method: str,
                column: str) -> PaperValue | None:
    """The paper's number for one of our cells, or None where the paper has none."""
    paper_model = paper_model_for(model)
    if paper_model is None:
        return None
    return table.get((paper_model, algorithm if method != "base" else "", method, column))
