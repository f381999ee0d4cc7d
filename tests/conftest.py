"""Shared pytest fixtures. Keep this small and generic.

``slurm_cluster``: one real Slurm 22.05 cluster (munged, MariaDB, slurmdbd,
slurmctld, slurmd node1 + node2) per test session, see tests/slurm_cluster.py.
Tests using it are marked ``slurm`` and skip with the reason when the Debian
packages are missing. ``GCM_SLURM_KEEP=1`` keeps the cluster directory after
the session for post-mortems.
"""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session")
def slurm_cluster():
    from slurm_cluster import SLURM_MISSING, SlurmCluster, remove_tree

    if SLURM_MISSING:
        pytest.skip(SLURM_MISSING)
    # Short path: unix socket paths (munge, mysql) are limited to 108 bytes.
    root = tempfile.mkdtemp(prefix="gcm-slurm-", dir="/tmp")
    # No-op Prolog/Epilog by default, so tests of Slurm plumbing do not depend
    # on the prolog; ``gcm_scripts_cluster`` switches to the repo's scripts.
    cluster = SlurmCluster(root)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        if os.environ.get("GCM_SLURM_KEEP") != "1":
            remove_tree(root)


@pytest.fixture
def clean_cluster(slurm_cluster):
    """The session cluster with every node resumed and idle, jobs cancelled."""
    slurm_cluster.reset_nodes()
    yield slurm_cluster


@pytest.fixture
def gcm_scripts_cluster(clean_cluster):
    """Clean cluster with Prolog=<repo>/prolog.d/* and Epilog=<repo>/epilog.d/*.

    Skips when the repo has no scripts or no gcm-checks they can find
    (``<repo>/.venv/bin/gcm-checks``: slurmd passes prologs no PATH of ours).
    """
    from slurm_cluster import REPO, repo_script_glob

    prolog, epilog = repo_script_glob("prolog"), repo_script_glob("epilog")
    if not prolog or not epilog:
        pytest.skip("no executable scripts in prolog.d/ and epilog.d/")
    if not os.access(os.path.join(REPO, ".venv", "bin", "gcm-checks"), os.X_OK):
        pytest.skip("prolog.d scripts need <repo>/.venv/bin/gcm-checks (python -m venv .venv && .venv/bin/pip install -e .)")
    clean_cluster.use_scripts(prolog, epilog)
    try:
        yield clean_cluster
    finally:
        clean_cluster.reset_nodes()
        clean_cluster.use_scripts(None, None)
