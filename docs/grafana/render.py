"""Draw docs/grafana/gcm-checks-dashboard.json over simulated data, to PNG.

Grafana cannot be installed on the machine this was made on (no network
beyond package registries), so this is NOT a Grafana screenshot. It reads
the dashboard JSON (panel titles, types, grid positions, units, queries) and
draws each panel with matplotlib.

The numbers: each panel's own PromQL, evaluated by a real Prometheus (Debian's
``prometheus`` 2.42: the simulated history is backfilled with ``promtool tsdb
create-blocks-from openmetrics`` and queried over HTTP, ``$node`` = all). Where
Prometheus is not installed, small Python stand-ins (``QUERIES``) compute the
same thing; ``render.py python`` forces them.

The data is simulated through gcm-checks' own code path: for each node and
each 5-minute step the simulated NVML (gcm_checks.sim.fake_nvml) is gathered
with the production adapter (``gather.nvml.gather(extended=True)``), judged
by the real registered GPU checks, and turned into series by
``gcm_checks.telemetry`` - exactly what a health run writes to the textfile.

    pip install matplotlib && python docs/grafana/render.py [auto|prometheus|python]
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import sys
from collections import defaultdict
from typing import Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from gcm_checks.config import resolve  # noqa: E402
from gcm_checks.gather import nvml  # noqa: E402
from gcm_checks.gather.ib import IbPort, IbSnapshot  # noqa: E402
from gcm_checks.sim.fake_nvml import FakeNvml  # noqa: E402
from gcm_checks.telemetry import hardware, model  # noqa: E402

T_END = 1_796_040_000.0  # 2026-11-30T12:00Z
STEP = 300.0  # HealthCheckInterval=300
HOURS = 12
NODES = [f"gpu{i:03d}" for i in range(1, 9)]

Labels = Tuple[Tuple[str, str], ...]
DB = Dict[Tuple[str, Labels], List[Tuple[float, float]]]


# --------------------------------------------------------------------------
# Simulation: a 12-hour day of 8 nodes, with the incidents the dashboard is for


def _slot(h: float) -> int:
    # Jobs change at 01:30, 04:30, ... (not at the picture's last instant:
    # backfilled history has no staleness markers, so a series that ended
    # within 5 minutes would still count there).
    return int((h + 1.5) // 3)


def _gpu_state(node: str, gpu: int, t: float, rng: random.Random) -> dict:
    h = (t - (T_END - HOURS * 3600)) / 3600.0
    busy = (_slot(h) + NODES.index(node)) % 4 != 3  # jobs of ~3 h, some idle gaps
    temp = (62 + 8 * math.sin(h + gpu) + rng.gauss(0, 1.2)) if busy else 33 + rng.gauss(0, 0.5)
    power = (560 + 60 * math.sin(h * 1.3 + gpu) + rng.gauss(0, 15)) if busy else 72 + rng.gauss(0, 2)
    clock = 1980 if busy else 345
    throttle = [] if busy else ["gpu_idle"]
    g = {"index": gpu, "pci_bus_id": f"00000000:{0x18 + 0x11 * gpu:02X}:00.0"}
    # gpu005 GPU 3: a fan dies at 06:00, the GPU heats up and throttles.
    if node == "gpu005" and gpu == 3 and h >= 6:
        temp = min(94.0, 70 + 6 * (h - 6)) + rng.gauss(0, 0.5)
        if temp >= 85:
            throttle = ["sw_thermal_slowdown", "hw_thermal_slowdown"]
            clock = int(1980 - 25 * (temp - 80))
            power = 410 + rng.gauss(0, 10)
    g.update(temperature_c=int(round(temp)), power_w=round(power, 1), sm_clock_mhz=clock, throttle_reasons=throttle,
             ecc_uncorrected_volatile=0, remapped_rows={"correctable": 0, "uncorrectable": 0, "pending": False,
                                                        "failure": False})
    # gpu007 GPU 1: correctable ECC creeping up, one row remapped at 08:00.
    if node == "gpu007" and gpu == 1:
        g["ecc_corrected_aggregate"] = int(max(0.0, h - 2) ** 2 * 3)
        if h >= 8:
            g["remapped_rows"] = {"correctable": 1, "uncorrectable": 0, "pending": False, "failure": False}
    # gpu003 GPU 0: an NVLink with replay errors between 04:00 and 05:30.
    replay = int(max(0.0, min(h, 5.5) - 4) * 400) if node == "gpu003" and gpu == 0 else 0
    g["nvlink"] = {"links": 18, "errors": {"replay": replay}}
    return g


def simulate() -> Tuple[DB, float]:
    from gcm_checks.checks import load_all
    from gcm_checks.registry import select

    load_all("health")
    gpu_checks = [s for s in select("health") if s.needs == "gpu"]
    db: DB = defaultdict(list)
    rng = random.Random(17)
    symbol_errors = 0
    steps = int(HOURS * 3600 / STEP)
    for k in range(steps + 1):
        t = T_END - HOURS * 3600 + k * STEP
        h = k * STEP / 3600.0
        for node in NODES:
            settings = resolve({"gpu": {"count": 8}}, node)
            scenario = {"gpus": [_gpu_state(node, i, t, rng) for i in range(8)]}
            facts = nvml.gather(lambda s=scenario: FakeNvml(s), 2.0, extended=True)
            results = [r for spec in gpu_checks for r in spec.fn(facts, settings)]
            drained = (node == "gpu005" and any(r.status.value == "fail" for r in results)) or \
                      (node == "gpu002" and h >= 9)
            samples, _ = model.build(results, mode="health", node=node, when=t, drained=drained,
                                     duration_s=1.9 + rng.gauss(0, 0.15), gpu_facts=facts)
            if node == "gpu004" and h >= 7:
                symbol_errors += rng.randint(20, 60)
            ports = tuple(IbPort(f"mlx5_{i}", 1, "ACTIVE", 4, "LinkUp", 5, 400.0, "400 Gb/sec (4X NDR)", "InfiniBand",
                                 {"symbol_error": symbol_errors if (node == "gpu004" and i == 2) else 0,
                                  "link_downed": 0, "link_error_recovery": 0, "port_rcv_errors": 0})
                          for i in range(8))
            samples += hardware.ib_samples(IbSnapshot("/", "/sys/class/infiniband", True, (), ports), node)
            # gpu002 GPU 6 falls off the bus at 09:00: its epilog sees XID 79.
            if node == "gpu002" and h >= 9:
                ep, _ = model.build([], mode="epilog", node=node, when=t,
                                    xids=[{"xid": 79, "gpu_index": 6, "severity": "fail"}], duration_s=41.0)
                samples += [s for s in ep if s.name in ("gcm_xid_events", "gcm_run_duration_seconds")]
            busy = (_slot(h) + NODES.index(node)) % 4 != 3
            if busy and not drained:
                job = str(700000 + _slot(h) * 10 + NODES.index(node))
                samples += [model.Sample("gcm_job_info", model.labels(node=node, job=job, gpu=str(i)), 1.0)
                            for i in range(8)]
            for s in samples:
                db[(s.name, s.labels)].append((t, s.value))
    return db, T_END


# --------------------------------------------------------------------------
# The panels' queries, in Python (the PromQL each stands for is in the JSON)


def _sel(db: DB, name: str, **match: str) -> Dict[Labels, List[Tuple[float, float]]]:
    out = {}
    for (n, lb), pts in db.items():
        if n != name:
            continue
        d = dict(lb)
        ok = True
        for k, v in match.items():
            neg = k.endswith("_not")
            key = k[:-4] if neg else k
            hit = re.fullmatch(v, d.get(key, "")) is not None
            ok = ok and (not hit if neg else hit)
        if ok:
            out[lb] = pts
    return out


def _last(series: Dict[Labels, List[Tuple[float, float]]]) -> Dict[Labels, float]:
    return {lb: pts[-1][1] for lb, pts in series.items() if pts}


def _fmt(lb: Labels, legend: str) -> str:
    d = dict(lb)
    return re.sub(r"\{\{(\w+)\}\}", lambda m: d.get(m.group(1), ""), legend)


def q_failing(db):
    return sum(1 for v in _last(_sel(db, "gcm_node_verdict", mode="health")).values() if v == 3)


def q_drained(db):
    return int(sum(_last(_sel(db, "gcm_node_drained")).values()))


def q_unknown(db):
    return sum(1 for v in _last(_sel(db, "gcm_node_verdict", mode="health")).values() if v == 2)


def q_stale(db):
    return sum(1 for v in _last(_sel(db, "gcm_last_run_timestamp_seconds", mode="health")).values() if T_END - v > 900)


def q_failing_checks(db):
    counts: Dict[str, int] = defaultdict(int)
    for lb, v in _last(_sel(db, "gcm_check_severity")).items():
        if v == 3:
            counts[dict(lb)["check"]] += 1
    return dict(counts)


def q_series(name, scale=1.0, **match):
    def q(db):
        return {lb: [(t, v * scale) for t, v in pts] for lb, pts in _sel(db, name, **match).items()}
    return q


def q_throttle(db):
    out = {}
    for lb, pts in _sel(db, "gcm_gpu_throttle_reason", reason_not="gpu_idle").items():
        if any(v > 0 for _, v in pts):
            out[lb] = [(t, v if v > 0 else float("nan")) for t, v in pts]
    return out


def q_xids(db):
    by: Dict[Labels, Dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for lb, pts in _sel(db, "gcm_xid_events").items():
        for t, v in pts:
            by[(("code", dict(lb)["code"]),)][t] += v
    return {lb: sorted(d.items()) for lb, d in by.items()}


def q_errors(db):
    out = {lb: pts for lb, pts in _sel(db, "gcm_gpu_ecc_errors", counter="aggregate").items() if any(v for _, v in pts)}
    out.update({lb: pts for lb, pts in _sel(db, "gcm_gpu_remapped_rows").items() if any(v for _, v in pts)})
    return out


def q_nonzero(name, **match):
    def q(db):
        return {lb: pts for lb, pts in _sel(db, name, **match).items() if any(v for _, v in pts)}
    return q


def q_ib_rate(db):
    out = {}
    for lb, pts in _sel(db, "gcm_ib_port_counter", counter="symbol_error|link_downed|link_error_recovery|port_rcv_errors").items():
        rate = []
        for i, (t, v) in enumerate(pts):
            j = max(0, i - int(3600 / STEP))
            t0, v0 = pts[j]
            rate.append((t, (v - v0) / (t - t0) * 3600 if t > t0 else 0.0))
        if any(r for _, r in rate):
            out[lb] = rate
    return out


def q_job_table(db):
    temps = _last(_sel(db, "gcm_gpu_temperature_celsius"))
    jobs = {(dict(lb)["node"], dict(lb)["gpu"]): dict(lb)["job"] for lb, v in _last(_sel(db, "gcm_job_info")).items()
            if _sel(db, "gcm_job_info")[lb][-1][0] == T_END}
    rows = [(v, dict(lb)["node"], dict(lb)["gpu"], jobs[(dict(lb)["node"], dict(lb)["gpu"])])
            for lb, v in temps.items() if (dict(lb)["node"], dict(lb)["gpu"]) in jobs]
    return sorted(rows, reverse=True)


QUERIES: Dict[str, Callable[[DB], object]] = {
    "Nodes failing (health)": q_failing,
    "Nodes drained by gcm": q_drained,
    "Could not tell": q_unknown,
    "Health runs stale (> 15 min)": q_stale,
    "Failing checks": q_failing_checks,
    "GPU temperature": q_series("gcm_gpu_temperature_celsius"),
    "GPU power": q_series("gcm_gpu_power_watts"),
    "SM clock": q_series("gcm_gpu_sm_clock_hertz", 1e-6),
    "Throttle reasons active (excluding idle)": q_throttle,
    "XID events by code": q_xids,
    "ECC and remapped rows": q_errors,
    "NVLink errors": q_nonzero("gcm_gpu_nvlink_errors"),
    "InfiniBand error counters (per hour)": q_ib_rate,
    "Run duration": q_series("gcm_run_duration_seconds"),
    "Which job holds each GPU (hot GPUs first)": q_job_table,
}


# --------------------------------------------------------------------------
# The panels' own PromQL, evaluated by a real Prometheus (when installed)


def _openmetrics(db: DB) -> str:
    """The simulated history as OpenMetrics text, for promtool's backfill."""
    from gcm_checks.telemetry.prometheus import escape_label

    by_name: Dict[str, List[Tuple[Labels, List[Tuple[float, float]]]]] = defaultdict(list)
    for (name, lb), pts in db.items():
        by_name[name].append((lb, pts))
    out: List[str] = []
    for name in sorted(by_name):
        out.append(f"# TYPE {name} gauge")
        for lb, pts in by_name[name]:
            labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in lb if v != "")
            for t, v in pts:
                out.append(f"{name}{{{labels}}} {v!r} {t:.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


class Prometheus:
    """A throwaway Prometheus over the simulated history (promtool backfill)."""

    def __init__(self, db: DB) -> None:
        import shutil
        import socket
        import subprocess
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="gcm-dash-prom-")
        om = os.path.join(self.dir, "history.om")
        with open(om, "w") as f:
            f.write(_openmetrics(db))
        data = os.path.join(self.dir, "data")
        subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics", om, data],
                       check=True, capture_output=True, timeout=300)
        conf = os.path.join(self.dir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global: {}\n")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.proc = subprocess.Popen([shutil.which("prometheus") or "prometheus", f"--config.file={conf}",
                                      f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=100y",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time as _time

        end = _time.monotonic() + 60
        while _time.monotonic() < end:
            try:
                self._get("/-/ready", {})
                return
            except OSError:
                _time.sleep(0.2)
        raise RuntimeError("prometheus did not start")

    def _get(self, path: str, params: Dict[str, str]) -> dict:
        import urllib.error
        import urllib.parse
        import urllib.request

        url = f"http://127.0.0.1:{self.port}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = r.read()
        except urllib.error.HTTPError as e:  # 400/422: a bad query; say which
            raise ValueError(f"{params.get('query')}: {e.read().decode()[:300]}") from None
        return json.loads(body) if path.startswith("/api") else {}

    def instant(self, expr: str) -> list:
        doc = self._get("/api/v1/query", {"query": expr, "time": str(T_END)})
        if doc.get("status") != "success":
            raise ValueError(f"{expr}: {doc}")
        return doc["data"]["result"]

    def range(self, expr: str) -> list:
        doc = self._get("/api/v1/query_range", {"query": expr, "start": str(T_END - HOURS * 3600), "end": str(T_END),
                                                 "step": str(int(STEP))})
        if doc.get("status") != "success":
            raise ValueError(f"{expr}: {doc}")
        return doc["data"]["result"]

    def close(self) -> None:
        import shutil

        self.proc.terminate()
        try:
            self.proc.wait(10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def _expr(target: dict) -> str:
    return target["expr"].replace('=~"$node"', '=~".*"')


def prometheus_values(dash: dict, prom: "Prometheus") -> Dict[str, object]:
    """Each panel's value in the shapes the drawing takes, from its PromQL."""
    out: Dict[str, object] = {}
    for p in dash["panels"]:
        exprs = [_expr(t) for t in p["targets"]]
        if p["type"] == "stat":
            out[p["title"]] = int(sum(float(r["value"][1]) for r in prom.instant(exprs[0])))
        elif p["type"] == "bargauge":
            out[p["title"]] = {r["metric"].get("check", ""): float(r["value"][1]) for r in prom.instant(exprs[0])}
        elif p["type"] == "table":
            out[p["title"]] = [(float(r["value"][1]), r["metric"].get("node", ""), r["metric"].get("gpu", ""),
                                r["metric"].get("job", "")) for r in prom.instant(exprs[0])]
        else:
            series: Dict[Labels, List[Tuple[float, float]]] = {}
            steps = [T_END - HOURS * 3600 + k * STEP for k in range(int(HOURS * 3600 / STEP) + 1)]
            for e in exprs:
                for r in prom.range(e):
                    have = {float(t): float(v) for t, v in r["values"]}
                    lb = tuple(sorted(r["metric"].items()))
                    # Gaps (a filtered-out or absent sample) stay gaps, as in Grafana.
                    scale = 1e-6 if p["fieldConfig"]["defaults"].get("unit") == "hertz" else 1.0
                    series[lb] = [(t, have[t] * scale if t in have else float("nan")) for t in steps]
            out[p["title"]] = series
    return out


# --------------------------------------------------------------------------
# Drawing


def _anomaly(series: Dict[Labels, List[Tuple[float, float]]]) -> Dict[Labels, float]:
    """How far each series strays from the others at the same instant (for the legend)."""
    at: Dict[float, List[float]] = defaultdict(list)
    for pts in series.values():
        for t, v in pts:
            if v == v:
                at[t].append(v)
    med = {t: sorted(vs)[len(vs) // 2] for t, vs in at.items()}
    return {lb: max((abs(v - med[t]) for t, v in pts if v == v), default=0.0) + (1e-9 * len(pts))
            for lb, pts in series.items()}


BG, PANEL, TEXT, GRID = "#111217", "#181b1f", "#ccccdc", "#2c3235"
PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#fade2a", "#37872d",
           "#c4162a", "#1f60c4", "#8f3bb8"]


def render(dashboard_path: str, out_path: str, engine: str = "auto") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from datetime import datetime, timezone

    dash = json.load(open(dashboard_path))
    db, _ = simulate()
    import shutil

    if engine == "prometheus" or (engine == "auto" and shutil.which("prometheus") and shutil.which("promtool")):
        prom = Prometheus(db)
        try:
            values = prometheus_values(dash, prom)
        finally:
            prom.close()
        how = "queries evaluated by Prometheus"
    else:
        values = {p["title"]: QUERIES[p["title"]](db) for p in dash["panels"]}
        how = "queries evaluated by Python stand-ins"
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dash["panels"])
    unit_px = 0.55  # inches per grid row
    fig = plt.figure(figsize=(20, rows * unit_px + 1.0), facecolor=BG)
    top = 1 - 0.9 / (rows * unit_px + 1.0)
    fig.text(0.01, top + 0.35 * (1 - top), f"{dash['title']}   -   node: All   -   last 12 h, "
             "2026-11-30 00:00-12:00 UTC", color=TEXT, fontsize=13, weight="bold")
    fig.text(0.99, top + 0.35 * (1 - top), f"SIMULATED DATA - {how}, drawn by docs/grafana/render.py (not Grafana)",
             color="#ff780a", fontsize=10, ha="right")
    for p in dash["panels"]:
        g = p["gridPos"]
        pad = 0.004
        left = 0.028 if p["type"] in ("timeseries", "bargauge") else pad  # room for tick labels
        rect = [g["x"] / 24 + left, top - (g["y"] + g["h"]) / rows * top + pad * 2, g["w"] / 24 - left - pad,
                g["h"] / rows * top - pad * 5]
        ax = fig.add_axes(rect, facecolor=PANEL)
        for side in ax.spines.values():
            side.set_color(GRID)
        ax.set_title(p["title"], color=TEXT, fontsize=9, loc="left", pad=3)
        ax.tick_params(colors=TEXT, labelsize=7)
        value = values[p["title"]]
        legend = p["targets"][0].get("legendFormat", "")
        if p["type"] == "stat":
            ax.set_xticks([])
            ax.set_yticks([])
            color = "#73bf69" if value == 0 else "#f2495c"
            ax.text(0.5, 0.45, str(value), color=color, fontsize=34, ha="center", va="center", weight="bold",
                    transform=ax.transAxes)
        elif p["type"] == "bargauge":
            items = sorted(value.items(), key=lambda kv: -kv[1]) or [("(none)", 0)]
            ax.barh([k for k, _ in items], [v for _, v in items], color="#f2495c")
            ax.invert_yaxis()
            ax.set_xlabel("nodes", color=TEXT, fontsize=7)
        elif p["type"] == "table":
            ax.set_xticks([])
            ax.set_yticks([])
            head = ["node", "GPU", "job", "temperature"]
            lines = [head] + [[n, gpu, job, f"{v:.0f} C"] for v, n, gpu, job in value[:8]]
            for i, row in enumerate(lines):
                for j, cell in enumerate(row):
                    ax.text(0.02 + j * 0.24, 0.9 - i * 0.105, cell, color=TEXT if i else "#8ab8ff", fontsize=8,
                            transform=ax.transAxes, weight="bold" if i == 0 else "normal")
        else:
            start = datetime.fromtimestamp(T_END - HOURS * 3600, timezone.utc)
            scores = _anomaly(value)
            items = sorted(value.items(), key=lambda kv: -scores[kv[0]])
            for k, (lb, pts) in enumerate(items):
                ts = [datetime.fromtimestamp(t, timezone.utc) for t, _ in pts]
                vs = [v for _, v in pts]
                # Grafana colours every series; the legend lists the most unusual ones.
                fmt = legend if "kind" not in dict(lb) or len(p["targets"]) < 2 else p["targets"][1]["legendFormat"]
                ax.plot(ts, vs, lw=1.6 if k < 6 else 0.7, color=PALETTE[k % len(PALETTE)], alpha=1.0 if k < 6 else 0.45,
                        label=_fmt(lb, fmt) if k < 6 else None, zorder=10 - min(k, 9))
            ax.set_xlim(start, datetime.fromtimestamp(T_END, timezone.utc))
            ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
            ax.grid(color=GRID, lw=0.5)
            unit = p["fieldConfig"]["defaults"].get("unit", "")
            ax.set_ylabel({"celsius": "C", "watt": "W", "hertz": "MHz", "s": "s"}.get(unit, ""), color=TEXT, fontsize=7)
            if items:
                ax.legend(loc="upper left", fontsize=6, facecolor=PANEL, edgecolor=GRID, labelcolor=TEXT, ncol=2)
            else:
                ax.text(0.5, 0.5, "no data", color="#8e8e8e", ha="center", transform=ax.transAxes)
            if p["title"].startswith("Throttle"):
                ax.set_ylim(0, 1.3)
    fig.savefig(out_path, dpi=80, facecolor=BG)


if __name__ == "__main__":
    render(os.path.join(HERE, "gcm-checks-dashboard.json"), os.path.join(HERE, "dashboard.png"),
           engine=sys.argv[1] if len(sys.argv) > 1 else "auto")
    print(os.path.join(HERE, "dashboard.png"))
