"""The import graph of the repository: no cycle, dask as a leaf, no private randfeat module used
from outside the package.

Every ``.py`` file of ``randfeat``, ``analysis``, ``paper_figures``, ``benchmarks`` and ``tools``
is parsed with :mod:`ast` (nothing is imported).  Two graphs are built over the repository's
own modules:

* **import time**: the imports that run when a module is imported (module level, including
  ``if``/``try`` blocks and class bodies; not function bodies; not ``if TYPE_CHECKING:``).  It
  must have no cycle at all.
* **all imports**, function bodies included (the lazy imports that run on first use).  It must
  have no cycle either once the edges into ``randfeat.dask`` are removed: the only lazy import
  of ``randfeat.dask`` is the one hook of the base classes (``randfeat/_base.py``), and nothing
  imports it at import time, so the dask support is a leaf that the maps and learners reach
  through the hook only.  (A function that imports its own package, e.g. ``randfeat._config``
  reading ``randfeat.__version__``, runs after the package is loaded: that edge is left out.)

An import ``from a.b import c`` is an edge to ``a.b.c`` when that is a module of the repository,
else to ``a.b``; a plain name in ``benchmarks/`` or ``tools/`` (scripts that put their folder on
``sys.path``) is an edge to the sibling file of that name.  Parent packages are not edges
(Python has them in ``sys.modules`` already while a submodule of theirs imports).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("randfeat", "analysis", "paper_figures")
SCRIPT_DIRS = ("benchmarks", "tools")

#: files outside randfeat/ that may still import a private randfeat module: the compiled-kernel
#: fuzz harness (like the tests, it exercises randfeat._lib directly)
PRIVATE_IMPORT_ALLOWED = {"tools/fuzz_kernels.py"}


def _modules():
    """{module name: path} of every .py file of the repository's packages and script folders."""
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    for folder in SCRIPT_DIRS:
        for path in (ROOT / folder).glob("*.py"):
            mods[f"{folder}/{path.stem}"] = path
    return mods


def _is_type_checking(node):
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree, import_time):
    """(node, lazy) of every Import/ImportFrom; ``import_time``: only those run at import."""
    out = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, lazy))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not import_time:
                    visit(child, True)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                continue
            else:
                visit(child, lazy)

    visit(tree, False)
    return out


def _targets(name, path, node, mods):
    """The repository modules an import statement in module ``name`` (file ``path``) reaches."""
    script = "/" in name
    if isinstance(node, ast.Import):
        bases = [(a.name, []) for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            pkg = pkg[:len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([base] if base else []))
        bases = [(base, [a.name for a in node.names])]
    found = set()
    for base, names in bases:
        if script and f"{name.split('/')[0]}/{base}" in mods:   # a sibling script
            found.add(f"{name.split('/')[0]}/{base}")
            continue
        subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in mods]
        if subs:
            found.update(subs)
            if len(subs) < len(names) and base in mods:
                found.add(base)
        elif base in mods:
            found.add(base)
    found.discard(name)
    return found


def _graph(import_time):
    mods = _modules()
    graph, lazy_edges = {}, {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = set()
        for node, lazy in _imports(tree, import_time):
            for t in _targets(name, path, node, mods):
                graph[name].add(t)
                lazy_edges.setdefault((name, t), []).append(lazy)
    return graph, lazy_edges


def _cycle(graph):
    """One cycle of ``graph`` as a list of modules, or None (iterative depth-first search)."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    for root in sorted(graph):
        if color[root] != WHITE:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        color[root] = GREY
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                color[node] = BLACK
            elif color.get(nxt, BLACK) == GREY:
                return path[path.index(nxt):] + [nxt]
            elif color.get(nxt) == WHITE:
                color[nxt] = GREY
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))
    return None


def test_the_graph_is_parsed():
    """The parser sees the edges it must (a broken parser would find no cycle anywhere)."""
    graph, _ = _graph(import_time=True)
    assert {"randfeat.linear", "randfeat.fourier", "randfeat.kernels"} <= graph["randfeat"]
    assert "randfeat._base" in graph["randfeat.linear._ridge"]
    assert "randfeat.linear._statistics" in graph["randfeat.linear._fit"]   # relative or not
    assert "benchmarks/_timing" in graph["benchmarks/bench_features"]       # sibling script
    full, _ = _graph(import_time=False)
    assert "randfeat.dask" in full["randfeat._base"]                        # the lazy hook
    assert "randfeat.dask" not in graph["randfeat._base"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_at_import_time():
    graph, _ = _graph(import_time=True)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycle_with_lazy_imports_and_dask_is_a_leaf():
    """Function-level imports included, the only way into randfeat.dask is the base classes'
    hook (lazy, in randfeat/_base.py); without it the graph has no cycle."""
    graph, kinds = _graph(import_time=False)
    into_dask = sorted(src for src, dst in kinds if dst == "randfeat.dask")
    assert into_dask == ["randfeat._base"], into_dask
    assert all(kinds[("randfeat._base", "randfeat.dask")]), "the hook must import dask lazily"
    for src in graph:
        graph[src].discard("randfeat.dask")
        # a function importing its own package runs after that package is loaded: not a cycle
        graph[src] = {dst for dst in graph[src]
                      if not (src.startswith(dst + ".") and all(kinds[(src, dst)]))}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle through lazy imports: " + " -> ".join(cycle)


def test_no_dask_array_check_outside_the_hook():
    """The dask-array test lives in one helper (randfeat._base.is_dask_array), called by the
    hook and by randfeat.dask only."""
    users = []
    for path in (ROOT / "randfeat").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "is_dask_array(" in text:
            users.append(path.relative_to(ROOT).as_posix())
    assert sorted(users) == ["randfeat/_base.py", "randfeat/dask.py"], users


@pytest.mark.parametrize("pkg", ["analysis", "paper_figures", "benchmarks", "tools"])
def test_no_private_randfeat_module_outside_the_package(pkg):
    """Outside randfeat/ only public modules are imported (a module path with a component
    starting with "_" under randfeat is private)."""
    bad = []
    for path in sorted((ROOT / pkg).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in PRIVATE_IMPORT_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, _ in _imports(tree, import_time=False):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            for n in names:
                parts = n.split(".")
                if parts[0] == "randfeat" and any(p.startswith("_") for p in parts[1:]):
                    bad.append(f"{rel}:{node.lineno} imports {n}")
    assert not bad, bad
