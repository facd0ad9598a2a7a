"""Linear learners on random features: ridge regression and least-squares classification.

Both papers train a *linear* model on the random features :math:`z(x) \\in \\mathbb{R}^D`
(Rahimi & Recht 2007, §5 and Table 1, "Fourier+LS", "Binning+LS"; Le, Sarlós & Smola 2013,
§6, Table 2): ridge regression

.. math::

    \\min_{w, b}\\; \\sum_{i=1}^n s_i \\bigl(y_i - z(x_i)^\\top w - b\\bigr)^2
    + \\alpha \\lVert w \\rVert_2^2

with sample weights :math:`s_i` (1 by default): ``alphas`` are in scikit-learn's
:class:`~sklearn.linear_model.Ridge` / ``RidgeCV`` scale.  ``alpha_scale="mean"`` reads them per
sample instead (the penalty added to the weighted *mean* squared error, i.e.
:math:`\\alpha \\sum_i s_i` on the sum, the convention of kernel ridge regression and of
:class:`randfeat.kernel_ridge.ExactKernelRidge`; randfeat 0.1's only scale),

and classification by least squares on :math:`\\pm 1` targets (one-vs-rest columns for more than
two classes), predicting the sign / the arg-max of the fitted scores.

Solvers, chosen from the type of the features (``solver="auto"``) or by name, all in one table
(:data:`randfeat.linear._solvers.SOLVERS`):

* **dense features** (random Fourier, Fastfood, Nyström): *streaming normal equations*.  The
  feature transformer is applied to ``chunk_size`` rows at a time and only the sufficient
  statistics :math:`Z^\\top Z`, :math:`Z^\\top Y`, :math:`Z^\\top 1`, :math:`1^\\top Y` are kept
  (memory :math:`O(D^2 + DK)`, never :math:`N \\times D`); each chunk's :math:`Z^\\top Z` is
  one BLAS ``syrk`` on the lower triangle, made from the calling thread with the process's BLAS
  threads (float64 into the Gram itself by default; with ``gram_dtype="float32"`` a
  single-precision product of the chunk added to the float64 Gram).
  These statistics are a public object, :class:`RidgeStatistics` (``partial_fit``, ``merge``,
  ``solve``, ``solve_path``): statistics of blocks of rows computed anywhere (threads,
  processes, a cluster) merge into those of all the rows.
  With the centred statistics :math:`A = Z_c^\\top S Z_c`, :math:`c = Z_c^\\top S Y_c` the solution
  is :math:`w = (A + \\lambda I)^{-1} c` (:math:`\\lambda = \\alpha`, or :math:`\\alpha\\sum_i s_i`
  with ``alpha_scale="mean"``), :math:`b = \\bar y - \\bar z^\\top w`.  A grid of
  :math:`\\alpha` is solved from one accumulation by one Cholesky factorisation per
  :math:`\\alpha` (LAPACK ``potrf`` / ``potrs`` on the lower triangle), falling back
  to the eigendecomposition :math:`A = Q \\Lambda Q^\\top`
  (:math:`w_\\alpha = Q (\\Lambda + n\\alpha)^{-1} Q^\\top c`) when a factorisation fails.
* **sparse features** (random binning, CSR with a hashed, possibly huge width): the centred
  design is wrapped in a :class:`scipy.sparse.linalg.LinearOperator` (so centring never
  densifies it) and solved by damped LSQR (``damp = sqrt(lambda)``; default) or by conjugate
  gradients on the regularised normal equations (or "pcg", preconditioned by a randomized
  Nyström approximation; for wide dense features with few rows).

The regularisation :math:`\\alpha` is chosen by ``selection`` (``_selection``): by default exact
**leave-one-out** from one eigendecomposition :math:`A = Q\\Lambda Q^\\top` of the statistics
(the hat diagonals :math:`h_i = s_i/S + s_i \\sum_j (Q^\\top\\tilde z_i)_j^2/(\\lambda_j +
\\lambda)` from a second pass over the rows), as scikit-learn's ``RidgeCV``; **GCV** and the
**evidence** (the log marginal likelihood of Bayesian linear regression on the features,
maximised) from the statistics alone; or a random validation split (``"holdout"``,
``validation_fraction`` of the rows: statistics of the training and validation parts
accumulated separately, the validation error of every :math:`\\alpha` measured, the model
refitted on all rows with the best one).  The same eigendecomposition gives the posterior of
Bayesian linear regression on the features (``predict(X, return_std=True)``, ``sample_y``;
``_posterior``), and :class:`SigmaSearchCV` chooses the features' length scale by the same
criteria.  Theory: ``docs/theory/model_selection.md``.

References
----------
.. [RR07] A. Rahimi and B. Recht. Random features for large-scale kernel machines. NIPS 2007.
.. [LSS13] Q. Le, T. Sarlós and A. Smola. Fastfood — approximating kernel expansions in loglinear
   time. ICML 2013.

Layout
------
``_memory``      chunk sizing, lazily zeroed buffers, ``malloc_trim``, the uninterrupted commit
``_inputs``      validation of targets, weights and alphas; the alpha scales
``_solvers``     the solvers (one signature) and their one table, ``SOLVERS``
``_statistics``  :class:`RidgeStatistics`
``_features``    float32 featurisation rule, merging of repeated rows
``_selection``   one eigendecomposition, every alpha: leave-one-out, GCV, the evidence
``_posterior``   the posterior of Bayesian linear regression on the features
``_fit``         the one fit workflow (in memory and on dask), selection of alpha, publication
``_ridge``       :class:`RandomFeatureRidge`, :class:`RandomFeatureRidgeClassifier`
``_sigma``       :class:`SigmaSearchCV`, the length scale by the same criteria

Exact kernel ridge, the infinite-D limit of these learners, is
:class:`randfeat.kernel_ridge.ExactKernelRidge` (the same alpha scales, split and selection).

Where the next pieces go
------------------------
* a **solver**: a function of the one signature and a row in ``_solvers.SOLVERS`` ("design"
  data, e.g. ``solve_dual``, the minimum-norm solver for D > n); the learners' ``solver``
  parameter, "auto", the dask path's refusal and the error naming the valid solvers follow the
  table;
* a **selection criterion** for alpha: a method of ``_selection.Spectrum`` (the primal and the
  dual eigendecomposition, every alpha at O(D)) and a key in ``_fit._spectral_curves``; a
  criterion that needs the rows again gets a pass like ``LooRows`` (``source.loo``, in memory
  and on dask);
* one **BLAS pool**: every BLAS/LAPACK call of a fit is made from ``_statistics`` (the chunk
  products), ``_solvers`` (the factorisations), ``_selection`` (the eigendecomposition's
  rotation pass) and ``_posterior`` (triangular solves), in the calling thread.
"""

from randfeat.linear._fit import AlphaAtGridEdgeWarning
from randfeat.linear._ridge import RandomFeatureRidge, RandomFeatureRidgeClassifier
from randfeat.linear._sigma import SigmaAtGridEdgeWarning, SigmaSearchCV
from randfeat.linear._statistics import RidgeStatistics

__all__ = ["AlphaAtGridEdgeWarning", "RandomFeatureRidge", "RandomFeatureRidgeClassifier",
           "RidgeStatistics", "SigmaAtGridEdgeWarning", "SigmaSearchCV"]
