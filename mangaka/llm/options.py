"""Load LLM's options, each declared once (``mangaka/options.py`` says what comes from them), in two
sets: how a GGUF model is loaded (``LOAD_OPTIONS``: ``LoadOptions`` in ``loading.py`` takes its
defaults and range checks from them; ``--ctx --gpu-layers --threads --flash-attn``) and how the
loaded model is run (``RUN_OPTIONS``, ``RunOptions`` here: ``--lora-scale --jump-forward`` and the
node's ``memory``). The Load LLM node's widgets come from both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..options import Option, declare
from .decode import DEFAULT_JUMP_FORWARD, JUMP_FORWARD

DEFAULT_N_CTX = 32768
FlashAttn = Literal["auto", "on", "off"]
FLASH_ATTN_MODES: tuple[str, ...] = ("auto", "on", "off")
# What happens to the model between runs (the Load LLM node's ``memory`` widget).
KEEP_LOADED = "keep loaded"  # freed only when another model needs the memory (ComfyUI's hook)
RELEASE_AFTER_RUN = "release after each run"  # freed when each node that used it finishes
MEMORY_MODES: tuple[str, ...] = (KEEP_LOADED, RELEASE_AFTER_RUN)

LOAD_OPTIONS = declare(
    Option(
        "n_ctx", DEFAULT_N_CTX, "Context window in tokens; capped at the model's trained length",
        "上下文窗口（token 数）；不超过模型训练时的长度",
        low=512, high=262144, meaning=" tokens", flag="--ctx", widget="context", name_zh="上下文", step=512,
        compare=True,
        name_ja="コンテキスト", help_ja="コンテキストウィンドウ（トークン数）。モデルの学習時の長さが上限",
        name_ko="컨텍스트", help_ko="컨텍스트 창(토큰 수). 모델이 학습한 길이를 넘지 않습니다",
    ),  # Qwen3.5's trained context is 262144
    Option(
        "n_gpu_layers", -1, "Layers offloaded to the GPU; -1 = all (ignored by a CPU-only build)",
        "放到 GPU 上的层数；-1 = 全部（纯 CPU 版本忽略此项）",
        low=-1, high=1000, flag="--gpu-layers", widget="gpu_layers", name_zh="GPU 层数",
        name_ja="GPU レイヤー数", help_ja="GPU に載せるレイヤー数。-1 = すべて（CPU 専用ビルドでは無視）",
        name_ko="GPU 레이어 수", help_ko="GPU로 옮기는 레이어 수. -1 = 전부(CPU 전용 빌드에서는 무시)",
    ),
    Option(
        "n_threads", 0, "CPU threads; 0 = every core", "CPU 线程数；0 = 所有核心",
        low=0, high=256, flag="--threads", widget="threads", name_zh="线程数",
        name_ja="スレッド数", help_ja="CPU スレッド数。0 = 全コア",
        name_ko="스레드 수", help_ko="CPU 스레드 수. 0 = 모든 코어",
    ),
    Option(
        "flash_attn", "auto",
        "auto: on where the device supports it (llama.cpp's default), but off for Qwen3.5 MoE on the "
        "CPU, where it decodes faster; on/off force it",
        "auto：设备支持时开启（llama.cpp 的默认），但 Qwen3.5 MoE 在 CPU 上关闭（解码更快）；on/off 强制开关",
        choices=FLASH_ATTN_MODES, flag="--flash-attn", widget="flash_attention", name_zh="Flash Attention",
        name_ja="Flash Attention",
        help_ja="auto：デバイスが対応していればオン（llama.cpp の既定）、ただし CPU 上の Qwen3.5 MoE "
        "ではオフ（デコードが速いため）。on/off で強制",
        name_ko="Flash Attention",
        help_ko="auto: 장치가 지원하면 켬(llama.cpp 기본값). 단, CPU의 Qwen3.5 MoE에서는 끔(디코딩이 더 "
        "빠름). on/off로 강제",
    ),
)  # fmt: skip

RUN_OPTIONS = declare(
    Option(
        "lora_scale", 1.0, "LoRA strength; 1 = the adapter as trained", "LoRA 强度；1 = 按训练时的强度",
        low=-4.0, high=4.0, flag="--lora-scale",
        widget="lora_strength", name_zh="LoRA 强度", step=0.05, compare=True,
        name_ja="LoRA 強度", help_ja="LoRA の強さ。1 = 学習したとおり",
        name_ko="LoRA 강도", help_ko="LoRA 강도. 1 = 학습한 그대로",
    ),
    Option(
        "memory", KEEP_LOADED,
        "keep loaded: freed only when ComfyUI needs the memory for its own models (loaded again on "
        "next use). release after each run: freed as soon as each node that used it finishes, for a "
        "GPU too small for the LLM and the image model together",
        "keep loaded：只有 ComfyUI 自己的模型需要内存时才释放（下次使用时重新加载）。release after each "
        "run：用完它的节点一结束就释放，适合放不下 LLM 和图像模型的 GPU",
        choices=MEMORY_MODES, widget="memory", name_zh="内存",
        name_ja="メモリ",
        help_ja="keep loaded：ComfyUI が自分のモデルのためにメモリを必要とするときだけ解放"
        "（次に使うとき再読み込み）。release after each run：使ったノードが終わるたびにすぐ解放。"
        "LLM と画像モデルが同時に載らない GPU 向け",
        name_ko="메모리",
        help_ko="keep loaded: ComfyUI가 자체 모델에 메모리가 필요할 때만 해제(다음에 쓸 때 다시 불러옴). "
        "release after each run: 사용한 노드가 끝날 때마다 바로 해제. "
        "LLM과 이미지 모델을 함께 올릴 수 없는 GPU용",
    ),
    Option(
        "jump_forward", DEFAULT_JUMP_FORWARD,
        "The tokens a schema forces, in one batch: exact = verified, the same output; canonical = "
        "unverified, faster, other output; off = one token at a time",
        "schema 强制的 token 一次批量解码：exact = 逐一验证，输出不变；canonical = 不验证，更快，输出会变；"
        "off = 逐个 token 解码",
        choices=JUMP_FORWARD, flag="--jump-forward", compare=True,
        help_ja="スキーマが強制するトークンを一括でデコード：exact = 検証あり、出力は同じ。canonical = "
        "検証なし、より速いが出力が変わる。off = 1 トークンずつ",
        help_ko="스키마가 강제하는 토큰을 한 번에 디코딩: exact = 검증함, 같은 출력. canonical = 검증하지 "
        "않음, 더 빠르지만 출력이 달라짐. off = 한 토큰씩",
    ),
)  # fmt: skip


@dataclass(frozen=True)
class RunOptions:
    """How a loaded model is run (``RUN_OPTIONS``): its LoRA's strength, what happens to it between
    runs, and jump-forward; each field checked by its declaration at construction."""

    lora_scale: float = RUN_OPTIONS["lora_scale"].default
    memory: str = RUN_OPTIONS["memory"].default
    jump_forward: str = RUN_OPTIONS["jump_forward"].default

    def __post_init__(self) -> None:
        for o in RUN_OPTIONS.values():
            object.__setattr__(self, o.field, o.check(getattr(self, o.field)))
