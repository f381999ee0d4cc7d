"""Precedence is the point (issue 5): the cause beats its symptoms and aftermath."""

from __future__ import annotations

from gcm_checks.classify import ClassifyInput, LogText, classify

CUDA_ECC_SYMPTOM = """\
Traceback (most recent call last):
  File "train.py", line 211, in <module>
    loss.backward()
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""

XID79 = {"time": "2024-03-05T02:14:07", "xid": 79, "pci_bus_id": "0000:c1:00.0", "gpu_index": 3,
         "severity": "fail", "responsibility": "hardware", "action": "drain",
         "name": "GPU has fallen off the bus", "line": "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus."}
XID13 = dict(XID79, xid=13, severity="info", responsibility="application", name="Graphics Engine Exception",
             line="NVRM: Xid (PCI:0000:c1:00): 13, Graphics SM Warp Exception")

TIME_LIMIT_THEN_SIGTERM = """\
 iteration     4/  1000 | lm loss: 3.899556E+00 |
srun: Job step aborted: Waiting up to 62 seconds for job step to finish.
slurmstepd: error: *** JOB 1999 ON gpu-a1 CANCELLED AT 2021-05-27T21:42:11 DUE TO TIME LIMIT ***
Main process received SIGTERM, exiting
Traceback (most recent call last):
  File "pretrain.py", line 9, in <module>
RuntimeError: NCCL communicator was aborted on rank 3.
[E ProcessGroupNCCL.cpp:821] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)
Fatal Python error: Aborted
"""

OOM_IN_TRACEBACK = """\
Traceback (most recent call last):
  File "train.py", line 88, in <module>
    out = model(batch)
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 39.39 GiB
During handling of the above exception, another exception occurred:
Traceback (most recent call last):
  File "train.py", line 91, in <module>
    raise RuntimeError("training step failed")
RuntimeError: training step failed
"""

WARNING_THEN_ERROR = """\
/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:88: UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment
  warnings.warn(
/opt/conda/lib/python3.10/site-packages/transformers/utils.py:12: FutureWarning: loss: nan values are deprecated
Traceback (most recent call last):
  File "train.py", line 14, in <module>
    main(cfg)
KeyError: 'optimizer'
"""


def _one(text: str, **kw) -> ClassifyInput:
    return ClassifyInput(logs=[LogText("stderr", text)], **kw)


def test_hardware_xid_beats_the_cuda_error_it_caused() -> None:
    alone = classify(_one(CUDA_ECC_SYMPTOM))
    assert alone.category == "cuda_runtime"
    r = classify(_one(CUDA_ECC_SYMPTOM, xids=[XID79], exit_code=1, signal=0))
    assert (r.category, r.responsibility, r.rule) == ("gpu_hardware", "infrastructure", "node.xid.hardware")
    assert "GPU 3" in r.sentence and "XID 79" in r.sentence and "02:14" in r.sentence
    assert "not your code" in r.sentence


def test_application_xid_never_becomes_hardware() -> None:
    r = classify(_one(CUDA_ECC_SYMPTOM, xids=[XID13], exit_code=1))
    assert r.category == "cuda_runtime"
    assert r.responsibility == "user"


def test_dcgm_and_ib_evidence_beat_log_symptoms() -> None:
    nccl = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.18.1"
    r = classify(_one(nccl, ib_problems=["mlx5_2 port 1: state Down (phys_state Polling)"], exit_code=1))
    assert r.category == "network_fabric" and r.rule == "node.ib"
    r = classify(_one(nccl, dcgm_failures=[{"gpu_index": 5, "test": "memory", "error_id": 83,
                                            "message": "Memory test failed"}], exit_code=1))
    assert r.category == "gpu_hardware" and r.rule == "node.dcgm"


def test_node_evidence_does_not_turn_a_success_into_a_failure() -> None:
    r = classify(_one("{'train_runtime': 91.2}\n", xids=[XID79], exit_code=0, signal=0, state="COMPLETED"))
    assert r.category == "success"


def test_time_limit_line_beats_the_sigterm_traceback_after_it() -> None:
    r = classify(_one(TIME_LIMIT_THEN_SIGTERM))
    assert (r.category, r.rule) == ("timeout_walltime", "slurm.time_limit")
    assert r.responsibility == "scheduler"
    assert r.evidence[0].line_no == 3


def test_timeout_state_without_log_line() -> None:
    r = classify(_one("Main process received SIGTERM, exiting\nKeyboardInterrupt\n", state="TIMEOUT",
                      exit_code=0, signal=15))
    assert r.category == "timeout_walltime"
    r = classify(ClassifyInput(exit_code=0, signal=0, reason="TimeLimit"))
    assert r.category == "timeout_walltime"


def test_oom_beats_the_generic_traceback_around_it() -> None:
    r = classify(_one(OOM_IN_TRACEBACK))
    assert (r.category, r.rule) == ("gpu_oom", "cuda.oom")
    assert r.evidence[0].line_no == 6


def test_real_error_beats_an_earlier_harmless_warning() -> None:
    r = classify(_one(WARNING_THEN_ERROR))
    assert (r.category, r.rule) == ("software_exception", "py.exception")
    assert "KeyError" in r.evidence[0].text


def test_srun_killing_the_step_after_a_task_failed_is_not_a_user_cancel() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
            "ZeroDivisionError: division by zero\n"
            "srun: error: gpu-a3: task 0: Exited with exit code 1\n"
            "srun: Terminating StepId=77.0\n"
            "slurmstepd: error: *** STEP 77.0 ON gpu-a3 CANCELLED AT 2024-01-01T00:00:00 ***\n")
    r = classify(_one(text))
    assert r.category == "software_exception"
    assert "ZeroDivisionError" in r.evidence[0].text


def test_user_cancel_beats_the_kill_noise_after_it() -> None:
    text = ("step 10 loss 1.2\n"
            "slurmstepd: error: *** JOB 9 ON gpu-b1 CANCELLED AT 2024-01-01T00:00:00 ***\n"
            "Killing subprocess 4411\nMain process received SIGTERM, exiting\n"
            "node:1:2 [0] NCCL WARN Net : Connection closed by remote peer node2<4242>\n"
            "torch.distributed.DistBackendError: NCCL communicator was aborted\n")
    r = classify(_one(text))
    assert r.category == "cancelled_user"


def test_node_failure_beats_the_cuda_error_it_caused() -> None:
    text = ("terminate called after throwing an instance of 'c10::CUDAError'\n  what():  CUDA error: unknown error\n"
            "srun: error: Node failure on gpu-z9\n")
    assert classify(_one(text)).category == "node_failure"


def test_later_logs_and_lines_break_ties() -> None:
    a = LogText("stdout", "KeyError: 'a'\n")
    b = LogText("stderr", "ValueError: bad b\n")
    r = classify(ClassifyInput(logs=[a, b]))
    assert r.evidence[0].source == "stderr"


def test_exit_data_alone() -> None:
    assert classify(ClassifyInput(exit_code=0, signal=0)).category == "success"
    assert classify(ClassifyInput(exit_code=0, signal=11)).category == "segfault_signal"
    assert classify(ClassifyInput(exit_code=139)).category == "segfault_signal"
    # issue 14: SIGKILL with nothing else is host OOM, at moderate confidence
    r = classify(ClassifyInput(exit_code=0, signal=9))
    assert r.category == "host_oom" and r.confidence < 0.8
    assert classify(ClassifyInput(exit_code=2, signal=0)).category == "unknown"
    assert classify(ClassifyInput(exit_code=127)).category == "import_env"
    assert classify(ClassifyInput(state="OUT_OF_MEMORY", exit_code=0, signal=9)).category == "host_oom"
    assert classify(ClassifyInput(state="NODE_FAIL")).category == "node_failure"
    assert classify(ClassifyInput(state="PREEMPTED")).category == "preempted"
    assert classify(ClassifyInput(state="CANCELLED by 1234", exit_code=0, signal=15)).category == "cancelled_user"
    assert classify(ClassifyInput()).category == "unknown"


def test_exit_zero_with_an_error_in_the_log_lowers_confidence() -> None:
    text = "Traceback (most recent call last):\nValueError: x\n"
    failed = classify(_one(text, exit_code=1))
    zero = classify(_one(text, exit_code=0, signal=0))
    assert failed.category == zero.category == "software_exception"
    assert zero.confidence < failed.confidence


def test_evidence_is_sanitised_and_bounded() -> None:
    nasty = "RuntimeError: CUDA error: an illegal memory access \x1b[31m$(reboot)\x07" + "A" * 5000
    r = classify(_one(nasty))
    text = r.evidence[0].text
    assert "\x1b" not in text and "\x07" not in text and "[31m" not in text
    assert len(text) <= 300
    assert len(r.sentence) < 600


def test_to_dict_round_trips_to_json() -> None:
    import json

    d = classify(_one(OOM_IN_TRACEBACK)).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) == {"category", "responsibility", "confidence", "rule", "evidence", "sentence"}


def test_stack_frames_and_quoted_code_never_match() -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "/home/u/oom_handler/cuda_out_of_memory.py", line 12, in <module>\n'
            '    raise RuntimeError("CUDA out of memory")\n'
            '[rank1]:   File "/srv/nccl_error/segmentation_fault.py", line 3, in step\n'
            '[rank1]:     except torch.cuda.OutOfMemoryError:\n'
            'frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f in /x/libtorch_cuda.so)\n'
            "KeyError: 'batch'\n")
    r = classify(_one(text))
    assert (r.category, r.rule) == ("software_exception", "py.exception")
    assert r.evidence[0].line_no == 7


def test_success_marker_does_not_explain_a_failed_exit() -> None:
    text = "{'train_runtime': 812.3, 'train_samples_per_second': 9.1}\n"
    assert classify(_one(text)).category == "success"
    assert classify(_one(text, exit_code=0, signal=0, state="COMPLETED")).category == "success"
    r = classify(_one(text, exit_code=3, signal=0))
    assert r.category == "unknown" and "exit code 3" in r.sentence
    assert classify(ClassifyInput(state="COMPLETED")).category == "success"
    assert classify(ClassifyInput(state="FAILED")).category == "unknown"


def test_newer_srun_terminating_line_also_marks_the_cancel_as_fallout() -> None:
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.\n"
            "srun: error: gpu7: task 3: Exited with exit code 1\n"
            "srun: launch/slurm: _step_signal: Terminating StepId=12.0\n"
            "slurmstepd: error: *** STEP 12.0 ON gpu7 CANCELLED AT 2024-01-01T00:00:00 ***\n"
            "KeyError: 'late'\n")
    r = classify(_one(text))
    assert r.category == "gpu_oom"


def test_one_ranks_exception_beats_the_watchdog_timeouts_it_causes() -> None:
    text = ("[rank3]: Traceback (most recent call last):\n"
            "[rank3]:   File \"/app/train.py\", line 88, in <module>\n"
            "[rank3]: KeyError: 'pixel_values'\n"
            "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1516, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
            "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1516, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n")
    r = classify(_one(text))
    assert r.category == "software_exception" and "KeyError" in r.evidence[0].text
    # Without the earlier exception the timeout is the answer.
    alone = "\n".join(text.splitlines()[3:])
    assert classify(_one(alone)).category == "nccl_comm"


def test_a_huge_single_line_is_judged_by_its_end() -> None:
    # tqdm redraws joined by "\r" make one enormous line; the crash is printed at its end.
    bar = "".join(f"\rEpoch 0: {i}/?? [00:{i % 60:02d}<00:00, 9.51it/s, loss=0.41]" for i in range(20000))
    r = classify(_one(bar + "Fatal Python error: Segmentation fault\n"))
    assert r.category == "segfault_signal"
    assert len(r.evidence[0].text) <= 300


def test_odd_inputs_are_classified_not_raised() -> None:
    r = classify(ClassifyInput(logs=[LogText("b", b"KeyError: 1\n"), LogText("n", None)],  # type: ignore[arg-type]
                               exit_code="1", signal=None, state=7, reason=3,  # type: ignore[arg-type]
                               xids=["junk", {"xid": "x"}], dcgm_failures=[None], ib_problems=[5]))  # type: ignore[list-item]
    assert r.category == "network_fabric" and r.rule == "node.ib"
    r = classify(ClassifyInput(logs=[LogText("b", b"KeyError: 1\n")], exit_code="1"))  # type: ignore[arg-type]
    assert r.category == "software_exception"
    assert classify(ClassifyInput(state="OUT_OF_ME+", exit_code=0, signal=9)).category == "host_oom"
    assert classify(ClassifyInput(state="JobState=TIMEOUT")).category == "timeout_walltime"
    assert classify(ClassifyInput(logs=[LogText("e", "")], exit_code=None)).category == "unknown"
