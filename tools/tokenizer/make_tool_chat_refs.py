"""Writes tests/tokenizer/data/tool_chat_refs.json: transformers' apply_chat_template with `tools`
and tool-call / tool-result messages, for the shared tokenizers whose templates use them (Qwen2.5),
the reference the C++ Jinja renderer is checked against (tests/tokenizer/tool_chat_test.cc).

  python tools/tokenizer/make_tool_chat_refs.py ../shared tests/tokenizer/data/tool_chat_refs.json
(needs transformers; the cached venv has it)."""

import json
import sys

from transformers import AutoTokenizer

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers.",
        "parameters": {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
                       "required": ["b", "a"]}}},
]

CONVERSATIONS = [
    [{"role": "user", "content": "What is the weather in Paris?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Lima and 2+3?"}],
    [{"role": "user", "content": "What is the weather in Paris?"},
     {"role": "assistant", "content": "", "tool_calls": [
         {"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
     {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"},
     {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "sunny"}],
]


def main(shared, out):
    refs = []
    for name in ["qwen2.5"]:
        tok = AutoTokenizer.from_pretrained(f"{shared}/tokenizers/{name}")
        for msgs in CONVERSATIONS:
            for tools in (TOOLS, None):
                text = tok.apply_chat_template(msgs, tools=tools, tokenize=False, add_generation_prompt=True)
                refs.append({"tokenizer": name, "messages": msgs, "tools": tools, "text": text})
    with open(out, "w") as f:
        json.dump({"made_by": "tools/tokenizer/make_tool_chat_refs.py", "cases": refs}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
