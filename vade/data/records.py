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

``read_examples`` checks every row once, as it reads the file: each row has at least one image
(the policy is a vision-language model; a row with ``images=[]`` failed at step 1, after the
model loaded, issue 49), each image decodes (Pillow, full decode) and each row has a non-empty
answer. A bad row fails there, naming the file and the row,
before any model is loaded or any step written; without it a garbled image surfaced steps into
training, in the middle of a batch, without the file's name.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vade.data.parquet_read import read_table

__all__ = ["ANSWER_TYPES", "IMAGE_TOKEN", "Example", "check_example", "example_from_row",
           "read_examples"]

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


def _text(value: Any) -> str:
    return "" if value is None else str(value)


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
            ground_truth=_text(row["reward_model"]["ground_truth"]),
            extra_info=extra,
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{where}: malformed verl row, missing or bad field {exc}") from None


def check_example(example: Example) -> None:
    """Raise ValueError (naming the row) unless the row has an answer and an image, and every
    image decodes."""
    from PIL import Image  # lazy: pillow, the cpu extra

    where = f"row index={example.index}"
    if not example.ground_truth.strip():
        raise ValueError(f"{where}: empty reward_model.ground_truth (a row without an answer)")
    if not example.images:
        raise ValueError(f"{where}: no image (images is empty); every row needs the image its "
                         f"prompt's {IMAGE_TOKEN} refers to")
    for k, data in enumerate(example.images):
        try:
            with Image.open(io.BytesIO(data)) as img:
                img.load()
        except Exception as exc:  # noqa: BLE001 - Pillow raises many types for corrupt data
            raise ValueError(f"{where}: image {k} cannot be decoded ({type(exc).__name__}: "
                             f"{exc})") from None


def read_examples(path: str | Path, *, check: bool = True) -> list[Example]:
    """All rows of one verl parquet file, in file order, each checked (``check_example``;
    module doc) unless ``check`` is False. Errors name the file."""
    out = []
    for pos, row in enumerate(read_table(path).to_pylist()):
        try:
            example = example_from_row(row)
            if check:
                check_example(example)
        except ValueError as exc:
            raise ValueError(f"{path} (row {pos}): {exc}") from None
        out.append(example)
    return out
