"""Shared pytest fixtures. Tests import the installed nxe package (pip install .), never the
source tree: python/ is not on sys.path."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator, so a failure reproduces."""
    return np.random.default_rng(20261129)
