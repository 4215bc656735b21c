"""Pictures of a reasoning run: Mermaid text, a standalone SVG, a standalone HTML page.

The explored tree reads left to right from the topic entities: kept path
nodes green, pruned ones grey, the paths the answer cites drawn thick with a
gold border, a hop over a fact that a correction added dashed orange. Each
node shows its entity and score, each edge its relation. The HTML page holds
the SVG inline with the question, the answer and the cited paths: no script,
no font or style sheet from the network.
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass

from engine.graph import PathRecord, RunTree
from engine.text import printable

MAX_CHILDREN = 12   # children drawn per node; the rest become one "… N more" node
COL, ROW = 250, 46  # layout grid in pixels
BOX_W, BOX_H = 190, 34
COLOURS = {"topic": ("#4C8EDA", "#2870C2", "#FFFFFF"), "kept": ("#57C7A4", "#2E9C78", "#0B3D2E"),
           "pruned": ("#E4E6EA", "#B5BAC2", "#4A4F57"), "more": ("#FFFFFF", "#B5BAC2", "#4A4F57")}
ANSWER_BORDER, CORRECTED = "#E0A100", "#F36924"


@dataclass
class _Node:
    id: str
    label: str
    score: str
    kind: str            # topic | kept | pruned | more
    parent: str | None
    relation: str = ""
    on_answer: bool = False
    corrected: str | None = None
    x: float = 0.0
    y: float = 0.0


def _relation(p: PathRecord, tree: RunTree) -> str:
    if p.relation is None:
        return ""
    rel = tree.relation(p.relation) + (" (of)" if p.direction == "in" else "")
    if p.via:
        rel += " / " + " / ".join(tree.relation(v) for v in p.via)
    return rel


def _nodes(tree: RunTree, corrected: dict[str, str]) -> list[_Node]:
    by_id = {p.id: p for p in tree.paths}
    on_answer: set[str] = set()
    for pid in tree.info.stats.get("answer_paths", []):
        while pid is not None and pid in by_id and pid not in on_answer:
            on_answer.add(pid)
            pid = by_id[pid].parent
    children: dict[str | None, list[PathRecord]] = defaultdict(list)
    for p in tree.paths:
        children[p.parent].append(p)
    out: list[_Node] = []

    def walk(parent: str | None) -> None:
        kids = sorted(children.get(parent, []), key=lambda p: (p.id not in on_answer, not p.kept, -(p.score or 0.0)))
        for p in kids[:MAX_CHILDREN]:
            kind = "topic" if p.relation is None else ("kept" if p.kept else "pruned")
            out.append(_Node(p.id, p.name, "" if p.score is None else f"{p.score:.2f}", kind, parent,
                             "" if p.relation is None else _relation(p, tree), p.id in on_answer, corrected.get(p.id)))
            walk(p.id)
        if len(kids) > MAX_CHILDREN:
            out.append(_Node(f"{parent}-more", f"… {len(kids) - MAX_CHILDREN} more", "", "more", parent))

    walk(None)
    return out


def _layout(nodes: list[_Node]) -> tuple[float, float]:
    """Leaves one row apart in tree order; a parent centred on its children."""
    kids: dict[str | None, list[_Node]] = defaultdict(list)
    for n in nodes:
        kids[n.parent].append(n)
    row = 0

    def place(n: _Node, depth: int) -> None:
        nonlocal row
        n.x = 20 + depth * COL
        mine = kids.get(n.id, [])
        for k in mine:
            place(k, depth + 1)
        if mine:
            n.y = (mine[0].y + mine[-1].y) / 2
        else:
            n.y = 20 + row * ROW
            row += 1

    for top in kids.get(None, []):
        place(top, 0)
    width = max((n.x for n in nodes), default=0) + BOX_W + 20
    height = max((n.y for n in nodes), default=0) + BOX_H + 20
    return width, height


def _e(text: object) -> str:
    """Data as HTML/SVG text: markup escaped, and control characters (an
    escape sequence, a bell, a bidi override in a name) written as ``\\uXXXX``,
    so a file opened in a terminal or an editor shows them, not obeys them."""
    return html.escape(printable(str(text)))


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def svg(tree: RunTree, corrected: dict[str, str] | None = None) -> str:
    """The run's tree as a standalone SVG document."""
    nodes = _nodes(tree, corrected or {})
    width, height = _layout(nodes)
    where = {n.id: n for n in nodes}
    e = _e
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="11">',
             f"<title>{e(tree.info.question)}</title>"]
    for n in nodes:  # edges first, under the boxes
        p = where.get(n.parent) if n.parent else None
        if p is None:
            continue
        x1, y1, x2, y2 = p.x + BOX_W, p.y + BOX_H / 2, n.x, n.y + BOX_H / 2
        colour = CORRECTED if n.corrected else (ANSWER_BORDER if n.on_answer else "#9AA1AC")
        dash = ' stroke-dasharray="6 3"' if n.corrected else ""
        widthpx = 3 if n.on_answer else 1.2
        parts.append(f'<path class="edge{" answer" if n.on_answer else ""}" d="M{x1:.0f},{y1:.0f} C{x1 + 30:.0f},'
                     f'{y1:.0f} {x2 - 30:.0f},{y2:.0f} {x2:.0f},{y2:.0f}" fill="none" stroke="{colour}" '
                     f'stroke-width="{widthpx}"{dash}/>')
        if n.relation:
            label = _short(n.relation, 34) + (f" [corrected {n.corrected}]" if n.corrected else "")
            parts.append(f'<text class="relation" x="{x2 - 6:.0f}" y="{y2 - 4:.0f}" text-anchor="end" '
                         f'fill="#555" font-size="9">{e(label)}</text>')
    for n in nodes:
        fill, stroke, ink = COLOURS[n.kind]
        border = ANSWER_BORDER if n.on_answer else stroke
        bw = 3 if n.on_answer else 1.5
        classes = f"node {n.kind}" + (" answer" if n.on_answer else "")
        parts.append(f'<g class="{classes}" data-path="{e(n.id)}">'
                     f'<rect x="{n.x:.0f}" y="{n.y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{fill}" '
                     f'stroke="{border}" stroke-width="{bw}"/>'
                     f'<text x="{n.x + 8:.0f}" y="{n.y + 14:.0f}" fill="{ink}" font-weight="bold">'
                     f'{e(_short(n.label))}</text>'
                     + (f'<text x="{n.x + 8:.0f}" y="{n.y + 27:.0f}" fill="{ink}">score {e(n.score)}</text>'
                        if n.score else "")
                     + f"<title>{e(n.label)}{(' — ' + e(n.relation)) if n.relation else ''}</title></g>")
    parts.append("</svg>")
    return "\n".join(parts)


def mermaid(tree: RunTree, corrected: dict[str, str] | None = None) -> str:
    """The run's tree as a Mermaid flowchart (paste into any Mermaid viewer)."""
    nodes = _nodes(tree, corrected or {})

    def q(text: str) -> str:  # Mermaid's entity codes; a line break would end the statement
        text = printable(" ".join(text.split()))
        for ch, code in (("#", "#35;"), ("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
            text = text.replace(ch, code)
        return text

    ids = {n.id: f"n{i}" for i, n in enumerate(nodes)}
    lines = ["flowchart LR"]
    for n in nodes:
        label = q(n.label) + (f"<br/>score {n.score}" if n.score else "")
        lines.append(f'  {ids[n.id]}["{label}"]:::{n.kind}{"Answer" if n.on_answer else ""}')
    for n in nodes:
        if n.parent in ids:
            text = q(n.relation + (f" [corrected {n.corrected}]" if n.corrected else "")) or " "
            arrow = "==>" if n.on_answer else ("-.->" if n.corrected else "-->")
            lines.append(f'  {ids[n.parent]} {arrow}|"{text}"| {ids[n.id]}')
    for kind, (fill, stroke, ink) in COLOURS.items():
        lines.append(f"  classDef {kind} fill:{fill},stroke:{stroke},color:{ink}")
        lines.append(f"  classDef {kind}Answer fill:{fill},stroke:{ANSWER_BORDER},stroke-width:3px,color:{ink}")
    return "\n".join(lines)


def html_page(tree: RunTree, corrected: dict[str, str] | None = None, gold: list[str] | None = None,
              hit: bool | None = None) -> str:
    """A standalone HTML page: question, answer, cited paths, feedback, the
    tree; with ``gold`` (an evaluation's), the gold answers and whether it was a hit."""
    info, e = tree.info, _e
    by_id = {p.id: p for p in tree.paths}

    def verbalise(pid: str) -> str:
        chain = []
        at: str | None = pid
        while at is not None and at in by_id:
            p = by_id[at]
            chain.append(p.name if p.relation is None else f"{_relation(p, tree)} → {p.name}")
            at = p.parent
        return " → ".join(reversed(chain))

    cited = [verbalise(pid) for pid in info.stats.get("answer_paths", []) if pid in by_id]
    stats = info.stats
    facts = [f"status {info.status}", f"method {info.method}", f"depth {stats.get('depth', '-')}",
             f"{stats.get('kg_lookups', '-')} KG lookups"]
    if "llm_calls" in stats:
        cost = "cost unknown" if stats.get("cost") is None else f"${stats['cost']:.6f}"
        facts.append(f"{stats['llm_calls']} LLM calls, {stats.get('tokens_in', 0):,} tokens in, "
                     f"{stats.get('tokens_out', 0):,} out, {cost}")
    feedback = "".join(f"<li>{e(f['rating'])} ({e(f['at'])}){': ' + e(f['comment']) if f.get('comment') else ''}</li>"
                       for f in info.feedback)
    fallbacks = int(stats.get("llm_fallbacks") or 0)
    warning = (f'<p class="meta" id="fallbacks" style="color:#A33">Warning: {fallbacks} model '
               f'repl{"y" if fallbacks == 1 else "ies"} could not be read; the offline scorer, judge or answer '
               "stood in.</p>\n") if fallbacks else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tog run {e(info.id)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
h1 {{ font-size: 20px; margin: 0 0 8px; }}
.answer-line {{ font-size: 18px; margin: 8px 0; }}
.answer-line b {{ background: #FFF4CC; padding: 2px 6px; border-radius: 4px; }}
.meta {{ color: #666; font-size: 13px; }}
.legend span {{ display: inline-block; margin-right: 14px; font-size: 12px; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; border-radius: 3px; vertical-align: -2px;
            margin-right: 4px; border: 2px solid; }}
.tree {{ overflow: auto; border: 1px solid #DDD; border-radius: 6px; padding: 8px; margin-top: 12px; }}
</style></head>
<body>
<h1>{e(info.question)}</h1>
<p class="answer-line" id="answer">Answer: {' | '.join(f'<b>{e(a)}</b>' for a in info.answer) or '<i>none</i>'}</p>
{_gold_line(gold, hit)}
<p class="meta">run {e(info.id)} · {' · '.join(e(f) for f in facts)}</p>
{warning}<h2 style="font-size:15px">Paths the answer cites</h2>
<ol id="cited">{''.join(f'<li>{e(c)}</li>' for c in cited) or '<li><i>none</i></li>'}</ol>
{f'<h2 style="font-size:15px">Feedback</h2><ul>{feedback}</ul>' if feedback else ''}
<p class="legend"><span><i style="background:#4C8EDA;border-color:#2870C2"></i>topic</span>
<span><i style="background:#57C7A4;border-color:#2E9C78"></i>kept</span>
<span><i style="background:#E4E6EA;border-color:#B5BAC2"></i>pruned</span>
<span><i style="background:#FFF;border-color:{ANSWER_BORDER}"></i>on a cited path</span>
<span><i style="background:#FFF;border-color:{CORRECTED};border-style:dashed"></i>fact from a correction</span></p>
<div class="tree">
{svg(tree, corrected)}
</div>
</body></html>
"""


def _gold_line(gold: list[str] | None, hit: bool | None) -> str:
    if gold is None:
        return ""
    e = _e
    mark = "" if hit is None else (' · <span style="color:#2E9C78">hit</span>' if hit
                                   else ' · <span style="color:#C0392B">miss</span>')
    return f'<p class="meta" id="gold">Gold: {e(" | ".join(map(str, gold))) or "<i>none</i>"}{mark}</p>'


def _settings_line(settings: dict) -> str:
    """What produced an evaluation's answers, in one line."""
    if not settings:
        return ""
    search = settings.get("search") or {}
    parts = [f"{k} {search[k]}" for k in ("method", "width", "depth", "threshold") if k in search]
    parts += [f"pruner {settings.get('pruner')}", f"reasoner {settings.get('reasoner')}"]
    if settings.get("relation_descriptions"):
        parts.append(f"relation descriptions {settings['relation_descriptions']}")
    if settings.get("soft_match"):
        parts.append("soft match")
    return f'<p id="settings">Settings: {_e(", ".join(map(str, parts)))}.</p>'


def report_page(title: str, summary: dict, rows: list[dict], links: dict[str, str]) -> str:
    """A standalone HTML report of an evaluation: accuracy overall and per type,
    LLM usage, and one row per question linking to its run's picture."""
    e = _e

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    types = "".join(f"<tr><td>{e(t)}</td><td>{b['questions']}</td><td>{pct(b['hits@1'])}</td>"
                    f"<td>{pct(b['hits@1_strict'])}</td><td>{b['f1']:.3f}</td></tr>"
                    for t, b in summary.get("by_type", {}).items())
    llm = summary.get("llm")
    usage = ""
    if llm:
        cost = "unknown" if llm["cost"] is None else f"${llm['cost']:.6f}"
        usage = (f"<p>LLM: {llm['calls']} calls ({llm['calls_per_question']:.2f} per question), "
                 f"{llm['cache_hits']} from the cache, {llm['tokens_in']:,} tokens in, {llm['tokens_out']:,} out, "
                 f"cost {cost}; {llm['retries']} retries, {llm['repairs']} repaired replies, "
                 f"{llm['fallbacks']} fallbacks.</p>")
    model = (summary.get("settings") or {}).get("llm") or {}
    if model.get("model"):
        usage += (f"<p>Model: {e(str(model['model']))}" + (f" at {e(str(model['host']))}" if model.get("host") else "")
                  + f"; temperatures {model.get('temperature_explore')} / {model.get('temperature_reason')}, "
                  f"at most {model.get('max_tokens')} tokens per reply, structured replies "
                  f"{e(str(model.get('structured')))}, prompts {e(str(model.get('prompts')))}.</p>")
    body = []
    for r in rows:
        link = links.get(r.get("run") or "")
        run = f'<a href="{e(link)}">{e(r["run"])}</a>' if link else e(str(r.get("run") or "-"))
        mark = "✓" if r.get("hit_lenient") else "✗"
        body.append(f"<tr class=\"{'hit' if r.get('hit_lenient') else 'miss'}\"><td>{mark}</td><td>{e(str(r['id']))}</td>"
                    f"<td>{e(r['question'])}</td><td>{e(' | '.join(r.get('prediction', [])[:5]))}</td>"
                    f"<td>{e(' | '.join(map(str, r.get('answers', [])[:5])))}</td>"
                    f"<td>{e(str(r.get('type') or ''))}</td><td>{run}</td>"
                    f"<td>{e(r.get('error', ''))}</td></tr>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }}
td, th {{ border: 1px solid #DDD; padding: 4px 8px; text-align: left; vertical-align: top; }}
tr.hit td:first-child {{ color: #2E9C78; }} tr.miss td:first-child {{ color: #C0392B; }}
</style></head>
<body>
<h1 style="font-size:20px">{e(title)}</h1>
<p id="accuracy">{summary['questions']} questions · Hits@1 {pct(summary['hits@1'])} (strict {pct(summary['hits@1_strict'])})
· F1 {summary['f1']:.3f} · {summary['errors']} errors · KG {summary['kg_ms_per_question']:.1f} ms and
{summary['kg_lookups_per_question']:.1f} lookups per question</p>
{_settings_line(summary.get("settings") or {})}
{usage}
{f'<table id="types"><tr><th>type</th><th>questions</th><th>Hits@1</th><th>strict</th><th>F1</th></tr>{types}</table>' if types else ''}
<table id="questions"><tr><th></th><th>id</th><th>question</th><th>answer</th><th>gold</th><th>type</th><th>run</th><th>error</th></tr>
{''.join(body)}
</table>
</body></html>
"""
