"""Methods: the registry that ``hierviz compare --methods`` reads (see :mod:`.registry`).

Built-in methods register themselves when their module is imported: :mod:`.paper01`
(SimCLR, SupCon, outside-softmax HC, HXE, soft labels, HWC, LAM, HWC + LAM), and the other
papers' modules; :mod:`.hyilr` registers HyILR and its five ablations (Paper 05). A user module
registers more with :func:`register_method`; ``hierviz compare --import MODULE`` imports it.
"""

# registration order is the order names are listed: the papers in order
# isort: off
from hierviz.methods import (
    paper01,  # noqa: E402,F401  (registers the built-ins)
    paper02,  # noqa: E402,F401  (HMC/HCE/HMCE, G-HMLC, A-HMLC, CE: Paper 02)
    paper03,  # noqa: E402,F401  (HCL, Paper 03)
    paper04,  # noqa: E402,F401  (T, L, PL, B and hybrids, Paper 04)
    hyilr,  # noqa: E402,F401  (HyILR and its five ablations, Paper 05)
)

# isort: on
from hierviz.methods.registry import (
    DEPTH_TERMS,
    LOSS_HPARAMS,
    METHODS,
    RADIAL_HPARAMS,
    HParam,
    Method,
    Needs,
    TrainOverrides,
    add_radial_terms,
    build_objective,
    depth_terms,
    get_method,
    legacy_keys,
    loss_keys,
    namespace_of,
    reads_radial,
    register_hparam,
    register_method,
    upgrade_loss,
)

__all__ = [
    "METHODS",
    "LOSS_HPARAMS",
    "Method",
    "Needs",
    "TrainOverrides",
    "HParam",
    "register_method",
    "register_hparam",
    "get_method",
    "build_objective",
    "RADIAL_HPARAMS",
    "add_radial_terms",
    "depth_terms",
    "DEPTH_TERMS",
    "loss_keys",
    "reads_radial",
    "legacy_keys",
    "upgrade_loss",
    "namespace_of",
]
