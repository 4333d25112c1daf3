"""Interactive question/answer loop in the shape of onnxruntime-genai's phi3-qa.py example.

Written against onnxruntime-genai's Python API; the only nbits-specific line is the import.
Swap it for `import onnxruntime_genai as og` and the script runs on ONNX Runtime unchanged.

    python chat.py -m ~/.cache/nbits/builder-models/smollm2_int4 -g
    echo "What is the capital of France?" | python chat.py -m MODEL_DIR   # one turn from stdin
"""

import argparse
import json
import time

import nbits as og


def main(args):
    if args.verbose:
        print("Loading model...")
    config = og.Config(args.model_path)
    if args.execution_provider != "follow_config":
        config.clear_providers()
        if args.execution_provider != "cpu":
            config.append_provider(args.execution_provider)
    model = og.Model(config)
    tokenizer = og.Tokenizer(model)
    tokenizer_stream = tokenizer.create_stream()
    if args.verbose:
        print("Model and tokenizer loaded")

    search_options = {
        name: getattr(args, name)
        for name in ["do_sample", "max_length", "min_length", "top_p", "top_k", "temperature", "repetition_penalty"]
        if name in args
    }
    # A bounded default: otherwise max_length is the model's whole context.
    search_options.setdefault("max_length", 2048)

    while True:
        try:
            text = input("Input: ")
        except EOFError:
            break
        if not text:
            print("Error, input cannot be empty")
            continue
        started = time.time()

        messages = json.dumps([{"role": "user", "content": text}])
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        input_tokens = tokenizer.encode(prompt)

        params = og.GeneratorParams(model)
        params.set_search_options(**search_options)
        generator = og.Generator(model, params)
        generator.append_tokens(input_tokens)

        print()
        print("Output: ", end="", flush=True)
        first_token_time = None
        new_tokens = []
        try:
            while not generator.is_done():
                generator.generate_next_token()
                if first_token_time is None:
                    first_token_time = time.time()
                new_token = generator.get_next_tokens()[0]
                print(tokenizer_stream.decode(new_token), end="", flush=True)
                new_tokens.append(new_token)
        except KeyboardInterrupt:
            print("  --control+c pressed, aborting generation--")
        print()
        print()

        if args.timings and first_token_time is not None:
            prompt_time = first_token_time - started
            run_time = max(time.time() - first_token_time, 1e-9)
            print(
                f"Prompt length: {len(input_tokens)}, New tokens: {len(new_tokens)}, "
                f"Time to first: {prompt_time:.2f}s, "
                f"Prompt tokens per second: {len(input_tokens) / prompt_time:.2f} tps, "
                f"New tokens per second: {len(new_tokens) / run_time:.2f} tps"
            )
        del generator


if __name__ == "__main__":
    parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS, description="Question/answer loop")
    parser.add_argument("-m", "--model_path", type=str, required=True, help="genai folder (or a .gguf file for nbits)")
    parser.add_argument("-e", "--execution_provider", type=str, default="follow_config",
                        choices=["cpu", "cuda", "dml", "follow_config"], help="execution provider (nbits: cpu)")
    parser.add_argument("-i", "--min_length", type=int, help="min tokens including the prompt")
    parser.add_argument("-l", "--max_length", type=int, help="max tokens including the prompt")
    parser.add_argument("-ds", "--do_sample", action="store_true", default=False, help="sample instead of greedy")
    parser.add_argument("-p", "--top_p", type=float, help="top-p probability to sample with")
    parser.add_argument("-k", "--top_k", type=int, help="top-k tokens to sample from")
    parser.add_argument("-t", "--temperature", type=float, help="temperature to sample with")
    parser.add_argument("-r", "--repetition_penalty", type=float, help="repetition penalty")
    parser.add_argument("-v", "--verbose", action="store_true", default=False, help="print progress")
    parser.add_argument("-g", "--timings", action="store_true", default=False, help="print timings per answer")
    main(parser.parse_args())
