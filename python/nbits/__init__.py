"""nbits: int4/int8 LLM inference on small CPUs, with onnxruntime-genai's Python API.

A script written for onnxruntime-genai runs on nbits by changing its import line::

    import nbits as og

    model = og.Model("models/qwen2.5-0.5b-int4")        # a genai folder or a .gguf file
    tokenizer = og.Tokenizer(model)
    stream = tokenizer.create_stream()
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=256)
    generator = og.Generator(model, params)
    generator.append_tokens(tokenizer.encode("Once upon a time"))
    while not generator.is_done():
        generator.generate_next_token()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)

or, without the token loop::

    for piece in model.generate("Once upon a time", max_new_tokens=64):
        print(piece, end="", flush=True)

Threads: a Model may be shared by any number of Generators, used from different Python
threads at once; the GIL is released while the model runs (``append_tokens``,
``generate_next_token``, ``Generator.generate``, ``Model`` loading). One Generator is used by
one thread at a time (a second thread entering a running Generator gets :class:`Error`).

Errors the caller can cause (a missing file, an unsupported model, a bad argument value) raise
:class:`nbits.Error` (a ``RuntimeError``) with the library's one-line message; arguments of the
wrong Python type raise ``TypeError``.
"""

from __future__ import annotations

import json as _json
import os as _os
import secrets as _secrets
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as _np

from . import _nbits

__all__ = [
    "Error",
    "Config",
    "Model",
    "Tokenizer",
    "TokenizerStream",
    "GeneratorParams",
    "Generator",
]

__version__ = "0.1.0"

#: The exception every nbits failure raises: a ``RuntimeError`` whose message is the
#: library's one line naming the problem (a file, a field, an argument).
Error = _nbits.Error
Error.__module__ = "nbits"


def _ids(tokens: Any) -> _np.ndarray:
    """Token ids as a contiguous 1-D int32 array (a list, a numpy array of any int dtype,
    or a [1, n] batch of one)."""
    if isinstance(tokens, _np.ndarray):
        a = tokens
    else:
        if isinstance(tokens, (int, _np.integer)):
            tokens = [tokens]
        try:
            a = _np.asarray(tokens)
        except (TypeError, ValueError) as e:
            raise Error(f"token ids must be a sequence of ints ({e})") from None
    if a.size == 0:
        return _np.zeros(0, dtype=_np.int32)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1:
        raise Error(f"token ids must be 1-D (or [1, n]), got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise Error(f"token ids must be integers, got dtype {a.dtype}")
    if a.dtype != _np.int32:
        if a.min() < -(2**31) or a.max() >= 2**31:
            raise Error("token ids must fit in int32")
        a = a.astype(_np.int32)
    return _np.ascontiguousarray(a)


class Config:
    """A model path plus provider settings, as ``og.Config``.

    nbits runs on the CPU only: ``clear_providers()`` is accepted, and ``append_provider``
    accepts ``"cpu"`` and raises :class:`Error` for any other provider.
    """

    def __init__(self, path: Union[str, "_os.PathLike[str]"]):
        """Remembers ``path`` (a genai folder or a .gguf file); nothing is read yet."""
        self.path = _os.fspath(path)
        self.providers: List[str] = []
        self.threads = 0

    def overlay(self, json_text: str) -> None:
        """Applies a genai_config.json fragment, as ``og.Config.overlay``. nbits understands
        ``{"model": {"decoder": {"session_options": {"intra_op_num_threads": N}}}}`` (the
        Model's threads); any other field raises :class:`Error` rather than being ignored."""
        try:
            o = _json.loads(json_text)
        except ValueError as e:
            raise Error(f"Config.overlay: not valid JSON ({e})") from None

        def walk(node: Any, where: str) -> None:
            if not isinstance(node, dict):
                raise Error(f"Config.overlay: {where or 'the overlay'} must be an object")
            for k, v in node.items():
                path = f"{where}.{k}" if where else k
                if path == "model.decoder.session_options.intra_op_num_threads":
                    if not isinstance(v, int) or v < 0:
                        raise Error(f"Config.overlay: {path} must be an int >= 0, got {v!r}")
                    self.threads = v
                elif path in ("model", "model.decoder", "model.decoder.session_options"):
                    walk(v, path)
                else:
                    raise Error(f"Config.overlay: field '{path}' is not supported by nbits")

        walk(o, "")

    def clear_providers(self) -> None:
        """Forgets the providers appended so far (nbits always runs on the CPU)."""
        self.providers = []

    def append_provider(self, provider: str) -> None:
        """Accepts ``"cpu"``; any other execution provider raises :class:`Error`."""
        if provider.lower() != "cpu":
            raise Error(f"execution provider '{provider}' is not available: nbits runs on the CPU only")
        self.providers.append("cpu")

    def set_provider_option(self, provider: str, key: str, value: str) -> None:
        """Accepted for ``"cpu"`` and ignored; other providers raise :class:`Error`."""
        self.append_provider(provider)


class Model:
    """A model loaded once and shared by any number of Generators (``og.Model``).

    ``path`` is an onnxruntime-genai folder (genai_config.json, the model it names,
    tokenizer.json), a Hugging Face Optimum / transformers.js folder (config.json,
    onnx/model_q4.onnx, ...), a model ``.onnx`` inside either, a ``.gguf`` file, or an :class:`Config`.

    nbits options (keywords; onnxruntime-genai has none of them):

    - ``threads``: worker threads including the caller; 0 = all hardware threads. Shared
      by the Generators of this Model (they take turns per parallel section).
    - ``accuracy_level``: override every MatMulNBits' accuracy level (4 = int8 activations,
      0 = fp32); ``None`` keeps the file's.
    - ``scales``: ``"fp32"`` (default, agrees exactly with ONNX Runtime) or ``"fp16"`` (half
      precision MatMulNBits scales: ~10% fewer bytes per decoded token for int4 block 32).
    - ``kv_cache``: ``"model"`` (the dtype the file declares), ``"fp32"``, ``"fp16"`` or ``"q8"``
      (int8 rows with one fp32 scale per head and position: 3.8x fewer bytes than fp32 at head 64,
      ~0.4% of a row's max|x| rounding per value; GroupQueryAttention models only).
    - ``context``: default KV cache length of a Generator in tokens; 0 = the config's.
    - ``profile``: collect per-node timings.
    - ``variant``: an Optimum folder's decoder, ``onnx/model_<variant>.onnx`` (``"q4"``,
      ``"q4f16"``, ``"int8"``, ``"fp16"``, ``"fp32"``, ...); ``""`` = the first present, q4 first.
    - ``requantize_float``: ``"keep"`` (default), ``"q8"`` or ``"q4"``: constant float MatMul
      weights (the fp32 tied lm_head of onnx-community q4 exports) re-quantized at load.
    """

    def __init__(
        self,
        path: Union[str, "_os.PathLike[str]", Config],
        threads: int = 0,
        accuracy_level: Optional[int] = None,
        scales: str = "fp32",
        kv_cache: str = "model",
        context: int = 0,
        profile: bool = False,
        variant: str = "",
        requantize_float: str = "keep",
    ):
        if isinstance(path, Config):
            if threads == 0:
                threads = path.threads
            path = path.path
        if not isinstance(path, (str, _os.PathLike)):
            raise Error(f"Model: path must be a str or os.PathLike, got {type(path).__name__}")
        self._path = _os.fspath(path)
        if not _os.path.exists(self._path):
            raise Error(f"Model: no such file or folder: {self._path}")
        self._m = _nbits.load_model(
            self._path,
            threads=int(threads),
            accuracy_level=accuracy_level,
            scales=scales,
            kv_cache=kv_cache,
            context=int(context),
            profile=bool(profile),
            variant=str(variant),
            requantize_float=str(requantize_float),
        )

    @property
    def type(self) -> str:
        """The model family from its config (``"llama"``, ``"qwen2"``, ...), as ``og.Model.type``."""
        return self._m.model_type()

    @property
    def device_type(self) -> str:
        """Always ``"cpu"``."""
        return "cpu"

    @property
    def path(self) -> str:
        """The path the model was loaded from."""
        return self._path

    @property
    def vocab_size(self) -> int:
        """Number of logits per position."""
        return self._m.vocab_size()

    @property
    def context_length(self) -> int:
        """Default KV cache capacity of a Generator, in tokens."""
        return self._m.context_length()

    @property
    def max_context_length(self) -> int:
        """The longest context the model supports, in tokens."""
        return self._m.max_context_length()

    @property
    def eos_token_ids(self) -> List[int]:
        """The ids that end generation."""
        return list(self._m.eos_token_ids())

    @property
    def weight_bytes(self) -> int:
        """Bytes of packed weights and other initializers in use."""
        return self._m.weight_bytes()

    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        max_new_tokens: int = 128,
        **search_options: Any,
    ) -> Iterator[str]:
        """Generates from ``prompt`` (text, or token ids) and yields the text as it comes.

        Stops at an end-of-sequence token, after ``max_new_tokens`` tokens, or when the
        sequence reaches ``max_length`` / the KV capacity. ``search_options`` are those of
        :meth:`GeneratorParams.set_search_options` (temperature, top_k, top_p, min_p,
        repetition_penalty, random_seed, do_sample, max_length). Each step runs with the
        GIL released. Pieces never split a UTF-8 character; special tokens are skipped.
        """
        params = GeneratorParams(self)
        params.set_search_options(**search_options)
        gen = Generator(self, params)
        stream = _nbits.TokenStream(self._m)
        ids = self._m.encode(prompt, True) if isinstance(prompt, str) else _ids(prompt)
        if max_new_tokens < 0:
            raise Error(f"generate: max_new_tokens must be >= 0, got {max_new_tokens}")
        return self._pieces(gen, stream, ids, int(max_new_tokens))

    @staticmethod
    def _pieces(gen: "Generator", stream: Any, ids: _np.ndarray, max_new_tokens: int) -> Iterator[str]:
        g = gen._g
        if max_new_tokens == 0:
            return
        g.append_tokens(ids)
        n = 0
        while n < max_new_tokens and not g.is_done():
            tok = g.generate_next_token()
            n += 1
            piece = stream.push(tok)
            if piece:
                yield piece
        tail = stream.flush()
        if tail:
            yield tail

    def __repr__(self) -> str:
        return f"nbits.Model({self._path!r}, type={self.type!r})"


class TokenizerStream:
    """Turns generated ids into text one at a time (``og.TokenizerStream``): ``decode(id)``
    returns the text that became complete (empty while a UTF-8 character or a multi-token
    piece is incomplete); the pieces joined equal ``Tokenizer.decode`` of all the ids."""

    def __init__(self, model: Model, skip_special: bool = True):
        self._s = _nbits.TokenStream(model._m, bool(skip_special))

    def decode(self, token: int) -> str:
        """Adds one id and returns the text it completes (maybe empty)."""
        return self._s.push(int(token))

    def flush(self) -> str:
        """Returns the text still held back (nbits only; og has no flush)."""
        return self._s.flush()


class Tokenizer:
    """The model's tokenizer (``og.Tokenizer``): tokenizer.json, or the GGUF vocabulary."""

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise Error(f"Tokenizer: expected an nbits.Model, got {type(model).__name__}")
        if not model._m.has_tokenizer():
            raise Error(f"Tokenizer: {model.path} has no tokenizer.json (ids only)")
        self._model = model
        self._m = model._m

    def encode(self, text: str, add_special_tokens: bool = True) -> _np.ndarray:
        """Token ids of ``text`` as a 1-D numpy int32 array (special tokens such as BOS added
        as the tokenizer's post-processor says)."""
        if not isinstance(text, str):
            raise Error(f"Tokenizer.encode: text must be a str, got {type(text).__name__}")
        return self._m.encode(text, bool(add_special_tokens))

    def encode_batch(self, texts: Sequence[str]) -> List[_np.ndarray]:
        """``encode`` of each text (a list of arrays; nbits does not pad)."""
        return [self.encode(t) for t in texts]

    def decode(self, tokens: Any, skip_special_tokens: bool = True) -> str:
        """Text of ``tokens`` (a list or numpy array of ids); special tokens skipped."""
        return self._m.decode(_ids(tokens), bool(skip_special_tokens))

    def decode_batch(self, sequences: Sequence[Any]) -> List[str]:
        """``decode`` of each sequence."""
        return [self.decode(s) for s in sequences]

    def apply_chat_template(
        self,
        messages: Union[str, Sequence[Dict[str, Any]]],
        *,
        template_str: Optional[str] = None,
        tools: Optional[Union[str, Sequence[Dict[str, Any]]]] = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """Renders a conversation with the model's chat template (transformers'
        ``apply_chat_template``) to the prompt text.

        ``messages``: a JSON string (as onnxruntime-genai takes it) or a list of OpenAI-style
        message dicts: ``role`` and ``content``; an assistant's ``tool_calls`` (``{"id", "type":
        "function", "function": {"name", "arguments"}}``, arguments a JSON string or an object) and
        its ``reasoning_content`` (or ``thinking``); a tool result's ``tool_call_id`` and ``name``.
        ``tools``: OpenAI tool objects (a list, or its JSON string), which the template receives as
        ``tools``. ``template_str`` is not supported (:class:`Error` when given).
        """
        if template_str is not None:
            raise Error("apply_chat_template: template_str is not supported (the model's own template is used)")
        tools_json = ""
        if tools is not None:
            try:
                parsed = _json.loads(tools) if isinstance(tools, str) else list(tools)
                tools_json = _json.dumps(parsed)
            except (TypeError, ValueError) as e:
                raise Error(f"apply_chat_template: tools must be a list of tool objects or its JSON ({e})") from None
            if not isinstance(parsed, list):
                raise Error("apply_chat_template: tools must be a JSON array of tool objects")
        if isinstance(messages, str):
            try:
                messages = _json.loads(messages)
            except ValueError as e:
                raise Error(f"apply_chat_template: messages is not valid JSON ({e})") from None
        if isinstance(messages, dict):
            messages = [messages]
        rows = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict) or "role" not in msg:
                raise Error(f"apply_chat_template: message {i} must be a dict with 'role' and 'content'")
            content = msg.get("content", "")
            if content is None:
                content = ""
            if not isinstance(content, str):
                raise Error(f"apply_chat_template: message {i}: only text content is supported")
            reasoning = msg.get("reasoning_content") or msg.get("thinking") or ""
            if not isinstance(reasoning, str):
                raise Error(f"apply_chat_template: message {i}: reasoning_content must be a string")
            calls = []
            for j, call in enumerate(msg.get("tool_calls") or []):
                fn = call.get("function", call) if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise Error(f"apply_chat_template: message {i}: tool_calls[{j}] needs a function name")
                args = fn.get("arguments", {})
                calls.append((str(call.get("id", "")), fn["name"], args if isinstance(args, str) else _json.dumps(args)))
            rows.append((str(msg["role"]), content, reasoning, calls, str(msg.get("tool_call_id", "") or ""),
                         str(msg.get("name", "") or "")))
        return self._m.apply_chat_template(rows, bool(add_generation_prompt), tools_json)

    def create_stream(self) -> TokenizerStream:
        """A new :class:`TokenizerStream` for decoding generated ids one at a time."""
        return TokenizerStream(self._model)

    @property
    def eos_token_ids(self) -> _np.ndarray:
        """The end-of-sequence ids, as a numpy int32 array."""
        return _np.asarray(self._m.eos_token_ids(), dtype=_np.int32)

    @property
    def bos_token_id(self) -> int:
        """The beginning-of-sequence id (-1 when the model has none)."""
        b = self._m.bos_token_id()
        return -1 if b is None else b

    @property
    def pad_token_id(self) -> int:
        """The padding id (-1 when the model has none)."""
        p = self._m.pad_token_id()
        return -1 if p is None else p

    def to_token_id(self, token: str) -> int:
        """The id of one vocabulary entry (e.g. ``"<|im_end|>"``); -1 when there is none."""
        return self._m.token_to_id(token)


# og search options nbits accepts but has a single value for (beam search, batches).
_FIXED_OPTIONS = {
    "batch_size": 1,
    "num_beams": 1,
    "num_return_sequences": 1,
}
_IGNORED_OPTIONS = {
    "past_present_share_buffer",
    "early_stopping",
    "length_penalty",
    "diversity_penalty",
    "no_repeat_ngram_size",
    "chunk_size",
}
_OPTIONS = {
    "max_length",
    "min_length",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "repetition_penalty",
    "random_seed",
    "do_sample",
}


class GeneratorParams:
    """Search options for a Generator (``og.GeneratorParams``).

    Options not set take the model's defaults (genai_config.json's "search" block; greedy
    for a GGUF file).
    """

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise Error(f"GeneratorParams: expected an nbits.Model, got {type(model).__name__}")
        self._model = model
        self._options: Dict[str, Any] = {}
        self._guidance = ("", "")
        self._speculative: Dict[str, Any] = {}

    def set_search_options(self, **options: Any) -> None:
        """Sets search options by keyword, as onnxruntime-genai:

        - ``max_length``: the sequence (prompt + generated) length at which ``is_done()``
        - ``do_sample``: False = greedy; True = sample (at ``temperature``, else the config's)
        - ``temperature`` (0 = greedy), ``top_k``, ``top_p``, ``min_p``,
          ``repetition_penalty``
        - ``random_seed``: the sampler's seed; -1 (default) = a random one
        - ``batch_size``, ``num_beams``, ``num_return_sequences``: 1 only
        - ``min_length``: 0 only for now

        Other og options (``past_present_share_buffer``, ``early_stopping``, ...) are
        accepted and have no effect. An unknown name or a bad value raises :class:`Error`.
        """
        for name, value in options.items():
            if name in _FIXED_OPTIONS:
                if int(value) != _FIXED_OPTIONS[name]:
                    raise Error(f"search option {name}={value} is not supported (nbits runs one sequence: 1 only)")
                continue
            if name in _IGNORED_OPTIONS:
                continue
            if name not in _OPTIONS:
                known = ", ".join(sorted(_OPTIONS | set(_FIXED_OPTIONS)))
                raise Error(f"unknown search option '{name}' (known: {known})")
            if value is None:
                self._options.pop(name, None)
                continue
            if name in ("max_length", "top_k"):
                value = int(value)
                if value < (1 if name == "max_length" else 0):
                    raise Error(f"search option {name} must be >= {1 if name == 'max_length' else 0}, got {value}")
            elif name == "min_length":
                value = int(value)
                if value != 0:
                    raise Error("search option min_length > 0 is not supported yet")
            elif name == "random_seed":
                value = int(value)
                if value < -1 or value >= 2**64:
                    raise Error(f"search option random_seed must be -1 or in [0, 2^64), got {value}")
            elif name == "do_sample":
                value = bool(value)
            else:
                value = float(value)
                if name == "temperature" and value < 0:
                    raise Error(f"search option temperature must be >= 0, got {value}")
                if name in ("top_p", "min_p") and not 0 <= value <= 1:
                    raise Error(f"search option {name} must be in [0, 1], got {value}")
                if name == "repetition_penalty" and value <= 0:
                    raise Error(f"search option repetition_penalty must be > 0, got {value}")
            self._options[name] = value

    def set_guidance(self, type: str, data: str = "") -> None:
        """Constrained decoding, as onnxruntime-genai's ``set_guidance``: every token drawn keeps
        the reply valid, and it ends only where it is complete.

        ``type``: ``"json_schema"`` (``data``: a JSON schema, as text), ``"json_object"`` (any JSON
        object), ``"regex"`` (Rust regex syntax) or ``"lark"`` (llguidance's Lark dialect); ``""``
        turns it off. The spec is compiled here against the model's vocabulary: an invalid one
        raises :class:`Error` with the reason. The tokens the spec forces (text it allows in one
        way only) run in one verify step, and it combines with ``set_speculative_options``.
        """
        if not isinstance(type, str) or not isinstance(data, str):
            raise Error("set_guidance(type, data): both are strings")
        if type == "":
            self._guidance = ("", "")
            return
        why = _nbits.check_guidance(self._model._m, type, data)
        if why:
            raise Error(why)
        self._guidance = (type, data)

    def set_speculative_options(self, **options: Any) -> None:
        """Speculative decoding, with onnxruntime-genai's option names: a drafter proposes
        tokens and one pass of the model verifies them; the tokens are those plain decoding
        gives (greedy or seeded sampling), only faster where drafts are accepted. The token loop
        is unchanged (``generate_next_token`` hands out what a verify step drew, one at a time).

        - ``ngram_size`` (0, or 2 to 17): n-gram (prompt lookup) drafting: the last
          ``ngram_size - 1`` tokens are looked up in the prompt and the text so far (backing
          off to shorter matches); 0 = off
        - ``draft_model`` (nbits: an :class:`Model` of the same tokenizer): drafts from its
          greedy continuation (onnxruntime-genai takes it from genai_config.json's
          ``model.draft``); not with ``ngram_size``
        - ``max_draft_tokens`` (1 to 32, default 4): the longest draft
        - ``min_adaptive_k`` (0 to 32, default 0): 0 = every draft ``max_draft_tokens`` long;
          k > 0 = the length adapts to what pays, between k and ``max_draft_tokens``
        - ``cooldown`` (bool): accepted; nbits' adaptive length already steps down to plain
          decoding while drafts do not pay (with ``min_adaptive_k=0`` the width stays fixed)
        - ``ngram_chained_lookup``: False only for now

        No options turn speculation off. An unknown name or a bad value raises :class:`Error`;
        so does a draft model of another vocabulary (when the Generator is made). With
        ``set_guidance`` the drafts follow the tokens the spec forces.
        """
        known = {"ngram_size", "draft_model", "max_draft_tokens", "min_adaptive_k", "cooldown", "ngram_chained_lookup"}
        for name in options:
            if name not in known:
                raise Error(f"unknown speculative option '{name}' (known: {', '.join(sorted(known))})")
        o: Dict[str, Any] = {}

        def integer(name: str, lo: int, hi: int, default: int) -> int:
            v = options.get(name, default)
            if isinstance(v, bool) or not isinstance(v, (int, _np.integer)) or not lo <= int(v) <= hi:
                raise Error(f"speculative option {name} must be an int in [{lo}, {hi}], got {v!r}")
            return int(v)

        ngram = integer("ngram_size", 0, 17, 0)
        if ngram == 1:
            raise Error("speculative option ngram_size must be 0 (off) or in [2, 17], got 1")
        draft = options.get("draft_model")
        if draft is not None and not isinstance(draft, Model):
            raise Error(f"speculative option draft_model must be an nbits.Model, got {type(draft).__name__}")
        if ngram and draft is not None:
            raise Error("speculative options: n-gram decoding (ngram_size) and a draft_model cannot be combined")
        for name in ("cooldown", "ngram_chained_lookup"):
            if name in options and not isinstance(options[name], bool):
                raise Error(f"speculative option {name} must be a bool, got {options[name]!r}")
        if options.get("ngram_chained_lookup", False):
            raise Error("speculative option ngram_chained_lookup=True is not supported yet")
        k = integer("max_draft_tokens", 1, 32, 4)
        min_k = integer("min_adaptive_k", 0, 32, 0)
        if min_k > k:
            raise Error(f"speculative option min_adaptive_k ({min_k}) is above max_draft_tokens ({k})")
        if ngram == 0 and draft is None:
            if options:
                raise Error("speculative options: give ngram_size (2 to 17) or a draft_model")
            self._speculative = {}
            return
        o = {
            "max_draft_tokens": k,
            "min_adaptive_k": min_k,
            "cooldown": bool(options.get("cooldown", False)),
            "ngram_chained_lookup": False,
        }
        if ngram:
            o["ngram_size"] = ngram
        else:
            o["draft_model"] = draft
        self._speculative = o

    def get_speculative_options(self) -> Dict[str, Any]:
        """The speculative options in effect (a copy; empty when off)."""
        return dict(self._speculative)

    def get_search_options(self) -> Dict[str, Any]:
        """The options set so far (a copy)."""
        return dict(self._options)

    def _generation_options(self, max_new_tokens: int = 1 << 40) -> Dict[str, Any]:
        o = self._options
        kw: Dict[str, Any] = {"max_new_tokens": int(max_new_tokens)}
        if "max_length" in o:
            kw["max_length"] = o["max_length"]
        for name in ("top_k", "top_p", "repetition_penalty"):
            if name in o:
                kw[name] = o[name]
        if "min_p" in o:
            kw["min_p"] = o["min_p"]
        if "do_sample" in o:
            kw["do_sample"] = o["do_sample"]  # False: greedy; True: the config's temperature unless given
        if "temperature" in o:
            kw["temperature"] = o["temperature"]
        seed = o.get("random_seed", -1)
        kw["seed"] = _secrets.randbits(64) if seed == -1 else seed
        if self._guidance[0]:
            kw["guidance_type"], kw["guidance_data"] = self._guidance
        s = self._speculative
        if s:
            if "ngram_size" in s:
                kw["speculative"] = "lookup"
                kw["lookup_ngram"] = s["ngram_size"] - 1
            else:
                kw["speculative"] = "draft"
                kw["draft_model"] = s["draft_model"]._m
            kw["draft_max"] = s["max_draft_tokens"]
            kw["draft_min"] = s["min_adaptive_k"] or s["max_draft_tokens"]
        return kw


class Generator:
    """One conversation with its own KV cache (``og.Generator``).

    Several Generators on one Model run independently (also from different threads).
    """

    def __init__(self, model: Model, params: Optional[GeneratorParams] = None):
        if not isinstance(model, Model):
            raise Error(f"Generator: expected an nbits.Model, got {type(model).__name__}")
        if params is None:
            params = GeneratorParams(model)
        if not isinstance(params, GeneratorParams):
            raise Error(f"Generator: expected nbits.GeneratorParams, got {type(params).__name__}")
        self._model = model
        self._g = _nbits.Generator(model._m, **params._generation_options())

    def append_tokens(self, tokens: Any) -> None:
        """Runs ``tokens`` (a list or numpy array of ids, or a [1, n] batch of one) on top of
        the cache, after the token sampled last. GIL released while it runs."""
        self._g.append_tokens(_ids(tokens))

    def generate_next_token(self) -> None:
        """Runs the token sampled last (if any) and samples the next one. GIL released."""
        self._g.generate_next_token()

    def is_done(self) -> bool:
        """True once an end-of-sequence token was sampled or the sequence reached
        ``max_length`` or the KV capacity."""
        return self._g.is_done()

    def get_next_tokens(self) -> _np.ndarray:
        """The token sampled by the last ``generate_next_token()``, as a numpy int32 array of
        one element (one per sequence of the batch, in og)."""
        t = self._g.next_token()
        if t < 0:
            raise Error("get_next_tokens: no token sampled yet (call generate_next_token() first)")
        return _np.array([t], dtype=_np.int32)

    def get_logits(self) -> _np.ndarray:
        """The logits of the last position run, shape [1, 1, vocab_size] float32 (og's shape),
        before any sampling transform.

        A read-only numpy view of this Generator's logits buffer; no allocation per call
        (one memcpy from the model's output). The next ``get_logits()`` call on this
        Generator refreshes that buffer, so earlier arrays then show the new values: take
        ``get_logits().copy()`` to keep a step's logits. An array stays valid memory as long
        as it lives (even after the Generator is gone).
        """
        return self._g.logits()

    def get_sequence(self, index: int = 0) -> _np.ndarray:
        """Every token of sequence ``index`` (0: nbits runs one), appended and generated, as
        a numpy int32 array."""
        if index != 0:
            raise Error(f"get_sequence: index {index} out of range (the batch has 1 sequence)")
        return self._g.sequence()

    def token_count(self) -> int:
        """Number of tokens in the sequence."""
        return self._g.length()

    def rewind_to(self, new_length: int) -> None:
        """Keeps the first ``new_length`` tokens of the sequence (and their KV cache)."""
        self._g.rewind_to(int(new_length))

    def reset(self) -> None:
        """Forgets the conversation (nbits only)."""
        self._g.reset()

    def get_speculative_stats(self) -> Dict[str, Any]:
        """Speculative decoding's counts for this Generator (all zero when it is off), under
        onnxruntime-genai's names: ``target_forward_passes`` (model steps after a reply's first
        token), ``target_verify_forward_passes`` (those that verified a draft; also
        ``rounds``), ``standard_fallback_steps`` (plain steps), ``draft_tokens_proposed`` /
        ``draft_tokens_evaluated`` (draft tokens verified), ``draft_tokens_accepted``,
        ``acceptance_rate`` and ``effective_k`` (the draft length the next step tries)."""
        s = self._g.speculation_stats()
        return {
            "rounds": s["verify_steps"],
            "target_forward_passes": s["steps"],
            "target_verify_forward_passes": s["verify_steps"],
            "standard_fallback_steps": s["steps"] - s["verify_steps"],
            "draft_tokens_proposed": s["drafted"],
            "draft_tokens_evaluated": s["drafted"],
            "draft_tokens_accepted": s["accepted"],
            "acceptance_rate": s["accepted"] / s["drafted"] if s["drafted"] else 0.0,
            "effective_k": s["draft_length"],
        }

    def generate(self, text: str, on_text: Any = None) -> Dict[str, Any]:
        """nbits only: prefills ``text`` (only its new tokens: the cache keeps the earlier
        turns; BOS only on the first) and generates until ``is_done()`` in one call with the
        GIL released, calling ``on_text(piece)`` (GIL held) as text completes. Returns a dict
        with ``prompt_ids``, ``ids``, ``text``, ``stopped_at_eos``, ``prefill_tok_s``,
        ``decode_ms_per_token``."""
        return self._g.generate(text, on_text)

    @property
    def capacity(self) -> int:
        """KV cache capacity in tokens."""
        return self._g.capacity()

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes of the KV cache."""
        return self._g.kv_cache_bytes()
