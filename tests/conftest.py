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
    from slurm_cluster import SLURM_MISSING, SlurmCluster, remove_tree, repo_script_glob

    if SLURM_MISSING:
        pytest.skip(SLURM_MISSING)
    # Short path: unix socket paths (munge, mysql) are limited to 108 bytes.
    root = tempfile.mkdtemp(prefix="gcm-slurm-", dir="/tmp")
    cluster = SlurmCluster(root, prolog=repo_script_glob("prolog"), epilog=repo_script_glob("epilog"))
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
