"""hierviz.course: the notebooks' SMOKE / SIZE convention."""

from __future__ import annotations

from unittest import mock

import pytest

from hierviz.course import SIZES, by_size, resolve_size


@pytest.mark.parametrize("size", SIZES)
def test_smoke_wins_over_any_size(size):
    assert resolve_size(True, size) == "smoke"
    assert resolve_size(True, "auto", cuda=True) == "smoke"


@pytest.mark.parametrize("size", SIZES)
def test_explicit_size_is_kept_case_insensitive(size):
    assert resolve_size(False, size) == size
    assert resolve_size(False, size.upper(), cuda=True) == size


def test_auto_is_full_on_cuda_medium_on_cpu():
    assert resolve_size(False, "auto", cuda=True) == "full"
    assert resolve_size(False, "auto", cuda=False) == "medium"
    with mock.patch("torch.cuda.is_available", return_value=False):
        assert resolve_size() == "medium"
    with mock.patch("torch.cuda.is_available", return_value=True):
        assert resolve_size() == "full"


@pytest.mark.parametrize("bad", ["large", "", None, 3])
def test_bad_size_names_the_argument(bad):
    with pytest.raises(ValueError, match="SIZE must be one of"):
        resolve_size(False, bad)


def test_bad_smoke_names_the_argument():
    with pytest.raises(ValueError, match="SMOKE must be True or False"):
        resolve_size("yes", "auto")


def test_by_size_picks_the_named_value():
    assert [by_size(s, 1, 2, 3) for s in SIZES] == [1, 2, 3]
    with pytest.raises(ValueError, match="resolve 'auto'"):
        by_size("auto", 1, 2, 3)
