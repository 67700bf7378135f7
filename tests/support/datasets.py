"""The shared evaluation datasets in tests: the package's loaders, skipped when a folder is absent.

Tests never copy the datasets; a test that needs one on a machine without it is reported as
skipped with the missing path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, ParamSpec, TypeVar

import pytest

from app.replay.datasets import DatasetMissing, default_datasets_dir

DATASETS: Final = default_datasets_dir()

P = ParamSpec("P")
T = TypeVar("T")


def loaded(load: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``load(*args, **kwargs)``, or the test is skipped naming the folder that is missing."""
    try:
        return load(*args, **kwargs)
    except DatasetMissing as missing:
        pytest.skip(str(missing))
