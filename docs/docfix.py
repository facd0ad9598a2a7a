"""Sphinx hooks that let the library's plain-text docstrings build without warnings.

The docstrings are written for ``help()`` first: they use ``n_features_in_`` and ``|x - y|`` in
running text, which reStructuredText reads as a hyperlink reference and a substitution.  Rather
than wrap every such word in backticks across the code base, :func:`escape_docstring` escapes
them in the text that Sphinx sees (outside inline literals, roles, math and literal blocks):

- a word ending in ``_`` (``frequencies_``, ``n_features_in_``) -> ``frequencies\\_``;
- a bar ``|`` in running text (absolute values, norms) -> ``\\|``;
- a parameter type continued on the next line with a backslash (raw docstrings keep the
  ``\\`` and the newline) is joined back into one line, as numpydoc expects.

:func:`skip_member` leaves out the members that scikit-learn's base classes define
(``get_params``, ``set_output``, ...): their docstrings refer to scikit-learn's own site.
"""

from __future__ import annotations

import re

_INLINE = re.compile(r"(:[\w:+-]+:`[^`]*`|``[^`]*``|`[^`]*`_{0,2})")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\\\w])([A-Za-z](?:[\w.]*?[A-Za-z0-9])?)_(?![\w`])")


def _escape_text(s):
    s = _TRAILING_UNDERSCORE.sub(r"\1\\_", s)
    s = re.sub(r"(?<!\\)\|", r"\\|", s)
    return s


def _escape_line(line):
    parts = _INLINE.split(line)
    return "".join(p if i % 2 else _escape_text(p) for i, p in enumerate(parts))


_BORDER = re.compile(r"^=+( +=+)+$")


def escape_docstring(lines):
    """Escape ``lines`` in place (see the module docstring).  Simple tables are left alone (an
    escape would move their columns)."""
    block_indent = None  # inside a literal/math block: lines indented deeper than this
    borders, prev = 0, ""  # simple table: from its first border to the blank line after its last
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _BORDER.match(stripped):
            borders += 1
        elif borders and not stripped and _BORDER.match(prev) and borders >= 2:
            borders = 0
        prev = stripped or prev
        if borders:
            continue
        if block_indent is not None:
            if stripped and indent <= block_indent:
                block_indent = None
            else:
                continue
        if stripped.startswith(".. "):  # a directive (math, code-block, ...): keep its body
            block_indent = indent
            continue
        if stripped.startswith((">>>", "...", "+-", "+=")) or (
                len(stripped) > 1 and stripped[0] == stripped[-1] == "|"):  # a table row
            continue
        lines[i] = _escape_line(line)
        if stripped.endswith("::"):
            block_indent = indent


def join_continuations(lines):
    """Join a line ending in a backslash with the next one, in place."""
    i = 0
    while i < len(lines) - 1:
        if lines[i].endswith("\\") and not lines[i].endswith("\\\\"):
            lines[i] = lines[i][:-1] + lines.pop(i + 1).lstrip()
        else:
            i += 1


def before_numpydoc(app, what, name, obj, options, lines):
    join_continuations(lines)


def after_numpydoc(app, what, name, obj, options, lines):
    escape_docstring(lines)


def skip_member(app, what, name, obj, skip, options):
    mod = getattr(obj, "__module__", None) or ""
    if what == "class" and mod.startswith("sklearn"):
        return True
    return None


def setup(app):
    # numpydoc (priority 500) turns the sections into reST in between
    app.connect("autodoc-process-docstring", before_numpydoc, priority=400)
    app.connect("autodoc-process-docstring", after_numpydoc, priority=600)
    app.connect("autodoc-skip-member", skip_member)
    return {"parallel_read_safe": True}
