"""The keyword options of ``open``, ``build`` and ``build_from`` come from the
runtime's table (``_native.OPTIONS``), not from Python code: their type stubs
(``hashfile/_options.py``) are generated from it, and this test fails while
the stubs differ from what the table says now. ``WRITE_OPTIONS_STUB=1``
rewrites them.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import hashfile
from conftest import ROOT
from hashfile import _native

STUB = ROOT / "python" / "hashfile" / "_options.py"
CLASSES = {
    "open": "OpenOptions",
    "build": "BuildOptions",
    "build_from": "BuildFromOptions",
    "history": "HistoryOptions",
    "rollback": "RollbackOptions",
    "diff": "DiffOptions",
    "patch": "PatchOptions",
    "compact": "CompactOptions",
}


def render() -> str:
    lines = [
        '"""The keyword options of ``open``, ``build``, ``build_from``, ``history``,',
        "``rollback``, ``diff``, ``patch`` and ``compact``, as",
        "TypedDicts for type checkers: generated from the runtime's table of options",
        "(``_native.OPTIONS``, crates/hashfile-runtime/src/options/table.rs) by",
        "python/tests/test_options_table.py (``WRITE_OPTIONS_STUB=1``). Do not edit.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TypedDict",
        "",
        '__all__ = [',
        '    "BuildFromOptions",',
        '    "BuildOptions",',
        '    "CompactOptions",',
        '    "DiffOptions",',
        '    "HistoryOptions",',
        '    "OpenOptions",',
        '    "PatchOptions",',
        '    "RollbackOptions",',
        ']',
    ]
    build = {o["name"] for o in _native.OPTIONS["build"]}
    for call, name in CLASSES.items():
        # build_from takes every option of build: its class adds the rest.
        extends = call == "build_from" and build <= {o["name"] for o in _native.OPTIONS[call]}
        base = "BuildOptions" if extends else "TypedDict"
        lines += ["", "", f"class {name}({base}, total=False):", f'    """The options of ``{call}``."""', ""]
        # progress is build_from's own keyword, typed there.
        own = (o for o in _native.OPTIONS[call] if o["name"] != "progress" and not (extends and o["name"] in build))
        for option in own:
            default = "" if option["default"] is None else f" (default: {option['default']!r})"
            lines.append(f"    {option['name']}: {option['type']} | None")
            lines.append(f'    """{option["doc"]}{default}"""')
    return "\n".join(lines) + "\n"


def test_the_option_stubs_are_the_runtimes_table():
    if os.environ.get("WRITE_OPTIONS_STUB") == "1":
        STUB.write_text(render())
    assert STUB.read_text() == render(), "python/hashfile/_options.py is stale: run with WRITE_OPTIONS_STUB=1"


def test_no_option_is_named_in_python():
    # The calls take **options only: every name, type and default is the table's.
    calls: list[tuple[Any, str]] = [
        (hashfile.open, "open"),
        (hashfile.build, "build"),
        (hashfile.build_from, "build_from"),
        (hashfile.history, "history"),
        (hashfile.rollback, "rollback"),
        (hashfile.diff, "diff"),
    ]
    for function, call in calls:
        named = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert set(named) <= {o["name"] for o in _native.OPTIONS[call]}, call
        assert named in ([], ["progress"]), f"{call} writes its own keywords: {named}"
