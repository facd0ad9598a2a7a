"""Regenerate the tables and figures of Rahimi & Recht (2007) and Le, Sarlós & Smola (2013).

Run from the repository root::

    python -m paper_figures {rr07_table1, rr07_fig3, ff13_fig1, ff13_table1, ff13_table2, all}
                            [--quick] [--data-dir DIR] [--out DIR]

Every target has a ``params(cfg)`` (what is computed: datasets, sizes, seeds), a cached
``compute(params)`` returning plain JSON data, and a ``render(result, out_dir)`` that writes the
markdown table / PNG figure from the cached data only.  See ``paper_figures/README.md``.
"""

TARGETS = ("rr07_table1", "rr07_fig3", "ff13_fig1", "ff13_table1", "ff13_table2", "orf_letter",
           "orf_fig2", "orf_fig3", "orf_fig4", "features_story")
