"""The report as HTML pages: what ``snakemake --report`` and a browser show without a download.

Snakemake's HTML report offers a Markdown file only as a download (text/markdown), so tables never
showed and the downloaded file's figure links broke. Each table is therefore also written as a
small HTML page (a report item of its own), and the whole report as one self-contained page with
its figures embedded (base64), which reads the same in the Snakemake report, when downloaded, or
opened from disk. Markdown -> HTML is Python-Markdown's ``tables`` extension; nothing
time-dependent is written, so the same report gives the same bytes.
"""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path

__all__ = ["CSS", "render_page", "write_page"]

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       max-width: 1200px; margin: 1.5em auto; padding: 0 1.2em; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 4px 9px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fbfcfd; }
img { max-width: 100%; border: 1px solid #eaeef2; }
code { background: #f6f8fa; padding: 0 3px; border-radius: 3px; font-size: 92%; }
"""

_IMG_SRC = re.compile(r'(<img\b[^>]*\bsrc=")([^":]+\.png)(")')


def _embed_images(body: str, base: Path) -> str:
    """Relative PNG sources become data URIs; a missing file is left as a visible broken link."""

    def inline(m: re.Match[str]) -> str:
        path = base / m.group(2)
        if not path.is_file():
            return m.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"{m.group(1)}data:image/png;base64,{data}{m.group(3)}"

    return _IMG_SRC.sub(inline, body)


def render_page(markdown_text: str, title: str, images_from: Path | None = None) -> str:
    """A complete HTML document of ``markdown_text`` (GitHub-style tables), images embedded from
    ``images_from`` when given."""
    import markdown  # lazy: the report extra

    body = markdown.markdown(markdown_text, extensions=["tables"], output_format="html")
    if images_from is not None:
        body = _embed_images(body, images_from)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"{body}\n</body>\n</html>\n")


def write_page(path: Path, markdown_text: str, title: str,
               images_from: Path | None = None) -> Path:
    """Render and write atomically (a temporary name, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(render_page(markdown_text, title, images_from), encoding="utf-8")
    os.replace(tmp, path)
    return path
