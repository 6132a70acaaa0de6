"""The LightGBM baseline: time-aware aggregate features on rdl's own task tables.

The classic alternative to relational deep learning, and the bar rdl's GNN
must clear: the same label rows and splits, features aggregated in DuckDB
from the schema alone (no row later than a label's cutoff), LightGBM for
binary, regression and multiclass tasks, and "own past items, then popular
ones" for recommendation. Imports neither torch nor LightGBM until a run.
"""
from rdl.baseline.features import (
    BaselineError,
    Features,
    compute_features,
    feature_table,
)
from rdl.baseline.run import BaselineOptions, BaselineResult, read_config, run_baseline
from rdl.baseline.windows import DEFAULT_WINDOWS, data_windows

__all__ = [
    "DEFAULT_WINDOWS",
    "BaselineError",
    "BaselineOptions",
    "BaselineResult",
    "Features",
    "compute_features",
    "data_windows",
    "feature_table",
    "read_config",
    "run_baseline",
]
