"""Build the real-SGLang tier's tiny model: a Llama-architecture checkpoint and its tokenizer,
made here from nothing (no download, ever) and the same bytes on every run.

Run with the tier's SGLang venv (it has torch, tokenizers and safetensors)::

    python tests_real/tiny_model.py OUT_DIR

Why this model:

- **Architecture**: ``LlamaForCausalLM``, the one model class SGLang's CPU path serves without its
  compiled CPU kernels (``docs/real-sglang.md``): 2 layers, hidden size 128, 4 heads and 2 KV
  heads, about 0.6 M parameters in bf16, so it loads in milliseconds and a decode step costs
  little next to SGLang's own scheduling.
- **Tokenizer**: byte-level BPE trained here on a corpus made of the simulator's vocabulary
  (:data:`pytest_sglang.sim.tokenizer.VOCAB`, copied below so that this script needs only the
  tier's venv), digits and arithmetic: each of those words is one token after a space, so a
  prompt the load generator builds for N simulator tokens is close to N real ones. ChatML chat
  template, ``<|im_end|>`` as end of turn.
- **Clear logit margins**: random weights at the usual small scale make near-ties between the
  top logits everywhere, and greedy decoding then flips with the batch and the restart (GPU
  kernels that depend on the batch do the same on real models). The output head here is scaled
  so that the best token leads the next by a wide margin, and greedy answers are stable enough to
  test equivalence with. The answers are gibberish: the flow is under test, not the model.

Deterministic: a fixed seed for the weights, a sorted corpus for the tokenizer, fixed JSON key
order. :func:`digest` names the output directory, so a change to this file builds a new model.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

#: The simulator's vocabulary (pytest_sglang/sim/tokenizer.py), as one token each after a space.
_WORDS_TEXT = """
the of and to in is was for on that with as by at from his an were are which this be has had or
it not first one their its new after but who they have her she two been other when there all
during into school time may years more most only over city some world would where later up such
used many can state about national out known university united then made also team people three
between high part under while film both year like well long being however series several season
through age against small war early government large system main around second including home
group same each name number four area music since called band found major public place century
south north west east back before model token server speed light river stone quick brown signal
vector graph matrix kernel cache queue batch stream sample draft verify accept decode prefill
memory engine
"""
WORDS = _WORDS_TEXT.split()
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
VOCAB_SIZE = 1024
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 128, 2, 4, 2, 256
MAX_POSITIONS = 4096
SEED = 20261202
#: Scale of the output head against the hidden state's unit RMS: top-1 leads top-2 by several
#: units of logit, far beyond bf16's rounding, so greedy decoding does not flip on noise.
HEAD_SCALE = 1.0


def digest() -> str:
    """A short digest of this file: the model's identity and its cache directory's name."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def _corpus() -> list[str]:
    """Sentences of the vocabulary, digits and arithmetic, in a fixed order."""
    lines = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(0, len(WORDS), 7)]
    lines += [
        f"{a} + {b} = {a + b}. {a} * {b} = {a * b}." for a in range(0, 60) for b in (3, 7, 11)
    ]
    lines += ["#### " + " ".join(str(n) for n in range(i, i + 20)) for i in range(0, 200, 20)]
    return lines * 4


def build_tokenizer(out: Path) -> int:
    """Train the byte-level BPE tokenizer into ``out``; return its vocabulary size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    ids = {name: tok.token_to_id(name) for name in SPECIAL}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": MAX_POSITIONS,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {
            str(i): {
                "content": name,
                "special": True,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "single_word": False,
            }
            for name, i in ids.items()
        },
    }
    _write_json(out / "tokenizer_config.json", config)
    _write_json(
        out / "special_tokens_map.json",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    )
    return int(tok.get_vocab_size())


def build_weights(out: Path, vocab: int, eos_id: int, pad_id: int) -> None:
    """Random bf16 weights (fixed seed) under the names ``LlamaForCausalLM`` loads."""
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(SEED)

    def normal(*shape: int, std: float) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)

    head_dim = HIDDEN // HEADS
    std = HIDDEN**-0.5
    tensors = {"model.embed_tokens.weight": normal(vocab, HIDDEN, std=1.0)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        tensors |= {
            p + "self_attn.q_proj.weight": normal(HEADS * head_dim, HIDDEN, std=std),
            p + "self_attn.k_proj.weight": normal(KV_HEADS * head_dim, HIDDEN, std=std),
            p + "self_attn.v_proj.weight": normal(KV_HEADS * head_dim, HIDDEN, std=std),
            p + "self_attn.o_proj.weight": normal(HIDDEN, HEADS * head_dim, std=std),
            p + "mlp.gate_proj.weight": normal(INTERMEDIATE, HIDDEN, std=std),
            p + "mlp.up_proj.weight": normal(INTERMEDIATE, HIDDEN, std=std),
            p + "mlp.down_proj.weight": normal(HIDDEN, INTERMEDIATE, std=INTERMEDIATE**-0.5),
            p + "input_layernorm.weight": torch.ones(HIDDEN, dtype=torch.bfloat16),
            p + "post_attention_layernorm.weight": torch.ones(HIDDEN, dtype=torch.bfloat16),
        }
    tensors["model.norm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
    tensors["lm_head.weight"] = normal(vocab, HIDDEN, std=HEAD_SCALE)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "vocab_size": vocab,
        "bos_token_id": pad_id,
        "eos_token_id": eos_id,
        "pad_token_id": pad_id,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    _write_json(out / "config.json", config)
    _write_json(
        out / "generation_config.json",
        {"bos_token_id": pad_id, "eos_token_id": eos_id, "pad_token_id": pad_id},
    )


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def build(out: Path) -> Path:
    """Build the model into ``out`` (atomically: a half-built directory is never ``out``)."""
    if (out / "config.json").exists():
        return out
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(tmp)
    ids = json.loads((tmp / "tokenizer.json").read_text())["model"]["vocab"]
    build_weights(tmp, vocab, eos_id=ids["<|im_end|>"], pad_id=ids["<|endoftext|>"])
    tmp.rename(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny_model.py OUT_DIR")
    print(build(Path(sys.argv[1])))
