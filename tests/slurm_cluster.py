"""A real Slurm 22.05 test cluster, booted from the Debian packages under a tmp dir.

munged, MariaDB, slurmdbd, slurmctld and two slurmd (node1, node2 on one host)
run as children of the test process with everything - config, sockets, pid
files, logs, spool, database - under one directory. No system config is read
or written, every daemon binds loopback (except slurmctld, which always listens
on 0.0.0.0; use ``.ci/netns-run`` for strict isolation) and every daemon is
stopped by the PID we started, never by name. Facts this relies on are in
../shared/notes/slurm-22.05-facts.md (munge socket in three places, o+x socket
dir, 127.0.0.1 node addresses with per-node ports, reverse glob order...).

Use from a test (fixtures in tests/conftest.py)::

    def test_x(slurm_cluster):                       # session scoped, ~2 s boot
        c = slurm_cluster
        c.write_gcm_config({"simulate": "healthy"})  # DIR/etc/gcm-checks.yaml (found via SLURM_CONF)
        job = c.sbatch("#!/bin/bash\\nhostname\\n", nodelist="node1", job_name="t")
        c.wait_job(job, {"COMPLETED"}, timeout=30)
        c.node("node2")                              # dict of `scontrol show node -o node2`
        c.scontrol("update", "nodename=node2", "state=resume")   # ProcResult, raises on failure
        c.sacct(job, fields="JobID,JobName,State,ExitCode")     # list of dicts, placeholder rows waited out
        c.sacct(job, fields="JobID,State,NodeList", duplicates=True)  # every run of a requeued job
        c.sinfo_reasons()                            # {node: reason} from `sinfo -R`
        c.sdiag_rpc_counts()                         # {"REQUEST_UPDATE_NODE": n, ...}; c.sdiag_reset()
        c.env                                        # environment with SLURM_CONF for any other client
        c.reset_nodes()                              # resume every drained node, wait for idle

Helpers raise ``ClusterError`` with the tail of the relevant daemon log.
``SLURM_MISSING`` is the skip reason when the packages are not installed.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from typing import Dict, Iterable, List, Optional, Sequence

from gcm_checks.proc import ProcResult, run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODES = ("node1", "node2")
MARKER = "GCM_TEST_CLUSTER"  # set in every daemon's env; slurmstepd inherits it

_BINARIES = {
    "munged": "/usr/sbin/munged",
    "mariadbd": "/usr/sbin/mariadbd",
    "mariadb-install-db": "/usr/bin/mariadb-install-db",
    "mariadb": "/usr/bin/mariadb",
    "slurmdbd": "/usr/sbin/slurmdbd",
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
    "scontrol": "/usr/bin/scontrol",
    "sbatch": "/usr/bin/sbatch",
    "sacct": "/usr/bin/sacct",
    "sinfo": "/usr/bin/sinfo",
    "sdiag": "/usr/bin/sdiag",
    "squeue": "/usr/bin/squeue",
    "scancel": "/usr/bin/scancel",
}


def _missing() -> Optional[str]:
    lost = [p for p in _BINARIES.values() if not os.access(p, os.X_OK)]
    if lost:
        return (
            "real Slurm test cluster needs the Debian packages "
            "(apt-get install slurmctld slurmd slurm-client slurmdbd munge mariadb-server); missing: " + ", ".join(lost)
        )
    if os.geteuid() != 0:
        return "real Slurm test cluster needs root (slurmd runs jobs as their users)"
    return None


SLURM_MISSING = _missing()


class ClusterError(RuntimeError):
    pass


def _free_port_block(n: int, start: int = 16800, stop: int = 30000) -> int:
    """First port P such that P..P+n-1 are all free on loopback and 0.0.0.0."""
    for base in range(start, stop, 17):
        ok = True
        for p in range(base, base + n):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("0.0.0.0", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise ClusterError("no free port block for the test cluster")


class SlurmCluster:
    def __init__(self, root: str, prolog: Optional[str] = None, epilog: Optional[str] = None, extra_conf: Sequence[str] = (),
                 nodes: Sequence[str] = NODES):
        self.root = os.path.abspath(root)
        # More slurmd on this one host when a test needs several nodes failing together.
        self.nodes = tuple(nodes)
        self.etc = os.path.join(self.root, "etc")
        self.rundir = os.path.join(self.root, "run")
        self.logdir = os.path.join(self.root, "log")
        self.jobdir = os.path.join(self.root, "jobs")
        self.state_dir = os.path.join(self.root, "gcm-state")
        self.conf = os.path.join(self.etc, "slurm.conf")
        self.gcm_config_path = os.path.join(self.etc, "gcm-checks.yaml")
        self.prolog = prolog
        self.epilog = epilog
        self.extra_conf = list(extra_conf)
        self.health_program: Optional[str] = None
        self.health_interval = 0
        self.hostname = socket.gethostname()
        base = _free_port_block(4 + len(self.nodes))
        self.ctld_port = base
        self.dbd_port = base + 1
        self.db_port = base + 2
        self.node_ports = {n: base + 3 + i for i, n in enumerate(self.nodes)}
        self.procs: Dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.env.pop("SLURM_JOB_ID", None)
        self._daemon_env = dict(self.env, **{MARKER: self.root})

    # ------------------------------------------------------------------ boot
    def start(self) -> "SlurmCluster":
        if SLURM_MISSING:
            raise ClusterError(SLURM_MISSING)
        for d in (self.etc, self.rundir, self.logdir, self.jobdir, self.state_dir, os.path.join(self.root, "munge"), os.path.join(self.root, "spool")):
            os.makedirs(d, exist_ok=True)
        # munged refuses a socket dir that others cannot traverse (facts #2).
        for d in (self.root, self.rundir, self.jobdir, self.state_dir, self.logdir):
            os.chmod(d, 0o755)
        try:
            self._start_munge()
            self._start_mariadb()
            self._write_confs()
            self.write_gcm_config()
            # slurmdbd has no -f: it reads dirname($SLURM_CONF)/slurmdbd.conf.
            self._start_daemon("slurmdbd", [_BINARIES["slurmdbd"], "-D"])
            self._wait_port(self.dbd_port, "slurmdbd", 20)
            self._start_daemon("slurmctld", [_BINARIES["slurmctld"], "-D", "-i", "-f", self.conf])
            self._wait_port(self.ctld_port, "slurmctld", 20)
            for n in self.nodes:
                self._start_daemon(f"slurmd-{n}", [_BINARIES["slurmd"], "-D", "-N", n, "-f", self.conf])
            self.wait_nodes_idle(self.nodes, timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_daemon(self, name: str, argv: List[str]) -> None:
        log = open(os.path.join(self.logdir, f"{name}.out"), "ab")
        self.procs[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self._daemon_env, cwd=self.root, start_new_session=True
        )
        log.close()

    def _wait_port(self, port: int, name: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self.procs.get(name)
            if p is not None and p.poll() is not None:
                raise ClusterError(f"{name} exited with {p.returncode}:\n{self.log_tail(name)}")
            with socket.socket() as s:
                s.settimeout(0.2)
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise ClusterError(f"{name} not listening on {port} after {timeout}s:\n{self.log_tail(name)}")

    def _start_munge(self) -> None:
        key = os.path.join(self.root, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(secrets.token_bytes(1024))
        os.chmod(key, 0o600)
        os.chmod(os.path.join(self.root, "munge"), 0o700)
        self.munge_socket = os.path.join(self.rundir, "munge.sock")
        self._start_daemon(
            "munged",
            [
                _BINARIES["munged"], "-F", "--force",
                f"--key-file={key}",
                f"--socket={self.munge_socket}",
                f"--pid-file={os.path.join(self.rundir, 'munged.pid')}",
                f"--log-file={os.path.join(self.logdir, 'munged.log')}",
                f"--seed-file={os.path.join(self.root, 'munge', 'munged.seed')}",
            ],
        )
        end = time.monotonic() + 10
        while not os.path.exists(self.munge_socket):
            if self.procs["munged"].poll() is not None or time.monotonic() > end:
                raise ClusterError(f"munged did not start:\n{self.log_tail('munged')}")
            time.sleep(0.02)

    def _start_mariadb(self) -> None:
        data = os.path.join(self.root, "mysql")
        self.db_socket = os.path.join(self.rundir, "mysql.sock")
        if not os.path.isdir(os.path.join(data, "mysql")):
            res = run(
                [_BINARIES["mariadb-install-db"], "--no-defaults", f"--datadir={data}", "--user=root", "--auth-root-authentication-method=socket", "--skip-test-db"],
                timeout=120,
                env=self.env,
            )
            if not res.ok:
                raise ClusterError(f"mariadb-install-db: {res.describe()}\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
        self._start_daemon(
            "mariadbd",
            [
                _BINARIES["mariadbd"], "--no-defaults", f"--datadir={data}", f"--socket={self.db_socket}",
                f"--pid-file={os.path.join(self.rundir, 'mariadbd.pid')}", "--bind-address=127.0.0.1", f"--port={self.db_port}",
                "--skip-name-resolve", "--user=root", "--innodb-buffer-pool-size=512M", "--innodb-log-file-size=32M",
                "--innodb-lock-wait-timeout=900", f"--log-error={os.path.join(self.logdir, 'mariadbd.log')}",
            ],
        )
        self._wait_port(self.db_port, "mariadbd", 60)
        # The TCP port can open a moment before the unix socket exists (seen
        # on a loaded 2-core host with a second cluster booting).
        end = time.monotonic() + 30
        while not os.path.exists(self.db_socket) and time.monotonic() < end:
            time.sleep(0.05)
        sql = (
            "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'gcmtest';"
            "GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
        )
        for _ in range(5):
            res = run([_BINARIES["mariadb"], "--no-defaults", f"--socket={self.db_socket}", "-uroot", "-e", sql], timeout=30, env=self.env)
            if res.ok:
                break
            time.sleep(1)
        if not res.ok:
            raise ClusterError(f"mariadb user setup: {res.describe()}")

    def _write_confs(self) -> None:
        r = self.root
        cpus = os.cpu_count() or 1
        auth = f"socket={self.munge_socket}"
        with open(os.path.join(self.etc, "slurmdbd.conf"), "w") as f:
            f.write(
                "\n".join(
                    [
                        "AuthType=auth/munge",
                        f"AuthInfo={auth}",
                        "DbdHost=localhost",
                        "DbdAddr=127.0.0.1",
                        f"DbdPort={self.dbd_port}",
                        "SlurmUser=root",
                        f"PidFile={self.rundir}/slurmdbd.pid",
                        f"LogFile={self.logdir}/slurmdbd.log",
                        "StorageType=accounting_storage/mysql",
                        "StorageHost=127.0.0.1",
                        f"StoragePort={self.db_port}",
                        "StorageUser=slurm",
                        "StoragePass=gcmtest",
                        "StorageLoc=slurm_acct_db",
                        "CommunicationParameters=NoInAddrAny",
                        "",
                    ]
                )
            )
        os.chmod(os.path.join(self.etc, "slurmdbd.conf"), 0o600)  # slurmdbd insists
        noop = os.path.join(r, "noop.d")
        os.makedirs(noop, exist_ok=True)
        # An empty prolog.d/ drains the node (facts #5): keep a no-op in it.
        script = os.path.join(noop, "00-noop")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o755)
        os.chmod(noop, 0o755)
        lines = [
            "ClusterName=gcmtest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={self.ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            # cred_expire sets how long a requeued job waits before it may run
            # again (default 120 s, facts #11); keep tests fast.
            f"AuthInfo={auth},cred_expire=10",
            "CryptoType=crypto/munge",
            f"StateSaveLocation={r}/spool/ctld",
            f"SlurmdSpoolDir={r}/spool/d-%n",
            f"SlurmctldPidFile={self.rundir}/slurmctld.pid",
            f"SlurmdPidFile={self.rundir}/slurmd-%n.pid",
            f"SlurmctldLogFile={self.logdir}/slurmctld.log",
            f"SlurmdLogFile={self.logdir}/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,nohold_on_prolog_fail",
            "ReturnToService=2",
            "MailProg=/bin/true",
            "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={self.dbd_port}",
            # Without this slurmctld dies: "no TRES from it" (facts #1).
            f"AccountingStoragePass={self.munge_socket}",
            "AccountingStoreFlags=job_comment",
            "CommunicationParameters=NoInAddrAny",
            "PrologFlags=Alloc",
            "PrologEpilogTimeout=60",
            "SlurmdTimeout=300",
            "InactiveLimit=0",
            "MinJobAge=300",
            "KillWait=5",
            f"Prolog={self.prolog or noop + '/*'}",
            f"Epilog={self.epilog or noop + '/*'}",
        ]
        if self.health_program:
            lines += [f"HealthCheckProgram={self.health_program}", f"HealthCheckInterval={self.health_interval}", "HealthCheckNodeState=ANY"]
        lines += self.extra_conf
        for n in self.nodes:
            lines.append(f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={self.hostname} Port={self.node_ports[n]} CPUs={cpus} RealMemory=1000 State=UNKNOWN")
        lines.append(f"PartitionName=debug Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(self.etc, 0o755)

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """scancel, TERM every daemon we started (KILL after 15 s), then leftovers by marker."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            run([_BINARIES["scancel"], "--full", "-u", "root"], timeout=10, env=self.env)
        order = [f"slurmd-{n}" for n in self.nodes] + ["slurmctld", "slurmdbd", "mariadbd", "munged"]
        for name in order:
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
            except ProcessLookupError:
                pass
        self._kill_marked()

    def _kill_marked(self) -> None:
        # slurmstepd and job scripts carry the marker through slurmd's env.
        me = os.getpid()
        needle = f"{MARKER}={self.root}".encode()
        for pid_s in os.listdir("/proc"):
            if not pid_s.isdigit() or int(pid_s) == me:
                continue
            try:
                with open(f"/proc/{pid_s}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if needle in env:
                try:
                    os.kill(int(pid_s), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    # ------------------------------------------------------------- clients
    def _cmd(self, name: str, *args: str, timeout: float = 30, check: bool = True) -> ProcResult:
        res = run([_BINARIES[name], *args], timeout=timeout, env=self.env, cwd=self.jobdir)
        if check and not res.ok:
            raise ClusterError(f"{name} {' '.join(args)}: {res.describe()}\n{res.stdout[-1000:]}{res.stderr[-1000:]}")
        return res

    def scontrol(self, *args: str, timeout: float = 30, check: bool = True) -> ProcResult:
        return self._cmd("scontrol", *args, timeout=timeout, check=check)

    def node(self, name: str) -> Dict[str, str]:
        """``scontrol show node -o`` as key -> value (same parser as gcm_checks.slurm)."""
        from gcm_checks.slurm.parse import parse_key_values

        return parse_key_values(self.scontrol("show", "node", "-o", name).stdout)

    def job(self, job_id: str) -> Dict[str, str]:
        from gcm_checks.slurm.parse import parse_key_values

        return parse_key_values(self.scontrol("show", "job", "-o", str(job_id)).stdout)

    def sbatch(self, script: str, **opts: object) -> str:
        """Submit ``script``; opts become ``--key=value`` (underscores -> dashes, True -> flag)."""
        path = os.path.join(self.jobdir, f"job-{time.monotonic_ns()}.sh")
        with open(path, "w") as f:
            f.write(script if script.startswith("#!") else "#!/bin/bash\n" + script)
        os.chmod(path, 0o755)
        args = ["--parsable", f"--chdir={self.jobdir}", f"--output={self.jobdir}/%j.out"]
        for k, v in opts.items():
            flag = "--" + k.replace("_", "-")
            if v is True:
                args.append(flag)
            elif v is not None and v is not False:
                args.append(f"{flag}={v}")
        out = self._cmd("sbatch", *args, path).stdout.strip()
        return out.split(";")[0]

    def job_state(self, job_id: str) -> str:
        try:
            return self.job(job_id).get("JobState", "")
        except ClusterError:
            # Past MinJobAge the job leaves slurmctld; ask the database.
            rows = self.sacct(job_id, fields="JobID,State", wait_real=False)
            return rows[0]["State"].split()[0] if rows else ""

    def wait_job(self, job_id: str, states: Iterable[str], timeout: float = 60) -> Dict[str, str]:
        """Wait until the job's state is in ``states``; return ``scontrol show job``."""
        want = set(states)
        end = time.monotonic() + timeout
        last = ""
        while time.monotonic() < end:
            last = self.job_state(job_id)
            if last in want:
                try:
                    return self.job(job_id)
                except ClusterError:
                    return {"JobId": str(job_id), "JobState": last}
            time.sleep(0.2)
        raise ClusterError(f"job {job_id} still {last!r} after {timeout}s (want {sorted(want)}):\n{self.log_tail('slurmctld')}")

    def sacct(self, job_id: Optional[str] = None, fields: str = "JobID,JobName,State,ExitCode,NodeList", wait_real: bool = True, timeout: float = 15, duplicates: bool = False) -> List[Dict[str, str]]:
        """Rows of ``sacct --parsable2``; waits out the ~1 s placeholder row (facts #9).

        ``duplicates`` adds ``--duplicates``: every run of a requeued job.
        """
        names = fields.split(",")
        if wait_real and "JobName" not in names:
            names.append("JobName")
        args = ["--parsable2", "--noheader", "-o", ",".join(names)] + (["--duplicates"] if duplicates else [])
        args += ["-j", str(job_id)] if job_id else ["-a"]
        end = time.monotonic() + timeout
        while True:
            out = self._cmd("sacct", *args).stdout
            rows = [dict(zip(names, ln.split("|"))) for ln in out.splitlines() if ln.strip()]
            placeholder = any(r.get("JobName") == "allocation" for r in rows)
            if not wait_real or (rows and not placeholder) or time.monotonic() > end:
                return rows
            time.sleep(0.2)

    def sinfo_reasons(self) -> Dict[str, str]:
        """``sinfo -R``: node -> reason (one row per node)."""
        out = self._cmd("sinfo", "-R", "-N", "--noheader", "-o", "%N|%E").stdout
        rows = {}
        for ln in out.splitlines():
            if "|" in ln:
                node, reason = ln.split("|", 1)
                rows[node.strip()] = reason.strip()
        return rows

    def sdiag_reset(self) -> None:
        self._cmd("sdiag", "--reset")

    def sdiag_rpc_counts(self) -> Dict[str, int]:
        """Message type -> count from ``sdiag`` (REQUEST_UPDATE_NODE, ...)."""
        out = self._cmd("sdiag").stdout
        counts: Dict[str, int] = {}
        section = out.split("Remote Procedure Call statistics by message type", 1)[-1]
        section = section.split("Remote Procedure Call statistics by user", 1)[0]
        for m in re.finditer(r"^\s*([A-Z_]+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M):
            counts[m.group(1)] = int(m.group(2))
        return counts

    def base_gcm_config(self) -> dict:
        """Keys every test config gets: state and log under the cluster dir, healthy simulation."""
        return {
            "simulate": "healthy",
            "state_dir": self.state_dir,
            "log_path": os.path.join(self.logdir, "gcm-checks.log"),
            # Job reports and the outbox stay under the cluster dir too.
            "report": {"spool_dir": os.path.join(self.root, "gcm-spool"), "report_dir": os.path.join(self.root, "gcm-reports"),
                       "outbox_dir": os.path.join(self.root, "gcm-outbox")},
        }

    def write_gcm_config(self, data: Optional[dict] = None) -> str:
        """Write DIR/etc/gcm-checks.yaml (base_gcm_config() updated with ``data``).

        Prologs find it via dirname($SLURM_CONF): slurmd passes them no
        environment of ours (facts #7).
        """
        import yaml

        data = dict(self.base_gcm_config(), **(data or {}))
        tmp = self.gcm_config_path + ".tmp"
        with open(tmp, "w") as f:
            yaml.safe_dump(data, f, sort_keys=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.gcm_config_path)
        return self.gcm_config_path

    def node_states(self) -> Dict[str, str]:
        out = self._cmd("sinfo", "-N", "--noheader", "-o", "%N %t").stdout
        return dict(ln.split() for ln in out.splitlines() if len(ln.split()) == 2)

    def wait_nodes_idle(self, nodes: Optional[Iterable[str]] = None, timeout: float = 30) -> None:
        """Wait for plain ``idle`` (``idle*`` right after a resume is not ready, facts #10)."""
        want = set(self.nodes if nodes is None else nodes)
        end = time.monotonic() + timeout
        states: Dict[str, str] = {}
        while time.monotonic() < end:
            try:
                states = self.node_states()
            except ClusterError:
                states = {}
            if all(states.get(n) == "idle" for n in want):
                return
            time.sleep(0.1)
        raise ClusterError(f"nodes not idle after {timeout}s: {states}\n{self.log_tail('slurmctld')}")

    def reset_nodes(self, timeout: float = 30) -> None:
        """Cancel jobs, resume drained nodes, clear features, Extra and gcm state; wait for idle."""
        self._cmd("scancel", "--full", "-u", "root", check=False)
        for n in self.nodes:
            info = self.node(n)
            if "DRAIN" in info.get("State", "") or "DOWN" in info.get("State", ""):
                self.scontrol("update", f"nodename={n}", "state=resume", check=False)
            if info.get("Weight", "1") != "1":
                self.scontrol("update", f"nodename={n}", "weight=1", check=False)
            if info.get("AvailableFeatures", "(null)") != "(null)" or info.get("Extra"):
                self.scontrol("update", f"nodename={n}", "AvailableFeatures=", "ActiveFeatures=", "Extra=", check=False)
        shutil.rmtree(self.state_dir, ignore_errors=True)
        os.makedirs(self.state_dir, mode=0o755, exist_ok=True)
        self.write_gcm_config()
        self.wait_nodes_idle(self.nodes, timeout)

    def use_health_check(self, program: Optional[str], interval: int = 2, timeout: float = 30) -> None:
        """Set HealthCheckProgram (None: none) and reconfigure.

        slurmd runs it with only SLURMD_NODENAME in the environment, so a
        program for this cluster must set SLURM_CONF itself: ``health_wrapper``
        writes one that does.
        """
        if (program, interval) == (self.health_program, self.health_interval):
            return
        self.health_program, self.health_interval = program, interval
        self._reconfigure(timeout)

    def health_wrapper(self, target: str) -> str:
        """A HealthCheckProgram for this cluster: sets SLURM_CONF, execs ``target``."""
        path = os.path.join(self.root, "health-check")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nSLURM_CONF={self.conf}\nexport SLURM_CONF\nexec {target}\n")
        os.chmod(path, 0o755)
        return path

    def use_scripts(self, prolog: Optional[str] = None, epilog: Optional[str] = None, timeout: float = 30) -> None:
        """Point Prolog=/Epilog= at new globs (None: the no-op) and reconfigure.

        Reconfigure also drops scontrol-set node features (facts #8).
        """
        if (prolog, epilog) == (self.prolog, self.epilog):
            return
        self.prolog, self.epilog = prolog, epilog
        self._reconfigure(timeout)

    def _reconfigure(self, timeout: float = 30) -> None:
        self._write_confs()
        marks = {n: self._log_size(f"slurmd-{n}.log") for n in self.nodes}
        self.scontrol("reconfigure")
        # slurmd re-reads slurm.conf asynchronously; a job started before
        # that would still run the old scripts.
        pending = set(self.nodes)
        for attempt in range(2):
            end = time.monotonic() + timeout
            while pending and time.monotonic() < end:
                for n in list(pending):
                    if "reconfigur" in self._log_since(f"slurmd-{n}.log", marks[n]).lower():
                        pending.discard(n)
                time.sleep(0.05)
            if not pending or attempt:
                break
            # Under a loaded CI run slurmctld's reconfigure RPC can miss a
            # slurmd that is busy completing a job; SIGHUP is slurmd's own
            # "re-read slurm.conf", the same effect without the RPC.
            for n in pending:
                p = self.procs.get(f"slurmd-{n}")
                if p is not None and p.poll() is None:
                    p.send_signal(signal.SIGHUP)
            self.scontrol("reconfigure")  # and ask once more the ordinary way
        if pending:
            raise ClusterError(f"slurmd did not reconfigure: {sorted(pending)}")

    def _log_size(self, name: str) -> int:
        try:
            return os.path.getsize(os.path.join(self.logdir, name))
        except OSError:
            return 0

    def _log_since(self, name: str, offset: int) -> str:
        try:
            with open(os.path.join(self.logdir, name), "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, name: str, lines: int = 30) -> str:
        out = []
        for fn in (f"{name}.log", f"{name}.out"):
            p = os.path.join(self.logdir, fn)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out.append(f"--- {fn}\n" + "".join(f.readlines()[-lines:]))
        return "\n".join(out)


def repo_script_glob(kind: str) -> Optional[str]:
    """``<repo>/prolog.d/*`` if it holds at least one executable script, else None."""
    d = os.path.join(REPO, f"{kind}.d")
    if not os.path.isdir(d):
        return None
    files = [f for f in os.listdir(d) if not f.startswith(".") and os.access(os.path.join(d, f), os.X_OK) and os.path.isfile(os.path.join(d, f))]
    return os.path.join(d, "*") if files else None


def remove_tree(root: str) -> None:
    shutil.rmtree(root, ignore_errors=True)
