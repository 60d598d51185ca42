"""Training data: the paper's set built from Hugging Face sources, or a synthetic set rendered here.

Both kinds end in the same files (verl's multimodal parquet, a manifest, a DuckDB catalog), so
every later stage reads one schema (``vade.data.records``) whatever built it. ``vade build-data``
(``vade.data.command``) is the entry point; this package imports no heavy library at import time.
"""

from vade.data.records import ANSWER_TYPES, IMAGE_TOKEN, Example, read_examples

__all__ = ["ANSWER_TYPES", "IMAGE_TOKEN", "Example", "read_examples"]
