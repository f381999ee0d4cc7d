"""gcm_checks.testing's settings and GPU fact builders: healthy by default,
overridable, validated like a real config."""

import pytest

from gcm_checks import config, testing
from gcm_checks.checks import gpu as checks_gpu
from gcm_checks.registry import CHECKS
from gcm_checks.result import Status


def _gpu_checks():
    return [s for s in CHECKS.values() if s.needs == "gpu"]


def test_a_default_node_passes_every_gpu_check():
    s = testing.settings(gpu={"count": 8})
    facts = testing.gpu_facts()
    assert facts.count == 8 and len({g.pci_bus_id for g in facts.gpus}) == 8
    assert _gpu_checks(), "the GPU checks are registered"
    for spec in _gpu_checks():
        results = spec.fn(facts, s)
        assert results and all(r.status is Status.PASS for r in results), (spec.id, results)


def test_an_override_is_judged():
    facts = testing.gpu_facts(testing.gpu(0), testing.gpu(1, ecc_uncorrected_volatile=3))
    results = checks_gpu.check_ecc(facts, testing.settings(gpu={"count": 2}))
    assert [(r.status, r.subject.split(" (")[0]) for r in results] == [(Status.FAIL, "GPU 1")]


def test_settings_layers_defaults_file_and_sections():
    s = testing.settings({"gpu": {"count": 4, "temperature_max_c": 80},
                          "nodes": [{"match": "n[1-2]", "set": {"gpu": {"count": 2}}}]},
                         gpu={"temperature_max_c": 90})
    assert (s.gpu.count, s.gpu.temperature_max_c) == (2, 90)
    assert s.budget_s == config.SCHEMA["budget_s"].default
    assert testing.settings(node="other", gpu={"count": 4}).gpu.count == 4


def test_settings_refuse_a_misspelt_key():
    with pytest.raises(config.ConfigError):
        testing.settings(gpu={"cuont": 8})
