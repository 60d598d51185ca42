"""Synthetic splits: train (the sampler's pool), val, warmstart (supervised warm start), eval/<domain>.

Every split and domain draws from its own stream ``rng_for(seed, "synthetic", split, domain)``,
so resizing one split leaves the others' items unchanged, and the same seed gives byte-identical
parquet files. Splits are disjoint: an image identical (byte for byte) to one already drawn, in
any split, is redrawn. Domains share each split evenly (the remainder goes to the first domains).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from vade.data.config import DataConfig, SyntheticConfig
from vade.data.items import Item
from vade.data.splits import rng_for
from vade.data.synthetic.render import RENDERERS, TASKS, encode_png
from vade.data.writer import SplitFile, write_dataset
from vade.provenance import code_version

__all__ = ["build_synthetic", "domain_counts", "make_items"]

_MAX_REDRAWS = 10_000


def domain_counts(n: int, domains: tuple[str, ...]) -> dict[str, int]:
    base, extra = divmod(n, len(domains))
    return {dom: base + (1 if k < extra else 0) for k, dom in enumerate(domains)}


def make_items(cfg: SyntheticConfig, seed: int, split: str, counts: dict[str, int],
               seen: set[str], bar: Any = None) -> list[Item]:
    """Items of one split (domains in ``counts`` order), shuffled by the split's own stream."""
    items: list[Item] = []
    for domain, n in counts.items():
        rng = rng_for(seed, "synthetic", split, domain)
        render = RENDERERS[domain]
        redraws = 0
        k = 0
        while k < n:
            d = float(rng.beta(cfg.difficulty_alpha, cfg.difficulty_beta))
            out = render(rng, d, cfg.image_size, cfg.noise, max_count=cfg.max_count,
                         styles=cfg.chart_styles)
            png = encode_png(out.pixels)
            digest = hashlib.sha256(png).hexdigest()
            if digest in seen:
                redraws += 1
                if redraws > _MAX_REDRAWS:
                    raise ValueError(f"data.synthetic: cannot draw {n} distinct {domain} images "
                                     f"for split {split}; raise image_size or noise")
                continue
            seen.add(digest)
            items.append(Item(task=TASKS[domain], domain=domain, row_id=f"{split}-{k:07d}",
                              question=out.question, answer=out.answer,
                              answer_type=out.answer_type, images=(png,),
                              source_question=out.question, difficulty=round(d, 6)))
            k += 1
            if bar is not None:
                bar.update(1)
    order = rng_for(seed, "synthetic-order", split).permutation(len(items))
    return [items[i] for i in order]


def build_synthetic(cfg: DataConfig, out_dir: str | Path, *, progress: bool = True,
                    prompt_tokens: Callable[[list[Path]], dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """Render every split and write them (train first, so train's index = row position);
    ``prompt_tokens`` records the prompts' lengths (``vade.data.writer.write_dataset``)."""
    syn = cfg.synthetic
    total = syn.train + syn.val + syn.warmstart + syn.eval * len(syn.domains)
    seen: set[str] = set()
    with tqdm(total=total, desc="build-data synthetic", unit="img", disable=not progress) as bar:
        files = [SplitFile(f"{split}.parquet", split,
                           make_items(syn, cfg.seed, split, domain_counts(n, syn.domains), seen,
                                      bar))
                 for split, n in (("train", syn.train), ("val", syn.val),
                                  ("warmstart", syn.warmstart))]
        for domain in syn.domains:
            files.append(SplitFile(f"eval/{domain}.parquet", "eval",
                                   make_items(syn, cfg.seed, f"eval-{domain}",
                                              {domain: syn.eval}, seen, bar)))
    manifest = {
        "kind": "synthetic", "seed": cfg.seed, "code_version": code_version(),
        "config": cfg.to_dict(),
        "sources": {TASKS[d]: {"origin": "rendered", "renderer": f"vade.data.synthetic.render."
                               f"{RENDERERS[d].__name__}", "revision": code_version()}
                    for d in syn.domains},
        "invalid": {}, "excluded_overlap": {},
    }
    return write_dataset(out_dir, files, template=cfg.prompt_template, with_difficulty=True,
                         manifest=manifest, prompt_tokens=prompt_tokens)
