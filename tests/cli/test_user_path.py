"""What a new user meets first: the README's commands and example, where FMUs are built,
the help of every option, the listing.

* a --fmus folder that does not exist (most likely mistyped) is refused before anything is
  built and is not created; the default build/fmus is; `build --out` makes a new folder
  only inside an existing one;
* run, report and export say in one line where the FMUs are built and reused (an
  absolute path: the default folder is relative to the working directory);
* `build NAME ...` builds the chosen elements only; an unknown name is refused by name;
* the README's fmpy example runs after the README's command that builds its FMU, and
  reproduces what the README says it does (Z1: the clutch locks at 0.14583 s);
* every option and argument of every command has a help text; `list` keeps its columns
  aligned whatever the length of a name.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

from drivetrain_fmu import build_fmus
from drivetrain_fmu import cli
from drivetrain_fmu.cli import checks, command, errors
from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.systems.ssp import catalog, load_system

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _no_build(*args, **kwargs):
    raise AssertionError(f"a build started: {args} {kwargs}")


def test_a_fmus_folder_that_does_not_exist_is_refused_and_not_created(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(build_fmus, "build_all", _no_build)
    mistyped = tmp_path / "biuld" / "fmus"
    for argv in (["run", "z3", "--fmus", str(mistyped)], ["export", "z3", "--fmus", str(mistyped)],
                 ["report", "z3", "--fmus", str(mistyped)]):
        with pytest.raises(errors.Exit) as failed:
            cli.main(argv)
        assert failed.value.code == errors.USAGE, argv
        assert f"--fmus {mistyped}: no such folder" in capsys.readouterr().err, argv
    assert not (tmp_path / "biuld").exists()
    # build --out: a new folder only inside an existing one (as mkdir makes it)
    with pytest.raises(errors.Exit) as failed:
        cli.main(["build", "Clutch", "--out", str(mistyped)])
    assert failed.value.code == errors.USAGE
    assert f"its parent folder {mistyped.parent} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "biuld").exists()


def test_the_default_fmu_folder_is_made_and_one_line_says_where_fmus_are_built_and_reused(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.chdir(tmp_path)
    built = []
    monkeypatch.setattr(build_fmus, "build_all", lambda folder, only, force: built.append((folder, only)))
    z3 = load_system("z3")
    checks.fmus_for(z3, build_fmus.DEFAULT_OUT)
    needed = sorted({c.element for c in z3.components.values()})
    assert built == [(build_fmus.DEFAULT_OUT, needed)]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"FMUs in {tmp_path.resolve() / 'build' / 'fmus'} (new: build/fmus in the working "
                               f"directory): building {len(needed)} ({', '.join(needed)}), none to reuse"), lines


def test_a_run_says_in_one_line_that_it_reuses_the_fmus_and_where(fmu_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build_fmus, "build_all", _no_build)
    assert cli.main(["run", "z3", "--stop", "0.02", "--fmus", str(fmu_dir), "--out", str(tmp_path)]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "FMUs" in line]
    needed = {c.element for c in load_system("z3").components.values()}
    assert said == [f"FMUs in {fmu_dir.resolve()}: {len(needed)} up to date reused"]


def test_build_builds_the_chosen_elements_only_and_refuses_an_unknown_one(tmp_path, capsys):
    out = tmp_path / "fmus"
    assert cli.main(["build", "Clutch", "Shaft", "--pure-python", "--out", str(out)]) == 0
    assert sorted(path.name for path in out.glob("*.fmu")) == ["Clutch.fmu", "Shaft.fmu"]
    assert "built 2/2 Shaft.fmu" in capsys.readouterr().err        # progress, one line per FMU
    with pytest.raises(errors.Exit) as failed:
        cli.main(["build", "Cluch", "--out", str(out)])
    assert failed.value.code == errors.USAGE
    assert "no element 'Cluch'; elements: Clutch, DualClutch" in capsys.readouterr().err


def test_the_readme_fmpy_example_runs_after_the_readme_command_that_builds_its_fmu(tmp_path, monkeypatch):
    """The README's example, run as written in a fresh folder after the command the README
    gives for it: the Clutch's defaults reproduce Z1, the clutch locks at 0.14583 s (the
    README's figure; within one output interval, 1 ms, of it)."""
    example = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    fmu = re.search(r'simulate_fmu\("(build/fmus/(\w+)\.fmu)"', example)
    command = re.search(rf"^ +drivetrain-fmu (build {fmu.group(2)})$", README, re.M)
    assert command, f"the README gives no `drivetrain-fmu build {fmu.group(2)}` for its example"
    assert README.index(command.group(0)) < README.index(example)
    monkeypatch.chdir(tmp_path)
    assert cli.main(command.group(1).split()) == 0
    scope = {}
    exec(compile(example, "README.md", "exec"), scope)
    result = scope["result"]
    first_locked = result["time"][np.argmax(result["locked"] > 0.5)]
    assert abs(first_locked - 0.14583) <= 1e-3 + 1e-9


def _options(parser, command=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*command, name))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(command), "/".join(action.option_strings) or action.dest, action.help


def test_every_option_and_argument_of_every_command_has_a_help_text():
    missing = [f"{command} {option}" for command, option, text in _options(command._parser())
               if not (text and text.strip())]
    assert not missing, f"no help text: {missing}"


def test_list_keeps_its_columns_aligned_whatever_the_length_of_a_name(capsys):
    cli.main(["list"])
    lines = capsys.readouterr().out.splitlines()
    elements = {e.__name__: e.description for e in ELEMENTS}
    element_columns = {line.index(elements[line.split()[0]]) for line in lines if line.split()[0] in elements}
    assert len(element_columns) == 1 and min(element_columns) > max(map(len, elements)), element_columns
    names = catalog()
    system_lines = [line for line in lines if line.startswith("  ") and line.split()[0] in names]
    assert len(system_lines) == len(names)
    system_columns = {line.index(load_system(line.split()[0]).description) for line in system_lines}
    assert len(system_columns) == 1 and min(system_columns) > 2 + max(map(len, names)), system_columns


def test_every_file_the_readme_docs_and_system_descriptions_cite_exists():
    """A cited page (README, docs and its subfolders, a documented system's description,
    which `new --from` copies into the user's file) is one this project carries: a
    `docs/x.md`, `x.md` beside the citing page, or the README."""
    texts = {ROOT / "README.md": README}
    texts.update({path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").rglob("*.md"))})
    texts.update({ROOT / "systems" / "catalog" / "ssd" / f"{name}.ssd": load_system(name).description for name in catalog()})

    missing = []
    for path, text in texts.items():
        # FILE.md: report's metavariable; results/...: files the commands write
        cited_pages = set(re.findall(r"[\w./-]+\.md\b", text))
        for cited in {c for c in cited_pages if c != "FILE.md" and not c.startswith("results/")}:
            where = [path.parent / cited, ROOT / cited, ROOT / "docs" / cited]
            if not any(candidate.is_file() for candidate in where):
                missing.append(f"{path.relative_to(ROOT)} cites {cited}")
    assert not missing, missing


def test_counts_in_the_readme_and_docs_are_those_of_the_code():
    """"all N FMUs" and "all N systems" in the README and the docs (subfolders too) are the
    numbers of elements and documented systems (the text said 12 and 13 when there were 21 and 17), and
    the elements docs/hosts.md says the host tests leave out are those they leave out."""
    from tests.hosts.test_self_contained import INPUTS

    counts = {"FMUs": len(ELEMENTS), "elements": len(ELEMENTS), "systems": len(catalog())}
    wrong = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for number, what in re.findall(r"\b(?:all|every one of the) (\d+) (?:\w+ )?(FMUs|elements|systems)\b", text):
            if int(number) != counts[what]:
                wrong.append(f"{path.name}: all {number} {what} (there are {counts[what]})")
    assert not wrong, wrong
    hosts = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
    left_out = re.search(r"`INPUTS`: all but ([\w, ]+?) and (\w+)\)", hosts)
    named = {*left_out.group(1).split(", "), left_out.group(2)}
    assert named == {e.__name__ for e in ELEMENTS} - set(INPUTS)


def test_the_readme_times_are_those_readme_trial_writes():
    """The README's times and sizes are one block written by `python benchmarks/readme_trial.py
    --write` (the sentence it makes from its measurements), not typed by hand."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_trial", ROOT / "benchmarks" / "readme_trial.py")
    trial = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trial)
    block = README[README.index(trial.BEGIN):README.index(trial.END) + len(trial.END)]

    def numbers_out(text: str) -> str:
        return re.sub(r"\d+(?:\.\d+)?", "N", text)

    figures = {"date": "2026-01-01", "cores": 2, "load": 1.0, "first": 1.0, "compiling": 1.0, "modules": 1,
               "again": 1.0, "clutch": 1.0, "smallest": 1.0, "install": 1.0}
    forms = {numbers_out(trial.sentence({**figures, "largest": largest})) for largest in (1.0, 2.0)}
    assert numbers_out(block) in forms, block
