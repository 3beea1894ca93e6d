"""A user module for ``hierviz compare --import tests.user_metric``: one metric, one registration.

``mean_norm`` is the mean Euclidean norm of the test embeddings (``z_test``), lower is better; it
touches no package file, only the public :func:`hierviz.metrics.register_metric`.
"""

import numpy as np

from hierviz.metrics import register_metric


def mean_norm(arrays, tree):
    """Mean ‖z‖₂ over the test embeddings: ``arrays["z_test"]`` (n, d) float → a float ≥ 0."""
    return float(np.linalg.norm(np.asarray(arrays["z_test"], dtype=np.float64), axis=1).mean())


# replace=True: importing this module again (tests drop it from sys.modules) rebinds the metric
register_metric("mean_norm", "Mean ‖z‖ ↓", fn=mean_norm, needs=("z_test",), higher_is_better=False, replace=True)
