"""Evaluation throughput with a slow model: sequential against --concurrency K.

A scripted model (tests/llm_server.py) behind a real OpenAI-compatible
endpoint on 127.0.0.1 answers every call after ``--latency`` seconds; the
same MetaQA sample questions are evaluated with ``tog eval`` once one at a
time and once K at a time (no cache), and the script prints questions per
second, the speed-up and the LLM calls per question.

    python benchmarks/llm_eval.py --latency 1 --concurrency 8 --questions 16
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=1.0, help="Seconds per model reply.")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--questions", type=int, default=16, help="First N questions of the MetaQA sample.")
    args = ap.parse_args()

    from click.testing import CliRunner
    from llm_server import ScriptedModel

    from engine.cli import cli

    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")
    sample = HERE.parent / "examples" / "metaqa"
    with tempfile.TemporaryDirectory() as tmp, ScriptedModel(latency=args.latency) as model:
        store = Path(tmp) / "store"
        runner = CliRunner()
        assert runner.invoke(cli, ["load", str(sample / "kb.txt"), "--store", str(store)]).exit_code == 0
        rates = {}
        for k in (1, args.concurrency):
            out = Path(tmp) / f"results-{k}.jsonl"
            before = model.calls
            started = time.perf_counter()
            r = runner.invoke(cli, ["eval", str(sample / "questions.txt"), "--store", str(store), "--out", str(out),
                                    "--limit", str(args.questions), "--model", "openai/scripted", "--api-base",
                                    model.api_base, "--no-cache", "--concurrency", str(k)])
            seconds = time.perf_counter() - started
            if r.exit_code != 0:
                sys.exit(r.output)
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            rates[k] = len(rows) / seconds
            print(f"concurrency {k}: {len(rows)} questions in {seconds:.1f} s, {rates[k]:.2f} questions/s, "
                  f"{(model.calls - before) / len(rows):.2f} LLM calls/question")
        print(f"speed-up at concurrency {args.concurrency}: {rates[args.concurrency] / rates[1]:.1f}x "
              f"(model latency {args.latency:.1f} s per call)")


if __name__ == "__main__":
    main()
