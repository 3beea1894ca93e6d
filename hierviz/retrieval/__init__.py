"""Hyperbolic retrieval (Paper 03 (Hyper-DINO) §2.4, §3): the reference index and the protocol.

* :mod:`.index`: :class:`ReferenceIndex` (exact Poincaré k-NN as one GEMM on augmented
  vectors, in batches on CPU or GPU, ``log_0`` tangent storage in 16 bits a coordinate: 64 bytes
  per image at d = 32 plus a 4-byte norm; Poincaré or Lorentz points), :func:`storage_distance_error`,
  :func:`merge_results`;
  :mod:`.faiss_backend`: ``ReferenceIndex(backend="faiss", kind="flat" | "ivf" | "hnsw")``,
  also ``eval.index`` of ``hierviz compare --protocol retrieval``;
* :mod:`.protocol`: :func:`run_retrieval`, the grid over 5 grouped folds as one
  :func:`hierviz.experiments.compare` plan (``hierviz retrieval`` is an alias of
  ``compare``); :mod:`.grid`: the grid's variants as ``compare`` methods (PCA(N)/NCA(N)/scaled,
  the mapper, the cosine control), each fold a run of the ``retrieval-folds`` protocol;
* :mod:`.config`: :class:`RetrievalConfig`, :data:`RETRIEVAL_PRESETS`; :mod:`.tables`: Table 2
  from the run records (:func:`summarise`, :func:`table2_markdown`, the paired fold
  differences); :mod:`.train`: :func:`train_mapper` (the mapper +
  HCL through :func:`hierviz.training.fit`, the loop of ``hierviz compare``); :mod:`.dataset`:
  :func:`register_features` (a features file as a named vector dataset of ``compare``);
* :mod:`.hcl_demo`: notebook 07's HCL demo, a 2-D mapper trained on toy blobs (:func:`hcl_train`)
  and the panel's precomputed grid (:func:`hcl_grid`, :func:`write_hcl_grid`), which
  :mod:`hierviz.viz.retrieval` draws.

From the shell: ``hierviz retrieval --features F.npz --preset quick --out DIR``.
"""

from hierviz.retrieval.dataset import register_features
from hierviz.retrieval.hcl_demo import HCL_GRID, hcl_grid, hcl_toy_features, hcl_train, write_hcl_grid
from hierviz.retrieval.index import (
    STORAGES,
    ReferenceIndex,
    decode_points,
    encode_points,
    storage_distance_error,
    storage_error_curve,
)
from hierviz.retrieval.protocol import (
    RETRIEVAL_PRESETS,
    RetrievalConfig,
    grouped_folds,
    rebuild_tables,
    retrieval_metrics,
    run_retrieval,
    summarise,
    table2_markdown,
    train_mapper,
    variant_name,
)


def _register_indexes() -> None:
    """The FAISS values of ``eval.index`` (``hierviz compare --protocol retrieval``)."""
    from hierviz.evaluation.retrieval import INDEXES  # cycle: hierviz.evaluation.retrieval imports hierviz.retrieval

    for kind in ("flat", "ivf", "hnsw"):
        if f"faiss-{kind}" not in INDEXES:
            INDEXES.register(f"faiss-{kind}")(
                lambda points, geometry, kind=kind: ReferenceIndex(
                    points, geometry=geometry, storage="fp32", backend="faiss", kind=kind
                )
            )


_register_indexes()

__all__ = [
    "register_features",
    "STORAGES",
    "ReferenceIndex",
    "encode_points",
    "decode_points",
    "storage_distance_error",
    "storage_error_curve",
    "RETRIEVAL_PRESETS",
    "RetrievalConfig",
    "retrieval_metrics",
    "train_mapper",
    "grouped_folds",
    "run_retrieval",
    "rebuild_tables",
    "summarise",
    "table2_markdown",
    "variant_name",
    "HCL_GRID",
    "hcl_toy_features",
    "hcl_train",
    "hcl_grid",
    "write_hcl_grid",
]
