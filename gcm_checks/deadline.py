"""Run a Python call under a deadline and abandon it if it does not return.

NVML blocks forever on a wedged GPU, inside C code we cannot interrupt. The
only safe move is to run the call in a daemon thread, stop waiting at the
deadline, and let the process exit without joining it (the CLI ends with
``os._exit`` when a call was abandoned). A hung GPU is a failed GPU, not a hung
node (rule 1).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Generic, Optional, TypeVar

T = TypeVar("T")

_abandoned_lock = threading.Lock()
_abandoned: list = []


class DeadlineExceeded(Exception):
    def __init__(self, what: str, timeout: float):
        super().__init__(f"{what}: no answer within {timeout:.1f}s")
        self.what = what
        self.timeout = timeout


@dataclass
class _Box(Generic[T]):
    value: Optional[T] = None
    error: Optional[BaseException] = None


def call_with_deadline(fn: Callable[[], T], timeout: float, what: str = "call") -> T:
    """Return fn() or raise DeadlineExceeded; re-raise what fn raised."""
    box: _Box = _Box()
    done = threading.Event()

    def target() -> None:
        try:
            box.value = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box.error = e
        finally:
            done.set()

    t = threading.Thread(target=target, name=f"deadline:{what}", daemon=True)
    t.start()
    if not done.wait(max(0.0, timeout)):
        with _abandoned_lock:
            _abandoned.append(what)
        raise DeadlineExceeded(what, timeout)
    if box.error is not None:
        raise box.error
    return box.value  # type: ignore[return-value]


def abandoned_calls() -> list:
    """Calls that never returned; the CLI must not wait for them at exit."""
    with _abandoned_lock:
        return list(_abandoned)


def run_all(jobs: "dict[str, Callable[[], Any]]", budget: float) -> "dict[str, tuple]":
    """Run named callables concurrently; return name -> (ok, value_or_error).

    Jobs still running at the end of the budget are abandoned and reported as
    (False, DeadlineExceeded).
    """
    import time

    boxes: dict = {}
    events: dict = {}
    for name, fn in jobs.items():
        box: _Box = _Box()
        ev = threading.Event()

        def target(fn=fn, box=box, ev=ev) -> None:
            try:
                box.value = fn()
            except BaseException as e:  # noqa: BLE001
                box.error = e
            finally:
                ev.set()

        threading.Thread(target=target, name=f"job:{name}", daemon=True).start()
        boxes[name], events[name] = box, ev
    end = time.monotonic() + budget
    out: dict = {}
    for name, ev in events.items():
        if ev.wait(max(0.0, end - time.monotonic())):
            box = boxes[name]
            out[name] = (box.error is None, box.value if box.error is None else box.error)
        else:
            with _abandoned_lock:
                _abandoned.append(name)
            out[name] = (False, DeadlineExceeded(name, budget))
    return out
