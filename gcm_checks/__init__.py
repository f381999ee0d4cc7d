"""gcm-checks: Slurm prolog/epilog health checks for GPU clusters.

Keep this module empty of imports: the prolog imports it before every job.
"""

__version__ = "0.1.0"
