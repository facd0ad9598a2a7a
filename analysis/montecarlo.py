"""Monte Carlo plumbing: independent replicates from spawned SeedSequences (THEORY.md §5).

A *replicate* is one independently seeded fitted feature map.  Seeds are derived, never reused:
``seed_sequences(seed, "unbiasedness", "rff-gaussian-paired", n=R)`` spawns R children of a
SeedSequence whose spawn key hashes the check and configuration names, so two configurations of one
check, or two checks, never share a random stream, and the same (seed, names) always give the same
streams.  Nothing here plots.
"""

from __future__ import annotations

import hashlib
import sys
import time

import numpy as np

__all__ = ["stable_key", "seed_sequences", "random_state_of", "replicate", "Progress"]


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


def stable_key(*names) -> tuple:
    """Stable 32-bit integers from names (Python's hash() is salted per process)."""
    return tuple(int.from_bytes(hashlib.sha256(str(n).encode()).digest()[:4], "little")
                 for n in names)


def seed_sequences(seed: int, *names, n: int):
    """``n`` independent child SeedSequences for (seed, names)."""
    root = np.random.SeedSequence(entropy=int(seed), spawn_key=stable_key(*names))
    return root.spawn(int(n))


def random_state_of(ss: np.random.SeedSequence) -> int:
    """A ``random_state`` integer (scikit-learn accepts ints in [0, 2^32)) drawn from ``ss``."""
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def replicate(fn, seeds, progress=None):
    """Run ``fn(random_state)`` for each child seed; stack the returned arrays along axis 0.

    ``fn`` returns an array (or a tuple of arrays); the result is an array (or tuple) with a
    leading replicate axis.
    """
    out = []
    for ss in seeds:
        out.append(fn(random_state_of(ss)))
        if progress is not None:
            progress.tick()
    if isinstance(out[0], tuple):
        return tuple(np.stack([o[j] for o in out]) for j in range(len(out[0])))
    return np.stack(out)


class Progress:
    """Minimal progress line on stderr (a line per update when stderr is not a terminal)."""

    def __init__(self, label, total=None, stream=None, enabled=True, every=2.0):
        self.label = label
        self.total = total
        self.n = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.last = 0.0
        self.every = every

    def tick(self, k=1):
        self.n += k
        now = time.monotonic()
        if self.enabled and now - self.last > self.every:
            self.last = now
            tot = f"/{self.total}" if self.total else ""
            end = "\r" if self.stream.isatty() else "\n"
            self.stream.write(f"  {self.label}: {self.n}{tot} ({now - self.t0:.0f} s){end}")
            self.stream.flush()
