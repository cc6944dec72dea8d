"""LLM nodes: Load LLM (GGUF) and Structured Output (any JSON Schema)."""

from __future__ import annotations

import json
import os

import folder_paths
from comfy_api.latest import io, ui

from ..mangaka.batch.options import BOOK_OPTIONS
from ..mangaka.errors import InputError, MangakaError
from ..mangaka.llm.base import LLM as EngineLLM
from ..mangaka.llm.base import PRESETS, CallContext, sampling_preset
from ..mangaka.llm.grammar import schema_to_gbnf
from ..mangaka.llm.inprocess import LlamaCppLLM, LoadOptions, release_if_asked
from ..mangaka.llm.loading import check_lora_file, check_model_file
from ..mangaka.llm.openai import FLAVORS as REMOTE_FLAVORS
from ..mangaka.llm.openai import OpenAICompatibleLLM
from ..mangaka.llm.options import LOAD_OPTIONS, RUN_OPTIONS, RunOptions
from ..mangaka.options import widget_names
from ..mangaka.screenplay.request import DEFAULT_SAMPLING
from . import _comfy
from . import memory as comfy_memory
from ._comfy import from_widgets, widget

LLM_SOCKET = io.Custom("MANGAKA_LLM")  # carries any backend of the engine's LLM protocol
LOAD_WIDGETS = {**widget_names(LOAD_OPTIONS), **widget_names(RUN_OPTIONS)}  # a field → its widget


class LoadLLM(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaLoadLLM",
            display_name="Load LLM (GGUF)",
            category="Mangaka/LLM",
            description="Load a GGUF language model from models/LLM with llama.cpp, in this process. "
            "The model is cached by file and options, and freed by ComfyUI's 'Free model and node cache'.",
            inputs=[
                io.Combo.Input(
                    "model",
                    options=_comfy.model_files(),
                    tooltip="A .gguf file in models/LLM, e.g. Qwen3.5-35B-A3B-Q4_K_M.gguf",
                ),
                *(
                    widget(LOAD_OPTIONS[name])
                    for name in ("n_ctx", "n_gpu_layers", "n_threads", "flash_attn")
                ),
                io.Combo.Input(
                    "lora",
                    options=_comfy.lora_files(),
                    default=_comfy.NONE,
                    tooltip="A GGUF LoRA adapter in models/llm_loras, attached after load",
                ),
                widget(RUN_OPTIONS["lora_scale"]),
                widget(RUN_OPTIONS["memory"], optional=True),
            ],
            outputs=[LLM_SOCKET.Output(display_name="llm"), io.String.Output(display_name="load_report")],
        )

    @classmethod
    def validate_inputs(cls, model: str | None = None, lora: str | None = None, **widgets) -> bool | str:
        # Widget values arrive here (a linked input is None): with **widgets ComfyUI leaves every
        # range check to this method, so each is checked against its declaration here.
        try:
            for options in (LOAD_OPTIONS, RUN_OPTIONS):
                for name, value in from_widgets(options, widgets).items():
                    options[name].check(value)
        except InputError as exc:
            return f"Load LLM: {exc.renamed(LOAD_WIDGETS)}"
        has_lora = lora not in (None, _comfy.NONE)
        if model is not None and (msg := _file_message(_comfy.LLM_FOLDER, model)):
            return f"Load LLM: model {msg}"
        if has_lora and (msg := _file_message(_comfy.LORA_FOLDER, lora)):
            return f"Load LLM: LoRA {msg}"
        if model is None:
            return True
        # Read the GGUF headers now, so a wrong file is a 400 before the queue runs.
        try:
            info = check_model_file(_comfy.full_path(_comfy.LLM_FOLDER, model))
            if has_lora:
                check_lora_file(_comfy.full_path(_comfy.LORA_FOLDER, lora), info.architecture, model)
        except MangakaError as exc:
            return f"Load LLM: {exc}"
        return True

    @classmethod
    def execute(cls, model: str, lora: str, **widgets) -> io.NodeOutput:
        comfy_memory.check_hooks()  # ComfyUI may have put back what the pack wraps, after a prompt
        try:
            options = LoadOptions(**from_widgets(LOAD_OPTIONS, widgets))
            run = RunOptions(**from_widgets(RUN_OPTIONS, widgets))  # memory: absent in older workflows
        except InputError as exc:
            raise exc.renamed(LOAD_WIDGETS) from None
        lora_path = None if lora == _comfy.NONE else _comfy.full_path(_comfy.LORA_FOLDER, lora)
        with _comfy.comfy_interrupts():  # a progress bar while loading; interrupt stops the load
            llm = LlamaCppLLM(
                _comfy.full_path(_comfy.LLM_FOLDER, model),
                options,
                lora_path,
                run.lora_scale,
                on_progress=_comfy.progress(),
                cancel=_comfy.cancel_requested(),
                memory=run.memory,
            )
        report = llm.model.report() + (f"; LoRA {lora} at {run.lora_scale:g}" if lora_path else "")
        report += f"; {run.memory}"
        return io.NodeOutput(llm, report)


def _file_message(folder: str, name: str) -> str | None:
    """Why ``name`` is not a file in the model ``folder`` (a folder of that name says so); None if it is."""
    for root in folder_paths.get_folder_paths(folder):
        if os.path.isdir(os.path.join(root, name)):
            return f"{name} is a folder, not a GGUF file; choose the .gguf file inside it"
    return _comfy.missing_file_message(folder, name)


class RemoteLLM(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaRemoteLLM",
            display_name="Remote LLM (OpenAI-compatible)",
            category="Mangaka/LLM",
            description="Use a model served by llama-server, vLLM or another OpenAI-compatible server. "
            "Output is constrained and validated exactly as with Load LLM.",
            inputs=[
                io.String.Input(
                    "base_url", default="http://127.0.0.1:8080", tooltip="The server, with or without /v1"
                ),
                io.String.Input(
                    "model", default="", tooltip="Model name as the server lists it (empty: its default)"
                ),
                io.String.Input(
                    "api_key_env",
                    default="",
                    tooltip="The NAME of the environment variable holding the API key (never the key itself)",
                ),
                io.Combo.Input(
                    "server",
                    options=list(REMOTE_FLAVORS),
                    default="auto",
                    tooltip="How the server takes a schema; auto asks the server",
                ),
                widget(BOOK_OPTIONS["concurrency"]),
            ],
            outputs=[LLM_SOCKET.Output(display_name="llm")],
        )

    @classmethod
    def validate_inputs(
        cls, base_url: str | None = None, api_key_env: str | None = None, **_kw
    ) -> bool | str:
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            return f"Remote LLM: base_url {base_url!r} must start with http:// or https://"
        if api_key_env and not api_key_env.replace("_", "").isalnum():
            return (
                "Remote LLM: api_key_env takes the NAME of an environment variable (like OPENAI_API_KEY), "
                "not a key"
            )
        return True

    @classmethod
    def execute(
        cls, base_url: str, model: str, api_key_env: str, server: str, concurrency: int
    ) -> io.NodeOutput:
        llm = OpenAICompatibleLLM(
            base_url, model, api_key_env=api_key_env or None, flavor=server, concurrency=concurrency
        )
        return io.NodeOutput(llm)


class Doctor(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaDoctor",
            display_name="Doctor (llama.cpp)",
            category="Mangaka/LLM",
            description="What this machine's llama.cpp build can do and what is wrong: version, CPU "
            "features, GPU offload, architectures, memory for a model and context, CPU governor, NUMA.",
            inputs=[
                io.Combo.Input("model", options=[_comfy.NONE, *_comfy.model_files()], default=_comfy.NONE),
                widget(LOAD_OPTIONS["n_ctx"]),  # the context the memory estimate is for
                io.Combo.Input(
                    "checkpoint",
                    options=[_comfy.NONE, *folder_paths.get_filename_list("checkpoints")],
                    default=_comfy.NONE,
                    optional=True,
                    tooltip="An image checkpoint from models/checkpoints: do it and the model fit "
                    "together on the GPU llama.cpp uses (or in RAM on a CPU-only build)?",
                ),
            ],
            outputs=[io.String.Output(display_name="report")],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, model: str, context: int, checkpoint: str = _comfy.NONE) -> io.NodeOutput:
        from ..mangaka.doctor import diagnose, read_checkpoint

        path = None if model == _comfy.NONE else _comfy.full_path(_comfy.LLM_FOLDER, model)
        image_model = None
        if checkpoint != _comfy.NONE:
            image_model = read_checkpoint(_comfy.full_path("checkpoints", checkpoint), "checkpoint")
        text = diagnose(path, context, checkpoint=image_model).text()
        return io.NodeOutput(text, ui=ui.PreviewText(text))


def _schema_problem(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"schema is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    try:
        schema_to_gbnf(schema)
    except MangakaError as exc:
        return str(exc)
    return None


class StructuredOutput(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaStructuredOutput",
            display_name="Structured Output (JSON Schema)",
            category="Mangaka/LLM",
            description="Ask the LLM for JSON that matches any JSON Schema: decoding is constrained to "
            "the schema, the result validated, and retried with the errors when invalid.",
            inputs=[
                LLM_SOCKET.Input("llm"),
                io.String.Input("prompt", multiline=True, default=""),
                io.String.Input(
                    "schema",
                    multiline=True,
                    default='{"type": "object", "properties": {"answer": {"type": "string", '
                    '"maxLength": 200}}, "required": ["answer"], '
                    '"additionalProperties": false}',
                ),
                io.String.Input("system", multiline=True, default="Answer with JSON only.", optional=True),
                io.Int.Input("max_tokens", default=1024, min=16, max=65536),
                io.Int.Input("max_attempts", default=3, min=1, max=10),
                io.Combo.Input("sampling", options=list(PRESETS), default=DEFAULT_SAMPLING),
                io.Int.Input("seed", default=0, min=0, max=2**31 - 1, control_after_generate=True),
            ],
            outputs=[io.String.Output(display_name="json")],
        )

    @classmethod
    def validate_inputs(cls, prompt: str | None = None, schema: str | None = None, **_kw) -> bool | str:
        if prompt is not None and not prompt.strip():
            return "Structured Output: the prompt is empty; type what the JSON should contain"
        if problem := _schema_problem(schema):
            return f"Structured Output: {problem}"
        return True

    @classmethod
    def execute(
        cls,
        llm: EngineLLM,
        prompt: str,
        schema: str,
        max_tokens: int,
        max_attempts: int,
        sampling: str,
        seed: int,
        system: str = "",
    ) -> io.NodeOutput:
        from ..mangaka.structured import generate_json

        messages = [{"role": "system", "content": system}] if system.strip() else []
        messages.append({"role": "user", "content": prompt})
        try:
            with _comfy.comfy_interrupts():
                data, _attempts = generate_json(
                    llm,
                    messages,
                    json.loads(schema),
                    max_attempts=max_attempts,
                    max_tokens=max_tokens,
                    sampling=sampling_preset(sampling).replace(seed=seed),
                    context=CallContext(on_progress=_comfy.progress(), cancel=_comfy.cancel_requested()),
                )
        finally:
            release_if_asked(llm, "Structured Output")
        return io.NodeOutput(json.dumps(data, ensure_ascii=False, indent=2))


NODES = [LoadLLM, RemoteLLM, StructuredOutput, Doctor]
