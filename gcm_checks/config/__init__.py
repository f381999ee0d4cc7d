"""Configuration: one YAML file, validated against SCHEMA, resolved per node.

Discovery order (a prolog gets no environment of ours from slurmd, but it does
get ``SLURM_CONF``, so a ``gcm-checks.yaml`` beside slurm.conf is found):

1. ``--config PATH``
2. ``$GCM_CHECKS_CONFIG``
3. ``dirname($SLURM_CONF)/gcm-checks.yaml``
4. ``/etc/gcm-checks/config.yaml``
5. ``gcm-checks.yaml`` in the first of ``SLURM_CONF_DIRS`` that has one:
   ``/etc/slurm``, ``/run/slurm/conf`` (configless), ``/var/spool/slurmd/conf-cache``,
   ``/usr/local/etc/slurm``, ``/etc/slurm-llnl`` (slurmd gives HealthCheckProgram
   no ``SLURM_CONF``: this keeps health mode on the prolog's config; an
   installed health script names its config itself, see ``gcm-checks install``)
6. built-in defaults (``configs/default.yaml`` documents every key)

``nodes:`` sections override keys for nodes matching a Slurm hostlist
expression (``gpu[001-128]``), a glob, or ``re:<regex>``; later sections win.

Every area adds its own section to SCHEMA below. Validation errors name the
file, the key and what was expected.
"""


from __future__ import annotations

import copy
import os
from typing import Any, Dict, Optional, Tuple

from gcm_checks.config.schema import (  # noqa: F401  (the public names of gcm_checks.config)
    SCHEMA, STATUS_CHOICES, ConfigError, Key, _check_value, _describe, _validate_nodes, _validate_section,
    check_ids_known, defaults, iter_keys)
from gcm_checks.config.types import Settings  # noqa: F401


def _merge(base: Dict[str, Any], over: Dict[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)


# Where slurm.conf lives across packagings, for a run without SLURM_CONF
# (slurmd gives HealthCheckProgram none): Debian/RHEL, configless Slurm's
# cache (/run/slurm/conf; SlurmdSpoolDir/conf-cache in 22.05's default
# spool), a source build's /usr/local/etc, and old Debian's slurm-llnl.
SLURM_CONF_DIRS = ("/etc/slurm", "/run/slurm/conf", "/var/spool/slurmd/conf-cache", "/usr/local/etc/slurm",
                   "/etc/slurm-llnl")


def find_config(explicit: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> Optional[str]:
    env = os.environ if env is None else env
    if explicit:
        return explicit
    if env.get("GCM_CHECKS_CONFIG"):
        return env["GCM_CHECKS_CONFIG"]
    candidates = []
    if env.get("SLURM_CONF"):
        candidates.append(os.path.join(os.path.dirname(env["SLURM_CONF"]), "gcm-checks.yaml"))
    candidates += ["/etc/gcm-checks/config.yaml"] + [os.path.join(d, "gcm-checks.yaml") for d in SLURM_CONF_DIRS]
    for c in candidates:
        # exists, not isfile: a directory (or unreadable file) where the
        # config belongs is an error the admin must hear about, not "no config".
        if os.path.exists(c):
            return c
    return None


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def read_text(path: str) -> str:
    """The config file's text; every way reading it can go wrong is a ConfigError."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(path, "(file)", "an existing readable file") from None
    except IsADirectoryError:
        raise ConfigError(path, "(file)", "a file, not a directory") from None
    except PermissionError:
        raise ConfigError(path, "(file)", "a file this user may read (permission denied)") from None
    except OSError as e:
        raise ConfigError(path, "(file)", f"a readable file ({e.strerror or e})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(path, "(file)", f"at most {MAX_CONFIG_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(path, f"line {line}", f"UTF-8 text (invalid byte at offset {e.start})") from None


def parse_text(path: str, text: str) -> Any:
    import yaml  # lazily: only when a file is actually configured

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when built in
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(syntax)"
        raise ConfigError(path, where, f"valid YAML ({getattr(e, 'problem', e)})") from None
    except (RecursionError, MemoryError, ValueError, TypeError) as e:  # absurd nesting, huge numbers
        raise ConfigError(path, "(syntax)", f"YAML of sane size and depth ({type(e).__name__})") from None


def parse_file(path: str) -> Dict[str, Any]:
    data = parse_text(path, read_text(path))
    if data is None:
        data = {}
    _validate_section(path, data, SCHEMA, "", allow_nodes=True)
    return data


def resolve(data: Dict[str, Any], node: str, source: str = "(defaults)") -> Settings:
    from gcm_checks.hostlist import matches_any

    merged = defaults()
    top = {k: v for k, v in data.items() if k != "nodes"}
    _merge(merged, top)
    matched = []
    for i, sec in enumerate(data.get("nodes") or []):
        pats = sec["match"] if isinstance(sec["match"], list) else [sec["match"]]
        if matches_any(node, pats):
            _merge(merged, sec.get("set") or {})
            matched.append(i)
    merged["nodes"] = list(data.get("nodes") or [])
    return Settings(merged, source, node, matched)


def builtin(node: str = "") -> Settings:
    """The built-in defaults as Settings, for library calls made without a
    config (``explain`` from a test, a tool run with no file)."""
    return resolve({}, node)


def load(path: Optional[str] = None, node: Optional[str] = None) -> Settings:
    """Find, parse, validate and resolve the config for ``node``."""
    node = node or node_name()
    found = find_config(path)
    data = parse_file(found) if found else {}
    return resolve(data, node, found or "(defaults)")


# Where a run with a broken config still writes: its log, state and metrics,
# when the broken file names them validly (else the built-in defaults).
SALVAGE = ("log_path", "state_dir", "telemetry.prometheus_textfile_dir")


def load_or_defaults(path: Optional[str] = None, node: Optional[str] = None) -> Tuple[Settings, Optional[ConfigError]]:
    """``load``, but a broken config never stops a run and never drains.

    On a ConfigError: built-in defaults in report-only (hardware still checked,
    nothing changed in Slurm), with the few locations above kept from the
    broken file when they are valid, so the admin finds the loud log line and
    the ``gcm_config_error`` metric where they look. Returns (settings, error).
    """
    node = node or node_name()
    try:
        return load(path, node), None
    except ConfigError as e:
        err = e
    data: Dict[str, Any] = {}
    try:
        raw = parse_text(err.source, read_text(err.source)) if err.source and err.source != "(defaults)" else None
    except ConfigError:
        raw = None
    if isinstance(raw, dict):
        for dotted in SALVAGE:
            head, _, tail = dotted.partition(".")
            v = raw.get(head)
            if tail:
                v = v.get(tail) if isinstance(v, dict) else None
            if isinstance(v, str) and v:
                if tail:
                    data.setdefault(head, {})[tail] = v
                else:
                    data[head] = v
    data["report_only"] = True
    settings = resolve(data, node, f"{err.source} (broken: built-in defaults, report-only)")
    settings.config_error = str(err)
    return settings, err


def node_name(env: Optional[Dict[str, str]] = None) -> str:
    """Slurm's name for this node; prologs must not use hostname (facts note)."""
    env = os.environ if env is None else env
    if env.get("SLURMD_NODENAME"):
        return env["SLURMD_NODENAME"]
    return os.uname().nodename.split(".")[0]  # no socket import on the prolog path
