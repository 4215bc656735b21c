"""The framework's four paradigms side by side on the same questions.

KG-only (the offline backbone), LLM-only (io, cot), LLM⊕KG (kg-llm-once:
retrieve once, answer in one step) and LLM⊗KG (ToG, ToG-R, plan), each
answered with `tog eval`'s machinery over one store, printed as one table:
Hits@1, F1, LLM calls, tokens, KG lookups and time per question.

    python benchmarks/grid.py QUESTIONS --store STORE [--model M --api-base URL] [--limit N]

Without ``--model`` the rows that need an LLM are left out, and LLM⊕KG and
LLM⊗KG run with their offline parts (the offline answer over the retrieved
paths; the offline roles of the planner). ``--stand-in`` serves the test
suite's GPT-4-like stand-in (tests/llm_server.py: it reads relation names
with engine.alignment and knows nothing else; not a language model) on
127.0.0.1 to show the calls and tokens each paradigm spends; its accuracy
says nothing about a real LLM's (it has no knowledge of its own for io/cot).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

ROWS = (  # (paradigm, method, needs an LLM)
    ("KG-only", "tog", False),
    ("LLM-only", "io", True),
    ("LLM-only", "cot", True),
    ("LLM⊕KG", "kg-llm-once", False),
    ("LLM⊗KG", "tog", True),
    ("LLM⊗KG", "tog-r", True),
    ("LLM⊗KG", "plan", False),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("questions", type=Path)
    ap.add_argument("--store", required=True)
    ap.add_argument("--types", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--api-base", default=None)
    ap.add_argument("--stand-in", action="store_true", help="Serve the tests' stand-in model and use it.")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-grid"))
    args = ap.parse_args()

    from engine.config import Settings
    from engine.evaluate import evaluate, read_questions
    from engine.store import open_store

    questions = list(read_questions(args.questions, args.types))[: args.limit]
    server = None
    if args.stand_in:
        import os

        sys.path.insert(0, str(HERE.parent / "tests"))
        from llm_server import StandInModel

        os.environ.setdefault("OPENAI_API_KEY", "sk-stand-in")
        server = StandInModel(mode="gpt4", seed=0).__enter__()
        args.model, args.api_base = "openai/stand-in", server.api_base
    args.workdir.mkdir(parents=True, exist_ok=True)
    store = open_store(args.store)
    rows = []
    try:
        for paradigm, method, needs_llm in ROWS:
            llm = args.model is not None and (needs_llm or paradigm != "KG-only")
            if needs_llm and not llm:
                continue
            settings = Settings(method=method, model=args.model if llm else None,
                                api_base=args.api_base if llm else None, record=False, llm_cache=False)
            out = args.workdir / f"{paradigm.replace('⊕', '+').replace('⊗', 'x')}-{method}.jsonl"
            out.unlink(missing_ok=True)
            started = time.perf_counter()
            with settings.open() as engine:
                summary = evaluate(questions, lambda q: engine.answer_row(store, q), out)
            llm_part = summary.get("llm", {})
            n = max(summary["questions"], 1)
            rows.append((paradigm, method + ("" if llm or paradigm == "KG-only" else " (offline)"),
                         summary["hits@1"], summary["f1"], llm_part.get("calls_per_question", 0.0),
                         (llm_part.get("tokens_in", 0) + llm_part.get("tokens_out", 0)) / n,
                         summary["kg_lookups_per_question"], (time.perf_counter() - started) / n))
    finally:
        store.close()
        if server is not None:
            server.__exit__(None, None, None)
    model = f"model {args.model}" + (" (the test suite's stand-in: not a language model)" if args.stand_in else "") \
        if args.model else "no LLM"
    print(f"{len(questions)} questions from {args.questions.name}, {model}")
    print(f"{'paradigm':9} {'method':22} {'Hits@1':>7} {'F1':>6} {'LLM calls':>10} {'tokens':>8} "
          f"{'KG lookups':>11} {'s/question':>11}")
    for p, m, h, f, c, t, k, s in rows:
        print(f"{p:9} {m:22} {h:7.3f} {f:6.3f} {c:10.2f} {t:8.0f} {k:11.1f} {s:11.3f}")
    (args.workdir / "grid.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
