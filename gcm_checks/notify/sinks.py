"""Sinks: deliver one outbox item over SMTP, a JSON webhook or a Slack hook.

A sink gets an already rendered item and either returns (delivered) or
raises ``SendError``. It never retries and never touches the outbox: the
outbox decides about retries, so one failing sink never stops another
(STYLE.md practice 8). Each carries its idempotency key to the receiver
(Message-ID / ``Idempotency-Key``) so a receiver can drop the rare duplicate
of a crash between "sent" and "recorded as sent".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Dict, Mapping

from gcm_checks.notify.config import Channel


class SendError(Exception):
    pass


def message_id(key: str, domain: str = "") -> str:
    """RFC 5322 Message-ID, stable per idempotency key (a resend is recognisably
    the same message), on a real domain: the configured one, else this node's
    FQDN (socket.getfqdn may ask DNS: the sender runs under a deadline)."""
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{domain or _fqdn()}>"


def _fqdn() -> str:
    import socket

    name = socket.getfqdn() or socket.gethostname() or "localhost"
    return name if "." in name else f"{name}.localdomain"


def send_smtp(channel: Channel, item: Mapping[str, Any], timeout: float) -> None:
    import smtplib
    import ssl
    from email.message import EmailMessage
    from email.utils import formatdate

    p = item["payload"]
    to = list(p.get("to") or [])
    if not to:
        raise SendError("no recipient")
    from email import policy

    # RFC 5322 allows 998-character lines; folding a subject at 78 made
    # Python put the whole value on a continuation line (" [gcm] ...").
    msg = EmailMessage(policy=policy.SMTP.clone(max_line_length=998))
    msg["From"] = channel.sender
    msg["To"] = ", ".join(to)
    msg["Subject"] = p.get("subject", "gcm-checks job report")
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = message_id(item["key"], channel.message_id_domain)
    # RFC 3834: machine-generated; vacation responders and ticket systems
    # must not answer it (nor loop with it).
    msg["Auto-Submitted"] = "auto-generated"
    msg["X-Auto-Response-Suppress"] = "All"
    msg["X-GCM-Idempotency-Key"] = item["key"]
    msg.set_content(p.get("text", ""), charset="utf-8")
    if p.get("html"):
        msg.add_alternative(p["html"], subtype="html", charset="utf-8")
    ctx = ssl.create_default_context(cafile=channel.cafile or None)
    if not channel.tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        if channel.ssl:
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(channel.host, channel.port, timeout=timeout, context=ctx)
        else:
            smtp = smtplib.SMTP(channel.host, channel.port, timeout=timeout)
        try:
            smtp.ehlo()
            if channel.starttls and not channel.ssl:
                smtp.starttls(context=ctx)
                smtp.ehlo()
            if channel.username:
                smtp.login(channel.username, channel.secret())
            refused = smtp.send_message(msg)
            if refused:
                raise SendError(f"recipients refused: {refused}")
        finally:
            try:
                smtp.quit()
            except Exception:  # noqa: BLE001 - the mail is already accepted
                pass
    except SendError:
        raise
    except (OSError, smtplib.SMTPException, ssl.SSLError) as e:
        raise SendError(f"smtp {channel.host}:{channel.port}: {type(e).__name__}: {e}") from None


def _post_json(channel: Channel, body: Mapping[str, Any], key: str, timeout: float) -> None:
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Idempotency-Key": key, "User-Agent": "gcm-checks"}
    headers.update(dict(channel.headers))
    req = urllib.request.Request(channel.url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - URL from admin config
            status = resp.status
            resp.read(4096)
    except urllib.error.HTTPError as e:
        raise SendError(f"{channel.name}: HTTP {e.code} {e.reason}") from None
    except (OSError, ValueError) as e:
        raise SendError(f"{channel.name}: {type(e).__name__}: {e}") from None
    if not 200 <= status < 300:
        raise SendError(f"{channel.name}: HTTP {status}")


def send_webhook(channel: Channel, item: Mapping[str, Any], timeout: float) -> None:
    _post_json(channel, item["payload"]["body"], item["key"], timeout)


def send_slack(channel: Channel, item: Mapping[str, Any], timeout: float) -> None:
    _post_json(channel, item["payload"]["body"], item["key"], timeout)


SINKS: Dict[str, Callable[[Channel, Mapping[str, Any], float], None]] = {
    "smtp": send_smtp,
    "webhook": send_webhook,
    "slack": send_slack,
}


def slack_escape(text: str) -> str:
    # Slack's mrkdwn treats &, < and > as control characters
    # (api.slack.com/reference/surfaces/formatting#escaping); a log line with
    # "<!channel>" must not ping a whole channel.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
