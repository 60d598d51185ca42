"""Sampler history in DuckDB: one file per run, queried alone or as a catalog with ``vade sql``."""

from vade.store.query import connect, expand_paths, open_catalog, open_readonly, query
from vade.store.run_store import RunStore

__all__ = ["RunStore", "connect", "expand_paths", "open_catalog", "open_readonly", "query"]
