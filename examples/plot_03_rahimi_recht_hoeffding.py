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
# The check draws on a plain matplotlib Figure (no pyplot state); we show it through pyplot.
import io  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

fig = check.plot(result, verdict)
buf = io.BytesIO()
fig.savefig(buf, format="png", dpi=100)
buf.seek(0)
image = plt.imread(buf)
shown, ax = plt.subplots(figsize=(image.shape[1] / 100, image.shape[0] / 100))
ax.imshow(image)
ax.axis("off")
shown.tight_layout(pad=0)
plt.show()
