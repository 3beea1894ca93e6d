"""Experiments as a library: a typed config, presets, and ``compare(config)``.

>>> from hierviz.experiments import resolve_config
>>> cfg = resolve_config("quick", ["loss.tau=0.2"])
>>> cfg.methods, cfg.loss["tau"]
(['supcon', 'hwc', 'hwc+lam'], 0.2)

``compare(cfg)`` trains every method × geometry × seed, writes the run folders, the
results table and the HTML report, and returns a :class:`CompareResult`. The CLI
(``hierviz compare --preset quick --set loss.tau=0.2``) and the notebooks call it.
"""

from hierviz.experiments.compare import CompareResult, compare, limit_indices, load_data, report
from hierviz.experiments.config import (
    PRESETS,
    ConfigError,
    DataConfig,
    EvalConfig,
    ExperimentConfig,
    ModelConfig,
    TrainSection,
    apply_overrides,
    config_keys,
    load_preset,
    preset_names,
    resolve_config,
    validate,
)
from hierviz.experiments.features import export_run
from hierviz.experiments.records import check_mergeable, diff_keys, fingerprint, load_records, run_name
from hierviz.experiments.sweep import best_grid_value, sweep, sweep_curve

__all__ = [
    "ExperimentConfig",
    "DataConfig",
    "ModelConfig",
    "TrainSection",
    "EvalConfig",
    "ConfigError",
    "PRESETS",
    "preset_names",
    "load_preset",
    "resolve_config",
    "apply_overrides",
    "validate",
    "config_keys",
    "fingerprint",
    "diff_keys",
    "compare",
    "sweep",
    "sweep_curve",
    "best_grid_value",
    "report",
    "CompareResult",
    "load_data",
    "limit_indices",
    "load_records",
    "check_mergeable",
    "run_name",
    "export_run",
]
