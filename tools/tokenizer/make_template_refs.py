"""Renders real chat templates the way transformers' apply_chat_template does (jinja2's
ImmutableSandboxedEnvironment, trim_blocks / lstrip_blocks, loop controls, the tojson filter,
raise_exception, strftime_now, transformers' {% generation %} tag) on a few conversations, with and
without tools, into a JSON file the C++ Jinja renderer is checked against
(tests/tokenizer/chat_templates_test.cc).

  python tools/tokenizer/make_template_refs.py TEMPLATES_DIR OUT.json

TEMPLATES_DIR holds *.jinja files: tools/setup_models.sh takes llama.cpp's models/templates (the chat
templates of real models, from node-llama-cpp's llama.cpp bundle) into the cache. Each case records
the template, the context, the rendered text or jinja2's error, and the fixed time strftime_now saw."""

import datetime
import glob
import json
import os
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2026, 12, 7, 12, 0, 0, tzinfo=datetime.timezone.utc)


class Generation(Extension):
    """transformers' AssistantTracker without the mask bookkeeping: renders the block's body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}]

REASONING = "The user wants the weather in Paris: call get_weather."
CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "2+3?"}],
    [{"role": "user", "content": "What is the weather in Paris?"},
     {"role": "assistant", "content": "", "tool_calls": [
         {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
     {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"}],
    # A tool loop whose assistant turn carries its reasoning, under both names templates read
    # (reasoning_content: Qwen3, DeepSeek, GLM; thinking: gpt-oss), keys in the order nbits'
    # chat_message_json writes them.
    [{"role": "user", "content": "What is the weather in Paris?"},
     {"role": "assistant", "content": "", "reasoning_content": REASONING, "thinking": REASONING, "tool_calls": [
         {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
     {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "call_1", "name": "get_weather"}],
]


def main(templates_dir, out):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)
    cases = []
    paths = sorted(glob.glob(os.path.join(templates_dir, "*.jinja")))
    if not paths:
        raise SystemExit(f"no *.jinja in {templates_dir}")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for i, messages in enumerate(CONVERSATIONS):
            for tools in ([None, TOOLS] if i != 1 else [None]):
                ctx = {"messages": messages, "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}
                if tools:
                    ctx["tools"] = tools
                try:
                    text, error = env.from_string(source).render(**ctx), None
                except Exception as e:  # noqa: BLE001 - the reference's error is part of the case
                    text, error = None, f"{type(e).__name__}: {e}"
                cases.append({"name": os.path.basename(path), "template": source, "context": ctx, "text": text,
                              "error": error})
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"made_by": "tools/tokenizer/make_template_refs.py", "jinja2": jinja2.__version__,
                   "now_utc": int(NOW.timestamp()), "cases": cases}, f)
    print(f"{len(cases)} cases from {len(paths)} templates, {sum(c['error'] is None for c in cases)} rendered")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
