"""The training row as every stage sees it: verl's multimodal parquet schema, read into ``Example``.

The parquet files are verl's own input (``RLHFDataset``), so this module is the one contract
between the data builders, the rollout engines, the local trainer, the verl adapter and the
evaluation tasks. Columns:

* ``data_source``   str, the source task (e.g. ``geo3k``, ``synthetic/chart``)
* ``prompt``        list of {role, content}; the user content holds one ``<image>`` per image
* ``images``        list of {bytes, path}: encoded PNG/JPEG bytes
* ``ability``       str, the domain (math / chart / science)
* ``reward_model``  {style: "rule", ground_truth: str}
* ``extra_info``    {split, index, uid, task, domain, answer_type, question, answer}

``extra_info.index`` is unique across the built dataset and stable for a given seed and sources;
for the training split it equals the row position, which is the sampler's sample id and DuckDB's
``sample_id``. ``uid`` is a content-derived string id (source and source row id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ANSWER_TYPES", "IMAGE_TOKEN", "Example", "example_from_row", "read_examples"]

IMAGE_TOKEN = "<image>"
# choice: a letter A-Z; number: numeric with tolerance; relaxed: ChartQA 5% relaxed accuracy;
# yesno: Yes/No; math: a symbolic expression (math-verify); text: normalised exact match.
ANSWER_TYPES = ("choice", "number", "relaxed", "yesno", "math", "text")


@dataclass(frozen=True)
class Example:
    """One row of a verl parquet file, decoded."""

    index: int
    uid: str
    data_source: str
    task: str
    domain: str
    answer_type: str
    split: str
    messages: list[dict[str, str]]
    images: list[bytes]
    ground_truth: str
    extra_info: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        return str(self.extra_info.get("question", ""))


def example_from_row(row: dict[str, Any]) -> Example:
    """Decode one parquet row (as ``pyarrow`` ``to_pylist`` gives it); errors name the row."""
    extra = dict(row.get("extra_info") or {})
    where = f"row index={extra.get('index', '?')}"
    try:
        images = [img["bytes"] if isinstance(img, dict) else img for img in row.get("images") or []]
        return Example(
            index=int(extra["index"]),
            uid=str(extra.get("uid", extra["index"])),
            data_source=str(row["data_source"]),
            task=str(extra.get("task", row["data_source"])),
            domain=str(extra.get("domain", row.get("ability", ""))),
            answer_type=str(extra.get("answer_type", "text")),
            split=str(extra.get("split", "")),
            messages=[{"role": m["role"], "content": m["content"]} for m in row["prompt"]],
            images=[bytes(b) for b in images],
            ground_truth=str(row["reward_model"]["ground_truth"]),
            extra_info=extra,
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{where}: malformed verl row, missing or bad field {exc}") from None


def read_examples(path: str | Path) -> list[Example]:
    """All rows of one verl parquet file, in file order."""
    from vade.data.parquet_read import read_table

    return [example_from_row(r) for r in read_table(path).to_pylist()]
