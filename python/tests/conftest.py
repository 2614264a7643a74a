"""pytest setup: the package from python/ (PYTHONPATH) against the library in
ARRAYJIT_LIBRARY (ctest sets both; ./dev python too)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


@pytest.fixture(autouse=True)
def no_handle_leaks():
    """Every test gives back the C API handles it made (an Array's handle
    ends with the Array)."""
    import gc

    import arrayjit as aj
    gc.collect()
    before = aj.live_handles()
    yield
    gc.collect()
    assert aj.live_handles() <= before, "handles leaked: %d -> %d" % (before, aj.live_handles())
