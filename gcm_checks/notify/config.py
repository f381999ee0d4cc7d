"""The ``notify:`` config section as typed, frozen data."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, Mapping, Optional, Tuple

POLICIES = ("on_failure", "always", "never")
CHANNEL_TYPES = ("smtp", "webhook", "slack")
HANDOFFS = ("inline", "detach", "queue")


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


@dataclass(frozen=True)
class NotifySettings:
    channels: Tuple[Channel, ...] = ()
    default_policy: str = "on_failure"
    cluster_policy: Tuple[Tuple[str, str], ...] = ()
    partition_policy: Tuple[Tuple[str, str], ...] = ()
    user_policy: Tuple[Tuple[str, str], ...] = ()
    allow_job_override: bool = True
    # Recipients for e-mail: the job's --mail-user, then the map, then the template.
    use_mail_user: bool = True
    addresses: Tuple[Tuple[str, str], ...] = ()
    domain_template: str = ""  # e.g. "{user}@example.org"
    # Delivery
    handoff: str = "detach"  # inline | detach | queue
    budget_s: float = 10.0  # the most the epilog (or a detached flush) spends sending
    backoff_base_s: float = 60.0
    backoff_max_s: float = 3600.0
    give_up_after_s: float = 7 * 86400.0  # then the message moves to outbox/dead (kept)
    outbox_dir: str = ""  # "" = report.outbox_dir
    # Admin alerts (notify/admin.py; today the mass-drain brake): the channels
    # they go to (default: the admin channels, those with ``when:``) and, for
    # e-mail, the operators' addresses - never a job user's.
    admin_channels: Tuple[str, ...] = ()
    admin_to: Tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, m: Optional[Mapping[str, Any]]) -> "NotifySettings":
        m = dict(m or {})
        kw: Dict[str, Any] = {}
        pol = m.pop("policy", None) or {}
        if isinstance(pol, str):
            pol = {"default": pol}
        for k, v in pol.items():
            if k == "default":
                _check_policy("notify.policy.default", v)
                kw["default_policy"] = v
            elif k in ("clusters", "partitions", "users"):
                for who, p in (v or {}).items():
                    _check_policy(f"notify.policy.{k}.{who}", p)
                kw[f"{k[:-1]}_policy"] = tuple((str(a), str(b)) for a, b in (v or {}).items())
            elif k == "allow_job_override":
                kw["allow_job_override"] = bool(v)
            else:
                raise ValueError(f"notify.policy: unknown key {k!r}")
        email = m.pop("email", None) or {}
        for k, v in email.items():
            if k == "addresses":
                kw["addresses"] = tuple((str(a), str(b)) for a, b in (v or {}).items())
            elif k in ("use_mail_user", "domain_template"):
                kw[k] = v
            else:
                raise ValueError(f"notify.email: unknown key {k!r}")
        kw["channels"] = tuple(Channel.from_mapping(c) for c in (m.pop("channels", None) or ()))
        admin = m.pop("admin", None) or {}
        for k, v in admin.items():
            if k not in ("channels", "to"):
                raise ValueError(f"notify.admin: unknown key {k!r} (channels, to)")
            vals = [v] if isinstance(v, str) else list(v or ())
            kw[f"admin_{k}"] = tuple(str(x) for x in vals)
        known = {c.name for c in kw["channels"]}
        for name in kw.get("admin_channels", ()):
            if name not in known:
                raise ValueError(f"notify.admin.channels: {name!r} is not a channel in notify.channels")
        names = {f.name for f in fields(cls)}
        for k, v in m.items():
            if k not in names:
                raise ValueError(f"notify: unknown key {k!r}")
            kw[k] = v
        if kw.get("handoff", "detach") not in HANDOFFS:
            raise ValueError(f"notify.handoff: one of {', '.join(HANDOFFS)}")
        return cls(**kw)

    @classmethod
    def coerce(cls, settings: Any) -> "NotifySettings":
        if isinstance(settings, cls):
            return settings
        if settings is None:
            return cls()
        from gcm_checks.report.model import _section

        sub = _section(settings, "notify")
        if isinstance(sub, cls):
            return sub
        return cls.from_mapping(sub)

    def channel(self, name: str) -> Optional[Channel]:
        return next((c for c in self.channels if c.name == name), None)

    def admin_routes(self) -> Tuple[Channel, ...]:
        """Where admin alerts go: ``notify.admin.channels`` when set, else
        every admin channel (a channel with ``when:``)."""
        if self.admin_channels:
            return tuple(c for c in self.channels if c.name in self.admin_channels)
        return tuple(c for c in self.channels if c.when)


def _check_policy(where: str, v: Any) -> None:
    if v not in POLICIES:
        raise ValueError(f"{where}: one of {', '.join(POLICIES)}, got {v!r}")

