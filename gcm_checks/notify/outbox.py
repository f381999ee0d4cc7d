"""A durable outbox: nothing lost, nothing sent twice.

One JSON file per (job, channel), named from its idempotency key::

    pending/<name>.json   waiting (first try, or retry after backoff)
    sent/<name>.json      delivered; its existence blocks any re-send
    dead/<name>.json      gave up after give_up_after_s (kept for admins)
    quarantine/<name>.*   an item that is not ours: empty, junk, oversized,
                          forged (its key does not match its name, or not
                          root's when we are root); set aside, never sent,
                          and the rest of the outbox is still delivered

An item may carry ``not_before`` (epoch): it is held until then - the
refinement pass holds a job's first message for sacct's final word
(accounting/handoff.py) - and no flush sends it earlier, not even ``--now``,
which only skips the retry backoff (``next_attempt_at``).

Enqueueing is idempotent: an item whose key is already pending, sent or
dead is not added again. Delivery takes an exclusive ``flock`` on the
pending file, so two flushes (an epilog and a cron'd ``notify flush``)
never send the same item; a flush that finds it locked skips it.

The one window left: the receiver accepted the message and we crashed
before writing ``sent/``. The next flush sends again, with the same
Message-ID / Idempotency-Key, so receivers that honour them drop it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from gcm_checks.jsonfile import write_atomic as atomic_write

STATES = ("pending", "sent", "dead")


def file_name(key: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)[:80].lstrip(".")
    return f"{safe}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"


def backoff_s(attempts: int, base: float, cap: float) -> float:
    """Delay before retry number ``attempts`` (1 = after the first failure)."""
    return float(min(cap, base * (2 ** max(0, attempts - 1))))


@dataclass
class FlushSummary:
    sent: List[str] = field(default_factory=list)
    failed: List[Dict[str, str]] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)  # not due, held, locked, or out of budget
    held: List[Dict[str, Any]] = field(default_factory=list)  # {key, until, why}: not_before not reached
    dead: List[str] = field(default_factory=list)
    assembled: List[str] = field(default_factory=list)  # overdue reports assembled first
    quarantined: List[Dict[str, str]] = field(default_factory=list)  # {name, why}
    refused: str = ""  # the whole outbox was not used (unsafe directory)

    def to_dict(self) -> Dict[str, Any]:
        return {"sent": self.sent, "failed": self.failed, "skipped": self.skipped, "held": self.held, "dead": self.dead,
                "assembled": self.assembled, "quarantined": self.quarantined, "refused": self.refused}


MAX_ITEM_BYTES = 4 * 1024 * 1024


class BadItem(ValueError):
    """An outbox file that is not a well-formed item we wrote."""


def check_item(raw: bytes, name: str, owner_uid: int) -> Dict[str, Any]:
    """The item in ``raw`` (file ``name``), or BadItem saying why not."""
    from gcm_checks.state import MAX_JSON_DEPTH, json_depth

    if os.geteuid() == 0 and owner_uid != 0:
        raise BadItem(f"owned by uid {owner_uid}, not root: forged")
    if not raw.strip():
        raise BadItem("empty")
    if len(raw) > MAX_ITEM_BYTES:
        raise BadItem(f"larger than {MAX_ITEM_BYTES} bytes")
    text = raw.decode("utf-8", "replace")
    if json_depth(text) > MAX_JSON_DEPTH:
        raise BadItem("JSON nested too deep")
    try:
        item = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadItem(f"not JSON ({type(e).__name__})") from None
    if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not isinstance(item.get("channel"), str) \
            or not isinstance(item.get("payload"), dict):
        raise BadItem("not an outbox item (key, channel, payload)")
    if file_name(item["key"]) != name:
        raise BadItem("its key does not match its file name: forged or renamed")
    for k in ("attempts", "next_attempt_at", "created_at", "not_before"):
        v = item.get(k, 0)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v or v in (float("inf"), float("-inf")):
            raise BadItem(f"{k} is not a finite number")
    return item


class Outbox:
    def __init__(self, root: str):
        self.root = root

    def _path(self, state: str, key: str) -> str:
        return os.path.join(self.root, state, file_name(key))

    def state_of(self, key: str) -> Optional[str]:
        for st in ("sent", "pending", "dead"):
            if os.path.exists(self._path(st, key)):
                return st
        return None

    def enqueue(self, key: str, channel: str, payload: Mapping[str, Any], *, job_key: str = "", now: Optional[float] = None,
                not_before: Optional[float] = None) -> bool:
        """Add an item unless its key is known. True when newly added.
        ``not_before``: hold it until then (see the module doc)."""
        if self.state_of(key):
            return False
        now = time.time() if now is None else now
        item = {
            "key": key, "channel": channel, "job_key": job_key, "created_at": now,
            "attempts": 0, "next_attempt_at": now, "last_error": "", "payload": dict(payload),
        }
        if not_before is not None:
            item["not_before"] = float(not_before)
        d = os.path.join(self.root, "pending")
        os.makedirs(d, mode=0o700, exist_ok=True)
        tmp = atomic_write(os.path.join(d, "." + file_name(key) + f".{os.getpid()}.new"), json.dumps(item).encode(), mode=0o600)
        try:
            # link() never replaces: if a racing enqueue won, keep theirs.
            os.link(tmp, self._path("pending", key))
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def items(self, state: str = "pending") -> Iterator[Dict[str, Any]]:
        d = os.path.join(self.root, state)
        try:
            names = sorted(os.listdir(d))
        except FileNotFoundError:
            return
        for n in names:
            if n.startswith(".") or not n.endswith(".json"):
                continue
            try:
                with open(os.path.join(d, n), "rb") as f:
                    raw = f.read(MAX_ITEM_BYTES + 1)
                    uid = os.fstat(f.fileno()).st_uid
                yield check_item(raw, n, uid)
            except (OSError, BadItem):
                continue

    def next_due(self) -> Optional[float]:
        """When the earliest pending item may be tried: its retry time or its
        hold (``not_before``), whichever is later. None when nothing is pending."""
        due = [max(float(i.get("next_attempt_at") or 0), float(i.get("not_before") or 0)) for i in self.items("pending")]
        return min(due) if due else None

    def counts(self) -> Dict[str, int]:
        return {st: sum(1 for _ in self.items(st)) for st in STATES}

    def flush(
        self,
        send: Callable[[Dict[str, Any], float], None],
        *,
        budget_s: float,
        backoff_base_s: float = 60.0,
        backoff_max_s: float = 3600.0,
        give_up_after_s: float = 7 * 86400.0,
        only_keys: Optional[List[str]] = None,
        force: bool = False,
        now: Optional[Callable[[], float]] = None,
    ) -> FlushSummary:
        """Try every due item once. ``send(item, timeout)`` raises on failure.

        ``force`` ignores backoff (``notify flush --now``). Never raises for a
        failed delivery: the item stays pending with its error and next time.
        """
        clock = now or time.time
        end = time.monotonic() + budget_s
        summary = FlushSummary()
        from gcm_checks.state import unsafe_dir

        problem = next((p for p in (unsafe_dir(os.path.join(self.root, sub)) for sub in ("", *STATES)) if p), None)
        if problem:
            # Whoever can write here can plant an item that we would mail.
            summary.refused = f"outbox refused: {problem}; fix: chown root, chmod go-w"
            return summary
        d = os.path.join(self.root, "pending")
        try:
            names = sorted(os.listdir(d))
        except FileNotFoundError:
            return summary
        wanted = {file_name(k) for k in only_keys} if only_keys is not None else None
        for n in names:
            if n.startswith(".") or not n.endswith(".json") or (wanted is not None and n not in wanted):
                continue
            left = end - time.monotonic()
            if left <= 0.05:
                summary.skipped.append(n)
                continue
            try:
                self._flush_one(os.path.join(d, n), send, left, backoff_base_s, backoff_max_s, give_up_after_s, force, clock, summary)
            except BadItem as e:
                self._quarantine(os.path.join(d, n), str(e), summary)
            except (OSError, ValueError, KeyError, TypeError) as e:  # one bad item never stops the others
                summary.failed.append({"key": n, "error": f"{type(e).__name__}: {e}"[:500]})
        return summary

    def _quarantine(self, path: str, why: str, summary: FlushSummary) -> None:
        name = os.path.basename(path)
        qdir = os.path.join(self.root, "quarantine")
        try:
            os.makedirs(qdir, mode=0o700, exist_ok=True)
            os.rename(path, os.path.join(qdir, f"{name}.{int(time.time())}"))
        except OSError:
            try:
                os.unlink(path)  # cannot keep it aside: never send it either
            except OSError:
                pass
        summary.quarantined.append({"name": name, "why": why})

    def _flush_one(self, path, send, left, base, cap, give_up, force, clock, summary) -> None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            return  # another flush finished it
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                summary.skipped.append(os.path.basename(path))
                return
            try:
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    return  # replaced (rescheduled) or finished under us
            except FileNotFoundError:
                return
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read(MAX_ITEM_BYTES + 1)
            item = check_item(raw, os.path.basename(path), os.fstat(fd).st_uid)
            key = item["key"]
            if os.path.exists(self._path("sent", key)):
                os.unlink(path)  # sent by someone who crashed before unlinking
                return
            t = clock()
            hold = float(item.get("not_before") or 0)
            if hold > t:  # held (not_before): even --now waits for it
                summary.skipped.append(key)
                summary.held.append({"key": key, "until": hold, "why": str(item.get("held_for") or "")})
                return
            if not force and float(item.get("next_attempt_at", 0)) > t:
                summary.skipped.append(key)
                return
            try:
                send(item, left)
            except Exception as e:  # noqa: BLE001 - any sink failure is a retry, never a crash
                item["attempts"] = int(item.get("attempts", 0)) + 1
                item["last_error"] = str(e)[:500]
                item["last_attempt_at"] = t
                item["next_attempt_at"] = t + backoff_s(item["attempts"], base, cap)
                if t - float(item.get("created_at", t)) >= give_up:
                    self._move(item, path, "dead")
                    summary.dead.append(key)
                else:
                    atomic_write(path, json.dumps(item).encode(), mode=0o600)
                    summary.failed.append({"key": key, "error": item["last_error"]})
                return
            item["attempts"] = int(item.get("attempts", 0)) + 1
            item["sent_at"] = clock()
            item["last_error"] = ""
            self._move(item, path, "sent")
            summary.sent.append(key)
        finally:
            os.close(fd)

    def _move(self, item: Dict[str, Any], path: str, state: str) -> None:
        # Record the new state first, then drop the pending file: a crash in
        # between leaves both, and flush resolves that (sent wins).
        dest = self._path(state, item["key"])
        os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
        atomic_write(dest, json.dumps(item).encode(), mode=0o600)
        os.unlink(path)

    def rewrite(self, key: str, update: Callable[[Dict[str, Any]], bool]) -> bool:
        """Change one pending item in place: ``update(item)`` edits the dict
        and returns whether to keep the edit. Follows the flush's lock
        discipline: flock the file, then replace it atomically (a flush holding
        the old inode sees the replacement and skips it). False when a flush
        holds it, it is gone or unreadable, or ``update`` declined."""
        path = self._path("pending", key)
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # gone (sent meanwhile), or not a plain file
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            with os.fdopen(os.dup(fd), "rb") as f:
                item = json.load(f)
            if not update(item):
                return False
            atomic_write(path, json.dumps(item).encode(), mode=0o600)
            return True
        except (OSError, ValueError):
            return False
        finally:
            os.close(fd)

    def prune_sent(self, older_than_s: float, now: Optional[float] = None) -> int:
        """Forget sent records older than ``older_than_s``. By then no epilog
        or sweep can enqueue the same key again (its spool dir is gone too)."""
        now = time.time() if now is None else now
        d = os.path.join(self.root, "sent")
        n = 0
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return 0
        for name in names:
            p = os.path.join(d, name)
            try:
                if now - os.stat(p).st_mtime >= older_than_s:
                    os.unlink(p)
                    n += 1
            except OSError:
                continue
        return n

    def retry_dead(self, key: Optional[str] = None) -> int:
        """Move dead items (or one) back to pending, due now."""
        n = 0
        for item in list(self.items("dead")):
            if key and item["key"] != key:
                continue
            item["next_attempt_at"] = 0
            item["created_at"] = time.time()
            os.makedirs(os.path.join(self.root, "pending"), mode=0o700, exist_ok=True)
            atomic_write(self._path("pending", item["key"]), json.dumps(item).encode(), mode=0o600)
            os.unlink(self._path("dead", item["key"]))
            n += 1
        return n
