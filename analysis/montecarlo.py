"""Monte Carlo plumbing: independent replicates from spawned SeedSequences (THEORY.md §5).

A *replicate* is one independently seeded fitted feature map.  Seeds are derived, never reused:
``seed_sequences(seed, "unbiasedness", "rff-gaussian-paired", n=R)`` spawns R children of a
SeedSequence whose spawn key hashes the check and configuration names, so two configurations of one
check, or two checks, never share a random stream, and the same (seed, names) always give the same
streams.  Nothing here plots.
"""

from __future__ import annotations

import numpy as np

from analysis.repro import Progress, seed_sequence, seed_sequences, stable_key, stream_id

__all__ = ["stable_key", "seed_sequence", "seed_sequences", "random_state_of", "replicate",
           "check_distinct", "check_not_degenerate", "DegenerateRunError", "Progress",
           "parse_seeds"]


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


def check_not_degenerate(out, what="replicates") -> None:
    """Raise :class:`DegenerateRunError` when every column of ``out`` (replicates along axis 0,
    R >= 2) has zero spread: every replicate gave the same answer, so no variance, tail or
    z-statistic computed from them means anything."""
    x = np.asarray(out, dtype=float)
    if x.shape[0] < 2:
        return
    x = x.reshape(x.shape[0], -1)
    fin = np.isfinite(x).all(axis=0)
    if not fin.any() or np.all(np.ptp(x[:, fin], axis=0) == 0):
        raise DegenerateRunError(f"all {x.shape[0]} {what} are identical (zero variance across "
                                 "replicates): the Monte Carlo run is degenerate")


def replicate(fn, seeds, progress=None):
    """Run ``fn(random_state_of(ss))`` for each child seed; stack the returned arrays along
    axis 0.

    ``fn`` returns an array (or a tuple of arrays); the result is an array (or tuple) with a
    leading replicate axis.  The seeds must give distinct streams and the replicates must not
    all be identical (:class:`DegenerateRunError` otherwise).
    """
    seeds = list(seeds)
    check_distinct(seeds)
    out = []
    for ss in seeds:
        out.append(fn(random_state_of(ss)))
        if progress is not None:
            progress.tick()
    if isinstance(out[0], tuple):
        res = tuple(np.stack([o[j] for o in out]) for j in range(len(out[0])))
        check_not_degenerate(res[0])
        return res
    res = np.stack(out)
    check_not_degenerate(res)
    return res
