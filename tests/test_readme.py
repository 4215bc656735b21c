"""The README is a contract: its quick start runs as written, CI runs its test
command, and every command and option of `tog` is documented."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from engine.cli import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command:
            commands.append(command)
    return commands


def test_quick_start_is_two_commands_and_ci_runs_the_second():
    commands = quick_start_commands()
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    run_lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert commands[1] in run_lines


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_main_job_runs_exactly_as_written(tmp_path):
    command = quick_start_commands()[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOG_", "MAKE"))}
    env["STORE"] = str(tmp_path / "demo-store")  # the Makefile's own knob: the user's .tog/demo-store stays untouched
    done = subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    asked = re.search(r'tog ask "([^"]+)"', out).group(1)
    gold = {}
    for line in (ROOT / "examples" / "metaqa" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        gold[q["question"]] = q["answers"]
    answer_line = next(line for line in out.splitlines() if line.startswith("answer: "))
    first = answer_line[len("answer: "):].split(", ")[0]
    assert first in gold[asked]
    # the run tree is printed and names the answer
    assert re.search(r"^run \S+\s+\[done\]", out, re.M)
    assert f"--> {first}" in out


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    for name, cmd in group.commands.items():
        full = f"{prefix}{name}"
        out.append((full, cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, full + " "))
    return out


@pytest.mark.parametrize("name,command", _commands(cli))
def test_every_command_and_option_is_documented(name, command):
    assert f"tog {name}" in README, f"`tog {name}` is not in README.md"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            spellings = [*param.opts, *param.secondary_opts]
            assert any(re.search(re.escape(o) + r"\b", README) for o in spellings), \
                f"`tog {name} {'/'.join(spellings)}` is not in README.md"
