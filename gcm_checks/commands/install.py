"""``gcm-checks install`` / ``uninstall``: put the Slurm entry scripts and the
config in place beside slurm.conf, and take them away in the safe order.

install --slurm-conf PATH [--prefix DIR]
  * writes ``DIR/prolog.d/50-gcm-checks``, ``DIR/epilog.d/50-gcm-checks`` and
    ``DIR/gcm-checks-health`` (DIR defaults to slurm.conf's directory) from
    the scripts shipped with gcm-checks (``prolog.d/``, ``epilog.d/``,
    ``bin/``: one source of truth), with this installation's binary and config
    path written into them: slurmd gives a HealthCheckProgram no SLURM_CONF,
    so the health script must not have to guess where the config is;
  * writes ``gcm-checks.yaml`` beside slurm.conf with ``report_only: true``
    for the first rollout, unless one exists (it is never overwritten);
  * refuses (changing nothing) when the interpreter of this virtualenv is not
    runnable by every user (a venv made from a root-only pyenv Python), when
    a path is not a plain absolute path, or when prolog.d/ holds a
    non-executable file (slurmd fails every prolog for it);
  * never leaves an empty prolog.d/ (an empty glob directory drains every
    node): a directory it created is removed again if writing fails;
  * prints the slurm.conf lines. It never edits slurm.conf.

uninstall --slurm-conf PATH [--prefix DIR]
  * refuses while slurm.conf still names the installed scripts: remove those
    lines and run ``scontrol reconfigure`` first;
  * then removes the scripts; a prolog.d/ or epilog.d/ that would be left
    empty gets a no-op script instead (slurmd may still hold the old
    configuration); the config is kept unless ``--remove-config``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SCRIPT_NAME = "50-gcm-checks"
HEALTH_NAME = "gcm-checks-health"
CONFIG_NAME = "gcm-checks.yaml"
MANIFEST = ".gcm-checks-install.json"
NOOP_NAME = "00-noop"
NOOP = "#!/bin/sh\n# Keeps this directory non-empty: slurmd fails every job on an empty Prolog/Epilog glob.\nexit 0\n"
# Paths written into shell scripts: plain absolute paths only, so no quoting
# question can arise (a space or a '$' in a root-run script is a hazard).
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/+@:,=-]*$")
MARK_BEGIN = "# >>> written by gcm-checks install: this installation's paths >>>"
MARK_END = "# <<< gcm-checks install <<<"
FIRST_CONFIG = """\
# gcm-checks configuration, installed by `gcm-checks install`.
# First rollout: report only. Nothing is drained, resumed or requeued and no
# user is mailed; the log (log_path) says what would have happened
# (grep would_drain). Set report_only: false once the would-drain lines are
# right (docs/slurm.md, "Safe rollout"). Every key: `gcm-checks config show`.
report_only: true
"""


class InstallError(Exception):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slurm-conf", required=True, metavar="PATH", help="this cluster's slurm.conf")
    parser.add_argument("--prefix", metavar="DIR", help="where prolog.d/, epilog.d/ and gcm-checks-health go "
                        "(default: slurm.conf's directory)")
    parser.add_argument("--bin", metavar="PATH", help="the gcm-checks binary the scripts run (default: this one)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    parser.add_argument("--force", action="store_true", help="install despite interpreter permission problems; "
                        "uninstall scripts without the install marker")
    parser.add_argument("--remove-config", action="store_true", help="uninstall: also remove the config file")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--config", metavar="PATH", help="the config the scripts use, written with report_only: true "
                        "if absent (default: gcm-checks.yaml beside slurm.conf)")


# --------------------------------------------------------------------------
# Where things are


def template_dir() -> Path:
    """The shipped entry scripts (links to the repository's prolog.d/,
    epilog.d/ and bin/ files, followed when the package is built)."""
    return Path(__file__).resolve().parent.parent / "data" / "entry"


def default_bin() -> str:
    # The venv's own bin/ (sys.executable is the venv's python link: do not
    # resolve it, the venv directory is what the scripts must name).
    cand = Path(sys.executable).parent / "gcm-checks"
    return str(cand) if cand.exists() else str(Path(sys.argv[0]).absolute())


def targets(prefix: Path) -> Dict[str, Path]:
    return {"prolog": prefix / "prolog.d" / SCRIPT_NAME, "epilog": prefix / "epilog.d" / SCRIPT_NAME,
            "health": prefix / HEALTH_NAME}


def slurm_conf_lines(prefix: Path) -> List[str]:
    t = targets(prefix)
    return [f"Prolog={t['prolog'].parent}/*", f"Epilog={t['epilog'].parent}/*", "PrologFlags=Alloc",
            "PrologEpilogTimeout=60", "SchedulerParameters=nohold_on_prolog_fail   # append to yours, comma separated",
            f"HealthCheckProgram={t['health']}", "HealthCheckInterval=300", "HealthCheckNodeState=ANY,CYCLE"]


# --------------------------------------------------------------------------
# Checks that refuse before anything is written


def world_runnable(path: str) -> List[str]:
    """Problems that stop a user other than the owner from running ``path``:
    every directory on the way (symlinks followed, each link's own directory
    too) needs o+x, the file o+x. A pyenv Python under /root (0700) fails."""
    problems: List[str] = []
    seen = set()

    def walk(p: str, depth: int = 0) -> None:
        if depth > 40 or p in seen:
            return
        seen.add(p)
        parts = Path(p).parts
        cur = Path(parts[0])
        for part in parts[1:]:
            st = os.stat(cur)
            if not st.st_mode & stat.S_IXOTH:
                problems.append(f"{cur} is mode {stat.S_IMODE(st.st_mode):04o}: other users cannot enter it")
                return
            nxt = cur / part
            if nxt.is_symlink():
                target = os.path.join(str(cur), os.readlink(nxt))
                walk(os.path.normpath(target), depth + 1)
                cur = Path(os.path.realpath(nxt))
                continue
            cur = nxt
        st = os.stat(cur)
        if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IXOTH:
            problems.append(f"{cur} is mode {stat.S_IMODE(st.st_mode):04o}: other users cannot run it")

    try:
        walk(os.path.abspath(path))
    except OSError as e:
        problems.append(f"{path}: {e.strerror or e}")
    return problems


def interpreter_problems(bin_path: str) -> List[str]:
    """The gcm-checks binary, the interpreter its shebang names and the venv's
    site-packages must all be usable by every user (gcm-run, by-hand checks)."""
    out = world_runnable(bin_path)
    try:
        with open(bin_path, "rb") as f:
            first = f.readline(512).decode("utf-8", "replace").strip()
    except OSError as e:
        return out + [f"{bin_path}: {e.strerror or e}"]
    if first.startswith("#!"):
        interp = first[2:].strip().split()[0] if first[2:].strip() else ""
        if interp:
            out += world_runnable(interp)
    import sysconfig

    purelib = sysconfig.get_paths().get("purelib")
    if purelib and os.path.isdir(purelib) and not os.stat(purelib).st_mode & stat.S_IROTH:
        out.append(f"{purelib} is not readable by other users: gcm_checks cannot be imported")
    return sorted(set(out))


def _non_executable(d: Path) -> List[str]:
    if not d.is_dir():
        return []
    return [str(p) for p in sorted(d.iterdir()) if not (p.is_file() and os.access(p, os.X_OK))
            and p.name != SCRIPT_NAME]


# --------------------------------------------------------------------------
# Writing


def render_script(template: str, bin_path: str, config_path: str, slurm_conf: str) -> str:
    """The shipped script with this installation's paths set right after the
    shebang. The script already honours these variables (GCM_CHECKS_BIN first
    in its search, GCM_CHECKS_CONFIG in gcm-checks' config discovery).
    SLURM_CONF too: slurmd gives the health check none, and its scontrol calls
    must reach this cluster when slurm.conf is not where scontrol looks."""
    if not template.startswith("#!"):
        raise InstallError("entry script template has no shebang line")
    if "GCM_CHECKS_BIN" not in template:
        raise InstallError("entry script template does not read GCM_CHECKS_BIN: cannot point it at this binary")
    head, _, rest = template.partition("\n")
    block = "\n".join([
        MARK_BEGIN,
        f'GCM_CHECKS_BIN="${{GCM_CHECKS_BIN:-{bin_path}}}"',
        f'GCM_CHECKS_CONFIG="${{GCM_CHECKS_CONFIG:-{config_path}}}"',
        f'SLURM_CONF="${{SLURM_CONF:-{slurm_conf}}}"',
        "export GCM_CHECKS_BIN GCM_CHECKS_CONFIG SLURM_CONF",
        MARK_END,
    ])
    return f"{head}\n{block}\n{rest}"


def _write_atomic(path: Path, text: str, mode: int) -> None:
    """The project's one atomic writer (temp file, fsync, rename, no symlink follow)."""
    from gcm_checks.jsonfile import write_atomic

    write_atomic(str(path), text.encode("utf-8"), mode=mode)


def _plan(args: argparse.Namespace) -> Tuple[Path, Path, Path, str]:
    conf = Path(os.path.abspath(args.slurm_conf))
    if not conf.is_file():
        raise InstallError(f"{conf}: no such slurm.conf")
    prefix = Path(os.path.abspath(args.prefix)) if args.prefix else conf.parent
    config_path = Path(os.path.abspath(args.config)) if getattr(args, "config", None) else conf.parent / CONFIG_NAME
    bin_path = os.path.abspath(args.bin) if args.bin else default_bin()
    for p in (str(conf), str(prefix), str(config_path), bin_path):
        if not _SAFE_PATH.match(p):
            raise InstallError(f"{p!r}: only plain absolute paths (letters, digits, . _ / + @ : , = -) are written into root-run scripts")
    return conf, prefix, config_path, bin_path


def install(args: argparse.Namespace, out=print) -> Dict[str, object]:
    conf, prefix, config_path, bin_path = _plan(args)
    if not os.access(bin_path, os.X_OK):
        raise InstallError(f"{bin_path}: not an executable gcm-checks (give --bin)")
    problems = interpreter_problems(bin_path)
    if problems and not args.force:
        raise InstallError("the interpreter is not runnable by every user (gcm-run and by-hand checks run as users):\n  "
                           + "\n  ".join(problems) + "\nmake a venv from a Python every user can run (e.g. /usr/bin/python3), or --force")
    tdir = template_dir()
    t = targets(prefix)
    for kind in ("prolog", "epilog"):
        bad = _non_executable(t[kind].parent)
        if bad:
            raise InstallError(f"{', '.join(bad)}: not an executable file in {t[kind].parent}: slurmd would fail every "
                               f"{kind} on it; fix or remove it first")
    rendered = {k: render_script((tdir / k).read_text(encoding="utf-8"), bin_path, str(config_path), str(conf)) for k in t}
    actions = [f"write {t[k]} (mode 0755)" for k in ("prolog", "epilog", "health")]
    new_config = not config_path.exists()
    actions.append(f"write {config_path} (report_only: true)" if new_config else f"keep {config_path} (exists)")
    report = {"prefix": str(prefix), "bin": bin_path, "config": str(config_path), "new_config": new_config,
              "scripts": {k: str(v) for k, v in t.items()}, "actions": actions, "warnings": problems,
              "slurm_conf_lines": slurm_conf_lines(prefix), "dry_run": bool(args.dry_run)}
    if args.dry_run:
        return report
    created: List[Path] = []
    written: List[Path] = []
    try:
        for k in ("prolog", "epilog"):
            d = t[k].parent
            if not d.is_dir():
                d.mkdir(mode=0o755, parents=True)
                created.append(d)
        t["health"].parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        for k in ("prolog", "epilog", "health"):
            _write_atomic(t[k], rendered[k], 0o755)
            written.append(t[k])
        if new_config:
            _write_atomic(config_path, FIRST_CONFIG, 0o644)
            written.append(config_path)
        _write_atomic(prefix / MANIFEST, json.dumps({"version": 1, "scripts": [str(p) for p in t.values()],
                                                    "config": str(config_path), "config_written": new_config,
                                                    "bin": bin_path}, indent=1) + "\n", 0o644)
    except OSError as e:
        # Undo: a directory we created must not stay behind empty.
        for p in written:
            if p != config_path or new_config:
                try:
                    p.unlink()
                except OSError:
                    pass
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                pass
        raise InstallError(f"install failed, undone: {e.strerror or e}: {getattr(e, 'filename', '')}") from None
    return report


def _referenced(conf: Path, t: Dict[str, Path]) -> List[str]:
    """slurm.conf lines that still name the installed scripts or their directories."""
    names = {str(t["prolog"].parent), str(t["epilog"].parent), str(t["health"])}
    hits = []
    try:
        text = conf.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        key, _, value = body.partition("=")
        if key.strip().lower() in ("prolog", "epilog", "healthcheckprogram") and any(
                value.strip() == n or value.strip().startswith(n + "/") for n in names):
            hits.append(line.strip())
    return hits


def uninstall(args: argparse.Namespace) -> Dict[str, object]:
    conf, prefix, config_path, _bin = _plan(args)
    t = targets(prefix)
    refs = _referenced(conf, t)
    if refs:
        raise InstallError(f"{conf} still runs gcm-checks: remove these lines, run `scontrol reconfigure` on the "
                           "cluster, then uninstall again:\n  " + "\n  ".join(refs))
    actions = []
    for k in ("prolog", "epilog", "health"):
        if t[k].exists() and not args.force and MARK_BEGIN not in t[k].read_text(encoding="utf-8", errors="replace"):
            raise InstallError(f"{t[k]} was not written by gcm-checks install (no install marker): remove it by hand, or --force")
        if t[k].exists():
            actions.append(f"remove {t[k]}")
            if k != "health" and not [p for p in t[k].parent.iterdir() if p != t[k]]:
                actions.append(f"write {t[k].parent / NOOP_NAME} (the directory must not be left empty)")
    if args.remove_config and config_path.exists():
        actions.append(f"remove {config_path}")
    if (prefix / MANIFEST).exists():
        actions.append(f"remove {prefix / MANIFEST}")
    report = {"actions": actions, "dry_run": bool(args.dry_run)}
    if args.dry_run:
        return report
    for k in ("prolog", "epilog", "health"):
        p = t[k]
        if not p.exists():
            continue
        if k != "health" and not [q for q in p.parent.iterdir() if q != p]:
            # slurmd may still hold a configuration naming this glob: a no-op
            # first, then the script, so the directory is never empty.
            _write_atomic(p.parent / NOOP_NAME, NOOP, 0o755)
        p.unlink()
    if args.remove_config and config_path.exists():
        config_path.unlink()
    try:
        (prefix / MANIFEST).unlink()
    except OSError:
        pass
    return report


def run(args: argparse.Namespace) -> int:
    try:
        report = uninstall(args) if args.command == "uninstall" else install(args)
    except InstallError as e:
        if args.json:
            print(json.dumps({"ok": False, "error": str(e)}))
        print(f"gcm-checks {args.command}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(dict(report, ok=True), indent=2))
        return 0
    prefix = "would " if report.get("dry_run") else ""
    for a in report["actions"]:
        print(f"{prefix}{a}")
    for w in report.get("warnings") or ():
        print(f"warning: {w}", file=sys.stderr)
    if args.command == "install":
        print("\nAdd to slurm.conf (every node), then `scontrol reconfigure`:\n")
        for line in report["slurm_conf_lines"]:
            print(f"  {line}")
        print("\nThe scripts find the config through GCM_CHECKS_CONFIG written into them, so the health check\n"
              "finds it although slurmd gives it no SLURM_CONF. Check it with: gcm-checks config check "
              f"{report['config']}")
    return 0
