"""Regenerate the tables and figures of Rahimi & Recht (2007) and Le, Sarlós & Smola (2013).

Run from the repository root::

    python -m paper_figures {rr07_table1, rr07_fig3, ff13_fig1, ff13_table1, ff13_table2, all}
                            [--quick] [--data-dir DIR] [--out DIR]

Every target has a ``params(cfg)`` (what is computed: datasets, sizes, seeds), a cached
``compute(params)`` returning plain JSON data, and a ``render(result, out_dir)`` that writes the
markdown table / PNG figure from the cached data only.  See ``paper_figures/README.md``.

Protocol used by every table (documented in README.md):

* **Split** — the dataset's official split when it has one (adult/a9a, insurance, MSD), otherwise
  a seeded random split with 80% of the rows for training (FF13 trains on 80%; RR07's CPU/Census
  training sizes are ~80% too).  Repetition ``r`` uses split seed ``r``.
* **Preprocessing** — inputs standardised with the training mean/std (``StandardScaler``);
  targets left in their units (the learner fits an unpenalised intercept).
* **Bandwidth** — chosen by validation: the training part (subsampled to ``search_rows``) is fed to
  :class:`randfeat.linear.RandomFeatureRidge` for every candidate ``sigma`` (multiples of the
  median pairwise L2 distance, L1 for the Laplacian binning kernel), each fit choosing its own
  ``alpha`` on an internal 20% validation split; the ``sigma`` with the lowest validation error
  wins; when it lies at the edge of the grid the grid is extended by a factor 2 (at most twice).
  This is done once (repetition 0) per dataset and kernel.
* **Regularisation** — per-sample ridge penalty ``alpha`` chosen on a 20% validation split of the
  training set inside every fit (grid ``10**arange(-8, 1)``), then refitted on all training rows.
* **Training time** — wall-clock of the final ``fit`` (feature map + streaming accumulation +
  validation of ``alpha`` + solve), not counting the bandwidth search, on this machine.

The code is split by concern: ``_features`` (seeds, feature maps), ``_data`` (datasets,
preprocessing), ``_learning`` (learners, timing, bandwidth search), ``_metrics`` and ``_output``
(tables, formatting, progress); the targets import from them directly.
"""

TARGETS = ("rr07_table1", "rr07_fig3", "ff13_fig1", "ff13_table1", "ff13_table2", "orf_letter",
           "orf_fig2", "orf_fig3", "orf_fig4", "features_story", "liao20_double_descent",
           "yang12_nystrom_vs_rff")
