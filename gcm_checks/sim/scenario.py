"""Load simulated-node scenarios (built-in names or YAML paths).

Schema: docs/simulation.md. A scenario may ``extends: <name>`` another and
override only what differs; ``gpus`` may be a list or ``{count, template,
overrides: {index: {...}}}``.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Dict, List

# The schema, importable from here as before (sim/tree reads it without importing this module).
from gcm_checks.sim.schema import GPU_KEYS, PCI_KEYS, TOP_KEYS, ScenarioError  # noqa: F401

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "data" / "sim"

# DGX H100 bus ids, so simulated subjects look like real ones.
_DEFAULT_BUS_IDS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]


def list_builtin() -> List[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def _path_for(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        if not p.is_file():
            raise ScenarioError(f"scenario file not found: {name_or_path}")
        return p
    p = BUILTIN_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise ScenarioError(f"unknown scenario {name_or_path!r}; built-in: {', '.join(list_builtin())}")
    return p


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _deep_merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def _read_raw(name_or_path: str, depth: int = 0) -> Dict[str, Any]:
    import yaml

    if depth > 5:
        raise ScenarioError("scenario 'extends' chain too deep")
    path = _path_for(name_or_path)
    with open(path, encoding="utf-8") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ScenarioError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(TOP_KEYS)}")
    parent = data.pop("extends", None)
    if parent:
        data = _deep_merge(_read_raw(parent, depth + 1), data)
    data.setdefault("description", path.stem)
    return data


def _expand_gpus(spec: Any) -> List[Dict[str, Any]]:
    if spec is None:
        return []
    if isinstance(spec, list):
        gpus = [dict(g) for g in spec]
    elif isinstance(spec, dict):
        count = int(spec.get("count", 0))
        template = spec.get("template") or {}
        overrides = {int(k): v for k, v in (spec.get("overrides") or {}).items()}
        gpus = [_deep_merge(template, overrides.get(i, {})) for i in range(count)]
    else:
        raise ScenarioError("gpus: expected a list or {count, template, overrides}")
    for i, g in enumerate(gpus):
        unknown = set(g) - GPU_KEYS
        if unknown:
            raise ScenarioError(f"gpus[{i}]: unknown keys {sorted(unknown)}; known: {sorted(GPU_KEYS)}")
        g.setdefault("index", i)
        bus = _DEFAULT_BUS_IDS[i] if i < len(_DEFAULT_BUS_IDS) else f"{0xC0 + i:02X}"
        g.setdefault("pci_bus_id", f"00000000:{bus}:00.0")
    return gpus


def _expand_ib(spec: Any) -> List[Dict[str, Any]]:
    if spec is None:
        return []
    if isinstance(spec, dict):
        count = int(spec.get("count", 0))
        template = spec.get("template") or {}
        overrides = {int(k): v for k, v in (spec.get("overrides") or {}).items()}
        ports = []
        for i in range(count):
            p = _deep_merge({"device": f"mlx5_{i}", "port": 1}, template)
            ports.append(_deep_merge(p, overrides.get(i, {})))
        return ports
    if isinstance(spec, list):
        return [dict(p) for p in spec]
    raise ScenarioError("infiniband: expected a list or {count, template, overrides}")


def load(name_or_path: str) -> Dict[str, Any]:
    data = _read_raw(name_or_path)
    data["gpus"] = _expand_gpus(data.get("gpus"))
    data["infiniband"] = _expand_ib(data.get("infiniband"))
    from gcm_checks.sim.tree import expand_pci

    data["pci"] = expand_pci(data.get("pci"), data["gpus"], data["infiniband"])
    data["name"] = Path(name_or_path).stem
    return data
