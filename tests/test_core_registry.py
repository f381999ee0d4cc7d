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
