"""Prometheus textfile-collector sink.

node_exporter's ``--collector.textfile.directory`` reads every ``*.prom`` file
in a directory on each scrape and rejects a series found twice. Each series
belongs to exactly one file (``Metric.file`` in the model): one file per mode
for run results (``gcm_checks_prolog.prom``, ...) so a prolog does not erase
what the last health run said, one for the drain state, one each for GPU and
IB readings, one per running job for ``gcm_job_info``. A file is always
rewritten whole, atomically: node_exporter must never scrape half a file (it
would drop the whole file and log an error), and the temporary name does not
end in ``.prom`` so it is never read.

Format: Prometheus text exposition format 0.0.4, rendered here by hand (no
client library on the prolog path, rule 7); the tests parse it back with
``prometheus_client.parser``.
"""

from __future__ import annotations

import math
import os
import re
from typing import Dict, Iterable, List, Optional

from gcm_checks.telemetry.model import HELP, Sample, spec
from gcm_checks.text import clean_text


def escape_label(value: str) -> str:
    # Exposition format: backslash, double quote and line feed are escaped,
    # after gcm_checks.text has dropped escape sequences and other controls.
    value = clean_text(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value[:512]


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
    if not by_name:
        return ""
    for name, group in by_name.items():
        lines.append(f"# HELP {name} {HELP.get(name, name)}")
        lines.append(f"# TYPE {name} gauge")
        for s in group:
            labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in s.labels)
            lines.append(f"{name}{{{labels}}} {_value(s.value)}" if labels else f"{name} {_value(s.value)}")
    return "\n".join(lines) + "\n"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text or "") or "_"


def file_for(directory: str, mode: str, group: str = "run", job_id: Optional[str] = None) -> str:
    """The one textfile a group of series lives in."""
    if group == "run":
        name = f"gcm_checks_{_safe(mode)}.prom"
    elif group == "job":
        name = f"gcm_checks_job_{_safe(str(job_id))}.prom"
    else:
        name = f"gcm_checks_{group}.prom"
    return os.path.join(directory, name)


def write(directory: str, mode: str, samples: Iterable[Sample], *, groups: Iterable[str] = ("run",),
          job_id: Optional[str] = None) -> List[str]:
    """Rewrite the file of each group in ``groups`` (empty when no sample
    belongs to it: a reading that went away must not stay graphed)."""
    from gcm_checks.jsonfile import write_atomic

    directory = os.path.expanduser(directory)
    by_group: Dict[str, List[Sample]] = {g: [] for g in groups}
    for s in samples:
        by_group.setdefault(spec(s.name).file, []).append(s)
    written = []
    for group, group_samples in by_group.items():
        path = file_for(directory, mode, group, job_id)
        text = render(group_samples) if group_samples else ""
        written.append(write_atomic(path, text.encode("utf-8"), mode=0o644))
    return written


def remove_job(directory: str, job_id: str) -> None:
    """The job ended: its gcm_job_info series go with it."""
    try:
        os.unlink(file_for(os.path.expanduser(directory), "", "job", job_id))
    except FileNotFoundError:
        pass
