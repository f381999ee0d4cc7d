import pytest

from gcm_checks.hostlist import expand, matches


@pytest.mark.parametrize(
    "expr, names",
    [
        ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
        ("gpu[1-2,7]", ["gpu1", "gpu2", "gpu7"]),
        ("a1,b[08-10]", ["a1", "b08", "b09", "b10"]),
        ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
        ("plain", ["plain"]),
    ],
)
def test_expand(expr, names):
    assert expand(expr) == names


@pytest.mark.parametrize(
    "node, pattern, ok",
    [
        ("gpu007", "gpu[001-128]", True),
        ("gpu129", "gpu[001-128]", False),
        ("gpu7", "gpu[001-128]", False),  # zero padding is part of the name
        ("gpu5", "gpu*", True),
        ("cpu5", "gpu*", False),
        ("dgx12", "re:dgx\\d+", True),
        ("dgx12x", "re:dgx\\d+", False),
        ("node2", "node1,node2", True),
        ("gpua", "gpu[ab]", True),  # glob class, not a hostlist
    ],
)
def test_matches(node, pattern, ok):
    assert matches(node, pattern) is ok
