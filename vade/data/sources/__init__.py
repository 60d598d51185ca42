"""The paper's sources (Table 3): which Hugging Face dataset, config and split each task reads.

One registry, so the config names tasks by short stable ids (``geo170k_qa``), the builders know
where each comes from, and the missing-data error can say exactly what to download. Row parsing
lives in one module per source family (``llava_ov``, ``chartqa``, ``scienceqa``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LLAVA_OV_REPO", "TASKS", "SourceSpec"]

LLAVA_OV_REPO = "lmms-lab/LLaVA-OneVision-Data"


@dataclass(frozen=True)
class SourceSpec:
    """Where a task's rows come from and how its answers are read.

    ``answer`` names the parsing rule (``vade.data.sources.answers``): ``answer_is`` ("The answer
    is N"), ``answer_colon`` (reasoning ending "Answer: X"), ``yesno``, ``letter``, ``mixed``
    (letter, number, expression or short text), ``solution`` (a worked solution: its last
    sentence states the result), or the family's own (ChartQA, ScienceQA).
    """

    task: str
    family: str
    repo: str
    config: str | None
    split: str
    domain: str
    answer: str

    @property
    def label(self) -> str:
        """How errors name the source: ``repo[config]/split``."""
        return f"{self.repo}" + (f"[{self.config}]" if self.config else "") + f"/{self.split}"


def _ov(task: str, config: str, domain: str, answer: str) -> SourceSpec:
    return SourceSpec(task, "llava_ov", LLAVA_OV_REPO, config, "train", domain, answer)


TASKS: dict[str, SourceSpec] = {s.task: s for s in (
    _ov("geo3k", "geo3k", "math", "mixed"),
    _ov("geo170k_qa", "geo170k(qa)", "math", "answer_colon"),
    _ov("clevr_math", "CLEVR-Math(MathV360K)", "math", "answer_is"),
    _ov("geos", "GEOS(MathV360K)", "math", "mixed"),
    _ov("geoqa_plus", "GeoQA+(MathV360K)", "math", "mixed"),
    _ov("geometry3k", "Geometry3K(MathV360K)", "math", "mixed"),
    _ov("figureqa", "figureqa(cauldron,llava_format)", "chart", "yesno"),
    _ov("tabmwp", "tabmwp(cauldron)", "chart", "solution"),
    _ov("ai2d", "ai2d(cauldron,llava_format)", "science", "letter"),
    SourceSpec("chartqa", "chartqa", "HuggingFaceM4/ChartQA", None, "train", "chart", "relaxed"),
    SourceSpec("scienceqa", "scienceqa", "derek-thomas/ScienceQA", None, "train", "science",
               "index"),
)}
