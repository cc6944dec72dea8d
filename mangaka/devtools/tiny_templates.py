"""Chat templates of the tiny test models (Jinja, as in a Hugging Face ``tokenizer_config.json``;
written for this test suite): a Qwen3.5-like and a Qwen3-like one."""

from __future__ import annotations

# Shared pieces: rendering content that is a string or a list of {"type": "text"} parts, the
# tool block, and the message loop. The two templates differ in the system-message rule and in
# the generation prompt.
_TEMPLATE_CONTENT_MACRO = r"""{%- macro render_content(content) -%}
{%- if content is string -%}
{{- content -}}
{%- elif content is iterable and content is not mapping -%}
{%- for part in content -%}
{%- if part is mapping and part.type == 'text' -%}
{{- part.text -}}
{%- elif part is string -%}
{{- part -}}
{%- endif -%}
{%- endfor -%}
{%- elif content is not none -%}
{{- content | string -}}
{%- endif -%}
{%- endmacro -%}
"""

_TEMPLATE_SYSTEM_AND_TOOLS = r"""{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if messages and messages[0].role == 'system' -%}
{{- render_content(messages[0].content) + '\n\n' -}}
{%- endif -%}
{{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' -}}
{{- 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' -}}
{%- for tool in tools -%}
{{- '\n' + (tool | tojson) -}}
{%- endfor -%}
{{- '\n</tools>\n\nFor each function call, return a json object with function name and ' -}}
{{- 'arguments within <tool_call></tool_call> XML tags.<|im_end|>\n' -}}
{%- elif messages and messages[0].role == 'system' -%}
{{- '<|im_start|>system\n' + render_content(messages[0].content) + '<|im_end|>\n' -}}
{%- endif -%}
"""

# Index of the last user message: reasoning is kept only for assistant turns after it.
_TEMPLATE_LAST_QUERY = r"""{%- set ns = namespace(last_query_index=-1) -%}
{%- for message in messages -%}
{%- if message.role == 'user' -%}
{%- set ns.last_query_index = loop.index0 -%}
{%- endif -%}
{%- endfor -%}
"""

_TEMPLATE_MESSAGES = r"""{%- for message in messages -%}
{%- set content = render_content(message.content) -%}
{%- if message.role == 'system' -%}
{%- if not loop.first -%}
{{- raise_exception('System message must be at the beginning.') -}}
{%- endif -%}
{%- elif message.role == 'user' -%}
{{- '<|im_start|>user\n' + content + '<|im_end|>\n' -}}
{%- elif message.role == 'assistant' -%}
{%- set reasoning = '' -%}
{%- if message.reasoning_content is defined and message.reasoning_content is string -%}
{%- set reasoning = message.reasoning_content -%}
{%- elif '</think>' in content -%}
{%- set reasoning = content.split('</think>')[0].split('<think>')[-1] -%}
{%- set content = content.split('</think>')[-1] -%}
{%- endif -%}
{%- set reasoning = reasoning.strip('\n') -%}
{%- set content = content.lstrip('\n') -%}
{%- if loop.index0 > ns.last_query_index and reasoning -%}
{{- '<|im_start|>assistant\n<think>\n' + reasoning + '\n</think>\n\n' + content -}}
{%- else -%}
{{- '<|im_start|>assistant\n' + content -}}
{%- endif -%}
{%- if message.tool_calls is defined and message.tool_calls -%}
{%- for tool_call in message.tool_calls -%}
{%- set call = tool_call.function if tool_call.function is defined else tool_call -%}
{%- if content or not loop.first -%}
{{- '\n' -}}
{%- endif -%}
{{- '<tool_call>\n{"name": "' + call.name + '", "arguments": ' -}}
{%- if call.arguments is string -%}
{{- call.arguments -}}
{%- else -%}
{{- call.arguments | tojson -}}
{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}
{{- '<|im_start|>user' -}}
{%- endif -%}
{{- '\n<tool_response>\n' + content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}
{{- '<|im_end|>\n' -}}
{%- endif -%}
{%- else -%}
{{- raise_exception('Unexpected message role: ' + message.role) -}}
{%- endif -%}
{%- endfor -%}
"""

# Qwen3.5-like: the system message must come first; thinking is on unless enable_thinking is
# defined and false, and the generation prompt then opens (or closes, empty) the think block.
_QWEN35_GENERATION = r"""{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and not enable_thinking -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}
{{- '<think>\n' -}}
{%- endif -%}
{%- endif -%}
"""

# Qwen3-like: the model opens the think block itself; enable_thinking=false pre-fills an empty one.
_QWEN3_GENERATION = r"""{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and not enable_thinking -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- endif -%}
{%- endif -%}
"""

CHAT_TEMPLATES: dict[str, str] = {
    "qwen35moe": _TEMPLATE_CONTENT_MACRO
    + _TEMPLATE_SYSTEM_AND_TOOLS
    + _TEMPLATE_LAST_QUERY
    + _TEMPLATE_MESSAGES
    + _QWEN35_GENERATION,
    # Qwen3 tolerates a late system message (it is simply not rendered twice): only the first
    # message is treated as the system prompt, later ones are skipped.
    "qwen3moe": _TEMPLATE_CONTENT_MACRO
    + _TEMPLATE_SYSTEM_AND_TOOLS
    + _TEMPLATE_LAST_QUERY
    + _TEMPLATE_MESSAGES.replace(
        "{{- raise_exception('System message must be at the beginning.') -}}",
        "{{- '<|im_start|>system\\n' + content + '<|im_end|>\\n' -}}",
    )
    + _QWEN3_GENERATION,
}
