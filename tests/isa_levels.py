"""The ISA levels the kernel tests sweep, as pytest parameters: a level this process can run
(nxe.cpu_info(): the machine's level, or lower under an NXE_ISA cap on the test run) is a plain
parameter; a level above it is skipped with the reason, never passed by running another
level's kernels. Tests that run a level in a child process check that it ran at that level."""

from __future__ import annotations

import nxe
import pytest

# Lowest first, the names NXE_ISA takes and nxe.cpu_info()["isa"] reports (kernels/list.h).
LEVELS = ["scalar", "avx2", "avx512", "amx"]


def level_params(levels: list[str] = LEVELS) -> list:
    """`levels` as parameters, those above this process's level marked skip with the reason."""
    info = nxe.cpu_info()
    top = LEVELS.index(info["isa"])
    reason = f"this process runs at most {info['isa']} ({info['reason']})"
    return [level if LEVELS.index(level) <= top
            else pytest.param(level, marks=pytest.mark.skip(reason=f"{level}: {reason}"))
            for level in levels]
