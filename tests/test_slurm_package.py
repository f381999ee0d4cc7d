"""The slurm/ package: one concern a module, a lazy front door, and still the
only code that runs Slurm's commands (rule 3)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import gcm_checks.slurm as slurm
from test_layout import all_modules, import_graph, strongly_connected

PKG = Path(slurm.__file__).parent
ROOT = PKG.parent
SUBMODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
# What starts or finds a process: gcm_checks.proc's helpers and what they wrap.
RUNNERS = ("run", "which", "LineStream", "Popen", "check_output", "check_call", "call", "system", "_run")
SLURM_COMMANDS = ("scontrol", "sacct", "sinfo", "squeue", "sbatch", "srun", "sacctmgr", "sdiag")


def _public_names(module) -> set:
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("module", SUBMODULES)
def test_every_public_name_is_reachable_as_slurm_dot_name(module):
    mod = importlib.import_module(f"gcm_checks.slurm.{module}")
    mine = {n for n, m in slurm._WHERE.items() if m == module}
    assert mine == _public_names(mod), "slurm/__init__.py's _WHERE is out of step with the module"
    for name in mine:
        assert getattr(slurm, name) is getattr(mod, name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="MemoryBackend"):
        slurm.MemoryBackend  # noqa: B018 - the fake lives in gcm_checks.testing
    assert hasattr(importlib.import_module("gcm_checks.testing"), "MemoryBackend")


def test_importing_the_package_imports_no_submodule():
    code = ("import sys; from gcm_checks import slurm; slurm.make_drain_reason; "
            "print(sorted(m for m in sys.modules if m.startswith('gcm_checks.slurm.')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "['gcm_checks.slurm.reasons']", p.stdout + p.stderr


def test_no_circle_hides_behind_the_lazy_lookup():
    """The package's __getattr__ imports its submodules by name, which the
    layout test cannot see; with those edges added there is still no circle
    through any slurm module."""
    graph = import_graph()
    graph["gcm_checks.slurm"] |= {f"gcm_checks.slurm.{m}" for m in SUBMODULES}
    for component in strongly_connected(graph):
        assert not any(m.startswith("gcm_checks.slurm") for m in component), component


def test_production_code_never_imports_the_test_fakes():
    users = sorted(name for name, deps in import_graph().items() if "gcm_checks.testing" in deps)
    assert users == []


def _runs_a_slurm_command(tree: ast.AST) -> list:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func not in RUNNERS:
            continue
        for w in (w for arg in list(node.args) + [k.value for k in node.keywords] for w in ast.walk(arg)):
            if isinstance(w, ast.Constant) and isinstance(w.value, str) and w.value.rsplit("/", 1)[-1] in SLURM_COMMANDS:
                found.append((node.lineno, w.value))
    return found


def test_only_the_slurm_package_runs_slurm_commands():
    offenders = {}
    for name, path in all_modules().items():
        if name == "gcm_checks.slurm" or name.startswith("gcm_checks.slurm."):
            continue
        hits = _runs_a_slurm_command(ast.parse(path.read_text(encoding="utf-8")))
        if hits:
            offenders[name] = hits
    assert offenders == {}
    # The check can fail: it sees the slurm package's own calls.
    assert _runs_a_slurm_command(ast.parse((PKG / "backends.py").read_text()))
    assert _runs_a_slurm_command(ast.parse((PKG / "sacct.py").read_text()))


@pytest.mark.parametrize("impl", ["ScontrolBackend", "DryRunBackend", "MemoryBackend"])
def test_every_backend_and_the_fake_answer_the_whole_interface(impl):
    """A method added to SlurmBackend must reach the memory fake too, or the
    unit tests would silently stop covering it."""
    from gcm_checks import testing
    from gcm_checks.slurm.backends import SlurmBackend

    cls = getattr(testing, impl, None) or getattr(slurm, impl)
    wanted = {n for n, v in vars(SlurmBackend).items() if callable(v) and not n.startswith("_")}
    assert wanted >= {"node_info", "drain", "resume", "set_features", "set_extra", "set_job_comment", "show_job"}
    assert not {n for n in wanted if not callable(getattr(cls, n, None))}
