"""One notification channel (``notify.channels[]``) as typed, frozen data.

The rest of ``notify:`` is the typed section ``gcm_checks.config.types.Notify``;
its defaults live in the schema. A channel's own defaults (port 25, ...) are
the fields below.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, Mapping, Tuple

from gcm_checks.config.schema import POLICIES

CHANNEL_TYPES = ("smtp", "webhook", "slack")


@dataclass(frozen=True)
class Channel:
    name: str
    type: str  # smtp | webhook | slack
    # smtp
    host: str = "localhost"
    port: int = 25
    starttls: bool = False
    ssl: bool = False  # implicit TLS (port 465)
    tls_verify: bool = True
    cafile: str = ""
    username: str = ""
    password: str = ""
    password_file: str = ""  # preferred: keeps the secret out of the config file
    sender: str = "gcm-checks@localhost"
    message_id_domain: str = ""  # "" = this node's FQDN
    # webhook / slack
    url: str = ""
    headers: Tuple[Tuple[str, str], ...] = ()
    # both
    timeout_s: float = 10.0
    # When set, this is an admin channel: it follows this policy and ignores
    # the user's/job's choice. When empty, the resolved user policy applies.
    when: str = ""

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> "Channel":
        names = {f.name for f in fields(cls)}
        kw: Dict[str, Any] = {}
        for k, v in m.items():
            k = "sender" if k == "from" else k
            if k not in names:
                raise ValueError(f"notify.channels[{m.get('name', '?')}]: unknown key {k!r}")
            kw[k] = v
        if "name" not in kw or "type" not in kw:
            raise ValueError("notify.channels[]: 'name' and 'type' are required")
        if kw["type"] not in CHANNEL_TYPES:
            raise ValueError(f"notify.channels[{kw['name']}].type: one of {', '.join(CHANNEL_TYPES)}")
        if kw.get("when") and kw["when"] not in POLICIES:
            raise ValueError(f"notify.channels[{kw['name']}].when: one of {', '.join(POLICIES)}")
        if isinstance(kw.get("headers"), Mapping):
            kw["headers"] = tuple((str(a), str(b)) for a, b in kw["headers"].items())
        return cls(**kw)

    def secret(self) -> str:
        if self.password_file:
            with open(self.password_file, "r", encoding="utf-8") as f:
                return f.read().strip()
        return self.password


def parse_channels(items: Any) -> Tuple[Channel, ...]:
    """``notify.channels`` as Channel objects; ValueError names the bad entry.
    Called once per run, by ``settings.notify.channels``."""
    return tuple(Channel.from_mapping(c) for c in (items or ()))
