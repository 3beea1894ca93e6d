"""A user module for ``hierviz compare --import tests.declared_protocol``: protocols with their own split.

``even-odd`` is registered through the public :func:`hierviz.evaluation.register_protocol` only, declaring its
split as a keyword: the classification probe, trained on the even rows of the data and tested on the odd
ones. ``old-even-odd`` is the same protocol written the pre-0.4 way (a function of ``(model, train_data,
test_data, tree, geometry, **keywords)`` whose split is set as an attribute), which still runs, with
DeprecationWarnings. Each call's context is kept in ``CONTEXTS`` and each split's rows in ``SPLITS``.
"""

import numpy as np

from hierviz.evaluation import EvalContext, classification_protocol, register_protocol

#: ``(protocol name, EvalContext)`` of every evaluation, in call order.
CONTEXTS: list[tuple[str, EvalContext]] = []
#: ``(number of rows, seed, fold)`` of every split made.
SPLITS: list[tuple[int, int, int]] = []


def even_odd_split(labels, groups=None, *, num_leaves, seed, fold):
    """Rows 0, 2, 4, … train and rows 1, 3, 5, … test (``val`` empty): ``{"train", "val", "test"}`` int64 indices."""
    rows = np.arange(len(labels), dtype=np.int64)
    SPLITS.append((len(rows), seed, fold))
    return {"train": rows[::2], "val": rows[:0], "test": rows[1::2]}


# replace=True: importing this module again (tests drop it from sys.modules) rebinds the protocols
@register_protocol("even-odd", make_split=even_odd_split, replace=True)
def even_odd(ctx):
    """The classification probe on the even/odd row split."""
    CONTEXTS.append(("even-odd", ctx))
    return classification_protocol(ctx)


@register_protocol("old-even-odd", replace=True)
def old_even_odd(model, train_data, test_data, tree, geometry, **keywords):
    ctx = EvalContext(model=model, train_data=train_data, test_data=test_data, tree=tree, geometry=geometry, **keywords)
    CONTEXTS.append(("old-even-odd", ctx))
    return classification_protocol(ctx)


old_even_odd.make_split = even_odd_split
