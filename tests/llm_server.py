"""A scripted language model behind a real OpenAI-compatible HTTP endpoint
on 127.0.0.1, so that tests exercise litellm's own code path end to end
(``--model openai/scripted --api-base http://127.0.0.1:PORT/v1``).

The script reads the prompts the engine sends (the task part of the last
user message) and replies in the format they ask for, with simple rules
that know the MetaQA sample's relation words: it prefers candidates that
share words with the question, calls a set of paths sufficient once they
are as long as the number of relation words the question uses, and
answers with the tail of the first path. Faults can be queued (an HTTP
status with headers, a delay, a garbage reply) to test retries and
fallbacks; every request is kept for inspection.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# question words that name a MetaQA relation (the script's "knowledge")
RELATION_WORDS = {
    "directed": "directed", "director": "directed", "directors": "directed",
    "written": "written", "wrote": "written", "writer": "written", "writers": "written", "screenwriter": "written",
    "starred": "starred", "actor": "starred", "actors": "starred", "acted": "starred", "starring": "starred",
    "released": "release", "release": "release", "year": "release", "years": "release",
    "genre": "genre", "genres": "genre", "type": "genre", "types": "genre",
    "language": "language", "languages": "language",
    "tags": "tags", "topics": "tags", "about": "tags", "described": "tags",
    "rating": "rating", "votes": "votes", "popularity": "votes",
}
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _field(task: str, name: str) -> str:
    m = re.search(rf"^{name}:\s*(.*)$", task, re.M)
    return m.group(1).strip() if m else ""


def _numbered(task: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", task, re.M)]


def relation_hops(question: str) -> int:
    """How many relations the question names (at least one)."""
    return max(1, len({RELATION_WORDS[w] for w in _words(question) if w in RELATION_WORDS}))


def bag_of_words(text: str, dimensions: int = 64) -> list[float]:
    """The scripted embedding: word counts hashed into a fixed number of slots."""
    import zlib

    vector = [0.0] * dimensions
    for w in _words(text):
        vector[zlib.crc32(w.encode()) % dimensions] += 1.0
    return vector


def scripted_reply(messages: list[dict]) -> str:
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    task = messages[-1]["content"]
    question = _field(task, "Question")
    if task.startswith("Your reply could not be read"):
        return "1: 1.0" if "number: score" in task else "Sufficient: no\nConfidence: 0.5"
    if "Candidates:" in task:  # relations / entities: prefer shared words
        items = _numbered(task)
        asked = _words(question) - {"the", "of", "who", "what", "which", "by", "in", "were", "was", "films", "movies"}
        scored = sorted(((len(asked & _words(c.split("->")[-1] if "entities" not in system else c)), -i, i)
                         for i, c in enumerate(items)), reverse=True)[:3]
        top = [i for _, _, i in scored]
        return "\n".join(f"{i + 1}: {round(1.0 / (rank + 1.5), 3)}" for rank, i in enumerate(top))
    if "Sufficient:" in system:
        items = _numbered(task) or [""]
        if "Chains:" in task:  # topic -> r1 -> r2: entities
            hops = max(item.split(":")[0].count("->") for item in items)
        else:  # topic -> r1 -> e1 -> r2 -> e2
            hops = max((item.count("->") + 1) // 2 for item in items)
        enough = hops >= relation_hops(question)
        return f"Sufficient: {'yes' if enough else 'no'}\nConfidence: 0.9"
    if "Entities:" in system:
        m = re.search(r"\[([^\]]+)\]", question)
        return f"Entities: {m.group(1) if m else question.split()[-1]}"
    if "Paths:" in task:  # answer
        items = _numbered(task)
        if not items:
            return "Answer: unknown\nPaths: none"
        return f"Answer: {items[0].split('->')[-1].strip()}\nPaths: 1"
    return "Answer: I do not know"  # io / cot


class ScriptedModel:
    """The HTTP endpoint; use as a context manager."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.requests: list[dict] = []
        self.faults: list[tuple] = []
        self.replies: list[str] = []  # scripted reply texts, used before the rules
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with model._lock:
                    model.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                    fault = model.faults.pop(0) if model.faults else None
                    canned = model.replies.pop(0) if model.replies and fault is None else None
                if fault and fault[0] == "status":
                    self._send(fault[1], {"error": {"message": f"scripted {fault[1]}", "type": "scripted"}},
                               fault[2] if len(fault) > 2 else {})
                    return
                if fault and fault[0] == "sleep":
                    time.sleep(fault[1])
                if model.latency:
                    time.sleep(model.latency)
                if self.path.endswith("/embeddings"):
                    texts = body.get("input", [])
                    texts = [texts] if isinstance(texts, str) else texts
                    self._send(200, {"object": "list", "model": body.get("model", "scripted-embed"),
                                     "data": [{"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                                              for i, t in enumerate(texts)],
                                     "usage": {"prompt_tokens": sum(len(t.split()) for t in texts),
                                               "total_tokens": sum(len(t.split()) for t in texts)}})
                    return
                text = canned if canned is not None else (
                    fault[1] if fault and fault[0] == "garbage" else scripted_reply(body.get("messages", [])))
                prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
                self._send(200, {
                    "id": f"chatcmpl-{len(model.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                              "total_tokens": prompt_tokens + len(text.split())},
                })

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def calls(self) -> int:
        return len(self.requests)
