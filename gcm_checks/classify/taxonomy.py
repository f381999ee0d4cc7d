"""The failure taxonomy: 18 stable category ids, who is responsible, what to do next.

The ids are an interface: reports, the ``failures`` trend command and admins'
dashboards key on them, so never rename one (add a new id instead).
docs/failure-taxonomy.md shows a real example for each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

INFRASTRUCTURE = "infrastructure"
SCHEDULER = "scheduler"
USER = "user"
UNKNOWN = "unknown"
RESPONSIBILITIES = (INFRASTRUCTURE, SCHEDULER, USER, UNKNOWN)


@dataclass(frozen=True)
class Category:
    id: str
    responsibility: str
    title: str
    # Second half of the human sentence: who should act and how.
    verdict: str
    next_step: str


_TABLE: Tuple[Category, ...] = (
    Category("gpu_hardware", INFRASTRUCTURE, "GPU hardware fault",
             "not your code; resubmit, the node is being checked",
             "Resubmit (excluding the node if it is not drained yet); admins: run gcm-checks health/qualify on the node and RMA the GPU if it repeats."),
    Category("network_fabric", INFRASTRUCTURE, "InfiniBand / network fabric fault",
             "not your code; resubmit, the fabric is being checked",
             "Resubmit; admins: check the HCA port (ibstat), link flaps and the switch port named in the evidence."),
    Category("node_failure", INFRASTRUCTURE, "node failed or stopped responding",
             "not your code; resubmit",
             "Resubmit (with --requeue for long runs); admins: look at slurmctld.log and the node's console for why it went down."),
    Category("storage_io", INFRASTRUCTURE, "storage or filesystem error",
             "check quota and free space on that filesystem, then resubmit",
             "Check quota (e.g. `lfs quota`, `df`), free space and whether the filesystem is healthy; resubmit once it is."),
    Category("timeout_walltime", SCHEDULER, "hit the time limit",
             "checkpoint more often or ask for a longer --time",
             "Checkpoint more often and resume, or ask for a longer --time; use --signal=USR1@120 to save before the kill."),
    Category("preempted", SCHEDULER, "preempted by the scheduler",
             "not your code; resubmit, or make the job requeue-safe",
             "Make the job requeue-safe (--requeue, resume from the last checkpoint) or use a non-preemptible QOS."),
    Category("cancelled_user", USER, "cancelled (scancel or interrupt)",
             "nothing to fix if that was intended",
             "Nothing to fix if it was intended; `sacct -j JOB -o State` shows who (CANCELLED by UID)."),
    Category("gpu_oom", USER, "GPU out of memory",
             "reduce the batch or sequence size, or shard the model",
             "Reduce batch/sequence size, enable activation checkpointing or sharding, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."),
    Category("host_oom", USER, "host (CPU) out of memory",
             "ask for more --mem or load less into RAM",
             "Ask for more --mem, use fewer DataLoader workers, or stream the dataset instead of loading it into RAM."),
    Category("nccl_comm", INFRASTRUCTURE, "NCCL / distributed communication failure",
             "resubmit; if it repeats, report the nodes or check that all ranks run the same collectives",
             "Resubmit; if it repeats on the same nodes report them; if it repeats everywhere check that all ranks run the same collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL, NCCL_DEBUG=INFO)."),
    Category("cuda_runtime", USER, "CUDA runtime error in the job",
             "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing operation",
             "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing op; device-side asserts are usually out-of-range indices or labels."),
    Category("numeric_divergence", USER, "loss diverged (NaN/Inf)",
             "lower the learning rate or resume from an earlier checkpoint",
             "Lower the learning rate, add warm-up or gradient clipping, check the data for bad values, resume from an earlier checkpoint."),
    Category("import_env", USER, "software environment / import error",
             "fix the software environment (versions, modules, venv)",
             "Rebuild the environment so the extension, PyTorch and CUDA versions match; check `module load` and the venv/conda activation in the batch script."),
    Category("data_input", USER, "bad or missing input data",
             "check the input data named there",
             "Check the dataset path and the file named in the evidence; validate the data before the long run."),
    Category("segfault_signal", USER, "crashed with a signal (segfault, bus error, abort)",
             "get a core dump or run with python -X faulthandler",
             "Get a core dump or run under `python -X faulthandler`; bus errors in DataLoader workers mean /dev/shm is too small."),
    Category("software_exception", USER, "unhandled exception in the job",
             "fix the code or configuration at that line",
             "Read the exception in the evidence and fix the code or configuration at that line."),
    Category("success", UNKNOWN, "completed successfully",
             "nothing to fix",
             "Nothing to do."),
    Category("unknown", UNKNOWN, "could not tell",
             "look at the end of stderr and at `sacct -j JOBID`",
             "Look at the end of the job's stderr and at `sacct -j JOB`; run `gcm-checks why JOB` on a node for node evidence."),
)

CATEGORIES: Dict[str, Category] = {c.id: c for c in _TABLE}
CATEGORY_IDS: Tuple[str, ...] = tuple(c.id for c in _TABLE)


def category(cid: str) -> Category:
    return CATEGORIES[cid]
