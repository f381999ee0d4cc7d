"""Who gets told, when: policy per cluster/partition/user/job, and recipients.

Resolution, most specific last: default < cluster < partition < user < job.
A job chooses with a token in ``--extra`` or ``--comment``::

    sbatch --extra="gcm:notify=always" ...
    sbatch --comment="nightly run gcm:notify=never" ...

Values: ``always``, ``never``, ``on_failure`` (aliases: ``failure``,
``fail``, ``on-failure``; ``on``/``yes`` = always, ``off``/``no``/``none`` =
never). ``--extra`` wins over ``--comment`` because tools (gcm-run included)
rewrite the comment while a job runs. Admins can forbid job overrides with
``notify.policy.allow_job_override: false``. Admin channels (those with
``when:``) ignore all of this.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional

from gcm_checks.notify.config import Channel
from gcm_checks.report.model import JobInfo

if TYPE_CHECKING:
    from gcm_checks.config.types import Notify

_TOKEN = re.compile(r"(?:^|[\s,;])gcm:notify=([A-Za-z_-]+)", re.IGNORECASE)
_ALIASES = {
    "always": "always", "on": "always", "yes": "always",
    "never": "never", "off": "never", "no": "never", "none": "never",
    "on_failure": "on_failure", "on-failure": "on_failure", "failure": "on_failure", "fail": "on_failure",
}


def job_choice(text: str) -> Optional[str]:
    """The policy a job asked for in one string, or None. The last token wins."""
    found = _TOKEN.findall(text or "")
    for word in reversed(found):
        p = _ALIASES.get(word.lower())
        if p:
            return p
    return None


def resolve_policy(ns: "Notify", job: JobInfo) -> str:
    pol = ns.policy
    policy = pol.default
    for table, key in ((pol.clusters, job.cluster), (pol.partitions, job.partition), (pol.users, job.user)):
        for who, p in table.items():
            if str(who) == key:  # YAML may read a numeric name as an int
                policy = p
    if pol.allow_job_override:
        asked = job_choice(job.extra) or job_choice(job.comment)
        if asked:
            policy = asked
    return policy


def should_send(policy: str, failed: bool) -> bool:
    return policy == "always" or (policy == "on_failure" and failed)


def channel_wants(ns: "Notify", channel: Channel, job: JobInfo, failed: bool) -> bool:
    policy = channel.when or resolve_policy(ns, job)
    return should_send(policy, failed)


_ADDR = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$")


def recipients(ns: "Notify", job: JobInfo) -> List[str]:
    """E-mail addresses for the job's user; [] when none can be found.

    Every candidate must look like one plain address: a --mail-user with a
    newline or a comma must not add headers or recipients.
    """
    candidates: List[Any] = []
    email = ns.email
    if email.use_mail_user and job.mail_user:
        candidates.append(job.mail_user)
    for user, addr in email.addresses.items():
        if str(user) == job.user:
            candidates.append(addr)
    if email.domain_template and job.user:
        candidates.append(email.domain_template.format(user=job.user))
    for c in candidates:
        c = str(c).strip()
        if _ADDR.match(c):
            return [c]
    return []
