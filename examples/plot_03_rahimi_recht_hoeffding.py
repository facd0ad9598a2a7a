"""
Reproduce a claim of Rahimi & Recht with the analysis API
=========================================================

Rahimi & Recht (2007, §3) note that the terms of :math:`z(x)^\\top z(y)` are bounded, so by
Hoeffding's inequality, for the paired map with :math:`D` frequencies,

.. math:: P\\big[|z(x)^\\top z(y) - k(x, y)| \\ge \\varepsilon\\big] \\le 2 e^{-D\\varepsilon^2/2}.

The ``analysis`` package (run from the repository) checks this claim by seeded Monte Carlo: the
check ``hoeffding`` fits :math:`R` independently seeded maps per size, counts how often the error
at a fixed pair exceeds each :math:`\\varepsilon`, and declares the bound contradicted only if the
one-sided Clopper-Pearson lower limit of that frequency exceeds it.  Here we run it on a design
smaller than the suite's quick mode (a few seconds) and draw its figure.
"""

from analysis.checks import load

check = load("hoeffding")
print(check.CLAIM)

params = dict(check.PARAMS["smoke"], sizes=[8, 32, 128], R=400)
result = check.run(params, seed=0)
verdict = check.verdict(result)
print("verdict:", verdict["verdict"])
print(verdict["summary"])

# %%
# The figure: the empirical tail (points, with the Clopper-Pearson lower limits) never rises
# above the bound (lines); the bound is loose by the factor the summary states.
fig = check.plot(result, verdict)
