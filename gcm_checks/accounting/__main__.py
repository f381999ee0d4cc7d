"""``python -m gcm_checks.accounting [refine options]``: the refinement pass
without the main CLI (a systemd timer or EpilogSlurmctld can call this)."""

from __future__ import annotations

import argparse
import sys

from gcm_checks.commands import refine


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gcm_checks.accounting", description="batched sacct refinement of job reports")
    refine.add_arguments(parser)
    return refine.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
