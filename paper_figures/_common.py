"""Shared pieces of the paper reproductions: data preparation, feature maps, fitting, metrics.

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
(tables, formatting, progress).  This module re-exports them (``from paper_figures import
_common as C`` keeps working).
"""

from paper_figures._data import (  # noqa: F401
    PREPROCESSING,
    SKEW_THRESHOLD,
    RobustPreprocessor,
    _load,
    _subsample,
    dataset_available,
    median_distance,
    prepare,
)
from paper_figures._features import (  # noqa: F401
    BALLSUM_T,
    METHOD_LABELS,
    _feature_classes,
    derive_seed,
    make_features,
)
from paper_figures._learning import (  # noqa: F401
    ALPHAS,
    SIGMA_FACTORS,
    ExactKernelRidge,
    describe_timing,
    fit_timed,
    make_learner,
    select_sigma,
    timing_conditions,
)
from paper_figures._metrics import bootstrap_se, mean_std, noise, rmse, rr_error  # noqa: F401
from paper_figures._output import fmt, md_table, progress, write_table_md  # noqa: F401
