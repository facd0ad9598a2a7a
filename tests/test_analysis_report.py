"""The report a person can skim (analysis/report.py) and the progress bars (analysis/repro.py)."""

import io
import re
import types

import pytest

from analysis import report, repro


def _mod(name):
    return types.SimpleNamespace(
        NAME=name, TITLE=f"Title of {name}", CLAIM="E[z(x)'z(y)] = k(x, y) | with a bar",
        SOURCE="RR 2007 §3", DESIGN="R seeded fits; z-test", ALPHA=1e-5)


def _record(name, verdict="pass", **kw):
    r = dict(name=name, title=f"Title of {name}", verdict=verdict, statistic={"z": 1.5},
             tightness=None, tightness_ci=None,
             summary=("max |z| = 1.57 over 9 (map, Delta) comparisons (threshold 4.87; "
                      "Bonferroni); second clause that the headline leaves out; " + "x" * 200),
             false_alarm=1e-5, runtime_s=3.2, cached=False, figure=f"{name}.png",
             params_brief={"R": 400}, table="| a | b |\n|---|---|\n| 1 | 2 |",
             notes=["a note"], power="detects a bandwidth error of 1.2 % with probability >= 0.9",
             tightness_meaning=None, seed=0, mode="quick")
    r.update(kw)
    return r


META = dict(command="python -m analysis --quick", mode="quick", seed=0, randfeat_version="0.1.0",
            code_version="0123456789abcdef", date="2026-11-28 04:00 UTC", wall_time_s=52.0,
            cpu_time_s=90.0, n_cached=0, jobs=2)

EFFECTS = [{"effect": "bandwidth error", "size": 0.1, "unit": "relative", "probability": 0.9},
           {"effect": "variance error", "size": 1.5, "unit": "factor", "probability": 0.9}]


def _records():
    return [
        _record("alpha", detectable=EFFECTS,
                audit={"code": "c", "mode": "quick", "seeds": list(range(50)),
                       "effects": [dict(effect="bandwidth error", size=0.1, unit="relative",
                                        detected=48, n=50),
                                   dict(effect="variance error", size=1.5, unit="factor",
                                        detected=40, n=50)]}),
        _record("beta", verdict="fail", detectable=EFFECTS[:1], audit=None, tightness=0.176,
                tightness_ci=[0.154, 0.202], tightness_meaning="Var / bound"),
        _record("gamma", verdict="vacuous"),  # an older record: no detectable, no audit keys
    ]


def test_summary_one_line_per_check_and_short(tmp_path):
    recs = _records()
    checks = {r["name"]: _mod(r["name"]) for r in recs}
    report.write_markdown(tmp_path / "report.md", META, recs, checks)
    text = (tmp_path / "report.md").read_text()
    table = [ln for ln in text.split("\n## ")[0].splitlines() if ln.startswith("| [")]
    assert [re.match(r"\| \[(\w+)\]", ln).group(1) for ln in table] == ["alpha", "beta", "gamma"]
    assert all(len(ln) < 200 for ln in table), "a summary line is too long to skim"
    alpha, beta, gamma = table
    assert "10 % bandwidth error (+1)" in alpha and "40/50 (seeds 0–49) (below 90 %)" in alpha
    assert "not audited" in beta and "**fail**" in beta
    assert "tightness 0.18 [0.15, 0.2]" in beta
    assert "second clause" not in alpha  # the headline is the first clause
    assert "bandwidth error of 1.2 %" in gamma  # older record: the power string, shortened
    assert "| - |" in gamma  # and no audit column content
    # sections: every check, its figure, its full power and audit lines
    for name in ("alpha", "beta", "gamma"):
        assert f"## {name}" in text and f"![{name}]({name}.png)" in text
    assert "detects 1.5x variance error: audited 40/50 at seeds 0–49 — below the stated 90 %" \
        in text
    assert "not audited for this code version" in text
    assert "**1 pass, 1 fail, 1 vacuous**" in text


def test_html_embeds_figures_and_renders_tables(tmp_path):
    recs = _records()
    checks = {r["name"]: _mod(r["name"]) for r in recs}
    png = bytes.fromhex("89504e470d0a1a0a") + b"fake"
    for r in recs[:2]:
        (tmp_path / r["figure"]).write_bytes(png)
    report.write_html(tmp_path / "report.html", META, recs, checks, figures=tmp_path)
    h = (tmp_path / "report.html").read_text()
    assert h.count("data:image/png;base64,") == 2
    assert "figure gamma.png not found" in h
    assert '<a href="#alpha">alpha</a>' in h and 'id="beta"' in h
    assert "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>" in h
    assert "E[z(x)&#x27;z(y)]" in h or "E[z(x)'z(y)]" in h
    assert "<script" not in h and "http" not in h  # one self-contained file


def test_md_to_html_escapes():
    h = report.md_to_html("a <b> & `code|x` **bold**\n\n| x \\| y | z |\n|---|---|\n| 1 | 2 |")
    assert "&lt;b&gt; &amp;" in h and "<code>code|x</code>" in h and "<b>bold</b>" in h
    assert "<th>x | y</th>" in h


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_quiet_off_a_terminal():
    s = io.StringIO()
    p = repro.Progress("check", total=10, stream=s, every=0)
    for _ in range(10):
        p.tick()
    p.close()
    assert s.getvalue() == "" and p.n == 10


def test_progress_bar_has_total_and_eta_on_a_terminal():
    pytest.importorskip("tqdm")
    s = _Tty()
    with repro.Progress("claim1 (seed 0)", total=200, stream=s, every=0) as p:
        for _ in range(50):
            p.tick()
    out = s.getvalue()
    assert "claim1 (seed 0)" in out and "/200" in out
    assert re.search(r"<\d\d:\d\d", out), f"no time-left estimate in {out!r}"


def test_progress_sink_messages():
    class Q(list):
        put = list.append

    q = Q()
    p = repro.Progress("x", total=5, sink=q, key=("x", 0), every=0)
    for _ in range(5):
        p.tick()
    p.close()
    assert q[-1] == (("x", 0), 5, 5, "x", True) and len(q) >= 2


def test_expected_ticks_roundtrip(tmp_path):
    params = {"R": 10, "sizes": [1, 2]}
    assert repro.expected_ticks(tmp_path, "claim1", params) is None
    repro.record_ticks(tmp_path, "claim1", params, 123)
    assert repro.expected_ticks(tmp_path, "claim1", params) == 123
    assert repro.expected_ticks(tmp_path, "claim1", {"R": 11, "sizes": [1, 2]}) is None


def test_progress_board_off_a_terminal_is_silent():
    s = io.StringIO()
    with repro.ProgressBoard(3, stream=s) as b:
        assert b.queue is None and not b.enabled
        b.done()
    assert s.getvalue() == ""


def test_runner_writes_html_and_help_lists_checks(tmp_path, capsys):
    """End to end: the runner writes report.html beside report.md; --help lists every check and
    the defaults."""
    from analysis.__main__ import main
    from analysis.checks import CHECKS

    assert main(["--smoke", "--out", str(tmp_path), "--quiet", "--only", "lemma1"]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html and 'id="lemma1"' in html
    md = (tmp_path / "report.md").read_text()
    assert md.count("| [lemma1](#lemma1) |") == 1
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in CHECKS)
    assert "default results/analysis" in out and "default 0" in out and "quick" in out
