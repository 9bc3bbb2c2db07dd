"""Shared pytest fixtures. Tests import the installed nxe package (pip install .), never the
source tree: python/ is not on sys.path."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator, so a failure reproduces."""
    return np.random.default_rng(20261129)


@pytest.fixture(scope="session")
def whisper_cache(tmp_path_factory):
    """An nxe cache folder holding whisper-base baked at fp32 by name, as users get it, made
    once per test session and shared by every speech test: a temporary folder, or the one
    NXE_TEST_ASR_CACHE names (reused between runs; the bake's cache key checks that what it
    finds there is still the packages' model). Baked in a subprocess so that the cache
    variable stays out of this process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from asr_testing import whisper_packages

    whisper_packages()
    given = os.environ.get("NXE_TEST_ASR_CACHE")
    folder = Path(given) if given else tmp_path_factory.mktemp("nxe-cache")
    result = subprocess.run(
        [sys.executable, "-c", "from nxe.bake_whisper import resolve_asr_model; "
         "print(resolve_asr_model('whisper-base'))"],
        env=dict(os.environ, NXE_CACHE_DIR=str(folder)), capture_output=True, text=True,
        timeout=1800)
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.is_file() and folder in path.parents, path
    return folder, path
