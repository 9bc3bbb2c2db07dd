"""A BERT encoder stack (Devlin et al. 2019) shaped like all-MiniLM-L6-v2 by default: token
embeddings and an additive attention mask in, final hidden states out. No embedding lookup
and no pooling: those belong to the model's frontend and head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph import Graph, Tensor
from ._common import (
    BuiltModel,
    Weights,
    WeightSpec,
    positive,
    random_weights,
    take_weight,
)


@dataclass(frozen=True)
class BertConfig:
    """Sizes of the encoder; the defaults are all-MiniLM-L6-v2's."""

    hidden: int = 384
    heads: int = 12
    intermediate: int = 1536
    layers: int = 6
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "intermediate", "layers"):
            positive(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def bert_weight_specs(config: BertConfig) -> list[WeightSpec]:
    """Weights of every layer, named as in Hugging Face's BertModel (encoder.layer.<i>...);
    dense weights are [out_features, in_features] like torch.nn.Linear."""
    h, f = config.hidden, config.intermediate
    specs: list[WeightSpec] = []

    def dense(prefix: str, cin: int, cout: int) -> None:
        specs.append(WeightSpec(f"{prefix}.weight", (cout, cin), cin))
        specs.append(WeightSpec(f"{prefix}.bias", (cout,), 0))

    def layer_norm(prefix: str) -> None:
        specs.append(WeightSpec(f"{prefix}.weight", (h,), -1))
        specs.append(WeightSpec(f"{prefix}.bias", (h,), 0))

    for i in range(config.layers):
        p = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            dense(f"{p}.attention.self.{part}", h, h)
        dense(f"{p}.attention.output.dense", h, h)
        layer_norm(f"{p}.attention.output.LayerNorm")
        dense(f"{p}.intermediate.dense", h, f)
        dense(f"{p}.output.dense", f, h)
        layer_norm(f"{p}.output.LayerNorm")
    return specs


def bert_random_weights(config: BertConfig | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic random weights for the encoder: the same seed gives the same arrays."""
    return random_weights(bert_weight_specs(config or BertConfig()), seed, gain=1.0)


def bert_encoder(weights: Weights, batch: int, seq_len: int,
                 config: BertConfig | None = None, *, fused_attention: bool = True) -> BuiltModel:
    """The encoder for inputs "embeddings" [batch, seq_len, hidden] f32 (token embeddings,
    already summed and normalized) and "attention_mask" [batch, 1, 1, seq_len] f32 (0 where a
    token is attended, a large negative value where it is masked), giving "hidden_states"
    [batch, seq_len, hidden]. Each layer: Q/K/V dense, split into heads, scaled dot-product
    attention with the mask added before Softmax, heads merged, output dense, residual and
    LayerNorm, then dense -> exact (erf) GELU -> dense, residual and LayerNorm.

    The attention is one ScaledDotProductAttention op (blocked, no [batch, heads, seq_len,
    seq_len] scores in memory); ``fused_attention=False`` writes it out as MatMul -> Mul ->
    Add -> Softmax -> MatMul instead, the same function, for comparisons."""
    config = config or BertConfig()
    b, s = positive("batch", batch), positive("seq_len", seq_len)
    g = Graph()
    w = {spec.name: take_weight(g, weights, spec) for spec in bert_weight_specs(config)}
    x = g.input("embeddings", (b, s, config.hidden), "f32")
    mask = g.input("attention_mask", (b, 1, 1, s), "f32")
    scale = None if fused_attention else g.constant(np.float32(1.0 / math.sqrt(config.head_dim)),
                                                    name="attention_scale")
    for i in range(config.layers):
        x = _layer(g, w, f"encoder.layer.{i}", x, mask, scale, config, b, s)
    g.mark_output(x, name="hidden_states")
    return BuiltModel(g, ("embeddings", "attention_mask"), "hidden_states")


def _layer(g: Graph, w: dict[str, Tensor], p: str, x: Tensor, mask: Tensor,
           scale: Tensor | None, config: BertConfig, batch: int, seq_len: int) -> Tensor:
    heads_shape = [batch, seq_len, config.heads, config.head_dim]

    def dense(t: Tensor, prefix: str) -> Tensor:
        return g.FullyConnected(t, w[f"{prefix}.weight"], w[f"{prefix}.bias"], name=prefix)

    def split_heads(t: Tensor, name: str, perm: list[int]) -> Tensor:
        split = g.Reshape(t, shape=heads_shape, name=f"{name}.split")
        return g.Transpose(split, perm=perm, name=f"{name}.heads")

    def add_norm(t: Tensor, residual: Tensor, prefix: str) -> Tensor:
        summed = g.Add(t, residual, name=f"{prefix}.residual")
        return g.LayerNorm(summed, w[f"{prefix}.weight"], w[f"{prefix}.bias"], axis=-1,
                           epsilon=config.layer_norm_eps, name=prefix)

    a = f"{p}.attention.self"
    q = split_heads(dense(x, f"{a}.query"), f"{a}.query", [0, 2, 1, 3])
    # Keys transposed, [batch, heads, head_dim, seq_len]: what the written-out product takes,
    # and what the fused op reads as cheaply as [batch, heads, seq_len, head_dim].
    k = split_heads(dense(x, f"{a}.key"), f"{a}.key", [0, 2, 3, 1])
    v = split_heads(dense(x, f"{a}.value"), f"{a}.value", [0, 2, 1, 3])
    if scale is None:
        heads = g.ScaledDotProductAttention(q, k, v, mask, scale=1.0 / math.sqrt(config.head_dim),
                                            transposed_keys=1, name=f"{a}.attention")
    else:
        scores = g.Mul(g.MatMul(q, k, name=f"{a}.scores"), scale, name=f"{a}.scaled")
        probs = g.Softmax(g.Add(scores, mask, name=f"{a}.masked"), axis=-1, name=f"{a}.probs")
        heads = g.MatMul(probs, v, name=f"{a}.context")
    context = g.Transpose(heads, perm=[0, 2, 1, 3], name=f"{a}.context.merge")
    context = g.Reshape(context, shape=[batch, seq_len, config.hidden],
                        name=f"{a}.context.flat")
    attended = add_norm(dense(context, f"{p}.attention.output.dense"), x,
                        f"{p}.attention.output.LayerNorm")
    inner = g.Gelu(dense(attended, f"{p}.intermediate.dense"), approximate="none",
                   name=f"{p}.intermediate.gelu")
    return add_norm(dense(inner, f"{p}.output.dense"), attended, f"{p}.output.LayerNorm")
