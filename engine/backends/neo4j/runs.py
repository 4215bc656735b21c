"""The Neo4j backend's run log, and the commands that draw a run in Neo4j Browser.

Runs: ``(:TogRun)-[:ROOT]->(:TogPath)``, ``(:TogPath)-[:PARENT]->(:TogPath)``,
``(:TogPath)-[:AT]->(:Entity|Value)``; path nodes also carry a ``Kept`` or
``Pruned`` label for Browser's style sheet.  A run whose end could not be
written because the connection dropped waits in a local journal and is
marked failed the next time any ``tog`` command connects to that database.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from engine.backends.common import natural
from engine.backends.neo4j.session import Neo4jSession
from engine.errors import StoreError, UnknownRunError
from engine.graph import PathRecord, RunInfo, RunTree, relation_text, utc_now
from engine.queries import cypher
from engine.store import BrowserStyle

if TYPE_CHECKING:
    from engine.backends.neo4j.kg import Neo4jKG


def _no_run(run_id: str) -> UnknownRunError:
    return UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)")


def _run_info(r: dict, full: bool = False) -> RunInfo:
    return RunInfo(
        id=r["id"], question=r["question"], started=r["started"], status=r["status"], method=r["method"],
        config=json.loads(r["config"]) if r.get("config") else {},
        answer=json.loads(r["answer"]) if r.get("answer") else [],
        stats=json.loads(r["stats"]) if full and r.get("stats") else {},
        finished=r.get("finished"),
        feedback=sorted((json.loads(f) for f in r.get("feedback") or []), key=lambda f: f.get("at", "")),
    )


class Neo4jRunLog:
    """``RunLog`` in a Neo4j database."""

    def __init__(self, session: Neo4jSession) -> None:
        self.session = session
        self._mark_unfinished_failures()

    def start(self, run: RunInfo) -> None:
        self.session.run("run_start", write=True, id=run.id, question=run.question, started=run.started,
                         status=run.status, method=run.method, config=json.dumps(run.config, sort_keys=True))

    def record_step(self, run_id: str, paths: Sequence[PathRecord]) -> None:
        # parents first: a path's PARENT link needs its parent's node
        rows = [{
            "id": p.id, "depth": p.depth, "entity": p.entity, "name": p.name, "parent": p.parent,
            "relation": p.relation, "direction": (p.direction or "out") if p.relation else None,
            "via": " ".join(p.via) if p.via else None,
            "score": float(p.score) if p.score is not None else None,
            "kept": bool(p.kept), "literal": bool(p.literal),
            # what Browser shows: the entity's name and the score to two places on the node, the
            # relation's KG name (not its IRI) on the edge from its parent (cypher/tog-browser.grass)
            "caption": f"{p.name} (topic)" if p.parent is None else
                       f"{p.name} {p.score:.2f}" if p.score is not None else p.name,
            "step": None if p.relation is None else
                    (p.relation_name or relation_text(p.relation)) + (" (of)" if p.direction == "in" else ""),
        } for p in sorted(paths, key=lambda p: p.depth)]
        self.session.run("run_step", write=True, run=run_id, paths=rows)

    def finish(self, run: RunInfo) -> None:
        cited = [f"{run.id}/{p}" for p in run.stats.get("answer_paths", [])]
        try:
            self.session.run("run_finish", write=True, id=run.id, status=run.status, answer=json.dumps(run.answer),
                             stats=json.dumps(run.stats, sort_keys=True), finished=run.finished, cited=cited,
                             simulated=_simulated_rows(run))
        except StoreError as e:
            if run.status == "failed":  # the connection is gone: mark it failed on the next connect
                _failure_journal().add(self.session.database_id, run.id, run.finished, str(e))
            raise

    def _mark_unfinished_failures(self) -> None:
        journal = _failure_journal()
        database = self.session.database_id
        for entry in journal.entries(database):
            self.session.run("run_fail_unfinished", write=True, id=entry["run"], finished=entry["finished"],
                             error=entry["error"])
        journal.remove(database)

    def list(self) -> list[RunInfo]:
        return [_run_info(r["run"]) for r in self.session.run("runs_list")]

    def get(self, run_id: str) -> RunTree:
        rows = self.session.run("run_get", id=run_id)
        if not rows:
            raise _no_run(run_id)
        info = _run_info(rows[0]["run"], full=True)
        paths = []
        for row in self.session.run("run_paths", id=run_id):
            p = row["path"]
            paths.append(PathRecord(
                id=p["path"], depth=int(p["depth"]), entity=p["entity"], name=p["name"],
                parent=row["parent"], relation=p.get("relation"), direction=p.get("direction"),
                via=tuple(p["via"].split()) if p.get("via") else (),
                score=p.get("score"), kept=bool(p["kept"]), literal=bool(p["literal"]),
            ))
        paths.sort(key=lambda p: (p.depth, natural(p.id)))
        return RunTree(info, paths)

    def feedback(self, run_id: str, entry: dict) -> None:
        rows = self.session.run("run_feedback", write=True, run=run_id, entry=json.dumps(entry, sort_keys=True))
        if not rows or not rows[0]["found"]:
            raise _no_run(run_id)

    def learned(self) -> str | None:
        return self.session.setting("learned", None)

    def keep_learned(self, text: str | None) -> None:
        self.session.run("setting_set", write=True, key="learned", value=json.dumps(text))

    def delete(self, run_ids: Sequence[str]) -> int:
        known = {r.id for r in self.list()}
        dropped = 0
        for run_id in run_ids:
            if run_id in known:
                self.session.run("run_delete", write=True, id=run_id)
                dropped += 1
        return dropped


def _simulated_rows(run: RunInfo) -> list[dict]:
    """What Browser draws of a planned run's lookahead: per real step, the
    trajectories of its deepest simulated level, each hung off the real path
    node it was foreseen from and captioned with its steps (``=>`` marks one
    the Model foresaw) and the Critic's score."""
    rows = []
    for step in run.stats.get("lookahead") or []:
        levels = step.get("levels") or []
        for n, t in enumerate(levels[-1] if levels else []):
            if not t.get("from") or not t.get("steps"):
                continue  # recorded before trajectories named their start
            rows.append({"id": f"{run.id}/s{step['step']}.{n}", "from": f"{run.id}/{t['from']}",
                         "step": int(step["step"]), "score": float(t["score"]),
                         "caption": f"simulated: {' => '.join(t['steps'])} {float(t['score']):.2f}"})
    return rows


class Neo4jBrowser:
    """``RunBrowser``: Neo4j Browser draws a run with the saved query."""

    def __init__(self, kg: Neo4jKG | None = None) -> None:
        self.kg = kg

    def commands(self, tree: RunTree, last: int = 10) -> str:
        """What to paste into Browser, in order: ``:style`` (the runs' colours
        and captions, and the names of the KG relations the run followed),
        the parameter and the saved query (``cypher/run_browser.cypher``);
        then the queries for the last ``last`` runs and for the corrections
        that touched the run's entities."""
        relations = sorted({p.relation for p in tree.paths if p.relation} | {v for p in tree.paths for v in p.via})
        style = self.style(relations, tree.relation_names)
        return (f":style {style.line()}\n\n"
                f":param run => {json.dumps(tree.info.id)}\n\n{cypher('run_browser').strip()}\n\n"
                f":param last => {int(last)}\n\n{cypher('runs_browser_last').strip()}\n\n"
                f"{cypher('run_browser_corrections').strip()}\n")

    def style(self, relations: Sequence[str] | None = None, names: dict[str, str] | None = None) -> BrowserStyle:
        """Browser's style sheet: ``cypher/tog-browser.grass`` (the runs'
        colours and captions), then a rule per KG relationship type (every
        type in the database, or ``relations``) captioned with the relation's
        KG name (``names``, else asked), so KG edges read ``directed by``
        instead of their IRI wherever Browser draws them."""
        rules = parse_grass(resources.files("cypher").joinpath("tog-browser.grass").read_text(encoding="utf-8"))
        if relations is None:
            if self.kg is None:
                raise StoreError("no database to read the relationship types of")
            relations = self.kg.session.relationship_types()
        types = sorted(set(relations))
        if names is None:
            names = self.kg.labels(types) if self.kg is not None and types else {}
        skipped = 0
        for t in types:
            selector = grass_selector("relationship", t)
            if selector is None:
                skipped += 1
                continue
            rules[selector] = {"caption": " ".join((names.get(t) or relation_text(t)).split())}
        return BrowserStyle(rules, len(types) - skipped, skipped)


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    """Our own grass files (``selector { key: value; ... }``, ``/* */``
    comments, values in quotes may hold braces) as the dict of Browser's JSON form."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    rules: dict[str, dict[str, str]] = {}
    selector, body, inside, quote = "", "", False, ""
    for ch in text:
        if quote:
            body += ch
            quote = "" if ch == quote else quote
        elif inside and ch in "'\"":
            body += ch
            quote = ch
        elif ch == "{" and not inside:
            inside = True
        elif ch == "}" and inside:
            props = {}
            for item in body.split(";"):
                key, sep, value = item.partition(":")
                if sep:
                    props[key.strip()] = value.strip().strip("'\"")
            rules[selector.strip()] = props
            selector, body, inside = "", "", False
        elif inside:
            body += ch
        else:
            selector += ch
    return rules


def grass_selector(tag: str, name: str) -> str | None:
    """A Browser style selector for one label or relationship type: Browser
    splits selectors at dots and reads a dot after a backslash as part of the
    name; a name with a backslash of its own cannot be written (None)."""
    if "\\" in name or not name:
        return None
    return tag + "." + name.replace(".", "\\.")


class _FailureJournal:
    """Runs that failed while Neo4j was unreachable, as JSON lines in a local
    file (``$TOG_STATE_DIR``, default ``~/.local/state/tog``), keyed by the
    database's id; the next connection to that database marks them failed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> list[dict]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a torn last line from a crash: nothing to mark
        return out

    def add(self, database: str, run_id: str, finished: str | None, error: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"database": database, "run": run_id, "finished": finished or utc_now(),
                                    "error": error}) + "\n")
        except OSError:
            pass  # nowhere to remember it: the run stays "running", never "done"

    def entries(self, database: str) -> list[dict]:
        return [e for e in self._read() if e.get("database") == database and e.get("run")]

    def remove(self, database: str) -> None:
        entries = self._read()
        rest = [e for e in entries if e.get("database") != database]
        if len(rest) == len(entries):
            return
        try:
            if rest:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text("".join(json.dumps(e) + "\n" for e in rest), encoding="utf-8")
                os.replace(tmp, self.path)
            else:
                self.path.unlink()
        except OSError:
            pass


def _failure_journal() -> _FailureJournal:
    root = os.environ.get("TOG_STATE_DIR") or Path.home() / ".local" / "state" / "tog"
    return _FailureJournal(Path(root) / "neo4j-failed-runs.jsonl")
