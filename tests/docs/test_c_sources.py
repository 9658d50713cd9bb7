"""C code lives in .c files, not in Python strings (issue 32): a C source kept in a string is
neither compiled nor read by a C toolchain's checks, and is copied around as text.  Every .py
file of the checkout (its tests and benchmarks too, generated build output aside) is read with
``ast``: no string constant holds a preprocessor ``#include`` line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCES = {"build", "results", ".git"}
INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]", re.MULTILINE)


def c_in_strings(root: Path = ROOT) -> list[str]:
    """'file:line' of every string constant of a .py file under ``root`` with an #include line."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if NOT_SOURCES & set(path.relative_to(root).parts) or path == Path(__file__).resolve():
            continue            # this file's own example of what the check finds is no source
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and INCLUDE.search(node.value):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_c_source_is_kept_in_a_python_string():
    assert c_in_strings() == []


def test_the_check_finds_a_c_source_in_a_string(tmp_path):
    (tmp_path / "host.py").write_text('HOST = r"""\n#include <stdio.h>\nint main(void) { return 0; }\n"""\n')
    (tmp_path / "plain.py").write_text('NOTE = "an #include in prose is no C source"\n')
    assert c_in_strings(tmp_path) == ["host.py:1"]
