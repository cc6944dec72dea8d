"""A tiny random-weight ``Qwen3_5MoeForCausalLM`` written with transformers, with a byte-level BPE
tokenizer trained on the pack's own prompts and gold chapters (run with the LoRA Python:
``python tests/lora/tiny_hf.py OUT_DIR``), and the greedy tokens of it (with a PEFT adapter) for
given prompt ids (``python tests/lora/tiny_hf.py --greedy MODEL_DIR IDS N [ADAPTER_DIR]``).

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


def make(out: Path) -> None:
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


def greedy(model_dir: str, ids: list[int], n: int, adapter: str | None) -> list[int]:
    """Greedy tokens by full forward passes (no cache): transformers' reference, step by step."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    seq, eos = list(ids), model.config.eos_token_id
    with torch.no_grad():
        for _ in range(n):
            token = int(model(torch.tensor([seq])).logits[0, -1].argmax())
            if token == eos:
                break
            seq.append(token)
    return seq[len(ids) :]


if __name__ == "__main__":
    if sys.argv[1] == "--greedy":
        adapter = sys.argv[5] if len(sys.argv) > 5 else None
        sys.stdout.write(
            json.dumps(greedy(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), adapter)) + "\n"
        )
    else:
        make(Path(sys.argv[1]))
