"""The executor behind ``python -m analysis --jobs N`` and ``--scheduler``: local processes or a
dask cluster (optional extra ``randfeat[dask]``).

``--scheduler ADDRESS`` (e.g. ``tcp://10.0.0.5:8786``) runs every (check, seed) task of the run on
the dask cluster of that scheduler, ``--scheduler local`` on a new ``distributed.LocalCluster`` of
``--jobs`` worker processes with one thread each (closed at the end), and ``--scheduler active``
on the ``distributed.Client`` active in the calling process (``main([...])`` called from Python).
Without ``--scheduler`` nothing changes: ``--jobs N`` runs N local processes.

Results are identical to the local run for the same seeds: a task is ``run_one(name, mode,
seed, ...)``, whose random streams derive from the seed only (``analysis.montecarlo``) and which
runs with one BLAS thread wherever it runs, so the place it runs does not enter the result.  To
make sure the workers run the *same code*, :func:`executor` compares each worker's
``code_version()`` (the hash of the analysis sources and of the installed randfeat) with the
client's and refuses a cluster whose workers differ, naming them.  The cache is read and written
by the workers at the ``--out`` path as given (give an absolute path on a cluster with a shared
filesystem; without one the workers keep their own caches, or pass ``--no-cache``); the reports
are written by the client.
"""

from __future__ import annotations

import contextlib

__all__ = ["executor"]


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise SystemExit("python -m analysis --scheduler needs the optional extra "
                         "randfeat[dask]: pip install 'randfeat[dask]' (dask[array] and "
                         "distributed)") from exc
    return distributed


def _check_same_code(client, cversion):
    # what analysis.__main__.code_version computes, without importing __main__ (which imports
    # this module): no import cycle
    from analysis.repro import code_hash

    got = client.run(code_hash, "analysis", "randfeat")
    if not got:
        raise SystemExit(f"python -m analysis: the dask cluster at {client.scheduler.address} "
                         "has no workers")
    bad = sorted(w for w, v in got.items() if v != cversion)
    if bad:
        raise SystemExit(f"python -m analysis: the dask workers {bad} run other analysis/randfeat "
                         f"code (code_version {got[bad[0]][:12]}... != the client's "
                         f"{cversion[:12]}...); install the same version on every worker")


@contextlib.contextmanager
def executor(scheduler, jobs, cversion=None, local=None):
    """A ``concurrent.futures`` executor for the analysis tasks.

    Parameters
    ----------
    scheduler : None, "local", "active" or str
        None: ``ProcessPoolExecutor(jobs)``.  ``"local"``: a new ``LocalCluster`` of
        ``jobs`` worker processes, one thread each.  ``"active"``: the active
        ``distributed.Client``.  Otherwise the address of a dask scheduler.
    jobs : int
        Number of local processes (``None`` and ``"local"``); ignored for a cluster.
    cversion : str, optional
        The client's ``code_version()``; every dask worker must report the same.
    local : type, optional
        The local executor class (default ``concurrent.futures.ProcessPoolExecutor``).

    Yields
    ------
    concurrent.futures.Executor
        ``submit`` returns ``concurrent.futures.Future`` objects (``as_completed`` works).
    """
    if scheduler is None:
        if local is None:
            from concurrent.futures import ProcessPoolExecutor as local
        # the workers start from a fork server, never by forking this process: a process that
        # already runs threads (OpenMP, BLAS, a dask client, a progress bar) can hand a forked
        # child a lock held by one of them, and the pool then waits forever (seen under pytest
        # after a LocalCluster test)
        import multiprocessing

        with local(max_workers=jobs, mp_context=multiprocessing.get_context("forkserver")) as ex:
            yield ex
        return
    distributed = _import_distributed()
    with contextlib.ExitStack() as stack:
        if scheduler == "active":
            try:
                client = distributed.get_client()
            except ValueError as exc:
                raise SystemExit("python -m analysis --scheduler active: no dask Client is "
                                 "active in this process; start one, or pass the scheduler's "
                                 "address (--scheduler tcp://HOST:8786) or 'local'") from exc
        elif scheduler == "local":
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=max(1, int(jobs)), threads_per_worker=1, processes=True,
                dashboard_address=":0"))
            client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
        else:
            try:
                client = stack.enter_context(distributed.Client(scheduler, timeout="30s",
                                                                set_as_default=False))
            except OSError as exc:
                raise SystemExit(f"python -m analysis --scheduler {scheduler}: cannot reach the "
                                 f"dask scheduler ({exc}); give its address as tcp://HOST:PORT, "
                                 "or 'local' / 'active'") from exc
        if cversion is not None:
            _check_same_code(client, cversion)
        ex = client.get_executor(pure=False)
        try:
            yield ex
        finally:
            ex.shutdown(wait=True)
