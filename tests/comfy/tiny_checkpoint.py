"""A tiny random-weight Stable Diffusion 1.5 checkpoint, written at test time for the comfy tier.

Run with the test ComfyUI's own interpreter (it has torch and safetensors):

    <comfy venv>/bin/python tests/comfy/tiny_checkpoint.py COMFY_DIR OUT.safetensors
    <comfy venv>/bin/python tests/comfy/tiny_checkpoint.py COMFY_DIR --sizes CKPT.safetensors

(``--sizes`` prints, as JSON, what ComfyUI's memory manager counts for the checkpoint's parts.)

ComfyUI 0.3.75 detects a UNet as SD1.5 from five values only (``context_dim`` 768,
``model_channels`` 320, no linear transformer projections, no ``adm_in_channels``, no temporal
attention) and reads the block layout from the state dict's keys, so a UNet of one level with one
block, built by ComfyUI's own ``UNetModel``, loads as SD1.5 and samples in milliseconds on a CPU.
The VAE has SD's fixed shape (ComfyUI builds it from a fixed configuration) and the text encoder
CLIP-L's (every weight must be there: a missing one is left uninitialised and the conditioning
turns NaN). About 465 MB at float16, written in about 2 s. The images are noise; what the tests
check is the graph.
"""

from __future__ import annotations

import sys

CLIP_LAYERS = 12
CLIP_WIDTH = 768
CLIP_MLP = 3072
CLIP_VOCAB = 49408
CLIP_POSITIONS = 77
# ComfyUI's default SD1.x/SD2.x VAE (comfy/sd.py): only this shape is loaded for SD1.5.
VAE_CONFIG = {
    "double_z": True,
    "z_channels": 4,
    "resolution": 256,
    "in_channels": 3,
    "out_ch": 3,
    "ch": 128,
    "ch_mult": [1, 2, 4, 4],
    "num_res_blocks": 2,
    "attn_resolutions": [],
    "dropout": 0.0,
}


def clip_weights(torch, prefix: str) -> dict:
    """CLIP-L's text encoder with random projections, unit norms and zero biases."""

    def rand(*shape: int):
        return (torch.randn(*shape) * 0.02).to(torch.float16)

    def ones(n: int):
        return torch.ones(n, dtype=torch.float16)

    def zeros(n: int):
        return torch.zeros(n, dtype=torch.float16)

    sd = {
        f"{prefix}embeddings.token_embedding.weight": rand(CLIP_VOCAB, CLIP_WIDTH),
        f"{prefix}embeddings.position_embedding.weight": rand(CLIP_POSITIONS, CLIP_WIDTH),
        f"{prefix}final_layer_norm.weight": ones(CLIP_WIDTH),
        f"{prefix}final_layer_norm.bias": zeros(CLIP_WIDTH),
    }
    for i in range(CLIP_LAYERS):
        layer = f"{prefix}encoder.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            sd[f"{layer}self_attn.{proj}.weight"] = rand(CLIP_WIDTH, CLIP_WIDTH)
            sd[f"{layer}self_attn.{proj}.bias"] = zeros(CLIP_WIDTH)
        for norm in ("layer_norm1", "layer_norm2"):
            sd[f"{layer}{norm}.weight"] = ones(CLIP_WIDTH)
            sd[f"{layer}{norm}.bias"] = zeros(CLIP_WIDTH)
        sd[f"{layer}mlp.fc1.weight"] = rand(CLIP_MLP, CLIP_WIDTH)
        sd[f"{layer}mlp.fc1.bias"] = zeros(CLIP_MLP)
        sd[f"{layer}mlp.fc2.weight"] = rand(CLIP_WIDTH, CLIP_MLP)
        sd[f"{layer}mlp.fc2.bias"] = zeros(CLIP_WIDTH)
    return sd


def _import_comfy(comfy_dir: str) -> None:
    sys.path.insert(0, comfy_dir)
    sys.argv = [sys.argv[0], "--cpu"]  # ComfyUI's model management reads its own flags on import
    import comfy.options

    comfy.options.enable_args_parsing()


def sizes(comfy_dir: str, checkpoint: str) -> None:
    """``model_size()`` of the checkpoint's CLIP, UNet and VAE as ComfyUI loads them, and
    ``minimum_inference_memory()``, as one JSON line."""
    import json

    _import_comfy(comfy_dir)
    import comfy.model_management as mm
    import comfy.sd

    model, clip, vae, _ = comfy.sd.load_checkpoint_guess_config(checkpoint, output_vae=True, output_clip=True)
    figures = {
        "clip": clip.patcher.model_size(),
        "unet": model.model_size(),
        "vae": vae.patcher.model_size(),
        "reserve": mm.minimum_inference_memory(),
    }
    sys.stdout.write(json.dumps(figures) + "\n")


def main(comfy_dir: str, out: str) -> None:
    _import_comfy(comfy_dir)
    import comfy.ops
    import torch
    from comfy.ldm.models.autoencoder import AutoencoderKL
    from comfy.ldm.modules.diffusionmodules.openaimodel import UNetModel
    from safetensors.torch import save_file

    torch.manual_seed(0)
    unet = UNetModel(
        image_size=32,
        in_channels=4,
        model_channels=320,
        out_channels=4,
        num_res_blocks=[1],
        channel_mult=[1],
        num_heads=8,
        use_spatial_transformer=True,
        transformer_depth=[1],
        transformer_depth_output=[1, 1],
        transformer_depth_middle=1,
        context_dim=768,
        legacy=False,
        use_linear_in_transformer=False,
        adm_in_channels=None,
        operations=comfy.ops.manual_cast,
    )
    vae = AutoencoderKL(ddconfig=VAE_CONFIG, embed_dim=4)
    sd = {}
    for prefix, module in (("model.diffusion_model.", unet), ("first_stage_model.", vae)):
        for key, value in module.state_dict().items():
            sd[prefix + key] = (torch.randn_like(value.float()) * 0.02).to(torch.float16)
    sd.update(clip_weights(torch, "cond_stage_model.transformer.text_model."))
    save_file(sd, out)


if __name__ == "__main__":
    if sys.argv[2] == "--sizes":
        sizes(sys.argv[1], sys.argv[3])
    else:
        main(*sys.argv[1:3])
