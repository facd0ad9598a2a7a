"""The verification report page of the site: ``python -m analysis --quick``'s report and figures.

Called by ``conf.py`` before the build.  By default it runs the quick suite
(``python -m analysis --quick --quiet --out docs/_build/analysis``; its cache lives there, so a
second build re-renders in seconds) and copies ``report.md`` and the figures into
``docs/verification/`` (generated, not committed), where ``verification/report.md`` is the page.
Never a hand-edited copy: the page is always the report of the code being built.

``RANDFEAT_DOCS_REPORT=DIR`` renders the report already written in DIR (e.g. ``results/analysis``
after ``python -m analysis --quick``) instead; ``RANDFEAT_DOCS_REPORT=skip`` writes a page that
says it was skipped.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time

INTRO = """\
# Verification report

This page is the report of `python -m analysis --quick` on the code this site was built from
(run {how}).  Every check of the library's theory (see {{doc}}`/theory/12-checks`) has one
line in the summary and one section with its figure below.  The same report is written as
`report.md`, `report.html` and `report.json` by `python -m analysis --quick`.

"""


def prepare(docs, root):
    docs, root = pathlib.Path(docs), pathlib.Path(root)
    dest = docs / "verification"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    src = os.environ.get("RANDFEAT_DOCS_REPORT", "")
    if src == "skip":
        (dest / "report.md").write_text(
            INTRO.format(how="skipped for this build: RANDFEAT_DOCS_REPORT=skip")
            + "The report was not generated for this build.\n")
        return
    if src:
        out = pathlib.Path(src)
        how = f"from the results folder `{out}` given by RANDFEAT_DOCS_REPORT"
    else:
        out = docs / "_build" / "analysis"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "analysis", "--quick", "--quiet",
                               "--out", str(out)], cwd=root, env=env)
        # exit 1 = some check failed: the report says which, and the page shows it
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"python -m analysis --quick exited with {proc.returncode}")
        how = f"at build time, {time.monotonic() - t0:.0f} s"
        print(f"verification report: python -m analysis --quick {how}", file=sys.stderr)
    report = out / "report.md"
    if not report.exists():
        raise FileNotFoundError(f"no report.md in {out}: run python -m analysis --quick first")
    body = report.read_text().split("\n", 1)[1]  # its own title is replaced by the page's
    (dest / "report.md").write_text(INTRO.format(how=how) + body)
    for png in out.glob("*.png"):
        shutil.copy2(png, dest / png.name)
