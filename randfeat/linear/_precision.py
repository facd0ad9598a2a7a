r"""``gram_dtype="auto"``, the learners' default: float32 statistics where they keep the answer.

With ``gram_dtype="float32"`` each chunk's products :math:`Z^\top Z`, :math:`Z^\top[Y, 1]` are
formed in single precision (then summed over chunks in float64) and the system is solved by a
float32 Cholesky factorisation refined to float64 accuracy
(:func:`randfeat._lib._gram.posv_mixed`): about twice as fast as float64 (the Gram's ``syrk``
is most of a fit).  The refinement makes the *solve* float64-accurate; what float32 changes is
the Gram itself, by its rounding :math:`\Delta G`.  Its effect on the solution is bounded by the
penalty: :math:`\lVert \Delta w\rVert / \lVert w\rVert \le \lVert\Delta G\rVert_2 / \lambda`
(:math:`\lVert (A + \lambda I)^{-1}\rVert_2 \le 1/\lambda`), so float32 statistics are safe
where the penalty dominates the rounding.

**The rule.**  ``"auto"`` is ``"float32"`` when

* the features are those of a randfeat map with dense output (:class:`RandomFourierFeatures`,
  :class:`Fastfood`, :class:`StructuredOrthogonalFeatures`), whose every feature is at most
  :math:`\sqrt{2/D}` in magnitude, so :math:`\operatorname{tr} G = \sum_i s_i\lVert z_i
  \rVert^2 \le 2S` (:math:`S = \sum_i s_i`, the weight sum) is known before any row is
  featurised; and
* every candidate penalty :math:`\lambda` (on the summed squared errors) is at least
  ``AUTO_MARGIN`` (10) times that bound's rounding scale :math:`u_{32}\cdot 2S`
  (:math:`u_{32} = 2^{-24}`): :math:`\alpha \ge 20\,u_{32}\,S \approx 1.2\cdot10^{-6}\,S`
  with the default ``alpha_scale="sum"``, :math:`\alpha \ge 1.2\cdot10^{-6}` with "mean"
  (:func:`float32_alpha_floor`);

and ``"float64"`` otherwise (other transformers or "passthrough", whose features have no known
bound: raw data with large offsets would lose the centred Gram to cancellation; penalties below
the floor).  The spectral norm of the float32 Gram's rounding was measured at
:math:`1.0\text{--}1.1\, u_{32} \operatorname{tr} G` (Adult, cpu_act and KDDCUP99, D = 1000
and 4000, phase RFF; ``benchmarks/README.md``), so above the floor the penalty is at least about
ten times :math:`\lVert\Delta G\rVert_2` (twenty times for the usual
:math:`\operatorname{tr} G \approx S`): coefficients within 10 % in the worst direction, and
measured within :math:`10^{-4}` relative, with the test errors of the float64 statistics
(Adult, cpu_act; the same test predictions on Adult).  The fitted ``gram_dtype_`` says which
precision a fit used.
"""

from __future__ import annotations

import numpy as np

from randfeat.linear._features import DENSE_MAPS

__all__ = ["AUTO_MARGIN", "FEATURE_SQ_NORM_BOUND", "U32", "effective_gram_dtype",
           "float32_alpha_floor"]

#: unit roundoff of float32
U32 = 2.0 ** -24
#: how many times the float32 Gram's rounding scale a penalty must be for "auto" to use float32
AUTO_MARGIN = 10.0
#: bound on ‖z‖² of the randfeat dense maps (every feature at most sqrt(2 / D) in magnitude)
FEATURE_SQ_NORM_BOUND = 2.0


def float32_alpha_floor(alpha_scale, weight_sum):
    r"""The smallest ``alpha`` for which ``gram_dtype="auto"`` uses float32 statistics:
    ``AUTO_MARGIN * U32 * FEATURE_SQ_NORM_BOUND`` times the weight sum ``S`` with
    ``alpha_scale="sum"`` (the penalty on the summed errors against the Gram's rounding scale
    :math:`u_{32}\cdot 2S`), and times 1 with ``"mean"`` (the penalty is then
    :math:`\alpha S`: the floor does not depend on the rows).

    >>> float32_alpha_floor("sum", 32561)     # Adult's training rows       # doctest: +ELLIPSIS
    0.0388...
    >>> float32_alpha_floor("mean", 32561)                                  # doctest: +ELLIPSIS
    1.19...e-06
    """
    per_row = AUTO_MARGIN * U32 * FEATURE_SQ_NORM_BOUND
    return per_row * float(weight_sum) if alpha_scale == "sum" else per_row


def effective_gram_dtype(model, alphas, weight_sum):
    """The ``gram_dtype`` a fit of ``model`` (a working copy with its fitted ``features_``)
    uses: the parameter itself when it is "float64" or "float32"; for "auto" the rule of the
    module docstring, with ``alphas`` the candidate penalties (the learner's scale) and
    ``weight_sum`` the sum of the sample weights of all the rows (their number without
    weights)."""
    if model.gram_dtype != "auto":
        return model.gram_dtype
    if type(model.features_) not in DENSE_MAPS:
        return "float64"
    floor = float32_alpha_floor(model.alpha_scale, weight_sum)
    return "float32" if float(np.min(alphas)) >= floor else "float64"
