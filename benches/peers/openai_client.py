#!/usr/bin/env python3
"""The OpenAI Python SDK side of the runner comparison: AsyncOpenAI with a semaphore.

    openai_client.py --base-url http://127.0.0.1:PORT/v1 --requests R --concurrency C --out OUT.json

This is the loop under EvalScope, OpenCompass's OpenAISDK model and simple-evals: one
`chat.completions.create` per sample, at most C in flight. Each reply's text is kept in memory as those
tools keep their predictions. Writes requests/s over the timed loop (after one warm-up request).
"""
import argparse
import asyncio
import json
import time

from openai import AsyncOpenAI


async def main(a):
    client = AsyncOpenAI(base_url=a.base_url, api_key="sk-bench", max_retries=3, timeout=60)
    sem = asyncio.Semaphore(a.concurrency)
    answers = []
    errors = 0

    async def one(i):
        nonlocal errors
        async with sem:
            try:
                r = await client.chat.completions.create(
                    model="fake-model",
                    messages=[{"role": "user", "content": f"Problem {i % 1000}: what is {i % 97} + {i % 89}?"}],
                    temperature=0.7,
                    top_p=0.95,
                    seed=i,
                    max_tokens=64,
                )
                answers.append(r.choices[0].message.content)
            except Exception:  # noqa: BLE001 - counted, as a harness would log it
                errors += 1

    await one(-1)
    answers.clear()
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(a.requests)))
    secs = time.perf_counter() - start
    await client.close()
    out = {"requests": a.requests, "ok": len(answers), "errors": errors, "secs": secs,
           "req_per_s": a.requests / secs}
    with open(a.out, "w") as f:
        json.dump(out, f)
    print(f"openai AsyncOpenAI: {a.requests} requests in {secs:.2f} s = {a.requests / secs:.0f} req/s")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--requests", type=int, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--out", required=True)
    asyncio.run(main(p.parse_args()))
