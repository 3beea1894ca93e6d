"""Dataset loaders, one file per source; importing this package registers the built-in names.

==================  ==========================================================================
module              registers / provides
==================  ==========================================================================
``ham10000``        ``"ham10000-sample"`` (bundled), ``"ham10000"`` (``ham10000_64.npz``)
``cifar100``        ``"cifar100"`` (``cifar100.npz``)
``medmnist``        one name per MedMNIST v2 flag (``"breastmnist"`` ...), :func:`load_medmnist`
``npz``             :func:`load_npz`: any ``.npz`` with ``images``, ``labels`` (and ``classes``,
                    group ids)
``image_folder``    :func:`load_image_folder`: one sub-folder per class
``hier_mnist``      ``"hier-mnist"`` (``mnist/t10k-*``; synthetic digits without it), paper 02 Fig. 3
``newsgroups``      ``"20news"`` (``text/20news-bydate.tar.gz``): TF-IDF vectors, a vector dataset
``news_text``       ``"20news-text"``: the same messages as token sequences, a text dataset (HyILR)
``htc``             texts with multi-label path targets for ``hierviz htc`` (Paper 05): 20news, a
                    synthetic multi-path set, WOS/RCV1-V2/NYT/BGC parsers and ``.jsonl`` files
==================  ==========================================================================

Add a source: a new module here whose loader carries
``@register_dataset("name", default_tree=..., info=DatasetInfo(...))``, imported below.
"""

from hierviz.data.loaders import ham10000 as ham10000  # noqa: I001 (registration order = listing order)
from hierviz.data.loaders import cifar100 as cifar100
from hierviz.data.loaders import medmnist as medmnist
from hierviz.data.loaders import hier_mnist as hier_mnist
from hierviz.data.loaders import newsgroups as newsgroups
from hierviz.data.loaders import news_text as news_text
from hierviz.data.loaders.image_folder import IMAGE_EXTENSIONS, load_image_folder
from hierviz.data.loaders.medmnist import MEDMNIST_CITATION, MEDMNIST_INFO, load_medmnist
from hierviz.data.loaders.npz import load_npz

__all__ = ["IMAGE_EXTENSIONS", "MEDMNIST_CITATION", "MEDMNIST_INFO", "load_image_folder", "load_medmnist", "load_npz"]
