"""How preempted, cancelled, timed-out and finished jobs end, as the tools say it (issue 14).

The weakest classes on the sealed split are the ones whose logs rarely say why:
``preempted``, ``cancelled_user`` and ``success``, and ``software_exception`` and
``unknown`` claim too much. This table adds the lines other schedulers, CI systems,
launchers and frameworks print when they end a job for one of those reasons, each
written from the tool's own format string (named above it) rather than from an
excerpt: Jenkins' results and time limits and GitLab's success line, PyTorch Lightning's
requeue/SIGTERM/Ctrl-C handlers, Open MPI's, MPICH Hydra's and Docker Compose's Ctrl-C
lines, EC2 Spot interruption codes, HTCondor's out-of-memory holds, nccl-tests'
end-of-run check, timm's, nf-core's and science codes' (GROMACS, Gaussian, ORCA, LAMMPS,
Kaldi/ESPnet) normal-end lines and their failed-end counterparts, llama.cpp's timings block,
Apache Airflow's timeout/SIGTERM/SIGKILL lines; and a few exceptions that
py.exception would read as the job's own bug although they say the process was
killed from outside (Lightning's SIGTERMException, Python's BrokenProcessPool, Ray's
WorkerCrashedError).

Same conventions as rules.py: lower-case literal keywords gate each rule, hold no
digits and start with a character the keyword trie already branches on; every
repetition is bounded; no hosts, paths or numbers. Rows in
tests/test_classify_rules_s4.py: each family in its documented format (names and
numbers made up) and the look-alikes that must not be read as it.
"""

from __future__ import annotations

from typing import Tuple

from gcm_checks.classify.rules import (
    R_CANCEL, R_EXCEPTION, R_HOST_OOM_SLURM, R_INTERRUPT, R_NCCL, R_SCHED, R_SIGNAL, R_SUCCESS, R_VAGUE, Rule,
)

S4_RULES: Tuple[Rule, ...] = (
    # ---- time limits that CI systems and Lightning announce ---------------------------
    # Jenkins' build-timeout plugin (BuildTimeoutWrapper): "Build timed out (after 30
    # minutes). Marking the build as aborted." (or "... as failed."). GitLab Runner's
    # "Job failed: execution took longer than 1h0m0s seconds" is rules_fam's fam.ci_timeout.
    Rule("ci.build_timeout", "timeout_walltime", R_SCHED - 2, 0.9,
         ("build timed out (after",),
         r"\bBuild timed out \(after \d+ \w+\)\. Marking the build as (?:aborted|failed)",
         "the CI system stopped the job at its time limit", terminal=True, warnings_ok=True),
    # PyTorch Lightning's SLURM auto-requeue (_SignalConnector._slurm_sigusr_handler_fn):
    # "Handling auto-requeue signal: 10". Lightning documents it for `#SBATCH
    # --signal=SIGUSR1@90`: Slurm sends the signal shortly before the wall-time limit and
    # Lightning checkpoints and requeues; the SIGTERM that follows is fallout.
    Rule("lightning.requeue_signal", "timeout_walltime", R_SCHED - 4, 0.75,
         ("handling auto-requeue signal",), r"(?i:\bHandling auto-requeue signal\b)",
         "Slurm signalled the job that its time limit was near and Lightning requeued it",
         terminal=True, warnings_ok=True),
    # Apache Airflow's execution_timeout: "airflow.exceptions.AirflowTaskTimeout: Timeout,
    # PID: 1234" (after "Process timed out"); the SIGTERM Airflow then sends is fallout.
    Rule("airflow.task_timeout", "timeout_walltime", R_SCHED - 2, 0.85,
         ("airflowtasktimeout",), r"\bAirflowTaskTimeout\b(?::\s|\s*$)",
         "the task ran past its execution_timeout", terminal=True, warnings_ok=True),
    # ---- preemption notices from the clouds --------------------------------------------
    # EC2 Spot request status codes of an interruption: "marked-for-termination",
    # "marked-for-stop", "instance-stopped-by-price", "instance-stopped-no-capacity",
    # "instance-stopped-capacity-oversubscribed" (rules_fam reads the terminated-* ones;
    # the EventBridge "EC2 Spot Instance Interruption Warning" is slurm.preemption's).
    # "instance-terminated-by-user" is the owner's own action and is not read here.
    Rule("cloud.spot_notice", "preempted", R_SCHED - 3, 0.85,
         ("marked-for-termination", "marked-for-stop", "instance-stopped-"),
         r"\bmarked-for-(?:termination|stop)\b|\binstance-stopped-(?:by-price|no-capacity|capacity-oversubscribed)\b",
         "the cloud reclaimed the Spot instance the job ran on", terminal=True, warnings_ok=True),
    # ---- cancels ------------------------------------------------------------------------
    # Jenkins core (CauseOfInterruption.UserInterruption): "Aborted by <user's full name>"
    # ("Aborted by alice", "Aborted by Alice Smith"; a sentence is not it), then the
    # build's last line "Finished: ABORTED". A bare ABORTED is also what the build-timeout
    # plugin leaves, so it is weaker, and ci.build_timeout outranks it.
    Rule("ci.jenkins_aborted_by", "cancelled_user", R_CANCEL, 0.8,
         ("aborted by ",), r"^Aborted by \S{1,60}(?: \S{1,60}){0,2}\s*$",
         "a user aborted the CI build", terminal=True),
    Rule("ci.jenkins_aborted", "cancelled_user", R_CANCEL - 2, 0.6,
         ("finished: aborted",), r"^Finished: ABORTED\s*$",
         "the CI build was aborted (by a user, or a timeout that did not say so)", terminal=True),
    # Ctrl-C as the MPI launchers report it: Open MPI / PRRTE (orterun's signal handler)
    # "mpirun: abort is already in progress...hit ctrl-c again to forcibly terminate";
    # MPICH Hydra (ui/mpich/utils): "[mpiexec@host] Sending Ctrl-C to processes as
    # requested" / "Press Ctrl-C again to force abort". Like the terminal's "^C" echo
    # (tty.ctrl_c, one rank lower) it ranks below the job's own exceptions: a run that
    # failed and hung is what people press Ctrl-C on.
    Rule("mpi.ctrl_c", "cancelled_user", R_EXCEPTION - 1, 0.6,
         ("abort is already in progress", "sending ctrl-c to processes", "press ctrl-c again to force"),
         r"\babort is already in progress\.\.\.hit ctrl-c again to forcibly terminate"
         r"|\bSending Ctrl-C to processes as requested|\bPress Ctrl-C again to force abort",
         "the MPI job was interrupted with Ctrl-C"),
    # Docker Compose on the first Ctrl-C of `docker compose up`: "Gracefully stopping...
    # (press Ctrl+C again to force)". Same rank as the MPI launchers' lines, same reason.
    Rule("compose.ctrl_c", "cancelled_user", R_EXCEPTION - 1, 0.6,
         ("gracefully stopping... (press ctrl+c again",),
         r"Gracefully stopping\.\.\. \(press Ctrl\+C again to force\)",
         "the containers were stopped with Ctrl-C"),
    # PyTorch Lightning (trainer/call.py _call_and_handle_interrupt): rank_zero_warn(
    # "Detected KeyboardInterrupt, attempting graceful shutdown..."): printed as a
    # UserWarning, so py.keyboard_interrupt never sees it.
    Rule("lightning.keyboard_interrupt", "cancelled_user", R_INTERRUPT + 1, 0.65,
         ("detected keyboardinterrupt",), r"\bDetected KeyboardInterrupt, attempting graceful shutdown\b",
         "the training was interrupted with Ctrl-C", warnings_ok=True),
    # PyTorch Lightning's SIGTERM handling: "[rank: 0] Received SIGTERM: 15" (1.x-2.x
    # _sigterm_handler_fn), "Received SIGTERM. Stopping." (newer signal connector), and
    # the exception it raises at the next step, lightning.pytorch.utilities.exceptions.
    # SIGTERMException. A SIGTERM from outside, like a bare "Terminated" (shell.sigterm):
    # a scancel, or a time limit or preemption when a line says so (those outrank it).
    # Not the job's own bug, which is what py.exception would make of the class name.
    Rule("lightning.sigterm", "cancelled_user", R_SIGNAL + 3, 0.45,
         ("received sigterm", "sigtermexception"),
         r"\bReceived SIGTERM(?:: 15\b|\. Stopping\.)|(?:^|\.)SIGTERMException(?=:|\s*$)",
         "the training was sent SIGTERM from outside (a cancel, unless a limit or preemption says why)",
         warnings_ok=True),
    # Apache Airflow's task runner on SIGTERM: "ERROR - Received SIGTERM. Terminating
    # subprocesses." then AirflowException / AirflowTaskTerminated "Task received SIGTERM
    # signal": the task was stopped from outside (cleared or marked failed by a user, a
    # scheduler or worker restart); a timeout says so first (airflow.task_timeout).
    Rule("airflow.sigterm", "cancelled_user", R_SIGNAL + 3, 0.45,
         ("received sigterm. terminating subprocesses", "task received sigterm signal"),
         r"\bReceived SIGTERM\. Terminating subprocesses|\bTask received SIGTERM signal\b",
         "the task was sent SIGTERM from outside (a user's clear or mark-failed, or a restart)",
         warnings_ok=True),
    # ---- host memory limits of other batch systems ----------------------------------
    # HTCondor's starter when the job dies by a signal under a memory limit: "Job raised a
    # signal 9. Handling signal as if job has gone over memory limit." and, with no limit
    # set, "Job has encountered an out-of-memory event." (rules_docs reads "... memory limit
    # of N megabytes"). CMS CRAB / WMCore set the PeriodicRemove reason "Removed due to
    # memory use" when MemoryUsage > RequestMemory.
    Rule("condor.oom", "host_oom", R_HOST_OOM_SLURM, 0.85,
         ("as if job has gone over memory limit", "encountered an out-of-memory event", "removed due to memory use"),
         r"Handling signal as if job has gone over memory limit|\bJob has encountered an out-of-memory event"
         r"|\bRemoved due to memory use\b",
         "the batch system removed or held the job for exceeding its memory", terminal=True, warnings_ok=True),
    # Apache Airflow's local task job: "Task exited with return code Negsignal.SIGKILL"
    # (its docs: usually the worker ran out of memory), like a bare SIGKILL (shell.sigkill).
    Rule("airflow.sigkill", "host_oom", R_SIGNAL + 3, 0.55,
         ("negsignal.sigkill",), r"\bTask exited with return code Negsignal\.SIGKILL\b",
         "the task was killed with SIGKILL (most often the OOM killer)", warnings_ok=True),
    # Python's concurrent.futures: BrokenProcessPool "A process in the process pool was
    # terminated abruptly while the future was running or pending." The docs: a worker
    # "terminated in a non-clean fashion (for example, if it was killed from the outside)";
    # with nothing else, most often the OOM killer, so moderate like a bare SIGKILL, below
    # a named signal, above the exception's class name.
    Rule("py.pool_worker_killed", "host_oom", R_SIGNAL - 1, 0.45,
         ("was terminated abruptly while the future",),
         r"A (?:child )?process in the process pool was terminated abruptly while the future was running",
         "a worker process was killed from outside (most often by the OOM killer)"),
    # Ray: WorkerCrashedError "The worker died unexpectedly while executing this task.
    # Check python-core-worker-*.log files for more information." and LocalRayletDiedError
    # "The task's local raylet died. Check raylet.out for more information." Ray does not
    # know why (OOM kill, node loss, crash): like rules_src_more's ray.worker_died, an
    # honest unknown that keeps py.exception from calling it the job's bug.
    Rule("ray.worker_crashed", "unknown", R_SIGNAL + 3, 0.3,
         ("the worker died unexpectedly while executing", "local raylet died"),
         r"The worker died unexpectedly while executing this task|The task's local raylet died",
         "a Ray worker or raylet died; Ray does not say why (OOM kill, node loss or a crash)"),
    # ---- NCCL's own end-of-run check ----------------------------------------------------
    # nccl-tests (common.cu) ends every run with "# Out of bounds values : N OK|FAILED"
    # then "# Avg bus bandwidth : X". FAILED counts results that came back wrong: the
    # collective itself corrupted data.
    Rule("nccltests.wrong_results", "nccl_comm", R_NCCL - 5, 0.7,
         ("out of bounds values",), r"^[#\s]*Out of bounds values\s*:\s*[1-9]\d*\s+FAILED\b",
         "nccl-tests found collectives that returned wrong data", warnings_ok=True),
    # ---- completion lines ---------------------------------------------------------------
    # Jenkins' last console line "Finished: SUCCESS"; GitLab Runner's "Job succeeded".
    Rule("ci.succeeded", "success", R_SUCCESS + 2, 0.85,
         ("finished: success", "job succeeded"), r"^(?:Finished: SUCCESS|Job succeeded)\s*$",
         "the CI job finished successfully"),
    # nccl-tests' end-of-run check with no wrong result: the whole sweep ran.
    Rule("nccltests.ok", "success", R_SUCCESS + 1, 0.75,
         ("out of bounds values",), r"^[#\s]*Out of bounds values\s*:\s*0\s+OK\b",
         "nccl-tests finished its sweep with correct results", warnings_ok=True),
    # nf-core's pipeline template (workflow.onComplete): "-[nf-core/rnaseq] Pipeline
    # completed successfully-" (failed: "... Pipeline completed with errors-"); Nextflow's
    # StatsObserver: "Workflow completed > WorkflowStats[succeedCount=12; failedCount=0; ...".
    Rule("wf.pipeline_completed", "success", R_SUCCESS + 1, 0.8,
         ("pipeline completed successfully", "workflow completed > workflowstats"),
         r"\bPipeline completed successfully\b|Workflow completed > WorkflowStats\[succeedCount=\d+; failedCount=0;",
         "the workflow finished with every task succeeded", warnings_ok=True),
    # timm's train.py after its last epoch: _logger.info("*** Best metric: {0} (epoch {1})").
    Rule("timm.best_metric", "success", R_SUCCESS, 0.7,
         ("*** best metric:",), r"\*\*\* Best metric: -?[\d.]+(?:e-?\d+)? \(epoch \d+\)",
         "the training ran all its epochs and reported its best metric", warnings_ok=True),
    # Science codes' own normal-end lines: GROMACS mdrun "Finished mdrun on rank 0 <date>";
    # Gaussian "Normal termination of Gaussian 16 at <date>."; ORCA "****ORCA TERMINATED
    # NORMALLY****"; LAMMPS "Total wall time: 0:12:34" (printed on a normal exit only);
    # Kaldi's and ESPnet's run.pl/queue.pl log footer "# Ended (code 0) at <date>, elapsed
    # time N seconds" and ESPnet's recipes "Successfully finished. [elapsed=123s]".
    Rule("sci.normal_end", "success", R_SUCCESS + 1, 0.75,
         ("finished mdrun on rank", "normal termination of gaussian", "orca terminated normally",
          "total wall time:", "ended (code ", "successfully finished. [elapsed="),
         r"\bFinished mdrun on rank \d+|\bNormal termination of Gaussian\b|\*ORCA TERMINATED NORMALLY\*"
         r"|^Total wall time: \d+:\d\d:\d\d\s*$|^# Ended \(code 0\) at\b|\bSuccessfully finished\. \[elapsed=\d+s\]",
         "the program reported its normal end", warnings_ok=True),
    # The failure counterparts of the completion lines above, read as bare failure
    # markers: with one in the text a completion line no longer means success (the
    # engine's rule for any `unknown` hit), and with nothing else the answer stays
    # unknown. Gaussian "Error termination via Lnk1e in .../l9999.exe"; ORCA "ORCA finished
    # by error termination in SCF"; run.pl "# Ended (code 1) at"; nf-core "-[nf-core/x]
    # Pipeline completed with errors-"; Jenkins "Finished: FAILURE"; GitLab Runner
    # "ERROR: Job failed: exit code 1".
    Rule("run.failed_end", "unknown", R_VAGUE + 1, 0.3,
         ("error termination via lnk", "finished by error termination", "ended (code ",
          "pipeline completed with errors", "finished: failure", "job failed: exit code"),
         r"\bError termination via Lnk\d+e\b|\bORCA finished by error termination\b|^# Ended \(code [1-9]\d*\) at\b"
         r"|\bPipeline completed with errors\b|^Finished: FAILURE\s*$|\bJob failed: exit code [1-9]\d*\b",
         "the program or pipeline reported a failed end, without saying why", warnings_ok=True),
    # llama.cpp prints its timings block when a generation run ends (llama_print_timings,
    # newer llama_perf_context_print / llama_perf_sampler_print); ollama logs the same as
    # JSON with "function":"print_timings". A server prints one per request, so weaker
    # than an end-of-job line; any later failure outranks it.
    Rule("llama.timings", "success", R_SUCCESS, 0.6,
         ("llama_print_timings", "llama_perf_", "print_timings"),
         r"\b(?:llama_print_timings|llama_perf_(?:context|sampler)_print):\s{0,40}[a-z ]{1,40}time\s*="
         r"|\"function\":\s?\"print_timings\"",
         "the model run finished generating (llama.cpp printed its timings)", warnings_ok=True),
)
