"""One call that makes a run's numbers a function of its config and seed alone.

:func:`seed_run` is called at the start of every run (:mod:`hierviz.experiments.run_one`), before
the objective and the model are built, so a run gives the same metrics whether it is the first in
its process or follows other runs (a notebook, a preset of several methods, a sweep).

What it sets, and why each matters:

* Python's ``random``, NumPy's global generator and torch's CPU and CUDA generators
  (:func:`~hierviz.training.loop.seed_everything`): an objective with parameters (e.g. AHMLC's
  attention heads) drew them from whatever state the previous run left.
* TorchScript's graph-executor optimisation, off: geoopt's maps are TorchScript functions that
  switch to optimised graphs after a few warm-up calls, whose float rounding differs. Training
  already ran them unoptimised; the embeddings computed for evaluation did not, so a run's
  ``z_train`` differed in the last bits between a first run and a later one in one process
  (seen: 5 of 43 rows, 7e-9). The switch stays off for the rest of the process.
* cuDNN's autotuner (``torch.backends.cudnn.benchmark``), off (its default): it picks
  convolution algorithms by timing, so two runs could sum in different orders.

The data loader's order and its workers' seeds come from a generator seeded by the run's seed
inside :func:`~hierviz.training.fit`, and the samplers take the seed as an argument, so neither
reads process state. ``torch.use_deterministic_algorithms`` and the thread count are left as the
user set them (``train.threads`` sets the latter per comparison); their effect on the metrics
is measured in ``docs/results/README.md``.

Examples
--------
>>> import random, torch
>>> seed_run(3); a = (random.random(), torch.rand(1).item())
>>> _ = torch.rand(5)  # another run's draws
>>> seed_run(3); (random.random(), torch.rand(1).item()) == a
True
"""

from __future__ import annotations

import torch

from hierviz.training.loop import seed_everything

__all__ = ["seed_run"]


def seed_run(seed: int) -> None:
    """Set every RNG and process-level switch a run's numbers depend on from ``seed``.

    Parameters
    ----------
    seed : int
        The run's seed, a non-negative integer.

    Raises
    ------
    ValueError
        If ``seed`` is negative or not an integer (from :func:`seed_everything`).
    """
    seed_everything(seed)
    set_optimize = getattr(torch._C, "_set_graph_executor_optimize", None)
    if set_optimize is not None:  # what torch.jit.optimized_execution(False) sets, for the whole run
        set_optimize(False)
    torch.backends.cudnn.benchmark = False
