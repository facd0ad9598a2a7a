"""Monte Carlo plumbing: independent replicates from spawned SeedSequences (THEORY.md §5).

A *replicate* is one independently seeded fitted feature map (or learner).  Seeds are derived,
never reused:
``seed_sequences(seed, "unbiasedness", "rff-gaussian-paired", n=R)`` spawns R children of a
SeedSequence whose spawn key hashes the check and configuration names, so two configurations of one
check, or two checks, never share a random stream, and the same (seed, names) always give the same
streams.  Nothing here plots.

Every set of replicates goes through :func:`random_states` (directly, or inside
:func:`replicate`), which refuses seeds that repeat and random states that repeat (a
``random_state_of`` that ignores its seed), and its outputs through :func:`check_not_degenerate`,
which refuses replicates that are all identical or, for continuous outputs, two that coincide.
A check that loops over seeds itself (the learning checks fit several models per replicate)::

    outs = []
    for rs in mc.random_states(mc.seed_sequences(seed, NAME, D, n=R)):
        outs.append(fit_and_predict(rs))
    mc.check_not_degenerate(np.asarray(outs), "predictions")
"""

from __future__ import annotations

import numpy as np

from analysis.repro import Progress, seed_sequence, seed_sequences, stable_key, stream_id

__all__ = ["stable_key", "seed_sequence", "seed_sequences", "random_state_of", "random_states",
           "replicate", "check_distinct", "check_not_degenerate", "DegenerateRunError", "Progress",
           "parse_seeds", "MIN_DISTINCT_FOR_REPEATS"]

#: a replicate (row) with at least this many distinct finite values is a continuous draw: two
#: independent replicates equal in every entry mean a reused random state (refused)
MIN_DISTINCT_FOR_REPEATS = 8


def parse_seeds(spec) -> list:
    """Seeds from a specification: 'all' (0-99), a range 'A-B' (inclusive) or 'a,b,c'.  One
    syntax for ``python -m analysis --seed`` and the tests' RANDFEAT_TESTS_SEEDS."""
    spec = str(spec).strip()
    if spec == "all":
        return list(range(100))
    if "-" in spec:
        lo, hi = (int(s) for s in spec.split("-", 1))
        return list(range(lo, hi + 1))
    return [int(s) for s in spec.split(",")]


class DegenerateRunError(RuntimeError):
    """The replicates of a Monte Carlo run are not independent (a seed reused, or every replicate
    identical): the run is an error, not a pass."""


def random_state_of(ss: np.random.SeedSequence) -> np.random.SeedSequence:
    """The ``random_state`` passed to an estimator for the child ``ss``: ``ss`` itself (every
    randfeat estimator accepts a SeedSequence; nothing is squeezed to 32 bits).  A seam: tests
    replace it to inject seed bugs."""
    return ss


def check_distinct(seeds) -> None:
    """Raise :class:`DegenerateRunError` unless the SeedSequences give pairwise distinct
    streams."""
    ids = [stream_id(ss) for ss in seeds]
    if len(set(ids)) != len(ids):
        raise DegenerateRunError(f"{len(ids) - len(set(ids))} of {len(ids)} replicate seeds "
                                 "repeat an earlier one: the replicates are not independent")


def _state_id(rs):
    """What determines the stream a ``random_state`` gives an estimator (for the repeat test)."""
    if isinstance(rs, np.random.SeedSequence):
        return ("ss",) + stream_id(rs)
    if isinstance(rs, (int, np.integer)) and not isinstance(rs, (bool, np.bool_)):
        return ("int", int(rs))
    if isinstance(rs, np.random.Generator):
        return ("gen", repr(rs.bit_generator.state))
    if isinstance(rs, np.random.RandomState):
        st = rs.get_state()
        return ("rs", st[0], st[1].tobytes(), st[2])
    if rs is None:
        raise DegenerateRunError("random_state_of returned None: the replicate would draw fresh "
                                 "entropy (not reproducible); give every replicate its own seed")
    return ("obj", repr(rs))


def random_states(seeds) -> list:
    """``[random_state_of(ss) for ss in seeds]``, after checking that the seeds give distinct
    streams (:func:`check_distinct`) and that the random states handed to the estimators do too
    (a ``random_state_of`` that maps several seeds to one state is refused):
    :class:`DegenerateRunError` otherwise.  Use it for every loop over replicates."""
    seeds = list(seeds)
    check_distinct(seeds)
    states = [random_state_of(ss) for ss in seeds]
    ids = [_state_id(s) for s in states]
    if len(set(ids)) != len(ids):
        raise DegenerateRunError(f"{len(ids) - len(set(ids))} of {len(ids)} replicates get the "
                                 "random state of an earlier one: the replicates are not "
                                 "independent")
    return states


def check_not_degenerate(out, what="replicates", allow_repeats=False) -> None:
    """Raise :class:`DegenerateRunError` when the replicates (along axis 0 of ``out``, R >= 2)
    are degenerate: every column has zero spread (all replicates gave the same answer, so no
    variance, tail or z-statistic computed from them means anything), or two replicates
    coincide in every entry while each has at least :data:`MIN_DISTINCT_FOR_REPEATS` distinct
    values (a continuous output repeated: a reused random state; not tested with
    ``allow_repeats=True``, for estimates with a discrete law)."""
    x = np.asarray(out, dtype=float)
    if x.shape[0] < 2:
        return
    x = x.reshape(x.shape[0], -1)
    fin = np.isfinite(x).all(axis=0)
    if not fin.any() or np.all(np.ptp(x[:, fin], axis=0) == 0):
        raise DegenerateRunError(f"all {x.shape[0]} {what} are identical (zero variance across "
                                 "replicates): the Monte Carlo run is degenerate")
    if allow_repeats:   # a discrete law (e.g. SORF's sign patterns): repeats are expected
        return
    xf = x[:, fin]
    rich = [len(np.unique(row)) >= MIN_DISTINCT_FOR_REPEATS for row in xf]
    if all(rich):
        _, counts = np.unique(xf, axis=0, return_counts=True)
        if np.any(counts > 1):
            rep = int(np.sum(counts - 1))
            raise DegenerateRunError(f"{rep} of {x.shape[0]} {what} repeat an earlier one "
                                     "exactly (a reused random state): the replicates are not "
                                     "independent")


def replicate(fn, seeds, progress=None, what="replicates"):
    """Run ``fn(random_state_of(ss))`` for each child seed; stack the returned arrays along
    axis 0.

    ``fn`` returns an array (or a tuple of arrays); the result is an array (or tuple) with a
    leading replicate axis.  The seeds and the random states must give distinct streams
    (:func:`random_states`) and the replicates must not be degenerate
    (:func:`check_not_degenerate` on the first array): :class:`DegenerateRunError` otherwise.
    """
    out = []
    for rs in random_states(seeds):
        out.append(fn(rs))
        if progress is not None:
            progress.tick()
    if isinstance(out[0], tuple):
        res = tuple(np.stack([o[j] for o in out]) for j in range(len(out[0])))
        check_not_degenerate(res[0], what)
        return res
    res = np.stack(out)
    check_not_degenerate(res, what)
    return res
