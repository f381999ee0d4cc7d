"""Issue 16 item 5: one atomic writer, one JSON file reader, one sanitiser.

Scans the source (AST and text), like tests/test_layout.py. The allow-lists
name what is left for its owner to convert and may only SHRINK.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "gcm_checks"

# os.rename/os.replace is how an atomic write ends: only jsonfile does that.
RENAME_ALLOWED = {
    "jsonfile.py",
    "notify/outbox.py",  # moves a bad item to quarantine/ (a move, not a write)
}
# json.load on an open file: unbounded size and depth. Readers use jsonfile.
JSON_LOAD_ALLOWED = {
    "classify/learn.py",  # our own package data file
}
# A regex class of control characters is a sanitiser: only gcm_checks.text has one.
CONTROL_CLASS_ALLOWED = {
    "text.py",
}
_CONTROL_CLASS = re.compile(r"\\x00-\\x")
# print() is the CLI's: library code logs an event with fields, and the one
# plain stderr line an admin must see goes through logs.slurmd_line.
PRINT_ALLOWED_DIRS = ("commands/",)
PRINT_ALLOWED = {
    "cli.py", "gcm_run_cli.py",  # the command lines themselves
    "logs.py",  # slurmd_line
    "classify/learn_train.py",  # `python -m gcm_checks.classify.learn`: a build tool for the model file
}


def _modules():
    for p in sorted(ROOT.rglob("*.py")):
        yield p.relative_to(ROOT).as_posix(), p


def _calls(path: Path, owner: str, names: set) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == owner
                and node.func.attr in names):
            return True
    return False


def test_only_jsonfile_renames_into_place():
    found = {rel for rel, p in _modules() if _calls(p, "os", {"rename", "replace"})}
    assert found <= RENAME_ALLOWED, f"atomic writes go through gcm_checks.jsonfile: {sorted(found - RENAME_ALLOWED)}"


def test_json_files_are_read_through_jsonfile():
    found = {rel for rel, p in _modules() if _calls(p, "json", {"load"})}
    assert found <= JSON_LOAD_ALLOWED, f"read JSON files with jsonfile.read_json: {sorted(found - JSON_LOAD_ALLOWED)}"


def test_one_control_character_rule():
    found = {rel for rel, p in _modules() if _CONTROL_CLASS.search(p.read_text(encoding="utf-8"))}
    assert found <= CONTROL_CLASS_ALLOWED, f"sanitise with gcm_checks.text: {sorted(found - CONTROL_CLASS_ALLOWED)}"


def _prints(path: Path) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
               for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_library_code_does_not_print():
    found = {rel for rel, p in _modules() if not rel.startswith(PRINT_ALLOWED_DIRS) and _prints(p)}
    assert found <= PRINT_ALLOWED, f"log an event (or logs.slurmd_line) instead of print: {sorted(found - PRINT_ALLOWED)}"


def test_allow_lists_only_shrink():
    """An entry whose file no longer needs it must leave the list."""
    modules = dict(_modules())
    stale = [rel for rel in sorted(RENAME_ALLOWED) if rel in modules and not _calls(modules[rel], "os", {"rename", "replace"})]
    stale += [rel for rel in sorted(JSON_LOAD_ALLOWED) if rel in modules and not _calls(modules[rel], "json", {"load"})]
    stale += [rel for rel in sorted(PRINT_ALLOWED) if rel in modules and not _prints(modules[rel])]
    stale += [rel for rel in sorted(CONTROL_CLASS_ALLOWED)
              if rel in modules and not _CONTROL_CLASS.search(modules[rel].read_text(encoding="utf-8"))]
    assert not stale, f"remove from the allow-list, converted: {stale}"


def test_the_scan_can_fail(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import json, os\ndef f(a, b):\n    os.replace(a, b)\n    return json.load(open(a))\n")
    assert _calls(p, "os", {"rename", "replace"}) and _calls(p, "json", {"load"})
    assert _CONTROL_CLASS.search(r'X = "[\x00-\x1f]"')
    p.write_text("import sys\ndef f():\n    print('x', file=sys.stderr)\n")
    assert _prints(p)
