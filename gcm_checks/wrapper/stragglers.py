"""Find the slow node while the job runs, from every task's step counter.

Every task's gcm-run publishes (time, step) samples with its node and task
number to the job's shared directory (``shared``). Task 0 reads them all,
computes each task's step rate over a sliding window, takes each node's
median task rate, and compares it with the median of the *other* nodes
(leave-one-out, so a two-node job can name its slow half). A node whose rate
is below ``1 - threshold`` of that is a straggler until it recovers past
``1 - threshold / 2`` (hysteresis: no flapping on the edge).

``judge`` is pure (samples in, stragglers out) and tested from tables; the
``Stragglers`` class does the periodic I/O for the wrapper. A node named
slow is told so through ``stragglers.json``; its own task then samples its
GPUs (clocks, throttle reasons, temperature, power) at a low rate, so the
report can say *why*. A node that straggles again and again in one job is
an admin event (a syslog line and a Prometheus sample), never a drain:
rule 2, only bad hardware drains, and a slow node is not proven bad.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from gcm_checks.wrapper import shared

SAMPLES_KEPT = 120  # per task file; with a 10 s interval that is 20 minutes
DEFAULT_INTERVAL_S = 10.0
MIN_SAMPLES = 3
GPU_SAMPLE_EVERY_S = 60.0
REPEAT_EVENT = 2  # the 2nd episode of one node in one job is an admin event


@dataclass(frozen=True)
class TaskRate:
    node: str
    task: str
    rate: float  # steps per second over the window
    last: float  # wall time of the newest sample


def task_rate(samples: Sequence[Sequence[float]], now: float, window_s: float) -> Optional[float]:
    """Steps/s over the samples inside the window; None if too few to say."""
    pts = [(float(t), float(s)) for t, s in samples if now - float(t) <= window_s]
    if len(pts) < MIN_SAMPLES:
        return None
    (t0, s0), (t1, s1) = pts[0], pts[-1]
    if t1 - t0 < window_s / 4 or s1 < s0:
        return None
    return (s1 - s0) / (t1 - t0)


def judge(rates: Sequence[TaskRate], threshold: float, flagged: Mapping[str, float], now: float) -> List[dict]:
    """Stragglers among the tasks: ``[{"node","task","ratio","since"}]``.

    ``flagged`` is node -> since for the nodes named last time (hysteresis).
    Nodes are compared when there are at least two; with one node, tasks are.
    """
    by_node: Dict[str, List[TaskRate]] = {}
    for r in rates:
        by_node.setdefault(r.node, []).append(r)
    if len(by_node) >= 2:
        units = {n: (statistics.median(x.rate for x in rs), min(rs, key=lambda x: x.rate).task) for n, rs in by_node.items()}
        label = {n: n for n in units}
    else:
        units = {r.task: (r.rate, r.task) for r in rates}
        label = {r.task: r.node for r in rates}
    if len(units) < 2:
        return []
    out = []
    for key, (rate, task) in units.items():
        others = [v[0] for k, v in units.items() if k != key]
        ref = statistics.median(others)
        if ref <= 0:
            continue
        ratio = rate / ref
        name = label[key]
        was = name in flagged
        if ratio < 1.0 - threshold or (was and ratio < 1.0 - threshold / 2):
            out.append({"node": name, "task": task, "ratio": round(ratio, 3), "since": flagged.get(name, now),
                        "rate_per_s": round(rate, 4), "median_per_s": round(ref, 4)})
    return sorted(out, key=lambda d: d["ratio"])


class Stragglers:
    """Publish this task's samples; on task 0, judge everyone's."""

    def __init__(self, env: Mapping[str, str], cwd: str, *, threshold: float, window_s: float,
                 interval_s: float = DEFAULT_INTERVAL_S, gpu_sampler: Optional[Callable[[], dict]] = None,
                 summary: Optional[Callable[[], dict]] = None, event_sink: Optional[Callable[[dict], None]] = None) -> None:
        self.node = env.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0]
        self.task = env.get("SLURM_PROCID", "0") or "0"
        self.leader = self.task == "0"
        self.key = shared.job_key(env)
        self.threshold = threshold
        self.window_s = window_s
        self.interval_s = interval_s
        self.gpu_sampler = gpu_sampler
        self.summary = summary
        self.event_sink = event_sink or admin_event
        self.dir, self.summary_dir, self.problems = shared.open_for_job(env, cwd)
        self.samples: List[Tuple[float, float]] = []
        self._next = 0.0
        self._found: List[dict] = []
        self._flagged: Dict[str, float] = {}
        self._episodes: Dict[str, int] = {}
        self._events: List[dict] = []
        self._gpu: Optional[dict] = None
        self._gpu_next = 0.0
        self._gpus_by_node: Dict[str, dict] = {}
        self._seen: Dict[str, dict] = {}  # node -> its worst moment this run, for the report

    # -------------------------------------------------------------- status
    def current(self) -> List[dict]:
        out = []
        for s in self._found:
            d = dict(s)
            gpu = self._gpus_by_node.get(s["node"])
            if gpu:
                d["gpus"] = gpu
                why = explain(gpu)
                if why:
                    d["why"] = why
            out.append(d)
        return out

    def seen(self) -> List[dict]:
        """Every node named slow during the run (worst ratio, first since,
        last seen, why): the job's report needs them after the fact, when
        the tasks have ended and nobody is slow any more."""
        out = []
        for node, s in self._seen.items():
            d = dict(s)
            gpu = self._gpus_by_node.get(node)
            why = explain(gpu) if gpu else ""
            if why:
                d["why"] = why
            out.append(d)
        return sorted(out, key=lambda d: d["ratio"])

    def info(self) -> dict:
        return {"enabled": self.dir is not None, "leader": self.leader, "node": self.node, "task": self.task,
                "dir": self.dir.path if self.dir else None, "threshold": self.threshold,
                "window_s": self.window_s, "interval_s": self.interval_s, "problems": dict(self.problems),
                "admin_events": list(self._events)}

    # -------------------------------------------------------------- periodic
    def tick(self, snap: Any, mono: float, wall: float, done: Optional[float] = None) -> None:
        if mono < self._next:
            return
        self._next = mono + self.interval_s
        try:
            if self.dir is not None:
                self._publish(snap, wall, done)
                if self.leader:
                    self._judge(wall)
                else:
                    self._heed(wall)
            if self.leader and self.summary is not None:
                self._write_summary(self.summary())
        except (OSError, ValueError) as e:
            self.problems["io"] = f"{type(e).__name__}: {e}"[:300]

    def _publish(self, snap: Any, wall: float, done: Optional[float]) -> None:
        if done is None and snap.step is not None:
            done = float(snap.step)
        if done is not None and snap.steps_seen:
            if self.samples and done < self.samples[-1][1]:
                self.samples.clear()  # a restart of the counter: a new series
            self.samples.append((round(wall, 3), done))
            del self.samples[:-SAMPLES_KEPT]
        assert self.dir is not None
        self.dir.write_json(f"task-{self.task}.json", {
            "node": self.node, "task": self.task, "pid": os.getpid(), "updated": wall,
            "samples": self.samples, "gpus": self._gpu,
        })

    def _read_rates(self, wall: float) -> List[TaskRate]:
        assert self.dir is not None
        rates = []
        for name in self.dir.names("task-"):
            d = self.dir.read_json(name)
            if not d or not isinstance(d.get("samples"), list):
                continue
            node, task = str(d.get("node", "?"))[:64], str(d.get("task", "?"))[:16]
            if isinstance(d.get("gpus"), dict):
                self._gpus_by_node[node] = d["gpus"]
            # A task that stopped publishing is stalled or gone, not slow.
            if wall - float(d.get("updated") or 0) > 3 * self.interval_s + 5:
                continue
            try:
                r = task_rate([x for x in d["samples"] if isinstance(x, list) and len(x) == 2], wall, self.window_s)
            except (TypeError, ValueError):
                continue
            if r is not None:
                rates.append(TaskRate(node, task, r, float(d.get("updated") or 0)))
        return rates

    def _judge(self, wall: float) -> None:
        found = judge(self._read_rates(wall), self.threshold, self._flagged, wall)
        names = {s["node"] for s in found}
        for s in found:
            if s["node"] not in self._flagged:
                n = self._episodes[s["node"]] = self._episodes.get(s["node"], 0) + 1
                if n >= REPEAT_EVENT:
                    ev = {"node": s["node"], "episodes": n, "ratio": s["ratio"], "at": wall}
                    self._events.append(ev)
                    del self._events[:-20]
                    try:
                        self.event_sink(ev)
                    except Exception:  # noqa: BLE001 - telemetry never stops the job
                        pass
        self._flagged = {s["node"]: s["since"] for s in found}
        self._found = found
        for s in found:
            old = self._seen.get(s["node"])
            rec = {"node": s["node"], "task": s["task"], "ratio": min(s["ratio"], old["ratio"]) if old else s["ratio"],
                   "since": old["since"] if old else s["since"], "last_seen": wall,
                   "episodes": self._episodes.get(s["node"], 1)}
            self._seen[s["node"]] = rec
        assert self.dir is not None
        self.dir.write_json(shared.STRAGGLERS, {"updated": wall, "stragglers": found, "threshold": self.threshold})
        if self.node in names:
            self._sample_gpus(wall)

    def _heed(self, wall: float) -> None:
        """Am I named slow? Then look at my GPUs, at a low rate."""
        assert self.dir is not None
        d = self.dir.read_json(shared.STRAGGLERS) or {}
        slow = [s for s in d.get("stragglers") or () if isinstance(s, dict) and s.get("node") == self.node]
        self._found = slow
        if slow:
            self._sample_gpus(wall)

    def _sample_gpus(self, wall: float) -> None:
        if self.gpu_sampler is None or wall < self._gpu_next:
            return
        self._gpu_next = wall + GPU_SAMPLE_EVERY_S
        try:
            self._gpu = self.gpu_sampler()
        except Exception as e:  # noqa: BLE001 - no GPU answer is "we could not tell", nothing more
            self._gpu = {"error": f"{type(e).__name__}: {e}"[:200]}
        self._gpus_by_node[self.node] = self._gpu or {}

    def final(self, summary: dict) -> None:
        """The last word for the epilog's report (task 0 only)."""
        if self.leader:
            try:
                self._write_summary(compact(summary))
            except (OSError, ValueError) as e:
                self.problems["io"] = f"{type(e).__name__}: {e}"[:300]

    def _write_summary(self, data: dict) -> None:
        if self.summary_dir is None:
            return
        name = shared.summary_name(self.key)
        try:
            self.summary_dir.write_json(name, data, shared.SUMMARY_MAX_BYTES)
        except ValueError:  # too big for the report's reader: the curves go first
            self.summary_dir.write_json(name, compact(data, points=0), shared.SUMMARY_MAX_BYTES)

    def close(self) -> None:
        for d in {id(x): x for x in (self.dir, self.summary_dir) if x is not None}.values():
            d.close()


def compact(status: Mapping[str, Any], points: int = 200) -> dict:
    """The status for the job's report: history thinned to ``points`` per
    series, so it stays far below what the report's reader accepts."""
    out = dict(status)
    p = dict(out.get("progress") or {})
    hist = {}
    for k, v in (p.get("history") or {}).items():
        if isinstance(v, list) and points > 0:
            step = max(1, len(v) // points)
            hist[k] = v[::step][-points:] if step > 1 else v
    p["history"] = hist
    out["progress"] = p
    return out


def explain(gpus: Mapping[str, Any]) -> str:
    """``thermal slowdown on GPU 3 (91 C, 1110 MHz)``, from a GPU sample."""
    parts = []
    for g in gpus.get("gpus") or ():
        reasons = [r for r in g.get("throttle_reasons") or () if r not in ("gpu_idle", "applications_clocks_setting")]
        if not reasons:
            continue
        kind = "thermal slowdown" if any("thermal" in r for r in reasons) else (
            "power cap" if any("power" in r for r in reasons) else reasons[0].replace("_", " "))
        facts = [f"{g['temperature_c']} C" for _ in (0,) if g.get("temperature_c") is not None]
        facts += [f"{g['sm_clock_mhz']} MHz" for _ in (0,) if g.get("sm_clock_mhz") is not None]
        facts += [f"{g['power_w']:.0f} W" for _ in (0,) if isinstance(g.get("power_w"), (int, float))]
        parts.append(f"{kind} on GPU {g.get('index')}" + (f" ({', '.join(facts)})" if facts else ""))
    return "; ".join(parts[:4])


def admin_event(ev: Mapping[str, Any]) -> None:
    """A node that straggles repeatedly: one syslog line for the admins and a
    Prometheus sample where the node exports them. Never a drain."""
    line = (f"gcm-run: node {ev.get('node')} was a straggler {ev.get('episodes')} times in job "
            f"{os.environ.get('SLURM_JOB_ID', '?')} (now at {100 * float(ev.get('ratio', 1)):.0f}% of the median step rate)")
    try:
        import syslog

        syslog.openlog("gcm-run", 0, syslog.LOG_USER)
        syslog.syslog(syslog.LOG_WARNING, line)
    except Exception:  # noqa: BLE001
        pass
    textfile_dir = os.environ.get("GCM_RUN_METRICS_DIR")
    if textfile_dir:
        from gcm_checks.telemetry.model import Sample
        from gcm_checks.telemetry.prometheus import write

        labels = (("node", str(ev.get("node"))), ("job", os.environ.get("SLURM_JOB_ID", "")))
        try:
            write(textfile_dir, "gcm_run_straggler", [Sample("gcm_run_straggler_episodes", labels, float(ev.get("episodes", 0)))])
        except OSError:
            pass


def gpu_sampler_from_env(env: Mapping[str, str]) -> Optional[Callable[[], dict]]:
    """NVML through the gather layer (deadlines per call), or the simulated
    GPUs of ``GCM_RUN_SIMULATE`` (a scenario name or path); None without either."""
    sim = env.get("GCM_RUN_SIMULATE")
    if sim:
        from gcm_checks.sim import scenario
        from gcm_checks.sim.fake_nvml import FakeNvml

        data = scenario.load(sim)
        loader: Callable[[], Any] = lambda: FakeNvml(data)  # noqa: E731
    else:
        import importlib.util

        if importlib.util.find_spec("pynvml") is None:
            return None  # no NVML bindings: no "why", nothing else changes
        from gcm_checks.gather.nvml import load_pynvml

        loader = load_pynvml
    return lambda: sample_gpus(loader)


def sample_gpus(loader: Callable[[], Any], timeout_s: float = 2.0) -> dict:
    """Temperature and throttle reasons through the gather layer, then the
    SM clock and power draw, every NVML call under a deadline."""
    from gcm_checks.gather import nvml

    facts = nvml.gather(loader, timeout_s, total_s=4 * timeout_s)
    gpus = []
    for g in facts.gpus:
        gpus.append({"index": g.index, "temperature_c": g.temperature_c, "throttle_reasons": list(g.throttle_reasons),
                     "responsive": g.responsive})
    out: Dict[str, Any] = {"at": time.time(), "gpus": gpus}
    if facts.init_error is not None or facts.init_hang or facts.import_error:
        out["error"] = facts.import_error or ("nvmlInit hung" if facts.init_hang else f"nvmlInit error {facts.init_error}")
        return out
    _clocks_and_power(loader, [g for g in gpus if g["responsive"]], timeout_s)
    return out


def _clocks_and_power(loader: Callable[[], Any], gpus: List[dict], timeout_s: float) -> None:
    from gcm_checks.deadline import DeadlineExceeded, call_with_deadline

    try:
        nv = loader()
        call_with_deadline(nv.nvmlInit, timeout_s, "nvmlInit")
    except Exception:  # noqa: BLE001 - the gather pass already said what it could
        return
    hung = False
    for g in gpus[:16]:
        try:
            h = call_with_deadline(lambda i=g["index"]: nv.nvmlDeviceGetHandleByIndex(i), timeout_s, "handle")
            clock = getattr(nv, "nvmlDeviceGetClockInfo", None)
            if clock is not None:
                g["sm_clock_mhz"] = int(call_with_deadline(lambda: clock(h, getattr(nv, "NVML_CLOCK_SM", 1)), timeout_s, "clock"))
            power = getattr(nv, "nvmlDeviceGetPowerUsage", None)
            if power is not None:
                g["power_w"] = round(call_with_deadline(lambda: power(h), timeout_s, "power") / 1000.0, 1)
        except DeadlineExceeded:
            hung = True
            break
        except Exception:  # noqa: BLE001 - not supported on this GPU: leave the field out
            continue
    if not hung:
        try:
            call_with_deadline(nv.nvmlShutdown, 1.0, "nvmlShutdown")
        except Exception:  # noqa: BLE001
            pass


def from_wrapper(w: Any) -> Optional[Stragglers]:
    """Inside a Slurm job. With one task nobody is slow, but task 0 still
    leaves the job summary where the epilog's report finds it."""
    env = w.env
    if not env.get("SLURM_JOB_ID"):
        return None
    o = w.opts
    try:
        interval = float(env.get("GCM_RUN_STRAGGLER_INTERVAL", "") or DEFAULT_INTERVAL_S)
    except ValueError:
        interval = DEFAULT_INTERVAL_S
    sampler = o.nvml_sampler or gpu_sampler_from_env(env)
    return Stragglers(env, o.work_dir or os.getcwd(), threshold=o.straggler_threshold, window_s=o.straggler_window_s,
                      interval_s=interval, gpu_sampler=sampler, summary=lambda: compact(w.status_dict("running")))
