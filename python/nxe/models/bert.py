"""A BERT encoder stack (Devlin et al. 2019) shaped like all-MiniLM-L6-v2 by default: token
embeddings and an additive attention mask in, final hidden states out. No embedding lookup
and no pooling: those belong to the model's frontend and head.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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
    # The embedding tables (bert_model only): BERT's uncased vocabulary, 512 positions and
    # two segment types, as all-MiniLM-L6-v2 has them.
    vocab_size: int = 30522
    max_position_embeddings: int = 512
    type_vocab_size: int = 2

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "intermediate", "layers", "vocab_size",
                     "max_position_embeddings", "type_vocab_size"):
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


def bert_embedding_specs(config: BertConfig) -> list[WeightSpec]:
    """The embedding tables and their LayerNorm, named as in Hugging Face's BertModel."""
    h = config.hidden
    return [WeightSpec("embeddings.word_embeddings.weight", (config.vocab_size, h), 1),
            WeightSpec("embeddings.position_embeddings.weight",
                       (config.max_position_embeddings, h), 1),
            WeightSpec("embeddings.token_type_embeddings.weight", (config.type_vocab_size, h), 1),
            WeightSpec("embeddings.LayerNorm.weight", (h,), -1),
            WeightSpec("embeddings.LayerNorm.bias", (h,), 0)]


def bert_random_weights(config: BertConfig | None = None, seed: int = 0, *,
                        embeddings: bool = False) -> dict[str, np.ndarray]:
    """Deterministic random weights for the encoder (and, with ``embeddings``, the embedding
    tables bert_model needs): the same seed gives the same arrays."""
    config = config or BertConfig()
    specs = (bert_embedding_specs(config) if embeddings else []) + bert_weight_specs(config)
    return random_weights(specs, seed, gain=1.0)


# A replacement for the encoder's dense layers (bert_model's ``dense``): called as
# dense(graph, x, prefix, weight, bias) with the layer's name ("encoder.layer.0.attention.
# self.query", ...) and its weight [out, in] and bias [out] arrays, it returns the layer's
# f32 output [..., out] (e.g. an 8-bit product).
DenseBuilder = Callable[[Graph, Tensor, str, np.ndarray, np.ndarray], Tensor]


def _is_dense(name: str) -> bool:
    return not name.rsplit(".", 2)[-2].startswith("LayerNorm")


# The additive mask value of a padded key: exp() of it, after scaling, is exactly 0 in f32.
MASKED_SCORE = -1e9


def bert_model(weights: Weights, batch: int, seq_len: int, config: BertConfig | None = None,
               *, dense: DenseBuilder | None = None) -> BuiltModel:
    """The whole BertModel up to its last hidden states, from token ids: inputs "input_ids"
    [batch, seq_len] i32, "token_type_ids" [batch, seq_len] i32, "position_ids" [1, seq_len]
    i32 (0, 1, ... for one right-padded sequence) and "attention_mask" [batch, seq_len] f32
    (1 for a token, 0 for padding); output "hidden_states" [batch, seq_len, hidden] f32.

    Word, position and segment embeddings are gathered, summed and normalized, the mask
    becomes additive ((mask - 1) * 1e9, shaped [batch, 1, 1, seq_len]) and the encoder layers
    follow. Every reshape copies the batch and length from its input, so the graph compiles
    for other sizes after its inputs' shapes are set. No pooling: that is the model's head.

    ``dense`` (a DenseBuilder) builds every encoder dense layer in place of FullyConnected
    with f32 constants; the weights it is given are checked for shape first and are not
    otherwise added to the graph."""
    config = config or BertConfig()
    b, s = positive("batch", batch), positive("seq_len", seq_len)
    if s > config.max_position_embeddings:
        raise ValueError(f"seq_len {s} exceeds max_position_embeddings "
                         f"{config.max_position_embeddings}")
    g = Graph()
    e = {spec.name: take_weight(g, weights, spec) for spec in bert_embedding_specs(config)}
    w: dict[str, Tensor] = {}
    for spec in bert_weight_specs(config):
        if dense is None or not _is_dense(spec.name):
            w[spec.name] = take_weight(g, weights, spec)
        elif spec.name not in weights:
            raise KeyError(f"weight {spec.name!r} is missing")
        elif np.shape(weights[spec.name]) != spec.shape:
            raise ValueError(f"weight {spec.name!r}: expected shape {list(spec.shape)}, "
                             f"got {list(np.shape(weights[spec.name]))}")

    def dense_layer(t: Tensor, prefix: str) -> Tensor:
        if dense is None:
            return g.FullyConnected(t, w[f"{prefix}.weight"], w[f"{prefix}.bias"], name=prefix)
        return dense(g, t, prefix, np.asarray(weights[f"{prefix}.weight"], np.float32),
                     np.asarray(weights[f"{prefix}.bias"], np.float32))

    ids = g.input("input_ids", (b, s), "i32")
    types = g.input("token_type_ids", (b, s), "i32")
    positions = g.input("position_ids", (1, s), "i32")
    mask = g.input("attention_mask", (b, s), "f32")
    words = g.Gather(e["embeddings.word_embeddings.weight"], ids, axis=0,
                     name="embeddings.words")
    segments = g.Gather(e["embeddings.token_type_embeddings.weight"], types, axis=0,
                        name="embeddings.segments")
    places = g.Gather(e["embeddings.position_embeddings.weight"], positions, axis=0,
                      name="embeddings.positions")
    x = g.Add(g.Add(words, segments, name="embeddings.sum"), places,
              name="embeddings.sum_positions")
    x = g.LayerNorm(x, e["embeddings.LayerNorm.weight"], e["embeddings.LayerNorm.bias"],
                    axis=-1, epsilon=config.layer_norm_eps, name="embeddings.LayerNorm")
    one = g.constant(np.float32(1.0), name="attention_mask.one")
    big = g.constant(np.float32(-MASKED_SCORE), name="attention_mask.scale")
    additive = g.Mul(g.Sub(mask, one, name="attention_mask.inverted"), big,
                     name="attention_mask.additive")
    additive = g.Reshape(additive, shape=[0, 1, 1, -1], name="attention_mask.heads")
    for i in range(config.layers):
        x = _layer(g, w, f"encoder.layer.{i}", x, additive, None, config, dense_layer)
    g.mark_output(x, name="hidden_states")
    return BuiltModel(g, ("input_ids", "token_type_ids", "position_ids", "attention_mask"),
                      "hidden_states")


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
    def dense_layer(t: Tensor, prefix: str) -> Tensor:
        return g.FullyConnected(t, w[f"{prefix}.weight"], w[f"{prefix}.bias"], name=prefix)

    for i in range(config.layers):
        x = _layer(g, w, f"encoder.layer.{i}", x, mask, scale, config, dense_layer)
    g.mark_output(x, name="hidden_states")
    return BuiltModel(g, ("embeddings", "attention_mask"), "hidden_states")


def _layer(g: Graph, w: dict[str, Tensor], p: str, x: Tensor, mask: Tensor,
           scale: Tensor | None, config: BertConfig,
           dense: Callable[[Tensor, str], Tensor]) -> Tensor:
    # 0 copies the input's dimension: the same graph serves any batch and length that the
    # inputs are later set to (nxe_tensor_set_shape), as the engine's embedding kind does.
    heads_shape = [0, 0, config.heads, config.head_dim]

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
    context = g.Reshape(context, shape=[0, 0, config.hidden],
                        name=f"{a}.context.flat")
    attended = add_norm(dense(context, f"{p}.attention.output.dense"), x,
                        f"{p}.attention.output.LayerNorm")
    inner = g.Gelu(dense(attended, f"{p}.intermediate.dense"), approximate="none",
                   name=f"{p}.intermediate.gelu")
    return add_norm(dense(inner, f"{p}.output.dense"), attended, f"{p}.output.LayerNorm")
