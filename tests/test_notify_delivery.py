"""Delivery against real servers: aiosmtpd (STARTTLS + AUTH) and the shared
webhook receiver (tests/http_receiver.py, on http.server).

Relay down: the epilog's exit status is unchanged and the outbox holds the
mail. Relay back: ``gcm-checks notify flush`` delivers it exactly once, with
the category and the evidence in the body.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from email import policy as email_policy

import pytest
import yaml

from gcm_checks import notify, proc, report, testing
from gcm_checks.report.model import JobInfo
from http_receiver import WebhookReceiver  # tests/http_receiver.py

aiosmtpd = pytest.importorskip("aiosmtpd")
from aiosmtpd.controller import Controller  # noqa: E402
from aiosmtpd.smtp import AuthResult  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLS = {
    "category": "gpu_hardware",
    "responsibility": "infrastructure",
    "confidence": 0.95,
    "rule": "xid.79",
    "evidence": [{"source": "kernel", "line_no": 3, "text": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}],
    "sentence": "GPU 3 on node1 fell off the bus; not your code.",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cert():
    d = tempfile.mkdtemp(prefix="gcm-cert-")
    crt, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    r = proc.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt, "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        timeout=60,
    )
    if not r.ok:
        pytest.skip(f"openssl: {r.describe()}")
    yield crt, key
    shutil.rmtree(d, ignore_errors=True)


class Relay:
    """A real SMTP server that demands STARTTLS and AUTH, like a campus relay."""

    def __init__(self, cert):
        import ssl

        self.port = free_port()
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(*cert)
        self.messages = []
        self.controller = None

    async def handle_DATA(self, server, session, envelope):
        self.messages.append({
            "tls": session.ssl is not None,
            "auth": session.authenticated,
            "rcpt": list(envelope.rcpt_tos),
            "msg": email.message_from_bytes(envelope.original_content or envelope.content, policy=email_policy.default),
        })
        return "250 OK"

    @staticmethod
    def auth(server, session, envelope, mechanism, auth_data):
        return AuthResult(success=(auth_data.login, auth_data.password) == (b"gcm", b"hunter2"))

    def start(self):
        self.controller = Controller(
            self, hostname="127.0.0.1", port=self.port, tls_context=self.ctx, require_starttls=True,
            auth_required=True, authenticator=self.auth,
        )
        self.controller.start()

    def stop(self):
        if self.controller:
            self.controller.stop()
            self.controller = None


@pytest.fixture
def relay(cert):
    r = Relay(cert)
    yield r
    r.stop()


@pytest.fixture
def hook():
    with WebhookReceiver() as h:
        yield h


@pytest.fixture
def base():
    d = tempfile.mkdtemp(prefix="gcm-notify-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def make_settings(base, relay=None, cert=None, hook=None, **notify_kw):
    channels = []
    if relay is not None:
        pw = os.path.join(base, "smtp.pass")
        with open(pw, "w") as f:
            f.write("hunter2\n")
        channels.append({"name": "email", "type": "smtp", "host": "127.0.0.1", "port": relay.port, "starttls": True,
                         "cafile": cert[0], "username": "gcm", "password_file": pw, "from": "gcm@cluster.example", "timeout_s": 5})
    if hook is not None:
        channels.append({"name": "siem", "type": "webhook", "url": hook.url + "/gcm", "headers": {"Authorization": "Bearer t"}, "timeout_s": 5})
        channels.append({"name": "chat", "type": "slack", "url": hook.url + "/slack", "timeout_s": 5})
    n = {"channels": channels, "email": {"domain_template": "{user}@uni.example"}, "handoff": "inline", "budget_s": 10.0, "backoff_base_s": 60.0}
    n.update(notify_kw)
    return {"report": {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"}, "notify": n}


def make_job(base, job_id="501", **kw):
    wd = os.path.join(base, "work")
    os.makedirs(wd, exist_ok=True)
    out = os.path.join(wd, f"slurm-{job_id}.out")
    with open(out, "w") as f:
        f.write("epoch 3 loss 1.23\nRuntimeError: CUDA error: unspecified launch failure <!channel>\n")
    d = dict(job_id=job_id, user="alice", uid=os.geteuid(), gid=os.getegid(), name="train", partition="gpu", cluster="c1",
             nodes=("node1",), start=1000.0, end=2000.0, exit_status="1:0", state="FAILED", work_dir=wd, stdout=out)
    d.update(kw)
    return JobInfo(**d)


EVIDENCE = {"xids": [{"code": 79, "gpu": "GPU 3", "name": "GPU has fallen off the bus"}], "drains": [{"reason": "gcm: xid 79 on GPU 3"}]}


def cli(base, settings, *args):
    cfg = os.path.join(base, "gcm.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump(settings, f)
    env = dict(os.environ, PYTHONPATH=REPO)
    return proc.run([sys.executable, "-m", "gcm_checks", "notify", "--config", cfg, *args], timeout=60, env=env)


def test_mail_delivered_over_starttls_with_auth(base, relay, cert):
    relay.start()
    s = make_settings(base, relay, cert)
    out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=10, evidence=EVIDENCE, classification=CLS)
    assert out["delivery"]["sent"] == ["c1/501/email"], out
    [m] = relay.messages
    assert m["tls"] and m["auth"] and m["rcpt"] == ["alice@uni.example"]
    msg = m["msg"]
    assert msg["Subject"] == "[gcm] job 501 (train) FAILED: gpu_hardware (not your code)"
    text = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    for body in (text, html):
        assert "gpu_hardware" in body and "GPU has fallen off the bus" in body and "unspecified launch failure" in body
    assert "&lt;!channel&gt;" in html
    assert msg["Message-ID"] == notify.sinks.message_id("c1/501/email")
    # Mail conventions (issue 17, 5): machine-generated, a real domain, a charset.
    assert msg["Auto-Submitted"] == "auto-generated"
    domain = msg["Message-ID"].strip("<>").split("@", 1)[1]
    assert "." in domain and domain != "gcm-checks"
    assert msg.get_body(("html",)).get_content_charset() == "utf-8" and '<meta charset="utf-8">' in html
    assert msg.get_body(("plain",)).get_content_charset() == "utf-8"


def test_message_id_domain_is_configurable(base, relay, cert):
    relay.start()
    s = make_settings(base, relay, cert)
    s["notify"]["channels"][0]["message_id_domain"] = "mail.cluster.example"
    report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=10, evidence=EVIDENCE, classification=CLS)
    [m] = relay.messages
    assert m["msg"]["Message-ID"].endswith("@mail.cluster.example>")


def test_relay_down_then_flush_delivers_exactly_once(base, relay, cert):
    s = make_settings(base, relay, cert)
    # Relay down: the epilog-side call returns normally, the mail waits.
    out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=5, evidence=EVIDENCE, classification=CLS)
    assert out["assembled"] and "error" not in out
    assert out["delivery"]["sent"] == [] and len(out["delivery"]["failed"]) == 1
    assert notify.outbox_for(testing.settings(s)).counts() == {"pending": 1, "sent": 0, "dead": 0}
    # A flush while it is still down: exit status 0, still pending, not lost.
    r = cli(base, s, "flush", "--now", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pending"] == 1
    assert cli(base, s, "flush", "--now", "--strict").returncode == 1
    # Relay back.
    relay.start()
    r = cli(base, s, "flush", "--now", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sent"] == ["c1/501/email"]
    r = cli(base, s, "flush", "--now", "--json")
    assert json.loads(r.stdout)["sent"] == []
    assert len(relay.messages) == 1
    body = relay.messages[0]["msg"].get_body(("plain",)).get_content()
    assert "Cause:       gpu_hardware" in body and "kernel:3: NVRM: Xid" in body
    shown = cli(base, s, "show", "--state", "sent", "--json")
    assert [x["key"] for x in json.loads(shown.stdout)] == ["c1/501/email"]


EPILOG = r"""
import sys
from gcm_checks.report import assemble_and_notify
from gcm_checks.report.model import JobInfo
from gcm_checks.result import failed, verdict, Status
from gcm_checks import testing
import json
settings, job = testing.settings(json.loads(sys.argv[1])), JobInfo.from_dict(json.loads(sys.argv[2]))
results = [failed("gpu.xid", "XID 79 on GPU 3")]
code = 1 if verdict(results) is Status.FAIL else 0   # decided before notification
assemble_and_notify(job, settings, node="node1", budget_s=3, evidence={"results": results}, classification=None)
sys.exit(code)
"""


def test_exit_status_does_not_depend_on_relay(base, relay, cert):
    s = make_settings(base, relay, cert)
    env = dict(os.environ, PYTHONPATH=REPO)
    codes = []
    for i, up in enumerate((False, True)):
        if up:
            relay.start()
        job = make_job(base, job_id=str(600 + i))
        r = proc.run([sys.executable, "-c", EPILOG, json.dumps(s), json.dumps(job.to_dict())], timeout=60, env=env)
        codes.append(r.returncode)
    assert codes == [1, 1]
    assert len(relay.messages) == 1  # only the second job's mail, sent inline
    assert notify.outbox_for(testing.settings(s)).counts()["pending"] == 1  # the first waits for a flush


def test_webhooks_generic_and_slack(base, hook):
    s = make_settings(base, hook=hook)
    out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=10, evidence=EVIDENCE, classification=CLS)
    assert sorted(out["delivery"]["sent"]) == ["c1/501/chat", "c1/501/siem"]
    by_path = {r["path"]: r for r in hook.requests}
    generic = by_path["/gcm"]
    assert generic["headers"]["authorization"] == "Bearer t"
    assert generic["headers"]["idempotency-key"] == "c1/501/siem"
    body = generic["body"]
    assert (body["schema"], body["version"]) == ("gcm-checks/notification", 1)
    assert body["report"]["classification"]["category"] == "gpu_hardware"
    assert "text" not in body["report"]["logs"][0]  # bounded: paths, no log text
    slack = by_path["/slack"]["body"]
    assert set(slack) == {"text"} and "gpu_hardware" in slack["text"]
    assert "<!channel>" not in slack["text"]


def test_webhook_error_retried_then_delivered_once(base, hook):
    hook.status = 500
    s = make_settings(base, hook=hook)
    out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=10, evidence=EVIDENCE, classification=CLS)
    assert {f["error"] for f in out["delivery"]["failed"]} == {"siem: HTTP 500 Internal Server Error", "chat: HTTP 500 Internal Server Error"}
    hook.status = 200
    n_before = len(hook.requests)
    assert sorted(notify.flush(testing.settings(s), force=True).sent) == ["c1/501/chat", "c1/501/siem"]
    assert notify.flush(testing.settings(s), force=True).sent == []
    assert len(hook.requests) == n_before + 2


@pytest.mark.parametrize(
    "job_kw,expected",
    [
        ({}, {"c1/501/siem": "queued", "c1/501/chat": "queued"}),
        ({"extra": "gcm:notify=never"}, {"c1/501/siem": "not wanted (policy)", "c1/501/chat": "not wanted (policy)"}),
        ({"state": "COMPLETED", "exit_status": "0:0"}, {"c1/501/siem": "not wanted (policy)", "c1/501/chat": "not wanted (policy)"}),
        ({"state": "COMPLETED", "exit_status": "0:0", "comment": "gcm:notify=always"}, {"c1/501/siem": "queued", "c1/501/chat": "queued"}),
    ],
)
def test_policy_decides_what_is_queued(base, hook, job_kw, expected):
    s = make_settings(base, hook=hook, handoff="queue")
    out = report.assemble_and_notify(make_job(base, **job_kw), testing.settings(s), node="node1", budget_s=5, evidence={})
    assert out["queued"] == expected
    assert hook.requests == []  # handoff=queue: nothing sent by the epilog


def test_admin_channel_ignores_user_opt_out(base, hook):
    s = make_settings(base, hook=hook, handoff="queue")
    s["notify"]["channels"][0]["when"] = "always"
    out = report.assemble_and_notify(make_job(base, extra="gcm:notify=never", state="COMPLETED", exit_status="0:0"), testing.settings(s),
                                     node="node1", budget_s=5, evidence={})
    assert out["queued"] == {"c1/501/siem": "queued", "c1/501/chat": "not wanted (policy)"}


def test_no_address_means_no_mail_but_a_report(base, relay, cert):
    s = make_settings(base, relay, cert)
    s["notify"]["email"] = {}
    out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=5, evidence={})
    assert out["queued"] == {"c1/501/email": "no e-mail address for user"}
    assert os.path.exists(out["paths"]["report.json"])


class Blackhole:
    """Accepts TCP connections and never says a word (a wedged relay)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


def test_detached_handoff_leaves_epilog_and_keeps_mail(base, cert):
    hole = Blackhole()
    try:
        relay = type("R", (), {"port": hole.port})()
        s = make_settings(base, relay, cert, handoff="detach", budget_s=2.0)
        s["notify"]["channels"][0]["timeout_s"] = 1.0
        out = report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=1, evidence={}, classification=CLS)
        pid = out["delivery"]["detached_pid"]
        assert isinstance(pid, int) and pid > 0
        # The epilog is back while the detached sender still waits on the relay.
        assert notify.outbox_for(testing.settings(s)).counts()["pending"] == 1
        for _ in range(300):  # it ends within its own budget (+ SIGALRM backstop)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("detached sender outlived its budget")
        [item] = list(notify.outbox_for(testing.settings(s)).items("pending"))
        assert item["attempts"] == 1 and item["last_error"]
    finally:
        hole.close()


def test_cli_report_and_show(base, hook):
    s = make_settings(base, hook=hook, handoff="queue")
    report.assemble_and_notify(make_job(base), testing.settings(s), node="node1", budget_s=5, evidence=EVIDENCE, classification=CLS)
    r = cli(base, s, "report", "501")
    assert r.returncode == 0 and "gpu_hardware" in r.stdout
    r = cli(base, s, "report", "501", "--format", "json")
    assert json.loads(r.stdout)["job"]["job_id"] == "501"
    assert cli(base, s, "report", "999").returncode == 1
    r = cli(base, s, "show", "--json")
    assert sorted(x["key"] for x in json.loads(r.stdout)) == ["c1/501/chat", "c1/501/siem"]
    assert cli(base, s, "show").returncode == 0
