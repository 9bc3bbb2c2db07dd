"""Whisper (Radford et al. 2022) as one nxe graph with two entry points: the audio encoder and
one step of the text decoder with a key/value cache, shaped like whisper-base by default.

The graph (docs/architecture.md, "Whisper model files") holds:

- the encoder: input "encoder.mel" f32 [1, n_mels, 2 * n_audio_ctx] (Whisper's log-mel
  features), outputs "encoder.output" [1, n_audio_ctx, n_audio_state] (after the final
  LayerNorm) and, for every decoder layer l, "encoder.cross_key.{l}" and
  "encoder.cross_value.{l}" [1, n_audio_ctx, n_text_state]: that layer's cross-attention key
  (no bias) and value projections of the encoder output, computed once per 30 s window;
- one decoder step: inputs "decoder.tokens" and "decoder.positions" i32 [B, T] (absolute
  positions), "decoder.mask" f32 [B, 1, T, C + T] (additive: 0 attends, -1e9 is masked; the
  C = n_text_ctx cache slots, then the T new tokens), "decoder.past_key.{l}" and
  "decoder.past_value.{l}" f32 [B, C, n_text_state] (slot i holds position i's key/value),
  "decoder.cross_key.{l}" and "decoder.cross_value.{l}" f32 [1, n_audio_ctx, n_text_state]
  (one audio shared by the B rows); outputs "decoder.logits" f32 [B, n_vocab] of the last of
  the T positions (tied to the token embedding, no bias) and "decoder.key.{l}",
  "decoder.value.{l}" f32 [B, T, n_text_state], the new tokens' self-attention keys and
  values for the caller to store in the cache.

The graph is built with B = 1 and T = 1; every Reshape copies the batch and length (0 / -1),
so other B and T compile after set_shape on the inputs. Select an entry point with
Graph.keep_outputs before compiling (encoder_outputs() / decoder_outputs()).

Weights are named as in Hugging Face's WhisperModel, without the "model." prefix
(whisper_weight_specs); dense weights are [out_features, in_features].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..graph import Graph, Tensor
from ._common import Weights, WeightSpec, positive, random_weights, take_weight

# The additive mask value of a key not attended: exp() of it, after scaling, is 0 in f32.
MASKED_SCORE = -1e9
_END = 2**62


@dataclass(frozen=True)
class WhisperConfig:
    """The ten sizes of a Whisper model (openai-whisper's ModelDimensions names); the defaults
    are whisper-base's."""

    n_mels: int = 80
    n_audio_ctx: int = 1500
    n_audio_state: int = 512
    n_audio_head: int = 8
    n_audio_layer: int = 6
    n_vocab: int = 51865
    n_text_ctx: int = 448
    n_text_state: int = 512
    n_text_head: int = 8
    n_text_layer: int = 6
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for name in self.size_names():
            positive(name, getattr(self, name))
        if self.n_audio_state % self.n_audio_head:
            raise ValueError(f"n_audio_state ({self.n_audio_state}) must be a multiple of "
                             f"n_audio_head ({self.n_audio_head})")
        if self.n_text_state % self.n_text_head:
            raise ValueError(f"n_text_state ({self.n_text_state}) must be a multiple of "
                             f"n_text_head ({self.n_text_head})")
        if not 0 < self.layer_norm_eps < 1:
            raise ValueError(f"layer_norm_eps must be in (0, 1), got {self.layer_norm_eps}")

    @staticmethod
    def size_names() -> tuple[str, ...]:
        return ("n_mels", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
                "n_vocab", "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")

    def sizes(self) -> dict[str, int]:
        """The ten sizes by name (what a model file's metadata "config" holds)."""
        return {name: int(getattr(self, name)) for name in self.size_names()}

    @property
    def n_frames(self) -> int:
        """Mel frames the encoder takes (the stride-2 convolution halves them)."""
        return 2 * self.n_audio_ctx


def _dense_specs(specs: list[WeightSpec], prefix: str, cin: int, cout: int,
                 bias: bool = True) -> None:
    specs.append(WeightSpec(f"{prefix}.weight", (cout, cin), cin))
    if bias:
        specs.append(WeightSpec(f"{prefix}.bias", (cout,), 0))


def _norm_specs(specs: list[WeightSpec], prefix: str, size: int) -> None:
    specs.append(WeightSpec(f"{prefix}.weight", (size,), -1))
    specs.append(WeightSpec(f"{prefix}.bias", (size,), 0))


def _attention_specs(specs: list[WeightSpec], prefix: str, state: int) -> None:
    _dense_specs(specs, f"{prefix}.q_proj", state, state)
    _dense_specs(specs, f"{prefix}.k_proj", state, state, bias=False)
    _dense_specs(specs, f"{prefix}.v_proj", state, state)
    _dense_specs(specs, f"{prefix}.out_proj", state, state)


def _mlp_specs(specs: list[WeightSpec], prefix: str, state: int) -> None:
    _dense_specs(specs, f"{prefix}.fc1", state, 4 * state)
    _dense_specs(specs, f"{prefix}.fc2", 4 * state, state)
    _norm_specs(specs, f"{prefix}.final_layer_norm", state)


def whisper_encoder_specs(config: WhisperConfig) -> list[WeightSpec]:
    """The encoder's weights (Hugging Face WhisperEncoder names under "encoder.")."""
    c, d = config, config.n_audio_state
    specs = [WeightSpec("encoder.conv1.weight", (d, c.n_mels, 3), c.n_mels * 3),
             WeightSpec("encoder.conv1.bias", (d,), 0),
             WeightSpec("encoder.conv2.weight", (d, d, 3), d * 3),
             WeightSpec("encoder.conv2.bias", (d,), 0),
             WeightSpec("encoder.embed_positions.weight", (c.n_audio_ctx, d), 1)]
    for i in range(c.n_audio_layer):
        p = f"encoder.layers.{i}"
        _attention_specs(specs, f"{p}.self_attn", d)
        _norm_specs(specs, f"{p}.self_attn_layer_norm", d)
        _mlp_specs(specs, p, d)
    _norm_specs(specs, "encoder.layer_norm", d)
    return specs


def whisper_decoder_specs(config: WhisperConfig) -> list[WeightSpec]:
    """The decoder's weights (Hugging Face WhisperDecoder names under "decoder."); the
    cross-attention's k_proj/v_proj run on the encoder side of the graph."""
    c, d = config, config.n_text_state
    specs = [WeightSpec("decoder.embed_tokens.weight", (c.n_vocab, d), 1),
             WeightSpec("decoder.embed_positions.weight", (c.n_text_ctx, d), 1)]
    for i in range(c.n_text_layer):
        p = f"decoder.layers.{i}"
        _attention_specs(specs, f"{p}.self_attn", d)
        _norm_specs(specs, f"{p}.self_attn_layer_norm", d)
        _attention_specs(specs, f"{p}.encoder_attn", d)
        _norm_specs(specs, f"{p}.encoder_attn_layer_norm", d)
        _mlp_specs(specs, p, d)
    _norm_specs(specs, "decoder.layer_norm", d)
    return specs


def whisper_weight_specs(config: WhisperConfig | None = None) -> list[WeightSpec]:
    """Every weight of the model: encoder then decoder."""
    config = config or WhisperConfig()
    return whisper_encoder_specs(config) + whisper_decoder_specs(config)


def whisper_random_weights(config: WhisperConfig | None = None, seed: int = 0
                           ) -> dict[str, np.ndarray]:
    """Deterministic random weights (the same seed gives the same arrays)."""
    return random_weights(whisper_weight_specs(config), seed, gain=1.0)


def sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> np.ndarray:
    """Whisper's encoder position table [length, channels] (sines then cosines), f32."""
    if channels % 2 or channels < 4:
        raise ValueError(f"channels must be even and >= 4, got {channels}")
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inverse = np.exp(-increment * np.arange(channels // 2))
    scaled = np.arange(length)[:, None] * inverse[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)


def encoder_outputs(config: WhisperConfig | None = None) -> list[str]:
    """The encoder entry point's outputs (for Graph.keep_outputs)."""
    config = config or WhisperConfig()
    names = ["encoder.output"]
    for i in range(config.n_text_layer):
        names += [f"encoder.cross_key.{i}", f"encoder.cross_value.{i}"]
    return names


def decoder_outputs(config: WhisperConfig | None = None) -> list[str]:
    """The decoder step's outputs (for Graph.keep_outputs)."""
    config = config or WhisperConfig()
    names = ["decoder.logits"]
    for i in range(config.n_text_layer):
        names += [f"decoder.key.{i}", f"decoder.value.{i}"]
    return names


# A replacement for the dense layers: dense(graph, x, prefix, weight [out, in], bias [out])
# -> the layer's f32 output (e.g. an 8-bit product), as nxe.models.bert's DenseBuilder.
DenseBuilder = Callable[[Graph, Tensor, str, np.ndarray, np.ndarray], Tensor]



class _Builder:
    def __init__(self, g: Graph, weights: Weights, config: WhisperConfig,
                 dense: DenseBuilder | None) -> None:
        self.g = g
        self.weights = weights
        self.config = config
        self.dense_builder = dense
        self.constants: dict[str, Tensor] = {}

    def weight(self, name: str, spec: WeightSpec | None = None) -> Tensor:
        if name not in self.constants:
            spec = spec or self.specs[name]
            self.constants[name] = take_weight(self.g, self.weights, spec)
        return self.constants[name]

    def set_specs(self, specs: list[WeightSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}
        for spec in specs:
            if spec.name not in self.weights:
                raise KeyError(f"weight {spec.name!r} is missing")
            shape = tuple(np.shape(self.weights[spec.name]))
            if shape != spec.shape:
                raise ValueError(f"weight {spec.name!r}: expected shape {list(spec.shape)}, "
                                 f"got {list(shape)}")

    def dense(self, x: Tensor, prefix: str, scale: float = 1.0) -> Tensor:
        """x @ W^T + b; ``scale`` multiplies W and b first (a power of two: exact)."""
        w_name, b_name = f"{prefix}.weight", f"{prefix}.bias"
        has_bias = b_name in self.specs
        if self.dense_builder is not None:
            weight = np.asarray(self.weights[w_name], np.float32) * np.float32(scale)
            bias = (np.asarray(self.weights[b_name], np.float32) * np.float32(scale)
                    if has_bias else np.zeros(weight.shape[0], np.float32))
            return self.dense_builder(self.g, x, prefix, weight, bias)
        if scale != 1.0:
            weight = self.g.constant(np.asarray(self.weights[w_name], np.float32)
                                     * np.float32(scale), name=f"{w_name}.scaled")
            bias = (self.g.constant(np.asarray(self.weights[b_name], np.float32)
                                    * np.float32(scale), name=f"{b_name}.scaled")
                    if has_bias else None)
        else:
            weight = self.weight(w_name)
            bias = self.weight(b_name) if has_bias else None
        inputs = [x, weight] + ([bias] if bias is not None else [])
        return self.g.FullyConnected(*inputs, name=prefix)

    def norm(self, x: Tensor, prefix: str) -> Tensor:
        return self.g.LayerNorm(x, self.weight(f"{prefix}.weight"),
                                self.weight(f"{prefix}.bias"), axis=-1,
                                epsilon=self.config.layer_norm_eps, name=prefix)

    def heads(self, t: Tensor, name: str, heads: int, perm: list[int]) -> Tensor:
        split = self.g.Reshape(t, shape=[0, 0, heads, -1], name=f"{name}.split")
        return self.g.Transpose(split, perm=perm, name=f"{name}.heads")

    def merge(self, t: Tensor, name: str, state: int) -> Tensor:
        merged = self.g.Transpose(t, perm=[0, 2, 1, 3], name=f"{name}.merge")
        return self.g.Reshape(merged, shape=[0, 0, state], name=f"{name}.flat")

    def mlp(self, x: Tensor, p: str) -> Tensor:
        h = self.norm(x, f"{p}.final_layer_norm")
        inner = self.g.Gelu(self.dense(h, f"{p}.fc1"), approximate="none", name=f"{p}.gelu")
        return self.g.Add(x, self.dense(inner, f"{p}.fc2"), name=f"{p}.mlp_residual")


def _build_encoder(b: _Builder) -> None:
    g, c = b.g, b.config
    d, heads = c.n_audio_state, c.n_audio_head
    head_dim = d // heads
    mel = g.input("encoder.mel", (1, c.n_mels, c.n_frames), "f32")
    x = g.Conv1d(mel, b.weight("encoder.conv1.weight"), b.weight("encoder.conv1.bias"),
                 pads=[1, 1], name="encoder.conv1")
    x = g.Gelu(x, approximate="none", name="encoder.conv1.gelu")
    x = g.Conv1d(x, b.weight("encoder.conv2.weight"), b.weight("encoder.conv2.bias"),
                 strides=[2], pads=[1, 1], name="encoder.conv2")
    x = g.Gelu(x, approximate="none", name="encoder.conv2.gelu")
    x = g.Transpose(x, perm=[0, 2, 1], name="encoder.frames")
    x = g.Add(x, b.weight("encoder.embed_positions.weight"), name="encoder.positioned")
    for i in range(c.n_audio_layer):
        p = f"encoder.layers.{i}"
        a = f"{p}.self_attn"
        h = b.norm(x, f"{p}.self_attn_layer_norm")
        q = b.heads(b.dense(h, f"{a}.q_proj"), f"{a}.q", heads, [0, 2, 1, 3])
        k = b.heads(b.dense(h, f"{a}.k_proj"), f"{a}.k", heads, [0, 2, 3, 1])
        v = b.heads(b.dense(h, f"{a}.v_proj"), f"{a}.v", heads, [0, 2, 1, 3])
        context = g.ScaledDotProductAttention(q, k, v, scale=1.0 / math.sqrt(head_dim),
                                              transposed_keys=1, name=f"{a}.attention")
        context = b.merge(context, a, d)
        x = g.Add(x, b.dense(context, f"{a}.out_proj"), name=f"{a}.residual")
        x = b.mlp(x, p)
    out = b.norm(x, "encoder.layer_norm")
    g.mark_output(out, name="encoder.output")
    for i in range(c.n_text_layer):
        a = f"decoder.layers.{i}.encoder_attn"
        g.mark_output(b.dense(out, f"{a}.k_proj"), name=f"encoder.cross_key.{i}")
        g.mark_output(b.dense(out, f"{a}.v_proj"), name=f"encoder.cross_value.{i}")


def _build_decoder(b: _Builder) -> None:
    g, c = b.g, b.config
    d, heads = c.n_text_state, c.n_text_head
    head_dim = d // heads
    scale = 1.0 / math.sqrt(head_dim)
    tokens = g.input("decoder.tokens", (1, 1), "i32")
    positions = g.input("decoder.positions", (1, 1), "i32")
    mask = g.input("decoder.mask", (1, 1, 1, c.n_text_ctx + 1), "f32")
    embedding = b.weight("decoder.embed_tokens.weight")
    x = g.Add(g.Gather(embedding, tokens, axis=0, name="decoder.token_embedding"),
              g.Gather(b.weight("decoder.embed_positions.weight"), positions, axis=0,
                       name="decoder.position_embedding"), name="decoder.embedded")
    for i in range(c.n_text_layer):
        p = f"decoder.layers.{i}"
        a = f"{p}.self_attn"
        past_key = g.input(f"decoder.past_key.{i}", (1, c.n_text_ctx, d), "f32")
        past_value = g.input(f"decoder.past_value.{i}", (1, c.n_text_ctx, d), "f32")
        h = b.norm(x, f"{p}.self_attn_layer_norm")
        q = b.heads(b.dense(h, f"{a}.q_proj"), f"{a}.q", heads, [0, 2, 1, 3])
        key = b.dense(h, f"{a}.k_proj")
        value = b.dense(h, f"{a}.v_proj")
        g.mark_output(key, name=f"decoder.key.{i}")
        g.mark_output(value, name=f"decoder.value.{i}")
        keys = g.Concat(past_key, key, axis=1, name=f"{a}.keys")
        values = g.Concat(past_value, value, axis=1, name=f"{a}.values")
        k = b.heads(keys, f"{a}.k", heads, [0, 2, 3, 1])
        v = b.heads(values, f"{a}.v", heads, [0, 2, 1, 3])
        context = g.ScaledDotProductAttention(q, k, v, mask, scale=scale, transposed_keys=1,
                                              name=f"{a}.attention")
        x = g.Add(x, b.dense(b.merge(context, a, d), f"{a}.out_proj"), name=f"{a}.residual")

        # Cross-attention: the keys and values are one audio's [1, n_audio_ctx, d], which
        # MatMul broadcasts over the B rows (ScaledDotProductAttention wants equal batches).
        a = f"{p}.encoder_attn"
        cross_key = g.input(f"decoder.cross_key.{i}", (1, c.n_audio_ctx, d), "f32")
        cross_value = g.input(f"decoder.cross_value.{i}", (1, c.n_audio_ctx, d), "f32")
        h = b.norm(x, f"{p}.encoder_attn_layer_norm")
        # 1/sqrt(head_dim) is folded into the query projection (exact when head_dim is a
        # power of four, as 64 is).
        q = b.heads(b.dense(h, f"{a}.q_proj", scale=scale), f"{a}.q", heads, [0, 2, 1, 3])
        k = b.heads(cross_key, f"{a}.k", heads, [0, 2, 3, 1])
        v = b.heads(cross_value, f"{a}.v", heads, [0, 2, 1, 3])
        scores = g.MatMul(q, k, name=f"{a}.scores")
        probs = g.Softmax(scores, axis=-1, name=f"{a}.probs")
        context = g.MatMul(probs, v, name=f"{a}.context")
        x = g.Add(x, b.dense(b.merge(context, a, d), f"{a}.out_proj"), name=f"{a}.residual")
        x = b.mlp(x, p)
    last = g.Slice(x, starts=[-1], ends=[_END], axes=[1], name="decoder.last")
    last = b.norm(last, "decoder.layer_norm")
    logits = g.FullyConnected(last, embedding, name="decoder.logits.product")
    g.mark_output(g.Reshape(logits, shape=[0, -1], name="decoder.logits.flat"),
                  name="decoder.logits")


def whisper_model(weights: Weights, config: WhisperConfig | None = None, *,
                  mel_filters: np.ndarray | None = None,
                  dense: DenseBuilder | None = None) -> Graph:
    """The one graph of a Whisper model (see the module's docstring): the constant
    "mel_filters" [n_mels, n_fft / 2 + 1] when given, the encoder and the decoder step.
    ``dense`` builds the attention and MLP dense layers in place of FullyConnected with f32
    constants (e.g. 8-bit products); the logits projection stays f32, tied to the token
    embedding."""
    config = config or WhisperConfig()
    g = Graph()
    try:
        b = _Builder(g, weights, config, dense)
        b.set_specs(whisper_weight_specs(config))
        if mel_filters is not None:
            filters = np.ascontiguousarray(mel_filters, np.float32)
            if filters.ndim != 2 or filters.shape[0] != config.n_mels:
                raise ValueError(f"mel_filters must be [{config.n_mels}, n_fft / 2 + 1], got "
                                 f"{list(filters.shape)}")
            g.constant(filters, name="mel_filters")
        _build_encoder(b)
        _build_decoder(b)
    except BaseException:
        g.close()
        raise
    return g


__all__ = ["MASKED_SCORE", "DenseBuilder", "WhisperConfig", "decoder_outputs",
           "encoder_outputs", "sinusoids", "whisper_decoder_specs", "whisper_encoder_specs",
           "whisper_model", "whisper_random_weights", "whisper_weight_specs"]
