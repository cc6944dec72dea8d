"""A tiny random-weight Qwen3.5 MoE written with transformers, with a byte-level BPE tokenizer
trained on the pack's own prompts and gold chapters (run with the LoRA Python):

* ``python tests/lora/tiny_hf.py OUT_DIR``: a ``Qwen3_5MoeForCausalLM`` (text only);
* ``python tests/lora/tiny_hf.py --checkpoint OUT_DIR``: the layout of the published
  Qwen3.5-35B-A3B checkpoint: ``Qwen3_5MoeForConditionalGeneration`` (a vision tower, the text
  model under ``model.language_model``, ``text_config`` nested in ``config.json``) with a
  multi-token-prediction layer (``mtp.*`` tensors, ``mtp_num_hidden_layers: 1``), which
  transformers does not model and llama.cpp's converter turns into a NextN block;
* ``python tests/lora/tiny_hf.py --gaps MODEL_DIR IDS TOKENS [ADAPTER_DIR]``: along ``TOKENS``
  after the prompt ``IDS``, for each step how far the token's logit is below transformers' best
  (0 where it is transformers' greedy choice), with a PEFT adapter if given.

Both kinds of layer (three Gated DeltaNet, one full attention), four routed experts (two a token)
and a shared expert: Qwen3.5-35B-A3B's architecture at about 0.6 M parameters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def texts() -> list[str]:
    files = [*(ROOT / "prompts").rglob("*.md"), *(ROOT / "mangaka" / "evaluate" / "gold").glob("*")]
    return [p.read_text(encoding="utf-8") for p in sorted(files) if p.is_file()]


def make(out: Path):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4096, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = TEMPLATE
    fast.save_pretrained(out)
    sizes = {
        "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
        "num_experts": 4, "num_experts_per_tok": 2, "max_position_embeddings": 32768,
        "initializer_range": 0.1,
    }  # fmt: skip
    config = Qwen3_5MoeTextConfig(
        vocab_size=len(fast),
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
        **sizes,
    )
    config.architectures = ["Qwen3_5MoeForCausalLM"]
    torch.manual_seed(0)
    Qwen3_5MoeForCausalLM(config).save_pretrained(out)
    return config


def make_checkpoint(out: Path) -> None:
    """The published checkpoint's layout: vision tower, nested text config, an MTP layer."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    text = make(out)
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
              "out_hidden_size": text.hidden_size, "num_position_embeddings": 64}  # fmt: skip
    config = Qwen3_5MoeConfig(text_config=text.to_dict(), vision_config=vision)
    config.architectures = ["Qwen3_5MoeForConditionalGeneration"]
    for old in out.glob("*.safetensors"):
        old.unlink()
    torch.manual_seed(0)
    Qwen3_5MoeForConditionalGeneration(config).save_pretrained(out)
    # the MTP layer as the checkpoint has it: a full-attention MoE layer and its input projection
    weights = load_file(out / "model.safetensors")
    last = f"model.language_model.layers.{text.num_hidden_layers - 1}."
    for name in [n for n in weights if n.startswith(last)]:
        weights["mtp.layers.0." + name[len(last) :]] = weights[name].clone()
    weights["mtp.fc.weight"] = torch.randn(text.hidden_size, 2 * text.hidden_size) * 0.1
    for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        weights[f"mtp.{norm}.weight"] = torch.ones(text.hidden_size)
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    config_json = json.loads((out / "config.json").read_text(encoding="utf-8"))
    config_json["text_config"]["mtp_num_hidden_layers"] = 1
    (out / "config.json").write_text(json.dumps(config_json, indent=2), encoding="utf-8")


def gaps(model_dir: str, ids: list[int], tokens: list[int], adapter: str | None) -> list[float]:
    """For each of ``tokens``: transformers' best logit minus the token's, by full forward passes
    (no cache) along the prompt and the tokens before it."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    seq, out = list(ids), []
    with torch.no_grad():
        for token in tokens:
            logits = model(torch.tensor([seq])).logits[0, -1]
            out.append(float(logits.max() - logits[token]))
            seq.append(token)
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--gaps":
        adapter = sys.argv[5] if len(sys.argv) > 5 else None
        found = gaps(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), adapter)
        sys.stdout.write(json.dumps(found) + "\n")
    elif sys.argv[1] == "--checkpoint":
        make_checkpoint(Path(sys.argv[2]))
    else:
        make(Path(sys.argv[1]))
