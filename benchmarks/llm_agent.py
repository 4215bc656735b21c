"""The LLM agent against stand-in models, next to the offline backbone.

For each stand-in class of tests/llm_server.py (``gpt4``: mostly on format;
``llama2``: verbose, off format about half the time, 3% unreadable; the
same with JSON-schema replies, ``--structured on``) and each method (ToG
with the LLM pruning, ToG-R, the cheap hybrid pruner with the LLM judge),
answers the same seeded sample of MetaQA dev questions through litellm and
prints Hits@1, LLM calls per question (mean and max), repeated calls
(repairs), fallbacks and tokens per question; the offline backbone answers
the same questions first. The stand-ins know only the prompt text (no gold
answers, no KG vocabulary): the GPT-4-like one reads relation names with
``engine.alignment`` (what the offline backbone reads them with, so the
difference is what the LLM path loses), the Llama-2-like one by wordllama's
word similarities.

    python benchmarks/llm_agent.py --per-hop 67
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from metaqa import DEFAULT_DATA, sample  # noqa: E402

METHODS = {"ToG": ["--method", "tog"], "ToG-R": ["--method", "tog-r"],
           "cheap pruner + LLM judge": ["--method", "tog", "--pruner", "hybrid"]}
MODES = {"gpt4-like": ("gpt4", []), "llama2-like": ("llama2", []),
         "llama2-like, structured": ("llama2", ["--structured", "on"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--per-hop", type=int, default=67, help="Dev questions per hop (67: 201 in all).")
    ap.add_argument("--seed", type=int, default=23, help="The sample's seed (not the one the stand-ins were "
                    "written against: they were tried on the repository's MetaQA sample only).")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="Run only the rows whose stand-in or method contains TEXT (repeatable: all must match).")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tog-bench-llm")
    args = ap.parse_args()
    if not (args.data / "kb.txt.gz").exists():
        sys.exit(f"MetaQA data not found at {args.data}; pass --data DIR")

    from click.testing import CliRunner
    from llm_server import StandInModel

    from engine.cli import cli

    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")
    args.workdir.mkdir(parents=True, exist_ok=True)
    os.environ["TOG_CACHE_DIR"] = str(args.workdir / "cache")
    store = args.workdir / "store"
    runner = CliRunner()
    loaded = runner.invoke(cli, ["load", str(args.data / "kb.txt.gz"), "--store", str(store), "--format",
                                 "delimited", "--no-progress"])
    if loaded.exit_code != 0:
        sys.exit(loaded.output)
    questions = args.workdir / f"dev-{args.seed}-{args.per_hop}.jsonl"
    rows = [d for hop in (1, 2, 3) for d in sample(args.data, hop, args.per_hop, args.seed)]
    questions.write_text("".join(json.dumps(d) + "\n" for d in rows), encoding="utf-8")
    print(f"{len(rows)} MetaQA dev questions ({args.per_hop} per hop, seed {args.seed}); N = D = 3")

    def run(name: str, extra: list[str]) -> dict:
        out = args.workdir / f"{name}.jsonl"
        out.unlink(missing_ok=True)
        r = runner.invoke(cli, ["eval", str(questions), "--store", str(store), "--out", str(out), "--no-cache",
                                "--concurrency", str(args.concurrency), "--no-progress", "--no-record", *extra])
        if r.exit_code != 0:
            sys.exit(r.output)
        return json.loads(out.with_name(out.name + ".summary.json").read_text())

    offline = run("offline", [])
    offline_r = run("offline-tog-r", ["--method", "tog-r"])  # ToG-R's sampling without a model, for its rows
    header = f"{'stand-in':26} {'method':26} {'Hits@1':>7} {'calls/q':>8} {'max':>4} {'repeats':>8} " \
             f"{'fallbacks':>9} {'tokens/q':>9}"
    print(header)
    print(f"{'(no LLM)':26} {'offline backbone':26} {offline['hits@1']:7.3f}")
    print(f"{'(no LLM)':26} {'offline backbone, ToG-R':26} {offline_r['hits@1']:7.3f}")
    for label, (mode, mode_args) in MODES.items():
        for method, method_args in METHODS.items():
            if not all(x.lower() in f"{label} {method}".lower() for x in args.only):
                continue
            with StandInModel(mode=mode) as model:
                s = run(f"{mode}-{method.split()[0]}-{len(mode_args)}",
                        ["--model", "openai/standin", "--api-base", model.api_base, *mode_args, *method_args])
            llm, n = s["llm"], s["questions"] or 1
            repeats = llm["repairs"] / (llm["calls"] or 1)
            print(f"{label:26} {method:26} {s['hits@1']:7.3f} {llm['calls_per_question']:8.2f} "
                  f"{llm['calls_max']:4d} {100 * repeats:7.1f}% {llm['fallbacks']:9d} "
                  f"{(llm['tokens_in'] + llm['tokens_out']) / n:9.0f}")


if __name__ == "__main__":
    main()
