"""The structure the rest builds on: typed protocols that are the contract
(mypy checks the library), roles composed per store, registries filled
explicitly, and no capability strings or ``getattr`` on a store."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO, VENV_BIN

from engine.graph import Meter


def test_mypy_finds_no_errors_in_the_library():
    """``mypy`` with the project's settings (pyproject.toml: engine and
    loaders, untyped function bodies checked too)."""
    python = VENV_BIN / "python" if (VENV_BIN / "python").exists() else sys.executable
    done = subprocess.run([str(python), "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def _source_lines():
    for folder in ("engine", "loaders"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                yield path.relative_to(REPO), n, line


def test_no_capability_strings_and_no_getattr_on_a_store():
    """What a store can do is its roles (None when absent), never a string
    or an attribute looked up by name."""
    found = [f"{path}:{n}: {line.strip()}" for path, n, line in _source_lines()
             if re.search(r"getattr\((kg|graph|store|sink|runs)\b|\bcapabilities\b", line)]
    assert found == []


def test_literal_ids_are_told_apart_in_one_place():
    found = [f"{path}:{n}" for path, n, line in _source_lines()
             if re.search(r"""startswith\(('"'|"\\"")\)""", line) and path.name != "graph.py"]
    assert found == []


def test_registries_name_the_llm_parts_without_importing_litellm():
    """The llm pruner and reasoner are registered by name; engine.agent (and
    litellm behind it) is imported only when one is made."""
    code = ("import sys\n"
            "from engine.pruning import PRUNERS\n"
            "from engine.reasoning import REASONERS\n"
            "import engine.cli, engine.config\n"
            "assert {'llm', 'embedding'} <= set(PRUNERS) and 'llm' in REASONERS, (PRUNERS, REASONERS)\n"
            "assert 'engine.agent' not in sys.modules and 'litellm' not in sys.modules\n"
            "from engine.config import BY_NAME\n"
            "assert list(BY_NAME['pruner'].choices()) == list(PRUNERS)\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_store_without_a_role_says_so_in_one_line():
    from engine.errors import StoreError
    from engine.store import Store

    bare = Store("somewhere", kg=None, absent={"sink": "somewhere is read-only for tog"})  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="^somewhere is read-only for tog$"):
        bare.need_sink()
    with pytest.raises(StoreError, match="^somewhere keeps no runs$"):
        bare.need_runs()
    with pytest.raises(StoreError, match="^somewhere cannot record corrections$"):
        bare.need_corrections()
    with pytest.raises(StoreError, match="no graph browser"):
        bare.need_browser()


def test_settings_reject_unknown_keys_and_values_out_of_range():
    from engine.config import Settings, SettingsError

    with pytest.raises(SettingsError, match="unknown setting 'widht'"):
        Settings.from_options({"widht": 3})
    with pytest.raises(SettingsError, match="--width must be between 1 and 50, not 51"):
        Settings(width=51)
    with pytest.raises(SettingsError, match="unknown pruner 'nope'"):
        Settings(pruner="nope")
    with pytest.raises(SettingsError, match="--pruner llm needs a model"):
        Settings(pruner="llm")
    s = Settings.from_options({"width": None, "model": "openai/x"})  # None: the default
    assert (s.width, s.pruner_name, s.reasoner_name, s.stop_at) == (3, "llm", "llm", 0.5)
    assert (Settings().pruner_name, Settings().stop_at) == ("hybrid", 0.9)


def test_the_cli_options_are_the_settings():
    """Every setting is an option of `ask` and `eval`, with its default and range."""
    import click

    from engine.cli import cli
    from engine.config import OPTIONS

    for command in ("ask", "eval"):
        params = {p.name: p for p in cli.commands[command].params}
        for o in OPTIONS:
            assert o.name in params, (command, o.name)
            assert params[o.name].default == o.default, (command, o.name)
        assert isinstance(params["width"].type, click.IntRange) and params["width"].type.max == 50
        assert list(params["pruner"].type.choices) == list(OPTIONS[3].choices())


def test_the_meter_counts_per_thread():
    import threading

    meter = Meter()
    meter.add(0.5, 2)
    seen = {}

    def other():
        meter.add(1.0)
        seen["other"] = (meter.lookups, meter.seconds)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert (meter.lookups, meter.seconds) == (2, 0.5) and seen["other"] == (1, 1.0)


def test_relationship_types_reach_cypher_text_only_quoted():
    """The one way an identifier reaches Cypher text: backquoted, a
    backquote inside doubled; the hub statement's assembled text is pinned."""
    from engine.queries import cypher_name, render_cypher

    assert cypher_name("urn:tog:r:has_tags") == "`urn:tog:r:has_tags`"
    assert cypher_name("urn:x`) DETACH DELETE (n") == "`urn:x``) DETACH DELETE (n`"
    for bad in ("", "a\x00b", None, 7):
        with pytest.raises(ValueError):
            cypher_name(bad)  # type: ignore[arg-type]
    from engine.backends.neo4j.kg import hub_relations_text

    text = hub_relations_text(["urn:tog:r:a", "urn:x`y"])
    statement = [line for line in text.splitlines() if not line.startswith("//")]
    assert statement == [
        "UNWIND $ids AS id",
        "MATCH (e:Entity {id: id})",
        "WITH id, e, coalesce(e.tog_edits, 0) AS edits, COUNT { (e)-->() } AS out,",
        "     COUNT { (e)<--() } - COUNT { (e)<-[:AT]-() } - COUNT { (e)<-[:ABOUT]-() } AS in",
        "RETURN id AS e, edits, out, in, [COUNT { (e)-[:`urn:tog:r:a`]->() }, COUNT { (e)-[:`urn:x``y`]->() }] AS outs, "
        "[COUNT { (e)<-[:`urn:tog:r:a`]-() }, COUNT { (e)<-[:`urn:x``y`]-() }] AS ins",
    ]
    degree = render_cypher("pair_degree", type=cypher_name("urn:tog:r:a"))
    assert [line for line in degree.splitlines() if not line.startswith("//")] == [
        "MATCH (e:Entity {id: $e})",
        "RETURN COUNT { (e)-[:`urn:tog:r:a`]->() } AS out, COUNT { (e)<-[:`urn:tog:r:a`]-() } AS in"]


def test_every_folder_that_ships_files_is_a_listed_package_and_the_demo_installs_no_test_extras():
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    packages = set(config["packages"])
    for package, patterns in config["package-data"].items():
        assert package in packages, f"{package} ships files but is not a listed package"
        for pattern in patterns:
            assert "/" not in pattern, f"{package}: {pattern} reaches into a folder that is not a listed package"
            assert list((REPO / package.replace(".", "/")).glob(pattern)), f"{package}: {pattern} matches nothing"
    for folder in ("engine", "loaders", "sparql", "cypher"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".rq", ".cypher", ".txt", ".grass") and "__pycache__" not in path.parts:
                assert ".".join(path.parent.relative_to(REPO).parts) in packages, f"{path} would not be installed"
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    demo_install = re.search(r"^\$\(VENV\)/\.installed:.*?(?=^\S)", makefile, re.M | re.S).group(0)
    assert "pip install" in demo_install and "[test]" not in demo_install
    assert re.search(r"^demo: setup$", makefile, re.M) and re.search(r"^test: setup-test$", makefile, re.M)
