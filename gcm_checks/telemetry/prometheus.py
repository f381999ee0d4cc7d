"""Prometheus textfile-collector sink.

node_exporter's ``--collector.textfile.directory`` reads every ``*.prom`` file
in a directory on each scrape. We write one file per mode
(``gcm_checks_prolog.prom``, ``..._epilog.prom``, ...) so a prolog does not
erase what the last health run said, and we write it atomically: node_exporter
must never scrape half a file (it would drop the whole file and log an error),
and the temporary name does not end in ``.prom`` so it is never read.

Format: Prometheus text exposition format 0.0.4, rendered here by hand (no
client library on the prolog path, rule 7); the tests parse it back with
``prometheus_client.parser``.
"""

from __future__ import annotations

import math
import os
import re
from typing import Dict, Iterable, List

from gcm_checks.telemetry.model import HELP, Sample

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape_label(value: str) -> str:
    # Exposition format: backslash, double quote and line feed are escaped;
    # other control characters have no business in a label and are dropped.
    value = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return _CONTROL.sub("", value)[:512]


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    v = float(v)
    # Whole numbers (counts, timestamps) print without a trailing ".0".
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def render(samples: Iterable[Sample]) -> str:
    by_name: Dict[str, List[Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    lines: List[str] = []
    for name, group in by_name.items():
        lines.append(f"# HELP {name} {HELP.get(name, name)}")
        lines.append(f"# TYPE {name} gauge")
        for s in group:
            labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in s.labels)
            lines.append(f"{name}{{{labels}}} {_value(s.value)}" if labels else f"{name} {_value(s.value)}")
    return "\n".join(lines) + "\n"


def file_for(directory: str, mode: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]", "_", mode) or "run"
    return os.path.join(directory, f"gcm_checks_{safe}.prom")


def write(directory: str, mode: str, samples: Iterable[Sample]) -> str:
    from gcm_checks.safeio import atomic_write

    path = file_for(os.path.expanduser(directory), mode)
    return atomic_write(path, render(samples).encode("utf-8"), mode=0o644)
