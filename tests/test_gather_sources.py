"""Gather sources are injected: the XID and DCGM gatherers read the host's
kernel log and DCGM, or whatever the context builder injected, through the
same code, and never ask whether the node is simulated (issue 16 item 3)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

from gcm_checks import config, suite
from gcm_checks.checks import dcgm as dcgm_checks
from gcm_checks.checks import xid as xid_checks
from gcm_checks.gather import dcgm, kernel_log
from gcm_checks.gather.dcgm_source import HostDcgm
from gcm_checks.gather.kernel_log import HostKernelLog
from gcm_checks.gather.sources import Sources, dcgm_source, kernel_log_source
from gcm_checks.result import Status
from gcm_checks.sim.dcgm import CannedBackend
from gcm_checks.sim.scenario import load
from gcm_checks.sim.sources import ScenarioDcgm, ScenarioKernelLog, scenario_sources
from gcm_checks.testing import dcgm_diag_json, kernel_xid_line


class NoSimCtx:
    """A context whose ``sim`` must not be read: gatherers take sources."""

    def __init__(self, settings: Any, state_dir: Path, sources: Sources, window=None, job=None):
        self.settings, self.state_dir, self.sources = settings, state_dir, sources
        self.window, self.job, self.dry_run = window, job, False

    @property
    def sim(self):
        raise AssertionError("a gatherer asked ctx.sim instead of reading its source")

    def remaining(self) -> float:
        return 30.0

    def gpu_bus_ids(self):
        return {"00000000:5D:00.0": 3}


class RecordingLog:
    """A windowed kernel-log source that hands back fixed lines."""

    windowed = True

    def __init__(self, lines: List[str]):
        self.lines, self.calls = lines, []

    def read(self, ctx: Any, window: Optional[Tuple[float, float]], *, timeout: float, coverage: Any):
        self.calls.append((window, timeout))
        coverage.source = "recorded"
        return kernel_log.read_text("\n".join(self.lines), since=window[0], until=window[1], coverage=coverage)


def test_a_context_for_a_scenario_injects_its_fakes_and_a_plain_one_reads_the_host(tmp_path):
    settings = config.resolve({}, "n")
    sim = suite.Context(settings=settings, node="n", sim=load("gpu-lost"), state_dir=tmp_path)
    assert isinstance(kernel_log_source(sim), ScenarioKernelLog) and isinstance(dcgm_source(sim), ScenarioDcgm)
    host = suite.Context(settings=settings, node="n", state_dir=tmp_path)
    assert host.sources is None
    assert isinstance(kernel_log_source(host), HostKernelLog) and isinstance(dcgm_source(host), HostDcgm)
    # What a caller injects wins over the scenario's.
    mine = Sources(kernel_log=RecordingLog([]))
    ctx = suite.Context(settings=settings, node="n", sim=load("gpu-lost"), state_dir=tmp_path, sources=mine)
    assert kernel_log_source(ctx) is mine.kernel_log and isinstance(dcgm_source(ctx), HostDcgm)


def test_xid_gatherer_reads_the_injected_source_for_the_job_window(tmp_path):
    start = time.time() - 100
    log = RecordingLog([
        kernel_xid_line(79, "0000:5d:00", when=start - 50),  # before the job: not this job's
        kernel_xid_line(79, "0000:5d:00", when=start + 10),
    ])
    ctx = NoSimCtx(config.resolve({}, "n"), tmp_path, Sources(kernel_log=log), window=(start, start + 60))
    facts = xid_checks.gather_xid(ctx)
    assert log.calls == [((start, start + 60), 5.0)]
    assert facts.source == "recorded" and facts.window == (start, start + 60)
    assert [(e.xid, e.gpu_index) for e in facts.events] == [(79, 3)]
    assert xid_checks.check_xid_hardware(facts, ctx.settings)[0].status is Status.FAIL


def test_health_scan_through_an_injected_source_moves_the_scan_mark(tmp_path):
    log = RecordingLog([])
    ctx = NoSimCtx(config.resolve({}, "n"), tmp_path, Sources(kernel_log=log))
    facts = xid_checks.gather_xid(ctx)
    (window, _), = log.calls
    assert window == facts.window and window[1] - window[0] == pytest.approx(3600.0, abs=5)
    # A windowed source is a live log: the next health scan starts where this one ended.
    assert json.loads((tmp_path / "xid_last_scan.json").read_text())["until"] == window[1]


def test_a_scenario_log_is_read_whole_and_leaves_no_scan_mark(tmp_path):
    ctx = NoSimCtx(config.resolve({}, "n"), tmp_path, scenario_sources(load("gpu-lost")))
    facts = xid_checks.gather_xid(ctx)
    assert facts.window is None and facts.source == "simulation"
    assert [(e.xid, e.gpu_index) for e in facts.events] == [(79, 3)]
    assert not (tmp_path / "xid_last_scan.json").exists()


def test_the_scenario_log_through_the_host_file_reader_gives_the_same_events(tmp_path):
    # Production and simulation share the gather code below the source: the
    # scenario's text, read from a file by the host reader, judges the same.
    text = load("gpu-lost")["kernel_log"]
    path = tmp_path / "kern.log"
    path.write_text(text)
    settings = config.resolve({"xid": {"source": "file", "kernel_log_path": str(path)}}, "n")
    sim = xid_checks.gather_xid(NoSimCtx(settings, tmp_path / "a", scenario_sources({"kernel_log": text})))
    wide = (time.mktime((2026, 11, 29, 0, 0, 0, 0, 0, -1)), time.mktime((2026, 12, 1, 0, 0, 0, 0, 0, -1)))
    host = xid_checks.gather_xid(NoSimCtx(settings, tmp_path / "b", Sources(), window=wide))
    assert host.source == f"file:{path}" and host.error is None
    assert [e.to_dict() for e in host.events] == [e.to_dict() for e in sim.events] != []


def test_an_unreadable_injected_log_is_unknown(tmp_path):
    class Broken(RecordingLog):
        def read(self, ctx, window, *, timeout, coverage):
            raise kernel_log.KernelLogUnavailable("journalctl: not found")
            yield  # a generator, as the host reader is

    facts = xid_checks.gather_xid(NoSimCtx(config.resolve({}, "n"), tmp_path, Sources(kernel_log=Broken([])),
                                           window=(0.0, 1.0)))
    assert facts.error == "journalctl: not found"
    assert {r.status for r in xid_checks.check_xid_hardware(facts, None)} == {Status.UNKNOWN}


class CannedDcgm:
    def __init__(self, doc: str):
        self.doc, self.gpus = doc, []

    def backend(self, ctx: Any, gpus: Any):
        self.gpus.append(gpus)
        return CannedBackend(self.doc, gpus)


def test_dcgm_gatherer_runs_the_injected_backend_on_the_jobs_gpus(tmp_path):
    src = CannedDcgm(dcgm_diag_json(8, {1: "GPU 1 bad", 7: "GPU 7 bad"}))
    ctx = NoSimCtx(config.resolve({}, "n"), tmp_path, Sources(dcgm=src), job={"gpus": "0-1"})
    report = dcgm_checks.gather_dcgm(ctx)
    assert src.gpus == [(0, 1)]
    assert report.ok and [e.entity_id for e in report.failures()] == [1]


def test_a_scenario_without_dcgm_is_a_node_without_dcgm(tmp_path):
    ctx = NoSimCtx(config.resolve({}, "n"), tmp_path, scenario_sources({"gpus": []}))
    report = dcgm_checks.gather_dcgm(ctx)
    assert not report.ok and report.source == "sim" and "dcgmi not installed" in report.problem


@pytest.mark.parametrize("level, timeout", [(1, 60.0), (7, 60.0), (1, 0.0)])
def test_a_missing_backend_says_why_before_level_or_time(level, timeout):
    report = dcgm.run_diag(level, timeout, dcgm.MissingBackend("pydcgm", "bindings not found"))
    assert (report.ok, report.source, report.problem) == (False, "pydcgm", "bindings not found")
    assert report.level == level


def _reads_sim(path: Path) -> List[int]:
    """Lines of ``path`` that read a ``sim`` attribute (``ctx.sim``, ``getattr(ctx, "sim")``)."""
    import ast

    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "sim":
            out.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "sim"):
            out.append(node.lineno)
    return out


def test_no_gather_code_asks_whether_it_is_simulated(tmp_path):
    root = Path(__file__).resolve().parent.parent / "gcm_checks"
    files = sorted((root / "gather").glob("*.py")) + [root / "checks" / "xid.py", root / "checks" / "dcgm.py"]
    found = {str(p.relative_to(root)): lines for p in files if (lines := _reads_sim(p))}
    assert found == {}
    # The probe itself sees both spellings.
    probe = tmp_path / "probe.py"
    probe.write_text("def f(ctx):\n    return ctx.sim or getattr(ctx, 'sim', None)\n")
    assert _reads_sim(probe) == [2, 2]


# Reads of ``ctx.sim`` that remain in the layers above sim/ (file, function):
# only shrinks. Each names the scenario (a log field, the qualify record) and
# none chooses how the hardware is read.
SIM_READS_ALLOWED = {
    # The one place that builds the sources: a simulated node injects its fakes.
    ("suite.py", "Context.__post_init__"),
    # The run's "start" event names the scenario it simulates.
    ("suite.py", "run_checks"),
    # The qualification record names the scenario (QualifyOutcome.sim).
    ("qualify/qualification.py", "qualify"),
}


def _sim_reads_by_function(path: Path) -> set:
    """(enclosing function's qualified name) of each read of ``.sim`` on a
    context (``ctx.sim``, ``self.sim``, ``getattr(ctx, "sim")``); a field of
    another object that happens to be called ``sim`` (``outcome.sim``) is not one."""
    import ast

    found = set()

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{scope}.{child.name}" if scope else child.name)
                continue
            if (isinstance(child, ast.Attribute) and child.attr == "sim" and isinstance(child.value, ast.Name)
                    and child.value.id in ("ctx", "self", "context")):
                found.add(scope or "<module>")
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in ("getattr", "hasattr")
                  and len(child.args) > 1 and isinstance(child.args[1], ast.Constant) and child.args[1].value == "sim"):
                found.add(scope or "<module>")
            visit(child, scope)

    visit(ast.parse(path.read_text()), "")
    return found


def test_gather_suite_and_qualify_read_sources_not_the_scenario(tmp_path):
    """Only sim/ and the one place that builds sources look at ``ctx.sim``:
    the GPU, InfiniBand, PCI and probe readers go through ``ctx.sources``."""
    root = Path(__file__).resolve().parent.parent / "gcm_checks"
    files = (sorted((root / "gather").glob("*.py")) + sorted((root / "checks").glob("*.py"))
             + sorted((root / "qualify").glob("*.py")) + [root / "suite.py", root / "sinks.py"])
    found = {(str(p.relative_to(root)), fn) for p in files for fn in _sim_reads_by_function(p)}
    assert found - SIM_READS_ALLOWED == set(), "read ctx.sources.<area> instead of ctx.sim"
    assert SIM_READS_ALLOWED - found == set(), "gone: remove from SIM_READS_ALLOWED (it only shrinks)"
    # The probe sees a read inside a method, and not another object's field.
    probe = tmp_path / "probe.py"
    probe.write_text("class C:\n    def f(self, outcome):\n        return self.sim or outcome.sim\n"
                     "def g(ctx):\n    return getattr(ctx, 'sim', None)\n")
    assert _sim_reads_by_function(probe) == {"C.f", "g"}


def test_a_scenario_context_reads_gpus_ib_and_pci_through_injected_sources(tmp_path):
    from gcm_checks.gather.ib import HostSysfs
    from gcm_checks.gather.nvml import HostNvml
    from gcm_checks.gather.pci import HostPci
    from gcm_checks.sim.sources import ScenarioNvml, ScenarioPci, ScenarioSysfs

    settings = config.resolve({}, "n")
    scenario = load("healthy")
    ctx = suite.Context(settings=settings, node="n", sim=scenario, state_dir=tmp_path)
    assert isinstance(ctx._reader("nvml", "-", "-"), ScenarioNvml)
    assert isinstance(ctx._reader("sysfs", "-", "-"), ScenarioSysfs)
    assert isinstance(ctx._reader("pci", "-", "-"), ScenarioPci) and ctx.sources.perf is not None
    try:
        root = Path(ctx.sysfs_root())
        assert root.is_dir() and root != Path("/") and (root / "sys" / "class" / "infiniband").is_dir()
        assert len(ctx.pci_facts().gpus) == len(scenario["gpus"])
        assert sorted(ctx.gpu_bus_ids().values()) == [int(g["index"]) for g in scenario["gpus"]]
    finally:
        ctx.close()
    assert not root.exists()  # the tree the source wrote goes with the context
    host = suite.Context(settings=config.resolve({"infiniband": {"sysfs_root": str(tmp_path)}}, "n"), node="n",
                         state_dir=tmp_path)
    assert isinstance(host._reader("nvml", "gcm_checks.gather.nvml", "HostNvml"), HostNvml)
    assert isinstance(host._reader("pci", "gcm_checks.gather.pci", "HostPci"), HostPci)
    assert isinstance(host._reader("sysfs", "gcm_checks.gather.ib", "HostSysfs"), HostSysfs)
    assert host.sysfs_root() == str(tmp_path)
    assert host.pci_facts().gpus == ()  # an empty bus under the configured root


def test_injected_sources_replace_the_host_readers_without_a_scenario(tmp_path):
    """What a test injects is read: no scenario, no host hardware."""
    from gcm_checks.qualify import probe
    from gcm_checks.sim.fake_nvml import FakeNvml
    from gcm_checks.sim.sources import ScenarioNvml, ScenarioPci, ScenarioPerf, ScenarioSysfs

    scenario = load("healthy")
    mine = Sources(nvml=ScenarioNvml(scenario), sysfs=ScenarioSysfs(scenario), pci=ScenarioPci(scenario),
                   perf=ScenarioPerf(scenario))
    ctx = suite.Context(settings=config.resolve({}, "n"), node="n", state_dir=tmp_path, sources=mine, budget_s=20.0)
    try:
        assert ctx.sim is None
        assert isinstance(ctx._nvml_loader()(), FakeNvml)
        n = len(scenario["gpus"])
        assert len(ctx.gpu_facts().gpus) == n and len(ctx.pci_facts().gpus) == n
        assert probe.measure(ctx, 1.0).source == "sim"
    finally:
        ctx.close()


def test_a_host_context_loads_neither_sim_nor_the_sources_module(tmp_path):
    """The host's GPU, sysfs and PCI readers are chosen without importing
    anything the prolog would not load anyway, and never simulation's."""
    import subprocess
    import sys

    code = ("import sys; from gcm_checks import testing; "
            f"ctx = testing.context(testing.settings(**{{'infiniband.sysfs_root': {str(tmp_path)!r}}})); "
            "ctx.nvml_factory = None; ctx.sysfs_root(); ctx.pci_facts(); ctx._nvml_loader(); "
            "print(sorted(m for m in sys.modules if m.startswith(('gcm_checks.sim', 'gcm_checks.gather.sources'))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", p.stdout
