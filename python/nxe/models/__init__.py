"""Reference models built with the graph API from numpy weights: ESPCN, EDSR-baseline, a
BERT encoder and Whisper (its encoder and decoder step in one graph). They define what the
engine must run exactly; they hold no weights themselves.

    weights = nxe.models.edsr_random_weights(scale=2, seed=0)
    model = nxe.models.edsr_baseline(weights, height=64, width=64)
    upscaled = model.graph.compile().run(rgb)[model.output]
"""

from __future__ import annotations

from ._common import BuiltModel, WeightSpec
from .bert import (
    MASKED_SCORE,
    BertConfig,
    bert_embedding_specs,
    bert_encoder,
    bert_model,
    bert_random_weights,
    bert_weight_specs,
)
from .edsr import edsr_baseline, edsr_random_weights, edsr_receptive_radius, edsr_weight_specs
from .espcn import espcn, espcn_random_weights, espcn_receptive_radius, espcn_weight_specs
from .whisper import (
    WhisperConfig,
    whisper_model,
    whisper_random_weights,
    whisper_weight_specs,
)

__all__ = [
    "MASKED_SCORE",
    "BertConfig",
    "BuiltModel",
    "WeightSpec",
    "WhisperConfig",
    "bert_embedding_specs",
    "bert_encoder",
    "bert_model",
    "bert_random_weights",
    "bert_weight_specs",
    "edsr_baseline",
    "edsr_random_weights",
    "edsr_receptive_radius",
    "edsr_weight_specs",
    "espcn",
    "espcn_random_weights",
    "espcn_receptive_radius",
    "espcn_weight_specs",
    "whisper_model",
    "whisper_random_weights",
    "whisper_weight_specs",
]
