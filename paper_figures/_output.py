"""paper_figures: markdown tables, number formatting and the progress line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.repro import progress as _progress

__all__ = ["write_table_md", "md_table", "fmt", "progress"]


def write_table_md(out_dir, name, paragraphs, header, rows, result):
    """Write ``<out_dir>/<name>.md``: the paragraphs, the table and the compute time recorded in
    ``result``; returns ``[path]`` (a target's ``render`` result)."""
    txt = [*paragraphs, md_table(header, rows), "",
           f"Compute time of this table: {result.get('compute_seconds', float('nan')):.0f} s."]
    path = Path(out_dir) / f"{name}.md"
    path.write_text("\n".join(txt) + "\n")
    return [path]


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def fmt(x, nd=3):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    if isinstance(x, float):
        if abs(x) >= 1000 or (abs(x) < 1e-3 and x != 0):
            return f"{x:.3g}"
        return f"{x:.{nd}f}"
    return str(x)


def progress(iterable, desc="", **kw):
    """The shared progress line (:func:`analysis.repro.progress`) on stderr."""
    return _progress(iterable, desc=desc, **kw)
