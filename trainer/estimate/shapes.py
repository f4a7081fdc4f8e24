"""What the estimate reads besides the run: a model's shape and the accelerator it runs on.

:class:`ModelShape` (from a Hugging Face ``config.json`` dict, :func:`model_shape`, or one of
:data:`KNOWN_SHAPES`, the Qwen2.5 checkpoints the presets train), the :class:`GPU` figures in
:data:`GPUS`, and :func:`lora_parameters`, the parameter count of LoRA adapters on a shape.
The arithmetic that uses them is :mod:`verimath.trainer.estimate.budget`.
"""

from __future__ import annotations

from dataclasses import dataclass

KNOWN_SHAPES: dict[str, dict] = {
    # Hugging Face config.json values of the Qwen2.5 checkpoints the presets train.
    "Qwen2.5-32B": {"model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 27648,
                    "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8,
                    "vocab_size": 152064, "max_position_embeddings": 131072,
                    "tie_word_embeddings": False},
    "Qwen2.5-Math-7B": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
                        "num_hidden_layers": 28, "num_attention_heads": 28,
                        "num_key_value_heads": 4, "vocab_size": 152064,
                        "max_position_embeddings": 4096, "tie_word_embeddings": False},
    "Qwen2.5-1.5B": {"model_type": "qwen2", "hidden_size": 1536, "intermediate_size": 8960,
                     "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
                     "vocab_size": 151936, "max_position_embeddings": 131072,
                     "tie_word_embeddings": True},
    "Qwen2.5-0.5B": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
                     "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                     "vocab_size": 151936, "max_position_embeddings": 32768,
                     "tie_word_embeddings": True},
}


@dataclass(frozen=True)
class GPU:
    """An accelerator: memory, dense bf16 peak and memory bandwidth (vendor figures)."""

    name: str
    memory_gib: float
    bf16_tflops: float
    """Dense (not sparse) bf16 tensor-core peak, TFLOP/s."""
    hbm_tbps: float
    """Memory bandwidth, TB/s."""


GPUS: dict[str, GPU] = {
    "H100": GPU("H100", 80, 989, 3.35),  # SXM
    "H200": GPU("H200", 141, 989, 4.8),
    "A100": GPU("A100", 80, 312, 2.0),  # 80 GB SXM
}


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that memory and FLOPs depend on."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    qkv_bias: bool = True
    max_positions: int | None = None

    @property
    def parameters(self) -> int:
        """Parameter count (tied embeddings once)."""
        return self.embedding_parameters + self.layers * self.layer_parameters + self.hidden

    @property
    def embedding_parameters(self) -> int:
        """Input embedding plus the output head when it is not tied."""
        return self.vocab * self.hidden * (1 if self.tied else 2)

    @property
    def layer_parameters(self) -> int:
        """One decoder layer: q/k/v/o projections, the gated MLP, two norms."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        bias = (q + 2 * kv) if self.qkv_bias else 0
        return 2 * self.hidden * q + 2 * self.hidden * kv + bias \
            + 3 * self.hidden * self.intermediate + 2 * self.hidden


LORA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The decoder's linear layers by their Qwen2/Llama names (``all-linear`` adapts them all)."""


def lora_parameters(shape: ModelShape, rank: int, targets=("all-linear",)) -> int:
    """Parameters of rank-``rank`` LoRA adapters, ``rank x (in + out)`` per adapted
    projection of every layer; names outside :data:`LORA_PROJECTIONS` count nothing."""
    h, f = shape.hidden, shape.intermediate
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    sizes = dict(zip(LORA_PROJECTIONS, (h + q, h + kv, h + kv, q + h, h + f, h + f, f + h)))
    names = LORA_PROJECTIONS if "all-linear" in targets else [t for t in targets if t in sizes]
    return rank * shape.layers * sum(sizes[name] for name in names)


def model_shape(config: dict, name: str = "model") -> ModelShape:
    """A :class:`ModelShape` from a Hugging Face ``config.json`` dict; ValueError naming a
    missing key."""
    need = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "vocab_size")
    missing = [key for key in need if not isinstance(config.get(key), int)]
    if missing:
        raise ValueError(f"{name}: config.json lacks {', '.join(missing)}; the estimate reads a "
                         "decoder-only causal LM config (e.g. a Qwen2 or Llama config.json)")
    heads = config["num_attention_heads"]
    return ModelShape(
        name=name, hidden=config["hidden_size"], layers=config["num_hidden_layers"],
        heads=heads, kv_heads=config.get("num_key_value_heads") or heads,
        head_dim=config.get("head_dim") or config["hidden_size"] // heads,
        intermediate=config["intermediate_size"], vocab=config["vocab_size"],
        tied=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=bool(config.get("attention_bias", config.get("model_type") == "qwen2")),
        max_positions=config.get("max_position_embeddings"))
