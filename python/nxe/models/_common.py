"""What the reference model builders share: the result they return, weight lookup with shape
checks, and deterministic random weights. No model-specific layer lives here.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ..graph import Graph, Tensor

Weights = Mapping[str, np.ndarray]


class BuiltModel(NamedTuple):
    """A model as a graph: ``inputs`` are the input names in run order, ``output`` the name of
    its one output."""

    graph: Graph
    inputs: tuple[str, ...]
    output: str


class WeightSpec(NamedTuple):
    """One weight a builder needs: name, shape, and ``fan_in`` for random initialisation
    (0 for a bias, -1 for a LayerNorm scale that starts at one)."""

    name: str
    shape: tuple[int, ...]
    fan_in: int


def take_weight(graph: Graph, weights: Weights, spec: WeightSpec) -> Tensor:
    """The constant tensor for ``spec``, named after it, from a float32 copy of the array."""
    if spec.name not in weights:
        raise KeyError(f"weight {spec.name!r} is missing")
    array = np.ascontiguousarray(weights[spec.name], dtype=np.float32)
    if array.shape != spec.shape:
        raise ValueError(f"weight {spec.name!r}: expected shape {list(spec.shape)}, "
                         f"got {list(array.shape)}")
    return graph.constant(array, name=spec.name)


def positive(name: str, value: int) -> int:
    """``value`` as an int, which must be >= 1."""
    number = operator.index(value)
    if number < 1:
        raise ValueError(f"{name} must be >= 1, got {number}")
    return number


def random_weights(specs: list[WeightSpec], seed: int, gain: float) -> dict[str, np.ndarray]:
    """Weights drawn from one seeded generator in ``specs`` order: normal with standard
    deviation gain/sqrt(fan_in) for kernels, small normal values for biases, LayerNorm scales
    around one. The same seed always gives the same arrays."""
    rng = np.random.default_rng(seed)
    result: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.fan_in > 0:
            values = rng.standard_normal(spec.shape) * (gain / np.sqrt(spec.fan_in))
        elif spec.fan_in == 0:
            values = rng.standard_normal(spec.shape) * 0.02
        else:
            values = 1.0 + rng.standard_normal(spec.shape) * 0.02
        result[spec.name] = values.astype(np.float32)
    return result
