"""The registry table stays honest: every check's tags are declared for its
module in gcm_checks.checks.MODULES (the prolog imports only its modules)."""


from gcm_checks import registry
from gcm_checks.checks import MODULES, load_all


def test_modules_table_covers_registered_tags():
    load_all()
    for spec in registry.CHECKS.values():
        module = spec.fn.__module__
        assert module in MODULES, f"{spec.id}: module {module} missing from checks.MODULES"
        missing = spec.tags - MODULES[module]
        assert not missing, f"{spec.id} is tagged {sorted(missing)} but {module} is not loaded for those suites"


def test_every_check_has_a_gatherer_and_a_doc():
    import gcm_checks.suite  # noqa: F401 - the suite gathers the GPU area itself

    load_all()
    for spec in registry.CHECKS.values():
        assert spec.needs in registry.GATHERERS, f"{spec.id} needs unknown gatherer {spec.needs}"
        assert spec.doc, f"{spec.id} has no docstring (shown by `gcm-checks check --list`)"
        assert spec.id.count(".") >= 1 and spec.id == spec.id.lower()


def test_select_by_tag_and_disabled_prefix():
    load_all()
    prolog = {s.id for s in registry.select("prolog")}
    assert "gpu.ecc.uncorrectable" in prolog and not any(i.startswith("xid.") for i in prolog)
    without_gpu = {s.id for s in registry.select("prolog", ["gpu.*"])}
    assert without_gpu and not any(i.startswith("gpu.") for i in without_gpu)


# ---------------------------------------------------------------- the row names the result


def test_run_check_stamps_the_row_id_and_turns_a_crash_into_unknown():
    from gcm_checks.result import Status, fail, passed

    def judged(facts, settings):
        return [fail("bad", "GPU 1"), passed("some.other.id", "fine")]

    def crashes(facts, settings):
        raise KeyError("temperature")

    row = registry.CheckSpec("demo.stamp", judged, frozenset({"health"}), "gpu", "demo")
    out = registry.run_check(row, None, None)
    assert [(r.check, r.status, r.subject) for r in out] == [("demo.stamp", Status.FAIL, "GPU 1"),
                                                            ("demo.stamp", Status.PASS, "")]
    (r,) = registry.run_check(registry.CheckSpec("demo.crash", crashes, frozenset({"health"}), "gpu", "demo"), None, None)
    assert (r.check, r.status) == ("demo.crash", Status.UNKNOWN) and "KeyError" in r.message


def test_check_modules_do_not_repeat_their_ids_in_results():
    # A check says what it found; the suite stamps the id from its registry
    # row, so the id is written once. Results made outside a check (a gather
    # error) use passed/failed/warned/unknown with an id.
    import ast
    from pathlib import Path

    import gcm_checks.checks as pkg

    import gcm_checks.qualify.judge as perf_judge  # judges for checks/perf.py: same rule

    for path in sorted(Path(pkg.__file__).parent.glob("*.py")) + [Path(perf_judge.__file__)]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("passed", "failed", "warned", "unknown"), f"{path.name}:{node.lineno}"
