"""``gcm-run``: wrap any training command at the process boundary.

The wrapper tees the child's output to the terminal and a durable log, exits
with the child's exact status, forwards the signals Slurm sends, reads progress
out of the output (no code change, any framework), publishes it to a status
file and the Slurm job comment, notices stalls and NaN losses, and on exit
classifies the run and writes a report.

Modules, one concern each:

- ``progress``  pure parsers for progress lines and the tracker (percent, rate, ETA)
- ``watch``     stall / silence / divergence detection over tracker snapshots
- ``status``    atomic status file, run report, index of running runs
- ``comment``   Slurm job comment text and its rate-limited poster
- ``launcher``  spawn, output pump, exit status (the ``Wrapper``)
- ``signals``   forwarding what Slurm sends to the job's process group
- ``watcher``   output in, progress and alerts out (scanners, tracker, watchdog)
- ``sides``     what an alert does (notice, kill on stall/NaN); the comment poster
- ``finish``    classification, report and notification at exit

Calls go one way: ``gcm_run_cli`` -> ``launcher`` -> ``signals`` / ``watcher``
/ ``sides`` -> ``finish``; none of them imports the launcher.

Keep this module free of imports: ``gcm-checks jobs`` needs only ``status``
(and ``watch`` for durations), never the launcher.
"""
