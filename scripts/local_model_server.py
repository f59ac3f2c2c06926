"""Serve a GGUF model with xllamacpp's OpenAI-compatible HTTP server until SIGTERM or SIGINT.

Started in the background by scripts/local-model.sh; not meant to be run by hand.
"""

import argparse
import os
import signal
import sys
import threading

# Gemma's turn format. Gemma has no system role: a system message is put in front of the first
# user turn. The assistant role is called `model`. No whitespace control is needed: the pieces
# below are joined without any incidental whitespace.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] == 'system' %}"
    "{% set prefix = messages[0]['content'] + '\\n\\n' %}"
    "{% set turns = messages[1:] %}"
    "{% else %}"
    "{% set prefix = '' %}"
    "{% set turns = messages %}"
    "{% endif %}"
    "{% for message in turns %}"
    "{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
    "{% else %}{% set role = message['role'] %}{% endif %}"
    "<start_of_turn>{{ role }}\n"
    "{% if loop.first %}{{ prefix }}{% endif %}"
    "{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--parallel", type=int, default=16)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--alias", default="gemma-3-270m")
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = max(4, args.parallel)
    params.n_ctx = args.ctx
    params.kv_unified = True
    params.model_alias = {args.alias}
    params.use_jinja = True
    params.chat_template = GEMMA_CHAT_TEMPLATE
    threads = max(1, os.cpu_count() or 1)
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    server = xllamacpp.Server(params)
    print(
        f"serving {args.model} as {args.alias} on http://{args.host}:{args.port} "
        f"({params.n_parallel} slots, n_ctx {args.ctx}, {threads} threads)",
        flush=True,
    )
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
