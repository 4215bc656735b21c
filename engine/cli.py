"""The ``tog`` command: a thin layer over the library.

Each command opens the store, calls one library function and prints.  Domain
errors (:class:`engine.errors.TogError`) become one line on stderr and exit
code 1; set ``TOG_TRACEBACK=1`` to see the traceback instead.  Heavy imports
(pyoxigraph, tqdm, a backend's driver) happen inside commands, and litellm is never
imported here, so ``tog --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.errors import LoadError, TogError

if TYPE_CHECKING:
    from engine.store import Store

DEFAULT_STORE = ".tog/store"
ANSWERS_SHOWN = 10
ENTITY_SHOWN = 100  # relations `tog entity` lists in a direction without --all (a hub may have thousands)


def echo(message: object = "", **kwargs) -> None:
    """``click.echo`` with every control character but the line break escaped:
    nothing from the data reaches the terminal raw (values are also escaped
    where they are put into a line, so a name cannot forge a line)."""
    from engine.text import printable_lines

    click.echo(printable_lines(str(message)), **kwargs)


def _fail_cleanly(fn):
    """Turn domain errors into one clear line (and Ctrl-C into exit 130)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from engine.config import SettingsError

        _BESIDE_WRITER.clear()
        try:
            return fn(*args, **kwargs)
        except SettingsError as e:
            if os.environ.get("TOG_TRACEBACK"):
                raise
            from engine.text import printable, redact

            raise click.UsageError(printable(redact(str(e)))) from e
        except TogError as e:
            if os.environ.get("TOG_TRACEBACK"):
                raise
            from engine.text import printable, redact

            raise click.ClickException(printable(redact(str(e)))) from e
        except OSError as e:
            if not _BESIDE_WRITER or isinstance(e, BrokenPipeError) or os.environ.get("TOG_TRACEBACK"):
                raise  # (click ends quietly when the reader of the output went: `tog info | head`)
            # the writer may compact files away under a read-only view: a retry reads the new ones
            raise click.ClickException(f"reading {_BESIDE_WRITER[0]} while another process writes it failed "
                                       f"({type(e).__name__}); run the command again") from e
        except KeyboardInterrupt:
            echo("\ninterrupted; the store is consistent. Re-run the same command to go on.", err=True)
            sys.exit(130)

    return wrapper


store_option = click.option(
    "--store", "store", envvar="TOG_STORE", default=DEFAULT_STORE, show_default=True, show_envvar=True,
    help="Directory of the embedded Oxigraph store, a Neo4j server (neo4j://HOST:7687 or bolt://HOST:7687; "
         "user and password from NEO4J_USER / NEO4J_PASSWORD), or a SPARQL endpoint "
         "(sparql+http://HOST:8890/sparql, read-only).",
)


def _click_option(o):
    """The click option of a setting (``engine.config.Option``)."""
    if o.toggle:
        decls = [f"--{o.toggle}/--no-{o.toggle}", o.name]
        return click.option(*decls, default=o.default, show_default=True, help=o.help)
    decls = [o.cli_name, *o.flags]
    if o.flag:
        return click.option(*decls, is_flag=True, default=o.default, help=o.help)
    kind: object = o.kind
    if o.choices is not None:
        kind = click.Choice(list(o.choices()))
    elif o.limits is not None:
        lo, hi = o.limits
        kind = (click.IntRange if o.kind is int else click.FloatRange)(lo, hi)
    elif o.kind is Path:
        kind = click.Path(dir_okay=False, path_type=Path)
    extra = {"envvar": o.envvar, "show_envvar": True} if o.envvar else {}
    return click.option(*decls, type=kind, default=o.default, show_default=o.default is not None, help=o.help,
                        **extra)


def search_options(fn):
    """Options shared by `ask` and `eval`, one per setting of ``engine.config``
    (also from TOG_* variables and the config file)."""
    from engine.config import OPTIONS

    for o in reversed(OPTIONS):
        fn = _click_option(o)(fn)
    return fn


def _open(store: str, create: bool = False, reading: bool = False):
    """The store; ``reading`` (a command that only reads): an embedded store
    another process is writing (a load, an eval) opens read-only, with a note."""
    from engine.errors import StoreBusyError
    from engine.store import open_store

    try:
        return open_store(store, create=create)
    except StoreBusyError:
        if not reading:
            raise
    opened = open_store(store, read_only=True)
    _BESIDE_WRITER.append(store)
    echo(f"note: {opened.name} is in use by another process; reading it as it is now", err=True)
    return opened


def _note_server(s) -> None:
    """One line on stderr each when the store's server started since its last
    warm-up, and when a load into it has not finished."""
    from engine.text import printable

    started = s.warmth.cold_since() if s.warmth is not None else None
    if started:
        echo(f"note: {s.name} has not been warmed up since it started ({printable(started)}), so its first questions "
             f"pay its cold start (seconds); `tog warm --store {s.name}` takes that on instead", err=True)
    how = s.unfinished_load() if s.unfinished_load is not None else None
    if how == "running":
        echo(f"note: a load into {s.name} is running; answers may change once it finishes, which brings the samples "
             "of crowded pairs up to date", err=True)
    elif how:
        echo(f"note: a load into {s.name} stopped before its end (killed, or failed): running it again resumes it; "
             "until then the first question that meets a hub or a crowded pair makes what its end would have (once)",
             err=True)


_BESIDE_WRITER: list[str] = []  # stores this process reads beside their writer (see _fail_cleanly)


def _settings(options: dict):
    from engine.config import Settings

    return Settings.from_options(options)


def _config_file(path: Path | None) -> dict:
    """Defaults for `ask` and `eval` from a TOML file: top-level keys for
    both, ``[ask]`` / ``[eval]`` tables for one (option names with _ or -)."""
    import tomllib

    if path is None:
        path = Path("tog.toml")
        if not path.is_file():
            return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise click.UsageError(f"cannot read the config file {path}: {e}") from None
    from engine.config import FILE_KEYS

    known = FILE_KEYS | {"no_cache"}

    def keys(table: dict, where: str) -> dict:
        out = {}
        for k, v in table.items():
            if isinstance(v, dict):
                continue
            k = k.replace("-", "_")
            if k == "cache":
                k = "llm_cache"
            if k not in known and k != "llm_cache":
                raise click.UsageError(f"{path}: unknown setting {k!r}{where}")
            out[k] = v
        return out

    common = keys(data, "")
    return {cmd: {**common, **keys(data.get(cmd, {}), f" in [{cmd}]")} for cmd in ("ask", "eval")}


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "TOG"})
@click.version_option(package_name="think-on-graph")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), envvar="TOG_CONFIG",
              show_envvar=True, default=None,
              help="TOML file of defaults for ask and eval (default: ./tog.toml when present).")
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None) -> None:
    """Think-on-Graph: answer questions by beam search over a knowledge graph.

    \b
    Quick start:
      tog load examples/metaqa/kb.txt
      tog ask "who directed the films written by [Paul Attanasio]"
      tog runs show last
    """
    ctx.default_map = _config_file(config_path)
    _notes_to_stderr()


class _Notes(logging.Handler):
    """The library's notes (logger ``tog``: a store building its summaries
    once, ...) as plain lines on stderr, escaped like everything we print."""

    def emit(self, record: logging.LogRecord) -> None:
        echo(record.getMessage(), err=True)


def _notes_to_stderr() -> None:
    log = logging.getLogger("tog")
    if not any(isinstance(h, _Notes) for h in log.handlers):
        log.addHandler(_Notes())
        log.setLevel(logging.INFO)
        log.propagate = False


def load_options(fn):
    """Options shared by `load` and `export-neo4j`."""
    options = [
        click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path)),
        click.option("--format", "fmt", default=None,
                     help="nt, nq, turtle, trig, n3, xml, json-ld, trix, hext, delimited, tsv or csv "
                          "(default: from the file name)."),
        click.option("--delimiter", default=None, help="Field separator of delimited files (default: | or tab, guessed)."),
        click.option("--max-errors", type=click.IntRange(0), default=1000, show_default=True,
                     help="Stop a file after this many bad lines."),
        click.option("--name-predicate", "name_predicates", multiple=True, metavar="IRI",
                     help="Predicate whose literals name entities (repeatable; default: rdfs:label, "
                          "Freebase type.object.name, schema:name, skos:prefLabel)."),
        click.option("--name-lang", "name_langs", multiple=True, metavar="LANG",
                     help="Languages of names to index for linking (repeatable; default: en and untagged)."),
        click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _load_files(sink, files, fmt, delimiter, max_errors, name_predicates, name_langs, progress,
                force=False, chunk_bytes=None, segment_lines=None, store=None) -> None:
    """Load each file through ``sink`` (an ``engine.store.BulkSink``) and print its summary;
    then, given the ``store``, say if the loads wrote back facts that its corrections took out."""
    back = _written_back(store) if store is not None else None  # (those the KG held before these loads)
    try:
        _load_each(sink, files, fmt, delimiter, max_errors, name_predicates, name_langs, progress, force,
                   chunk_bytes, segment_lines)
    except LoadError:  # (what it wrote stays, and a re-run resumes)
        if back is not None:
            _note_written_back(store, back)
        raise
    if back is not None:
        _note_written_back(store, back)


def _load_each(sink, files, fmt, delimiter, max_errors, name_predicates, name_langs, progress, force, chunk_bytes,
               segment_lines) -> None:
    from engine.graph import DEFAULT_NAME_PREDICATES
    from loaders.base import position
    from loaders.load import SEGMENT_LINES, load_file

    if progress is None:
        progress = sys.stderr.isatty()
    langs = tuple(name_langs) if name_langs else ("en", "")
    preds = tuple(name_predicates) if name_predicates else DEFAULT_NAME_PREDICATES
    for f in files:
        report = load_file(sink, f, fmt=fmt, delimiter=delimiter, max_errors=max_errors,
                           name_predicates=preds, name_langs=langs, progress=progress, force=force,
                           chunk_bytes=chunk_bytes, segment_lines=segment_lines or SEGMENT_LINES, summarise=False)
        if report.already_complete:
            echo(f"{f}: already loaded ({report.triples:,} triples); nothing to do (--force reads it again)")
            continue
        resumed = f", resumed at {position(f, report.resumed_from, report.format)}" if report.resumed_from else ""
        labels = f" ({report.names:,} of them name labels)" if report.format in ("delimited", "tsv", "csv") else ""
        long_names = f" ({report.unindexed:,} too long to index: shown, not linked)" if report.unindexed else ""
        echo(f"{f}: {report.triples:,} triples read{labels}, {report.skipped:,} lines skipped, "
             f"{report.names:,} names indexed{long_names} in {report.seconds:.1f}s "
             f"({report.rate:,.0f} triples/s{resumed})")
        if report.header:
            echo(f"  line {report.header_line}: a header ({report.header}), not a fact: skipped")
        for line, reason in report.bad:
            echo(f"  line {line}: {reason}" if line else f"  {reason}")
        if report.skipped > len(report.bad):
            before = " (skipped before the resume)" if report.resumed_from and not report.bad else ""
            echo(f"  … and {report.skipped - len(report.bad):,} more bad lines{before}")
    summary = sink.summarise(progress)
    if summary is not None and "hubs" not in summary and summary.get("samples_merged"):  # Neo4j: no hubs to count
        echo(f"crowded-pair samples: {summary['samples_merged']:,} merged with the edges the load wrote")
    if summary is not None and sum(summary.get("hubs", {}).values()):
        hubs = summary["hubs"]
        merged = summary.get("samples_merged", 0)
        how = (f", updated for the {summary['touched']:,} entities the load wrote edges of"
               + (f" ({merged:,} crowded-pair samples merged)" if merged else "")) \
            if summary.get("found") == "updated" else ""
        echo(f"hub summaries: {hubs['out']:,} entities with more than {summary['threshold']:,} edges out, "
             f"{hubs['in']:,} in ({summary['edges']:,} edges) in {summary['seconds']:.1f}s{how}")
    if summary is not None and summary.get("big_pairs_made"):
        echo(f"biggest pairs: {summary['big_pairs_made']:,} of more than {summary['sort_max']:,} edges sampled "
             f"(questions read their samples) in {summary['big_pairs_seconds']:.1f}s")


def _written_back(store) -> set:
    """The facts that corrections took out which the KG holds (a load wrote them back)."""
    from engine.feedback import taken_out_again

    return {f for f, _ in taken_out_again(store)}


def _note_written_back(store, before: set) -> None:
    """One line on stderr when the loads wrote back facts that corrections
    took out (beyond those the KG held ``before``): how many, the first, and
    how to take them out again."""
    from engine.feedback import taken_out_again
    from engine.graph import is_literal
    from engine.text import printable

    back = [(f, cid) for f, cid in taken_out_again(store) if f not in before]
    if not back:
        return
    (s, r, o), cid = back[0]
    fact = printable(f"<{s}>|<{r}>|" + (o if is_literal(o) else f"<{o}>"))
    if len(back) == 1:
        echo(f"note: a fact that a correction took out is in the KG again (the load wrote it back): {fact} "
             f"(correction {cid}); `tog correct --remove` takes it out again", err=True)
        return
    echo(f"note: {len(back):,} facts that corrections took out are in the KG again (the load wrote them back), "
         f"the first {fact} (correction {cid}); `tog correct --remove` takes them out again", err=True)


@cli.command()
@load_options
@store_option
@click.option("--force", is_flag=True, help="Read a file again even if it was loaded completely before.")
@click.option("--chunk-bytes", type=click.IntRange(1024), default=None, hidden=True,
              help="Bytes per read block, and per write of the careful path; a statement format (Turtle ...) "
                   "checks in every BYTES/80 statements at most (default: the store's).")
@click.option("--segment-lines", type=click.IntRange(1), default=50_000_000, hidden=True,
              help="Lines per bulk-load call (and checkpoint) of the fast path.")
@_fail_cleanly
def load(files, store, fmt, delimiter, max_errors, name_predicates, name_langs, force, progress,
         chunk_bytes, segment_lines) -> None:
    """Load triple FILES (RDF or delimited, optionally .gz/.bz2) into the store.

    Re-running the same command resumes an interrupted load; loading a file
    twice adds nothing.
    """
    with _open(store, create=True) as s:
        _load_files(s.need_sink(), files, fmt, delimiter, max_errors, name_predicates, name_langs, progress,
                    force, chunk_bytes, segment_lines, store=s)


@cli.command("export-neo4j")
@load_options
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="New folder for the CSV files and import.args.")
@_fail_cleanly
def export_neo4j(files, out, fmt, delimiter, max_errors, name_predicates, name_langs, progress) -> None:
    """Write triple FILES as CSV for Neo4j's offline import (a new, empty database).

    \b
    Then, with the server stopped:
      launcher/neo4j-server import OUT    (replaces the database)
    The result is the database an online load builds (on 2 cores the online
    load was the faster of the two; see the README).  A killed export
    starts over.
    """
    from engine.backends.neo4j.csv_export import Neo4jCsvExport

    export = Neo4jCsvExport(out)
    try:
        _load_files(export, files, fmt, delimiter, max_errors, name_predicates, name_langs, progress)
    except BaseException:
        export.abort()
        raise
    counts = export.close()
    echo(f"{out}: {counts['entities']:,} entities, {counts['values']:,} values, "
         f"{counts['relationships']:,} relationships, {counts['name_keys']:,} name keys. "
         f"Next, with the server stopped: launcher/neo4j-server import {out}")


@cli.group()
def extract() -> None:
    """Cut the subset a question set needs out of a big dump (streaming, resumable)."""


def _extract_options(fn):
    options = [
        click.argument("dump", type=click.Path(path_type=Path)),
        click.option("--hops", type=click.IntRange(1, 6), default=2, show_default=True, help="Hops around the seeds."),
        click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True,
                     help="The subset as an N-Triples file."),
        click.option("--store", "load_into", default=None,
                     help="Also load the subset into this store (directory or neo4j:// URI)."),
        click.option("--max-errors", type=click.IntRange(0), default=1000, show_default=True,
                     help="Stop after this many malformed lines."),
        click.option("--progress/--no-progress", default=None,
                     help="Progress bars (default: when stderr is a terminal)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _run_extract(profile, dump, seeds, hops, domains, out, load_into, max_errors, progress) -> None:
    from loaders.freebase import extract as run, read_seeds

    if progress is None:
        progress = sys.stderr.isatty()
    report = run(dump, read_seeds(seeds, profile), out, hops=hops, domains=domains, max_errors=max_errors,
                 progress=progress, profile=profile)
    resumed = f", {report.passes_skipped} passes done before" if report.passes_skipped else ""
    echo(f"{out}: {report.written:,} triples, {report.entities:,} entities from {report.lines:,} dump lines "
         f"({report.skipped:,} malformed) in {report.seconds:.1f}s{resumed}")
    for line, reason in report.bad[:5]:
        echo(f"  line {line}: {reason}")
    if load_into:
        with _open(load_into, create=True) as s:
            _load_files(s.need_sink(), [out], "nt", None, max_errors, (), (), progress, store=s)


@extract.command("freebase")
@_extract_options
@click.option("--seed", "seeds", multiple=True, required=True, metavar="MID|FILE",
              help="Seed entity (m.0abc, ns:m.0abc or its IRI), or a file of them, or a ToG question "
                   "file (its topic entities); repeatable.")
@click.option("--domain", "domains", multiple=True, metavar="DOMAIN",
              help="Keep only relations of these Freebase domains (film, people, ...); repeatable.")
@_fail_cleanly
def extract_freebase(dump, seeds, hops, domains, out, load_into, max_errors, progress) -> None:
    """Write the seeds' K-hop neighbourhood in the Freebase DUMP to --out.

    One streaming pass over the dump per hop plus two (names, CVTs);
    re-running the same command after a kill resumes after the last
    finished pass.
    """
    from loaders.freebase import FREEBASE

    _run_extract(FREEBASE, dump, seeds, hops, domains, out, load_into, max_errors, progress)


@extract.command("wikidata")
@_extract_options
@click.option("--seed", "seeds", multiple=True, required=True, metavar="QID|FILE",
              help="Seed entity (Q42, wd:Q42 or its IRI), or a file of them, or a ToG question file "
                   "(its qid_topic_entity); repeatable.")
@click.option("--property", "domains", multiple=True, metavar="PID",
              help="Keep only these properties (P19, P27, ...); repeatable.")
@_fail_cleanly
def extract_wikidata(dump, seeds, hops, domains, out, load_into, max_errors, progress) -> None:
    """Write the seeds' K-hop neighbourhood in a Wikidata DUMP to --out.

    The dump is the truthy N-Triples dump or the JSON dump (gz or bz2).
    English labels and aliases are kept, and the labels of the properties
    used; qualifiers are dropped. Resumes after a kill like `extract freebase`.
    """
    from loaders.freebase import WIKIDATA

    _run_extract(WIKIDATA, dump, seeds, hops, domains, out, load_into, max_errors, progress)


@cli.command()
@click.argument("question")
@store_option
@click.option("--topic", "topics", multiple=True, metavar="ENTITY",
              help="Topic entity by name or IRI (repeatable); default: linked from the question.")
@search_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_fail_cleanly
def ask(question, store, topics, as_json, **options) -> None:
    """Answer QUESTION from the store, printing the supporting KG paths."""
    settings = _settings(options)
    with settings.open() as engine, _open(store, reading=not settings.record) as s:
        _note_server(s)
        result = engine.ask(s, question, topics)
    data = result.to_json()
    if as_json:
        echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    from engine.text import printable

    answer = [printable(a) for a in data["answer"]]
    shown = ", ".join(answer[:ANSWERS_SHOWN]) + (f" … and {len(answer) - ANSWERS_SHOWN} more (--json lists all)"
                                                 if len(answer) > ANSWERS_SHOWN else "")
    source = "" if data["from_kg"] or not answer else "  (from the model's own knowledge, not the KG)"
    if answer:
        echo(f"answer: {shown}{source}")
    else:
        echo(f"answer: (none) - {printable(data['reason'] or 'no answer found in the KG')}")
    if data["fallbacks"]:
        echo(_fallback_line(data["fallbacks"]))
    if data["paths"]:
        echo("paths:")
        for p in data["paths"][:ANSWERS_SHOWN]:
            echo(f"  {printable(p)}")
        if len(data["paths"]) > ANSWERS_SHOWN:
            echo(f"  … and {len(data['paths']) - ANSWERS_SHOWN} more (--json lists all)")
    s = data["stats"]
    echo(f"depth {s['depth']}, {s['kg_lookups']} KG lookups, {1000 * s['kg_seconds']:.1f} ms in the KG")
    if "llm_calls" in s:
        echo(_llm_line(s))
    if data["run"]:
        echo(f"run: {data['run']}  (tog runs show {data['run']})")


def _fallback_line(n: int) -> str:
    return (f"warning: {n} model repl{'y' if n == 1 else 'ies'} could not be read, even when asked again; "
            "the offline scorer, judge or answer stood in (--strict-llm makes this an error)")


def _llm_line(s: dict) -> str:
    cost = "cost unknown" if s["cost"] is None else f"${s['cost']:.6f}"
    extra = "".join(f", {s[k]} {label}" for k, label in (("llm_cache_hits", "from the cache"),
                    ("llm_retries", "retries"), ("llm_repairs", "repaired replies"),
                    ("llm_fallbacks", "fallbacks")) if s.get(k))
    return (f"LLM: {s['llm_calls']} calls, {s['tokens_in']:,} tokens in, {s['tokens_out']:,} out, {cost}, "
            f"{s['llm_seconds']:.1f} s{extra}")


@cli.group()
def runs() -> None:
    """Inspect and prune recorded reasoning runs."""


@runs.command("list")
@store_option
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the newest N runs (still oldest first).")
@click.option("--status", type=click.Choice(["running", "done", "failed"]), default=None, help="Only runs with this status.")
@click.option("--since", metavar="AGE", default=None, help="Only runs started within AGE (30d, 12h, 45m, 90s, 2w).")
@click.option("--json", "as_json", is_flag=True)
@_fail_cleanly
def runs_list(store, limit, status, since, as_json) -> None:
    """List runs, oldest first."""
    from engine.runs import cutoff, since_ok

    try:
        start = cutoff(since) if since else None
    except ValueError as e:
        raise click.ClickException(f"--since: {e}") from None
    with _open(store, reading=True) as s:
        items = s.need_runs().list()
    total = len(items)
    items = [r for r in items if (status is None or r.status == status) and (start is None or since_ok(r.started, start))]
    if limit is not None:
        items = items[-limit:]
    if as_json:
        echo(json.dumps([{"id": r.id, "question": r.question, "started": r.started, "status": r.status,
                          "method": r.method, "answer": r.answer, "keep": r.config.get("keep"),
                          "rated": bool(r.feedback)} for r in items], ensure_ascii=False))
        return
    if not items:
        echo("no runs yet" if not total else f"no runs of the {total} kept match")
        return
    from engine.text import printable

    rows = [(r.id, r.started[:19].replace("T", " "), r.status, r.method, printable(r.question),
             ", ".join(printable(a) for a in r.answer[:3]) + (" …" if len(r.answer) > 3 else ""))
            for r in items]
    header = ("RUN", "STARTED (UTC)", "STATUS", "METHOD", "QUESTION", "ANSWER")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    widths.append(min(60, max(len(row[4]) for row in [header, *rows])))
    for row in [header, *rows]:
        question = row[4] if len(row[4]) <= widths[4] else row[4][:widths[4] - 1] + "…"
        echo("  ".join(cell.ljust(w) for cell, w in zip((*row[:4], question), widths)) + "  " + row[5])
    if len(items) < total:
        echo(f"({len(items)} of {total} runs shown)")


@runs.command("show")
@click.argument("run_id", default="last")
@store_option
@click.option("--kept-only", is_flag=True, help="Hide pruned paths.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--cypher", "as_cypher", is_flag=True,
              help="Print the Neo4j Browser commands that draw the run (Neo4j stores).")
@click.option("--format", "fmt", type=click.Choice(["text", "html", "svg", "mermaid"]), default="text",
              show_default=True, help="A picture of the explored tree instead of the text tree.")
@click.option("--output", "-o", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the output (text tree, JSON, picture or commands) to this file (default: print it).")
@click.option("--simulated", is_flag=True,
              help="Also print a planned run's lookahead (--method plan): what was simulated, never read from the KG.")
@_fail_cleanly
def runs_show(run_id, store, kept_only, as_json, as_cypher, fmt, output, simulated) -> None:
    """Show RUN_ID (default: the last run) as a tree of path nodes."""
    from dataclasses import asdict

    from engine.feedback import corrected_paths
    from engine.runs import last_run_id, name_relations, render_tree

    outputs = [name for name, on in (("--json", as_json), ("--cypher", as_cypher),
                                     (f"--format {fmt}", fmt != "text")) if on]
    if len(outputs) > 1:
        raise click.UsageError(f"{' and '.join(outputs)} are different outputs; pick one")
    if simulated and (fmt != "text" or as_cypher or as_json):
        raise click.UsageError("--simulated adds to the text tree (--json has the lookahead in its stats)")
    if kept_only and (fmt != "text" or as_cypher):
        raise click.UsageError("--kept-only hides pruned paths in the text tree and in --json; pictures and "
                               "--cypher draw the whole run (pruned paths in grey)")
    with _open(store, reading=True) as s:
        runs_log = s.need_runs()
        tree = name_relations(s.kg, runs_log.get(last_run_id(runs_log, run_id)))
        corrected = corrected_paths(s, tree)
        browser = s.browser
    if fmt != "text":
        from engine import pictures

        text = {"html": pictures.html_page, "svg": pictures.svg, "mermaid": pictures.mermaid}[fmt](tree, corrected)
    elif as_cypher:
        if browser is None:
            raise click.ClickException("--cypher draws runs stored in Neo4j; this store has no graph browser "
                                       "(`tog runs show` prints its tree, --format html draws it)")
        text = browser.commands(tree)
    elif as_json:
        paths = [asdict(p) for p in tree.paths if p.kept or not kept_only]
        text = json.dumps({"run": asdict(tree.info), "paths": paths}, ensure_ascii=False, indent=2)
    else:
        text = render_tree(tree, show_pruned=not kept_only, corrected=corrected)
        if simulated:
            from engine.runs import render_lookahead

            text += "\n" + render_lookahead(tree)
    if output is None:
        echo(text)
        return
    try:
        output.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    except OSError as e:
        raise click.ClickException(f"cannot write {output}: {e.strerror or e}") from None
    echo(f"wrote {output}")


@cli.command("browser-style")
@store_option
@click.option("--output", "-o", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the style sheet to this file (default: print it).")
@_fail_cleanly
def browser_style(store, output) -> None:
    """Neo4j Browser's style sheet for this Neo4j store: the runs' colours and
    captions, and every KG relationship type captioned with its relation's
    name instead of its IRI. Drop the file onto the panel `:style` opens."""
    with _open(store, reading=True) as s:
        style = s.need_browser().style()
    note = (f"{style.relations} relationship types captioned with their names"
            + (f"; {style.skipped} with a backslash in their IRI keep it (no style selector can name them)"
               if style.skipped else ""))
    if output is None:
        click.echo(style.text(), nl=False)
        echo(note, err=True)
        return
    try:
        output.write_text(style.text(), encoding="utf-8")
    except OSError as e:
        raise click.ClickException(f"cannot write {output}: {e.strerror or e}") from None
    echo(f"wrote {output}: {note}")


@cli.command()
@click.argument("run_id")
@store_option
@click.option("--rating", type=click.Choice(["good", "bad"]), required=True, help="How good the answer was.")
@click.option("--comment", default=None, help="What was right or wrong.")
@click.option("--answer", "answers", multiple=True, metavar="NAME",
              help="The right answer (repeatable): `tog learn --from-feedback` learns from it.")
@_fail_cleanly
def feedback(run_id, store, rating, comment, answers) -> None:
    """Rate the answer of RUN_ID (or `last`); kept with the run."""
    from engine.feedback import add_feedback
    from engine.runs import last_run_id

    with _open(store) as s:
        run_id = last_run_id(s.need_runs(), run_id)
        entry = add_feedback(s, run_id, rating, comment, answers)
    echo(f"feedback on {run_id}: {rating}" + (f"; right answer: {', '.join(entry['answers'])}"
                                               if entry.get("answers") else ""))


@cli.command()
@store_option
@click.option("--remove", "remove", multiple=True, metavar="S|R|O", help="A fact to take out (repeatable).")
@click.option("--add", "add", multiple=True, metavar="S|R|O", help="A fact to put in (repeatable).")
@click.option("--new", "new", multiple=True, metavar="NAME",
              help="An entity to make, named NAME (or `<IRI> NAME`), that the facts may name (repeatable).")
@click.option("--file", "patch", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="More facts, one per line: `+ S|R|O` to add, `- S|R|O` to remove, `new NAME` to make an "
                   "entity (# starts a comment).")
@click.option("--run", "run_id", default=None, help="The run that prompted the correction (or `last`).")
@click.option("--reason", required=True, help="Why: kept with the correction.")
@click.option("--despite-load", is_flag=True,
              help="Correct although a load into the store has not finished (its re-run may write facts back).")
@_fail_cleanly
def correct(store, remove, add, new, patch, run_id, reason, despite_load) -> None:
    """Correct the KG: remove and add facts, recorded with provenance.

    \b
    Facts are SUBJECT|RELATION|OBJECT: names or IRIs; an object may be an
    N-Triples literal ("1994"^^<http://www.w3.org/2001/XMLSchema#gYear>), and
    a name predicate's (label, name, ...) is a name, which links the entity.
      tog correct --remove "Quiz Show|directed_by|Robert Redford" \\
                  --add "Quiz Show|directed_by|Mike Newell" --reason "..."
      tog correct --add "Alpha Town|label|Alphaville" --reason "another name"

    While a load into the store has not finished, it refuses (the load's
    re-run would write facts of its later lines back): finish the load first.
    """
    from engine.feedback import correct as apply
    from engine.feedback import read_patch
    from engine.runs import last_run_id
    from engine.text import printable

    if patch is not None:
        more_removed, more_added, more_new = read_patch(patch)
        remove, add, new = (*remove, *more_removed), (*add, *more_added), (*new, *more_new)
    with _open(store) as s:
        c = apply(s, remove, add, reason, last_run_id(s.need_runs(), run_id) if run_id else None, new,
                  despite_load=despite_load)
    made = "".join(f", made {printable(n)} <{e}>" for e, n in c.named)
    if not c.removed and not c.added and not c.named:
        echo(f"correction {c.id}: nothing changed, {len(c.kept)} already there (recorded as a no-op; it blocks "
             "no revert)")
        return
    echo(f"correction {c.id}: {len(c.removed)} removed, {len(c.added)} added"
         + (f", {len(c.kept)} already there" if c.kept else "") + made + f" (undo: tog corrections revert {c.id})")


@cli.group()
def corrections() -> None:
    """List and revert corrections of the KG."""


@corrections.command("list")
@store_option
@click.option("--json", "as_json", is_flag=True)
@_fail_cleanly
def corrections_list(store, as_json) -> None:
    """Every correction, oldest first, with what it changed and why."""
    from dataclasses import asdict

    from engine.graph import is_literal

    with _open(store, reading=True) as s:
        items = s.need_corrections().list()
        ids = {x for c in items for f in c.removed + c.added + c.kept for x in (f[0], f[2]) if not is_literal(x)}
        names = s.kg.labels(sorted(ids)) if ids else {}
    if as_json:
        echo(json.dumps([asdict(c) for c in items], ensure_ascii=False, indent=2))
        return
    if not items:
        echo("no corrections")
    from engine.graph import local_name
    from engine.text import printable

    for c in items:
        status = "no-op" if c.status == "active" and not c.removed and not c.added and not c.named else c.status
        echo(f"{c.id}  {c.created}  {status}{' ' + c.reverted if c.reverted else ''}"
             f"{'  run ' + c.run if c.run else ''}  reason: {printable(c.reason or '')}")
        for e, n in c.named:
            echo(f"  * new entity {printable(n)}   <{e}>")
        for tag, facts in (("-", c.removed), ("+", c.added), ("= (already there)", c.kept)):
            for s_, r, o in facts:
                line = (f"  {tag} {names.get(s_, s_)} | {local_name(r)} | {names.get(o, o)}   "
                        f"<{s_}> <{r}> {o if is_literal(o) else '<' + o + '>'}")
                echo(printable(line))


@corrections.command("export")
@click.argument("correction_id")
@store_option
@click.option("--removed", is_flag=True, help="The facts it removed, not the ones it added.")
@click.option("--patch", "as_patch", is_flag=True, help="Both, as RDF Patch lines (`A` added, `D` deleted).")
@_fail_cleanly
def corrections_export(correction_id, store, removed, as_patch) -> None:
    """Write what CORRECTION_ID changed as N-Triples (to apply elsewhere, or keep)."""
    import pyoxigraph as ox

    from engine.feedback import find, ntriples

    from engine.graph import RDFS_LABEL

    with _open(store, reading=True) as s:
        c = find(s, correction_id)
    labels = [(e, RDFS_LABEL, str(ox.Literal(n))) for e, n in c.named]  # the names of the entities it made
    if as_patch:
        for tag, facts in (("D", c.removed), ("A", labels + c.added)):
            for f in facts:
                click.echo(f"{tag} {ntriples(f)}")  # N-Triples escapes every control character itself
        return
    for f in c.removed if removed else labels + c.added:
        click.echo(ntriples(f))


@corrections.command("revert")
@click.argument("correction_id")
@store_option
@click.option("--despite-load", is_flag=True,
              help="Revert although a load into the store has not finished (its re-run may write facts back).")
@_fail_cleanly
def corrections_revert(correction_id, store, despite_load) -> None:
    """Undo CORRECTION_ID exactly (its added facts go, its removed facts return)."""
    from engine.feedback import revert

    with _open(store) as s:
        c = revert(s, correction_id, despite_load=despite_load)
    echo(f"reverted {c.id}: {len(c.added)} facts taken out, {len(c.removed)} put back"
         + (f", {len(c.named)} entities it made taken out" if c.named else ""))


@runs.command("prune")
@store_option
@click.option("--older-than", metavar="AGE", default=None, help="Age like 30d, 12h, 45m, 90s or 2w (0s: all).")
@click.option("--expired", is_flag=True,
              help="Only the eval runs past their retention (`tog eval --keep-runs`); rated runs stay.")
@_fail_cleanly
def runs_prune(store, older_than, expired) -> None:
    """Delete runs started more than AGE ago (or those past their
    retention); the KG itself is untouched."""
    from engine.runs import cutoff, expired as past_retention, prune

    if (older_than is None) == (not expired):
        raise click.UsageError("give --older-than AGE or --expired (not both)")
    if expired:
        with _open(store) as s:
            dropped = s.need_runs().delete(past_retention(s))
        echo(f"removed {dropped} run(s) past their retention")
        return
    try:
        moment = cutoff(older_than)
    except ValueError as e:
        raise click.ClickException(f"--older-than: {e}") from None
    with _open(store) as s:
        dropped = prune(s.need_runs(), moment)
    echo(f"removed {dropped} run(s) started before {moment}")


@cli.command("eval")
@click.argument("file", type=click.Path(path_type=Path))
@store_option
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Results, one JSON line per question.")
@click.option("--types", type=click.Path(path_type=Path), default=None,
              help="File with one question type per line (MetaQA qtype files).")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Questions answered in parallel (LLM calls in flight at most the same).")
@click.option("--report", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write an HTML report (accuracy per type, LLM usage, each run's picture).")
@search_options
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--restart", is_flag=True, help="Drop the results already in --out and start over.")
@click.option("--keep-runs", metavar="AGE", default="14d", show_default=True,
              help="How long this evaluation's runs are kept (`forever`: always); older eval runs are "
                   "removed when an evaluation starts, except rated ones.")
@_fail_cleanly
def evaluate_cmd(file, store, out, types, limit, concurrency, report, progress, restart, keep_runs, **options) -> None:
    """Answer every question of FILE and score the answers (resumable with
    the same settings, question file and store)."""
    from engine.errors import StoreBusyError
    from engine.evaluate import check_identity, evaluate, file_fingerprint, read_questions, summary_path, write_report

    if out.resolve() == Path(file).resolve():
        raise click.ClickException(f"--out {out} is the question file: give the answers a file of their own")
    questions = list(read_questions(file, types))
    if not questions:
        raise click.ClickException(f"{file}: no questions in it (one per line: text, a tab, answers separated by |; "
                                   "or JSON lines with question and answers)")
    if limit:
        questions = questions[:limit]
    if progress is None:
        progress = sys.stderr.isatty()
    from engine.runs import KEEP_FOREVER, expired, parse_age

    if keep_runs != KEEP_FOREVER:
        try:
            parse_age(keep_runs)
        except ValueError as e:
            raise click.ClickException(f"--keep-runs: {e} (or `{KEEP_FOREVER}`)") from None
    settings = _settings(options)
    with settings.open(concurrency) as engine, _open(store, reading=not settings.record) as s:
        _note_server(s)
        engine.adopt(s)
        if s.runs is not None:
            engine.tags = {"origin": "eval", "keep": keep_runs}
            try:
                gone = s.runs.delete(expired(s))
            except StoreBusyError:  # a view beside another process's writes (--no-record): they wait
                gone = 0
            if gone:
                echo(f"removed {gone} eval run(s) past their retention (rated runs and runs with corrections stay)")
        where = s.name if "://" in s.name else str(Path(s.name).resolve())  # (a folder however it was spelled)
        check_identity(out, {"settings": engine.describe(), "store": where,
                             "questions": {"file": file.name, "sha256": file_fingerprint(file)}},
                       restart)
        summary = evaluate(questions, lambda q: engine.answer_row(s, q), out, progress=progress,
                           concurrency=concurrency, settings=engine.describe())
        if report is not None:
            try:
                pictures = write_report(s, report, out, summary, {q.id for q in questions})
            except OSError as e:
                raise click.ClickException(f"cannot write the report {report}: {e.strerror or e}") from None
            echo(f"report: {report} ({pictures} run pictures in {report.with_name(report.stem + '_runs')})")
    _print_summary(summary)
    echo(f"results: {out}, summary: {summary_path(out)}")
    failed, asked = summary["errors"], summary["questions"]
    if failed:
        first = _first_error(out, {q.id for q in questions})
        if failed == asked:
            from engine.text import printable

            raise click.ClickException(f"none of the {asked} questions could be answered; the first said: "
                                       f"{printable(first)}")
        echo(f"warning: {failed} of {asked} questions could not be answered (their errors are in {out})")


@cli.command("compare")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--show", type=click.IntRange(0), default=10, show_default=True,
              help="Questions gained and lost listed, each.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON (every changed question).")
@_fail_cleanly
def compare_cmd(a, b, show, as_json) -> None:
    """Compare two `tog eval` results files (A before, B after) on the
    questions both answered: Hits@1 overall and per type, and the questions
    that changed."""
    from engine.evaluate import compare
    from engine.text import printable

    c = compare(a, b)
    if as_json:
        echo(json.dumps(c, ensure_ascii=False, indent=2))
        return
    h = c["hits@1"]
    echo(f"{c['questions']} questions in both  hits@1 {h['a']:.3f} -> {h['b']:.3f} ({h['b'] - h['a']:+.3f})"
         + (f"  ({c['only_a']} only in A, {c['only_b']} only in B, not compared)" if c["only_a"] or c["only_b"]
            else ""))
    for t, x in c["by_type"].items():
        echo(f"  {printable(t)}: {x['questions']} questions, hits@1 {x['a']:.3f} -> {x['b']:.3f} "
             f"({x['b'] - x['a']:+.3f})")
    for label, key in (("gained", "gained"), ("lost", "lost")):
        items = c[key]
        echo(f"{label}: {len(items)}")
        for x in items[:show]:
            echo(f"  {x['id']}: {printable(x['question'])}  | A: {printable(', '.join(x['a']) or '(none)')}  "
                 f"| B: {printable(', '.join(x['b']) or '(none)')}  | gold: {printable(', '.join(x['answers']))}")
        if len(items) > show:
            echo(f"  … and {len(items) - show} more (--json lists all)")


def _first_error(out: Path, ids: set[str]) -> str:
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("id") in ids and row.get("error"):
            return str(row["error"])
    return "(no message)"


def _print_summary(s: dict) -> None:
    echo(f"questions {s['questions']}  hits@1 {s['hits@1']:.3f} (strict {s['hits@1_strict']:.3f})  "
         f"F1 {s['f1']:.3f}  errors {s['errors']}")
    echo(f"KG {s['kg_ms_per_question']:.2f} ms and {s['kg_lookups_per_question']:.2f} lookups per question; "
         f"{s['ms_per_question']:.2f} ms per question in all")
    if "llm" in s:
        m = s["llm"]
        cost = "cost unknown" if m["cost"] is None else f"${m['cost']:.6f}"
        echo(f"LLM: {m['calls']} calls ({m['calls_per_question']:.2f} per question, at most "
             f"{m.get('calls_max', 0)}), {m['cache_hits']} from the cache, {m['tokens_in']:,} tokens in, "
                   f"{m['tokens_out']:,} out, {cost}; {m['retries']} retries, {m['repairs']} repaired replies, "
                   f"{m['fallbacks']} fallbacks" + (f" in {m['questions_with_fallbacks']} questions"
                                                   if m.get("questions_with_fallbacks") else ""))
        model = (s.get("settings") or {}).get("llm") or {}
        if model.get("model"):
            echo(f"model: {model['model']}" + (f" at {model['host']}" if model.get("host") else "")
                 + f", structured {model['structured']}, prompts {model['prompts']}")
    for t, b in s.get("by_type", {}).items():
        echo(f"  {t}: {b['questions']} questions, hits@1 {b['hits@1']:.3f} "
             f"(strict {b['hits@1_strict']:.3f}), F1 {b['f1']:.3f}")


def _kg_state(s: Store) -> str:
    """What the store's KG is made of, in short: its loads as far as each
    got and its corrections with their status (a search kept over another
    state is not mixed with a new one). A store that takes neither (an
    endpoint) is the same each time."""
    import hashlib

    loads = sorted((c.path, c.lines, c.complete) for c in s.sink.loads()) if s.sink is not None else []
    fixes = sorted((c.id, c.status) for c in s.corrections.list()) if s.corrections is not None else []
    digest = hashlib.sha256(json.dumps([loads, fixes]).encode("utf-8")).hexdigest()[:12]
    return f"{len(loads)} loads, {len(fixes)} corrections ({digest})"


def _learn_journal(out: Path | None, where: str, file: Path | None, from_feedback: bool) -> Path:
    """Where ``tog learn`` keeps its search as it goes: beside its --out
    file, else (--into-store alone) in the cache directory, one journal a
    store (``where``: its resolved path or URI) and question file."""
    import hashlib

    from engine.llm import cache_dir

    if out is not None:
        return out.with_name(out.name + ".partial")
    what = [where, str(file.resolve()) if file is not None else None, from_feedback]
    digest = hashlib.sha256(json.dumps(what).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / "learn" / f"{digest}.partial"


@cli.command()
@click.argument("file", type=click.Path(path_type=Path), required=False)
@store_option
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The learned file to write (TOML; use it with --relation-descriptions).")
@click.option("--into-store", is_flag=True,
              help="Keep what is learned in the store: every later ask and eval on it uses it (unless given "
                   "--relation-descriptions).")
@click.option("--forget", is_flag=True, help="Drop what an earlier --into-store kept, and learn nothing.")
@click.option("--from-feedback", is_flag=True,
              help="Also learn from the store's rated runs: good ones with their answers, any with a named "
                   "right answer (`tog feedback --answer`).")
@click.option("--types", type=click.Path(path_type=Path), default=None,
              help="File with one question type per line (MetaQA qtype files).")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@click.option("--depth", "-d", type=click.IntRange(1, 4), default=3, show_default=True,
              help="Longest relation chain looked for behind an answer.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--restart", is_flag=True,
              help="Search every question again, dropping what a stopped run found (kept in OUT.partial, or "
                   "with --into-store alone in $TOG_CACHE_DIR/learn).")
@_fail_cleanly
def learn(file, store, out, into_store, forget, types, limit, depth, progress, from_feedback, restart) -> None:
    """Learn which question wordings ask for which relation chains, from the
    questions and answers of FILE (any format `tog eval` reads; no gold paths
    needed) and/or the store's rated runs.

    What each question gives is kept as it is found (in OUT.partial; with
    --into-store alone, in $TOG_CACHE_DIR/learn): a run stopped before its
    end (interrupted, killed, its store gone) goes on from there when the
    same command is run again."""
    from engine.evaluate import read_questions
    from engine.learning import Journal, JournalError, fingerprint
    from engine.learning import from_feedback as from_feedback_of
    from engine.learning import learn as learn_from

    if forget:
        if file is not None or out is not None or into_store or from_feedback:
            raise click.UsageError("--forget drops what the store keeps and learns nothing: give it alone")
        with _open(store) as s:
            had = s.need_runs().learned()
            s.need_runs().keep_learned(None)
        echo("the store keeps no learned file now" + ("" if had else " (it kept none)"))
        return
    if file is None and not from_feedback:
        raise click.UsageError("name a question file, or --from-feedback to learn from rated runs")
    if out is None and not into_store:
        raise click.UsageError("say where the learned file goes: --out FILE and/or --into-store")
    if out is not None and out.is_dir():
        raise click.UsageError(f"--out {out} is a directory; give a file name")
    questions, sources = [], []
    if file is not None:
        questions = list(read_questions(file, types))
        if limit:
            questions = questions[:limit]
        if not questions:
            raise click.ClickException(f"{file}: no questions in it (one per line: text, a tab, answers separated "
                                       "by |; or JSON lines with question and answers)")
        sources.append(f"{file.name} (sha256 {fingerprint(file)}, {len(questions)} questions)")
    if progress is None:
        progress = sys.stderr.isatty()
    with _open(store, reading=not into_store) as s:
        exemplars, avoid = [], []
        if from_feedback:
            fed = from_feedback_of(s)
            exemplars = fed.exemplars
            questions += fed.questions
            avoid = fed.avoid
            n = fed.counts
            sources.append(f"{len(fed.questions)} rated runs and corrections, {len(avoid)} runs rated bad")
            echo(f"from feedback: {n['good']} runs rated good, {n['named']} with a named answer, {n['bad']} rated "
                 f"bad without one ({len(avoid)} with a chain to avoid), {n['corrected']} corrections made for "
                 f"a run; {len(exemplars)} worked examples for the LLM's answer prompt")
        if not questions:
            raise click.ClickException("nothing to learn from: no rated runs with an answer in the store")
        runs = s.need_runs() if into_store else None
        where = s.name if "://" in store else str(Path(store).resolve())  # (a URI without its credentials)
        identity = {"depth": depth, "store": where, "kg": _kg_state(s)}
        try:
            journal: Journal | None = Journal(_learn_journal(out, where, file, from_feedback), identity, restart)
        except JournalError as e:
            if out is not None:
                raise
            journal = None  # (--into-store alone: the run goes on, unkept)
            echo(f"note: {e}; an interrupted run will start over", err=True)
        if journal is not None:
            before = sum(journal.get(q) is not None for q in questions)
            if before:
                echo(f"going on from {journal.path}: {before:,} of {len(questions):,} questions searched before "
                     "(--restart searches them again)")
        done = False
        try:
            report = learn_from(s.kg, questions, out, depth=depth, progress=progress, source="; ".join(sources),
                                keep=lambda r: r.used > 0, exemplars=exemplars, avoid=avoid, journal=journal)
            if runs is not None and report.used:
                runs.keep_learned(report.text)
            done = True
        except KeyboardInterrupt:
            kept = (f"the questions searched are kept in {journal.path}: the same command goes on from there"
                    if journal is not None else "nothing is kept")
            echo(f"\ninterrupted; {kept}.", err=True)
            sys.exit(130)
        except Exception:
            if journal is not None and journal.kept:
                echo(f"the {len(journal.kept):,} questions searched are kept in {journal.path}: the same command "
                     "goes on from there", err=True)
            raise
        finally:
            if journal is not None:
                journal.close(done=done)  # removed once what was learned is where it goes
    skipped = [f"{n} without a topic entity in the store" for n in [report.no_topic] if n]
    skipped += [f"{n} whose answers no chain of up to {depth} hops reaches" for n in [report.no_chain] if n]
    skipped += [f"{n} without answers" for n in [report.no_answers] if n]
    if not report.used:
        raise click.ClickException(f"nothing to learn: of {report.questions} questions, "
                                   + ", ".join(skipped) + "; no file written")
    echo(f"learned {report.chains} relation chains from {report.used:,} of {report.questions:,} questions "
         f"(mean answer F1 of their chains {report.f1:.3f}) in {report.seconds:.1f} s")
    if skipped:
        echo("skipped: " + "; ".join(skipped))
    if out is not None:
        echo(f"wrote {out}; use it with: tog ask ... --relation-descriptions {out}")
    if into_store:
        local = getattr(getattr(s.runs, "db", None), "path", None)  # an endpoint's: kept beside its runs, locally
        where = f"{local}, where tog keeps what it records of {s.name} with this --store" \
            if local is not None and str(local) != s.name else s.name
        echo(f"kept in {where}: every later ask and eval on it uses it (tog learn --forget drops it)")


@cli.command()
@click.argument("name")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the matches as JSON (every relation).")
@click.option("--all", "show_all", is_flag=True,
              help=f"List every relation; without it, an entity with more than {ENTITY_SHOWN} relations in a "
                   f"direction (a hub) shows the {ENTITY_SHOWN} with the most edges.")
@_fail_cleanly
def entity(name, store, as_json, show_all) -> None:
    """The entities NAME (a name, an IRI or a short Freebase / Wikidata id)
    stands for, with their relations and degrees: what to write as a topic,
    in a description file or in a correction."""
    from engine.errors import CommonNameError, UnknownEntityError
    from engine.graph import NAME_MATCHES
    from engine.linking import resolve, suggestions
    from engine.text import printable

    with _open(store, reading=True) as s:
        try:
            nodes = resolve(s.kg, [name])
        except CommonNameError as e:  # some of them, said on stderr (the JSON stays a list)
            nodes = e.nodes[:NAME_MATCHES]
            click.echo(f"{printable(name)!r} names more than {NAME_MATCHES:,} entities; {len(nodes)} of them:",
                       err=True)
        except UnknownEntityError:
            near = suggestions(s.kg, name)
            hint = ("; did you mean " + ", ".join(repr(n.name) for n in near[:5]) + "?") if near else ""
            raise click.ClickException(f"no entity named {name!r} in {s.name}{hint}") from None
        around = s.kg.relations([n.id for n in nodes if not n.literal])
    found: list[dict[str, Any]] = [{"id": n.id, "name": n.name,
              "relations": [{"relation": r.id, "name": r.text, "direction": r.direction, "degree": r.degree}
                            for r in around.get(n.id, [])]} for n in nodes]
    if as_json:
        echo(json.dumps(found, ensure_ascii=False, indent=2))
        return
    for f in found:
        echo(f"{printable(f['name'])}  <{printable(f['id'])}>")
        for way, arrow in (("out", "->"), ("in", "<-")):
            rels = [r for r in f["relations"] if r["direction"] == way]
            shown = rels if show_all or len(rels) <= ENTITY_SHOWN else \
                sorted(rels, key=lambda r: -(r["degree"] or 0))[:ENTITY_SHOWN]  # (stable: ties as listed)
            for r in shown:
                degree = f"  ({r['degree']:,})" if r["degree"] is not None else ""
                echo(f"  {arrow} {printable(r['name'])}{degree}   <{printable(r['relation'])}>")
            if len(shown) < len(rels):
                echo(f"  {arrow} … and {len(rels) - len(shown):,} more relations {way} (the {len(shown)} above have "
                     f"the most edges; --all lists every one)")


@cli.command()
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the relations as JSON.")
@_fail_cleanly
def relations(store, as_json) -> None:
    """Every relation of the KG with its number of facts, most first (one
    pass over the store: on a big embedded store it takes a while)."""
    from engine.graph import DEFAULT_NAME_PREDICATES, DEFAULT_POLICY, relation_text
    from engine.text import printable

    with _open(store, reading=True) as s:
        counts = s.kg.relation_counts()
        named = s.kg.labels([iri for iri, _ in counts]) if counts else {}  # the KG's own names (a property's label)
    rows = [{"relation": iri, "name": named.get(iri) or relation_text(iri), "facts": n,
             "role": "names" if iri in DEFAULT_NAME_PREDICATES else
             "relation" if DEFAULT_POLICY.allows(iri) else "not offered to the search"} for iri, n in counts]
    if as_json:
        echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        echo("no relations: the store is empty")
    for r in rows:
        role = "" if r["role"] == "relation" else f"  ({r['role']})"
        echo(f"{r['facts']:>12,}  {printable(r['name'])}{role}   <{printable(r['relation'])}>")


@cli.command()
@store_option
@_fail_cleanly
def info(store) -> None:
    """What the store holds: counts, relations, loads, corrections, runs,
    and the settings its loads and summaries were made with."""
    from engine.text import printable

    with _open(store, reading=True) as s:
        stats = s.stats()
    notes = {"relations": " (`tog relations` lists them with their counts)"}
    for k, v in stats.items():
        if isinstance(v, list):
            echo(f"{k}: {len(v)}" if k == "loads" else f"{k}: {', '.join(str(x) for x in v) or '(none)'}")
            if k == "loads":
                for item in v:
                    echo(f"  {printable(str(item))}")
        else:
            echo((f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}") + notes.get(k, ""))


@cli.command()
@store_option
@click.option("--questions", type=click.IntRange(1, 100), default=None,
              help="Questions to ask [default: 8].")
@click.option("--seed", type=int, default=0, show_default=True, help="Where among the KG's names to take entities.")
@_fail_cleanly
def warm(store, questions, seed) -> None:
    """Warm a KG server up after it starts: ask a few offline questions
    from entities of its KG (no LLM; nothing recorded), so that a user's
    first question does not pay for the server's cold start."""
    from engine.text import printable
    from engine.warmup import WARM_QUESTIONS
    from engine.warmup import warm as warm_up

    def each(i: int, entity: str, seconds: float) -> None:
        echo(f"  {i + 1}. <{printable(entity)}>: {seconds:.2f} s", err=True)

    with _open(store, reading=True) as s:
        done = warm_up(s, questions or WARM_QUESTIONS, seed, each)
    if not done.entities:
        echo("nothing to warm: the KG has no named entity")
        return
    unlinked = f"; {done.unlinked} asked by IRI, their names not linking to one entity" if done.unlinked else ""
    n = len(done.entities)
    echo(f"warmed: {n} question{'' if n == 1 else 's'} in {sum(done.seconds):.1f} s, "
         f"{sum(done.kg_seconds):.1f} s of it in the KG (the first {done.kg_seconds[0]:.2f} s, the last "
         f"{done.kg_seconds[-1]:.2f} s){unlinked}")


def main() -> None:
    cli(prog_name="tog")


if __name__ == "__main__":
    main()
