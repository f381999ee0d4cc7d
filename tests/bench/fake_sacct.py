#!/usr/bin/env python3
"""A stand-in ``sacct`` for the fleet-scale benchmark (issue 17): prints
GCM_FAKE_SACCT_ROWS rows (default 1,000,000) in the 22.05 ``--parsable2``
layout of ``slurm.SACCT_FIELDS``, whatever its arguments: 4 rows per job (job,
batch, extern, one srun step), 7 end states in turn, 30% of jobs on 2-64
nodes of a 4,096-node cluster. Deterministic."""

import os
import sys
import time

T0 = 1_800_000_000.0
STATES = [("COMPLETED", "0:0", "0:0"), ("FAILED", "3:0", "0:0"), ("TIMEOUT", "0:0", "0:0"),
          ("CANCELLED by 1001", "0:0", "0:0"), ("COMPLETED", "0:0", "5:0"), ("OUT_OF_MEMORY", "0:125", "0:0"),
          ("NODE_FAIL", "0:0", "0:0")]


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def main() -> int:
    rows = int(os.environ.get("GCM_FAKE_SACCT_ROWS", "1000000"))
    out = sys.stdout
    buf = []
    for i in range(rows // 4):
        st, ec, dec = STATES[i % len(STATES)]
        end = stamp(T0 + (i * 2.419) % 604800)
        start = stamp(T0 + (i * 2.419) % 604800 - 600)
        first = (i * 37) % 4032
        if i % 10 < 3:  # 30% multi-node
            width = 2 + (i % 63)
            node = f"gpu[{first:04d}-{first + width - 1:04d}]"
        else:
            node = f"gpu{first:04d}"
        buf.append(f"{i}|{i}|train{i}|alice|1001|gpu|{st}|{ec}|{dec}|None|00:10:00|01:00:00||{node}|{start}|{start}|{end}|/home/alice\n"
                   f"{i}.batch|{i}.batch|batch||||{st.split()[0]}|{ec}|||00:10:00||1234567K|{node}|{start}|{start}|{end}|\n"
                   f"{i}.extern|{i}.extern|extern||||COMPLETED|0:0|||00:10:00||1000K|{node}|{start}|{start}|{end}|\n"
                   f"{i}.0|{i}.0|python||||{'FAILED' if dec != '0:0' else 'COMPLETED'}|{dec}|||00:09:00||7654321K|{node}|{start}|{start}|{end}|\n")
        if len(buf) >= 2048:
            out.write("".join(buf))
            buf.clear()
    out.write("".join(buf))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
