"""Every code in NVIDIA's XID catalog, and how gcm-checks judges it.

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, the
Xid-Catalog.xlsx spreadsheet: codes 1-172, the "XID 144-150 Decode" sheet and
the "Fault Resolution Buckets" sheet). Codes NVIDIA marks "Unused" are kept so
``gcm-checks xid explain`` answers for every number an old driver can print.

Each row keeps NVIDIA's mnemonic, description and two resolution buckets
(immediate, investigatory) verbatim, plus our judgement:

* ``responsibility``: who caused it - application, driver, hardware,
  thermal_power, nvlink_fabric;
* ``action``: what an operator does - none, restart_app, reset_gpu, reboot,
  drain_inspect;
* ``severity``: info (nothing to do), warn (report, never drain), fail (the
  GPU must not take another job until the action is done: drain).

Why the judgement is ours and not a grep: peers either drained on every XID
(hundreds of nodes drained for XID 13/31/43/45, which are the user's own
bugs) or on none. The rule here: a code drains only when NVIDIA's immediate
action is a GPU reset or a reboot (the GPU is unusable or wrong until then) or
the hardware needs a person (aux power unplugged, remap failure). Application
codes are always ``info``; codes that hint at driver trouble are ``warn``.
Codes whose meaning depends on the message (94 containment, 144-150 NVLink5
sub-codes, 154 recovery action) are refined by ``assess``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

RESPONSIBILITIES = ("application", "driver", "hardware", "thermal_power", "nvlink_fabric")
ACTIONS = ("none", "restart_app", "reset_gpu", "reboot", "drain_inspect")
SEVERITIES = ("info", "warn", "fail")

# What each action means to an operator, for messages and drain reasons.
ACTION_TEXT = {
    "none": "no action",
    "restart_app": "restart the application",
    "reset_gpu": "reset GPU",
    "reboot": "reboot the node",
    "drain_inspect": "drain for inspection",
}

# NVIDIA's "Fault Resolution Buckets" sheet, shortened.
NVIDIA_BUCKETS = {
    "CONTACT_SUPPORT": "Contact your support organization.",
    "RESTART_APP": "Restart the application; a GPU reset or reboot is not needed.",
    "IGNORE": "No action required.",
    "RESET_GPU": "Reset the GPU (or reboot the node).",
    "RESTART_BM": "Restart the bare-metal system.",
    "RESTART_VM": "Restart the VM that owns the GPU.",
    "CHECK_MECHANICALS": "Check device seating and every connection to it.",
    "UPDATE_SWFW": "Update firmware and software to the latest versions.",
    "CHECK_APP/CUDA": "Likely an application passing bad data; the pid identifies it.",
    "INVESTIGATE_SW": "Investigate user or NVIDIA software.",
    "WORKFLOW_XID_13": "Repeats on the same TPC/GPC: run DCGM diagnostics (possible hardware); solo: check the application.",
    "WORKFLOW_XID_31": "Repeat MMU faults on the same GPU: run DCGM diagnostics; on different GPUs: check the application.",
    "WORKFLOW_XID_45": "Solo: restart Fabric Manager; with other XIDs: follow those.",
    "WORKFLOW_XID_48": "Solo: reset GPU; with 63/64: drain and reset; run field diagnostics if SRAM thresholds are exceeded.",
    "WORKFLOW_NVLINK_ERR": "Decode the NVLink registers; repeated after reset: contact the hardware vendor.",
    "WORKFLOW_NVLINK5_ERR": "Decode the sub-code and error status (XID 144-150 decode sheet).",
    "XID_154": "Follow the recovery action XID 154 reports.",
    "CHECK_UVM": "If UVM/vGPU is used, reset the GPU; otherwise ignore.",
}


@dataclass(frozen=True)
class XidInfo:
    code: int
    mnemonic: str
    name: str  # NVIDIA's description
    cause: str  # likely cause, in our words
    responsibility: str
    action: str
    severity: str
    nvidia_immediate: str
    nvidia_investigate: str
    in_use: bool = True  # False: NVIDIA lists it "Unused" (Volta and older)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "mnemonic": self.mnemonic,
            "name": self.name,
            "cause": self.cause,
            "responsibility": self.responsibility,
            "action": self.action,
            "action_text": ACTION_TEXT[self.action],
            "severity": self.severity,
            "nvidia_immediate": self.nvidia_immediate,
            "nvidia_investigate": self.nvidia_investigate,
            "in_use": self.in_use,
        }


_UNUSED_CAUSE = "Not raised on Ampere or newer GPUs (NVIDIA lists it as unused; Volta and older)."

# (code, mnemonic, description, immediate, investigatory, responsibility, action, severity, cause)
# A row with description None is an "Unused" code.
_ROWS: Tuple[tuple, ...] = (
    (1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", None),
    (2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", None),
    (3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", None),
    (4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", None),
    (5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", None),
    (6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", None),
    (7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", None),
    (8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "RESTART_APP", "CONTACT_SUPPORT",
     "application", "restart_app", "info", "A channel stopped making progress, usually a hung or killed kernel."),
    (9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", None),
    (10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", None),
    (11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", "RESTART_APP", "CHECK_APP/CUDA",
     "application", "restart_app", "info", "The application sent the GPU invalid commands."),
    (12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", None),
    (13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "Graphics Engine Exception", "RESTART_APP",
     "WORKFLOW_XID_13", "application", "restart_app", "info",
     "User application fault: out-of-bounds access, illegal instruction or register (rarely hardware)."),
    (14, "ROBUST_CHANNEL_FAKE_ERROR", "Fake or injected error from userspace", "IGNORE", "CONTACT_SUPPORT",
     "application", "none", "info", "An error injected from user space for testing."),
    (15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", None),
    (16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", None),
    (17, "ROBUST_CHANNEL_PARAMETER_ERROR", None),
    (18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", None),
    (19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", None),
    (20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", None),
    (21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", None),
    (22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", None),
    (23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", None),
    (24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", None),
    (25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", "RESTART_APP", "CHECK_APP/CUDA",
     "application", "restart_app", "info", "The application sent the GPU an illegal command stream."),
    (26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", None),
    (27, "ROBUST_CHANNEL_VP_ERROR", None),
    (28, "ROBUST_CHANNEL_VP2_ERROR", None),
    (29, "ROBUST_CHANNEL_BSP_ERROR", None),
    (30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", None),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "RESTART_APP", "WORKFLOW_XID_31",
     "application", "restart_app", "info", "Illegal address access by the application (MMU fault); rarely driver or hardware."),
    (32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "RESTART_APP", "CHECK_APP/CUDA",
     "hardware", "restart_app", "warn", "DMA controller fault on the PCIe stream: mostly PCIe link quality, rarely the user."),
    (33, "ROBUST_CHANNEL_SEC_ERROR", None),
    (34, "ROBUST_CHANNEL_MSVLD_ERROR", None),
    (35, "ROBUST_CHANNEL_MSPDEC_ERROR", None),
    (36, "ROBUST_CHANNEL_MSPPP_ERROR", None),
    (37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "IGNORE", "CHECK_APP/CUDA",
     "driver", "none", "warn", "GPU firmware (FECS) got a method it does not implement."),
    (38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "warn", "GPU firmware (FECS) watchdog timeout."),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 0 exception."),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 1 exception."),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 2 exception."),
    (42, "ROBUST_CHANNEL_VIC_ERROR", None),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "IGNORE", "CONTACT_SUPPORT",
     "application", "none", "info", "The application hit a software-induced fault and was stopped; the GPU stays healthy."),
    (44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "warn", "Graphics engine fault during a context switch."),
    (45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors", "WORKFLOW_XID_45",
     "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)", "application", "none", "info",
     "The driver tore down an application that was aborted (Ctrl-C, kill, GPU reset) or hit by another XID."),
    (46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "RESET_GPU", "CONTACT_SUPPORT",
     "driver", "reset_gpu", "fail", "The GPU stopped processing; it needs a reset before the next job."),
    (47, "ROBUST_CHANNEL_NVENC0_ERROR", None),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "WORKFLOW_XID_48", "WORKFLOW_XID_48",
     "hardware", "reset_gpu", "fail", "Uncorrectable (double-bit) ECC error in GPU memory; a reset or reboot clears it."),
    (49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", None),
    (50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", None),
    (51, "SILENT_RUNNING_STRESS_TEST_FAILURE", None),
    (52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", None),
    (53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", None),
    (54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS",
     "CONTACT_SUPPORT", "thermal_power", "drain_inspect", "fail",
     "Auxiliary power cable not connected: the GPU runs at reduced clocks until someone reseats it."),
    (55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", None),
    (56, "DISPLAY_CHANNEL_EXCEPTION", None),
    (57, "FB_LINK_TRAINING_FAILURE_ERROR", None),
    (58, "FB_MEMORY_ERROR", None),
    (59, "PMU_ERROR", None),
    (60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "RESTART_APP", "INVESTIGATE_SW",
     "driver", "restart_app", "warn", "SEC2 (security/video) engine exception."),
    (61, "PMU_BREAKPOINT", None),
    (62, "PMU_HALT_ERROR", "Internal micro-controller halt", "RESET_GPU", "CONTACT_SUPPORT",
     "hardware", "reset_gpu", "fail", "The GPU's internal PMU micro-controller halted."),
    (63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "IGNORE", "IGNORE",
     "hardware", "reset_gpu", "fail",
     "ECC error handled by row remapping (page retirement on older GPUs); the remap takes effect after a GPU reset."),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "RESET_GPU", "CONTACT_SUPPORT",
     "hardware", "drain_inspect", "fail",
     "Row remapping (page retirement) failed, usually no spare rows left: the GPU is an RMA candidate."),
    (65, "ROBUST_CHANNEL_NVENC1_ERROR", None),
    (66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "IGNORE", "INVESTIGATE_SW",
     "driver", "none", "warn", "Illegal register access by the driver."),
    (67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "warn", "Illegal access by the driver (verification violation)."),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 0 exception."),
    (69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "RESTART_APP", "CHECK_APP/CUDA",
     "application", "restart_app", "info", "The application used a graphics class the engine rejected."),
    (70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 3 error."),
    (71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 4 error."),
    (72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 5 error."),
    (73, "ROBUST_CHANNEL_NVENC2_ERROR", None),
    (74, "NVLINK_ERROR", "NVLINK Error", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT",
     "nvlink_fabric", "reset_gpu", "fail",
     "NVLink connection to another GPU or NVSwitch failed (this link or the remote end); a reset or reboot clears it."),
    (75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 6 error."),
    (76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 7 error."),
    (77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 8 error."),
    (78, "VGPU_START_ERROR", "vGPU Start Error", "UPDATE_SWFW", "UPDATE_SWFW",
     "driver", "none", "warn", "vGPU could not start: guest/host driver mismatch or unsupported vGPU type."),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "RESTART_BM", "CONTACT_SUPPORT",
     "hardware", "reboot", "fail",
     "The GPU is not reachable over PCIe: link failure, failing GPU, power; only a reboot brings it back."),
    (80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "RESTART_APP", "CHECK_APP/CUDA",
     "driver", "restart_app", "warn", "Push buffer CRC mismatch: the command stream arrived corrupted."),
    (81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", None),
    (82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 0 error."),
    (83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 1 error."),
    (84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 2 error."),
    (85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 9 error."),
    (86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Optical flow accelerator exception."),
    (87, "NVTELEMETRY_DRIVER_REPORT", None),
    (88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 3 error."),
    (89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 4 error."),
    (90, "LTC_ERROR", None),
    (91, "RESERVED_XID", None),
    (92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "IGNORE", "CONTACT_SUPPORT",
     "hardware", "none", "warn", "Many corrected single-bit ECC errors: memory may be degrading."),
    (93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit", "IGNORE",
     "CONTACT_SUPPORT", "driver", "none", "warn",
     "InfoROM not updated because of the wear limit set with nvflash; clear it with nvflash --elsessionclear."),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "RESTART_APP", "IGNORE (sympathetic)",
     "hardware", "restart_app", "warn",
     "A memory (ECC) error contained to one application; restart it, reset the GPU when convenient."),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "RESET_GPU", "IGNORE (sympathetic)",
     "hardware", "reset_gpu", "fail",
     "A memory (ECC) error that could not be contained: every application is affected; reset the GPU."),
    (96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 5 error."),
    (97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 6 error."),
    (98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Video decoder 7 error."),
    (99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 1 error."),
    (100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 2 error."),
    (101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 3 error."),
    (102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 4 error."),
    (103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 5 error."),
    (104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 6 error."),
    (105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "JPEG engine 7 error."),
    (106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "IGNORE", "IGNORE",
     "driver", "none", "info", "Test message sent through the SMBus post-box interface."),
    (107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "IGNORE", "IGNORE",
     "driver", "none", "info", "Silent test message sent through the SMBus post-box interface."),
    (108, "NVLINK_REMOTE_TRANSLATION_ERROR", "NVLink remote translation error (unused)", "IGNORE", "XID_137_FLOW",
     "application", "none", "info", "Illegal NVLink peer access; handled like XID 137 (application)."),
    (109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "RESET_GPU", "CONTACT_SUPPORT",
     "driver", "reset_gpu", "fail", "A context switch timed out; the GPU needs a reset."),
    (110, "SEC_FAULT_ERROR", "Security Fault Error", "RESET_GPU", "INVESTIGATE_SW",
     "hardware", "reboot", "fail",
     "Security fault, uncommon unless hardware failed: revert hardware changes and cold-reset the system."),
    (111, "BUNDLE_ERROR_EVENT", None),
    (112, "DISP_SUPERVISOR_ERROR", None),
    (113, "DP_LT_FAILURE", None),
    (114, "HEAD_RG_UNDERFLOW", None),
    (115, "CORE_CHANNEL_REGS", None),
    (116, "WINDOW_CHANNEL_REGS", None),
    (117, "CURSOR_CHANNEL_REGS", None),
    (118, "HEAD_REGS", None),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "RESET_GPU", "INVESTIGATE_SW",
     "driver", "reset_gpu", "fail",
     "The GPU System Processor (GSP firmware) did not answer an RPC; reset the GPU, power-cycle if it persists."),
    (120, "GSP_ERROR", "GSP Error", "RESET_GPU", "INVESTIGATE_SW",
     "driver", "reset_gpu", "fail", "Error in code running on the GPU System Processor (GSP); reset the GPU."),
    (121, "C2C_ERROR", "C2C Error", "IGNORE", "CONTACT_SUPPORT",
     "nvlink_fabric", "none", "warn", "Corrected errors on the C2C NVLink to the Grace CPU; reset at a service window."),
    (122, "SPI_PMU_RPC_READ_FAIL", None),
    (123, "SPI_PMU_RPC_WRITE_FAIL", None),
    (124, "SPI_PMU_RPC_ERASE_FAIL", None),
    (125, "INFOROM_FS_ERROR", None),
    (126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 10 error."),
    (127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 11 error."),
    (128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 12 error."),
    (129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 13 error."),
    (130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 14 error."),
    (131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 15 error."),
    (132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 16 error."),
    (133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 17 error."),
    (134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 18 error."),
    (135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Copy engine 19 error."),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", "RESET_GPU", "INVESTIGATE_LINK_SI",
     "nvlink_fabric", "reset_gpu", "fail", "NVLink link training failed; reset the GPU, then check link signal integrity."),
    (137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "IGNORE", "XID_137_FLOW",
     "application", "none", "info", "Illegal NVLink peer-to-peer access by an application (remote MMU fault)."),
    (138, "ROBUST_CHANNEL_DLA_ERROR", None),
    (139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "RESTART_APP", "CONTACT_SUPPORT",
     "driver", "restart_app", "warn", "Optical flow accelerator 1 error."),
    (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "RESET_GPU", "CONTACT_SUPPORT",
     "hardware", "reset_gpu", "fail",
     "Uncorrectable memory errors the driver could not offline or remap; reset, and call the vendor if it repeats."),
    (141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "warn", "CUDA fast-path error."),
    (142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "CONTACT_SUPPORT", "",
     "driver", "restart_app", "warn", "Video encoder 3 error."),
    (143, "GPU_INIT_ERROR", "GPU Initialization Error", "RESET_GPU", "CONTACT_SUPPORT",
     "hardware", "reset_gpu", "fail", "The GPU failed to initialise."),
    (144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 SAW unit error; the sub-code and Fatal/Nonfatal decide."),
    (145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 RLW unit error; the sub-code and Fatal/Nonfatal decide."),
    (146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 TLW unit error; the sub-code and Fatal/Nonfatal decide."),
    (147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 TREX unit error (not expected in production)."),
    (148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 NVLPW control error."),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "none", "warn", "NVLink5 NETIR error (link events, BER, MFDE); link-fatal ones need a GPU reset."),
    (150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
     "nvlink_fabric", "reset_gpu", "fail", "NVLink5 management (MSE) firmware degraded or watchdog: fatal, reset the GPU."),
    (151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "RESTART_VM", "CONTACT_SUPPORT",
     "driver", "reboot", "fail", "Confidential-computing key rotation failed; restart the VM (node) that owns the GPU."),
    (152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "info", "Deep learning accelerator SMMU error (embedded parts only)."),
    (153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "IGNORE", "CONTACT_SUPPORT",
     "driver", "none", "info", "Deep learning accelerator timeout (embedded parts only)."),
    (154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "XID_154",
     "N/A Informational only regarding another Xid", "hardware", "none", "warn",
     "Summarises the recovery action another XID requires; the action named in the message decides."),
    (155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "RESET_GPU", "INVESTIGATE_SW_USER",
     "nvlink_fabric", "reset_gpu", "fail", "An NVLink went down on purpose (e.g. to sleep); the GPU needs a reset."),
    (156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "RESET_GPU", "IGNORE",
     "hardware", "reset_gpu", "fail", "A faulty GPU resource was retired; the retirement takes effect after a reset."),
    (157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "IGNORE", "CONTACT_SUPPORT",
     "hardware", "none", "warn", "No spare resources left to repair with; jobs may see the same XID again."),
    (158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "RESET_GPU", "CONTACT_SUPPORT",
     "hardware", "reset_gpu", "fail", "Fatal GPU timeout."),
    (159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO",
     "nvlink_fabric", "none", "warn", "C2C (CHI) non-data error; reset only when UVM/vGPU is in use."),
    (160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "IGNORE", "INVESTIGATE_SW",
     "driver", "none", "warn", "A channel was retired."),
    (161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "IGNORE", "INVESTIGATE_SW",
     "driver", "none", "warn", "A channel could not be retired."),
    (162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", "", "",
     "thermal_power", "none", "info", "Power smoothing circuitry is working again."),
    (163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", "", "",
     "thermal_power", "none", "warn", "Power smoothing off (thermal event or timeout); no reset needed."),
    (164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", "", "",
     "thermal_power", "none", "warn", "Power smoothing circuitry near end of life; it will be disabled soon."),
    (165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", "", "",
     "thermal_power", "none", "warn", "Power smoothing disabled for good; replace the GPU if power swings matter."),
    (166, "NVLINK_SECURE_CRYPTO_ERR", "CC traffic seen prior to link properly being configured for encrypted traffic",
     "", "", "nvlink_fabric", "none", "warn", "Confidential-computing mode only."),
    (167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", "", "",
     "hardware", "reboot", "fail", "Fatal PCIe timeout talking to the GPU."),
    (168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)", "", "",
     "hardware", "drain_inspect", "fail",
     "Memory errors in the write-protected region with ECC disabled: enable ECC or reboot with a shifted WPR."),
    (169, "SEC2_HALT_ERROR", "Internal micro-controller halt", "", "",
     "hardware", "reset_gpu", "fail", "The SEC2 micro-controller halted."),
    (170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", "", "",
     "nvlink_fabric", "none", "warn", "Confidential-computing mode only."),
    (171, "UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (detail for Xid 48)", "", "",
     "hardware", "reset_gpu", "fail", "Uncorrectable error in GPU DRAM; accompanies XID 48."),
    (172, "UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (detail for Xid 48)", "", "",
     "hardware", "reset_gpu", "fail",
     "Uncorrectable error in on-chip SRAM; accompanies XID 48. Check the SRAM threshold flag and run field diagnostics."),
)


def _build() -> Dict[int, XidInfo]:
    out: Dict[int, XidInfo] = {}
    for row in _ROWS:
        code, mnemonic = row[0], row[1]
        if row[2] is None:
            info = XidInfo(code, mnemonic, "Unused", _UNUSED_CAUSE, "driver", "none", "warn",
                           "CONTACT_SUPPORT", "N/A; Unused", in_use=False)
        else:
            _, _, name, imm, inv, resp, action, sev, cause = row
            info = XidInfo(code, mnemonic, name, cause, resp, action, sev, imm, inv)
        assert info.responsibility in RESPONSIBILITIES and info.action in ACTIONS and info.severity in SEVERITIES, code
        out[code] = info
    return out


CATALOG: Dict[int, XidInfo] = _build()
MAX_CODE = max(CATALOG)


def lookup(code: int) -> XidInfo:
    """The catalog row, or a row saying the code is unknown.

    An unknown code (a newer driver than this table) is ``warn``: we cannot
    tell whether it is bad, and "could not tell" never drains (rule 2).
    """
    info = CATALOG.get(code)
    if info is not None:
        return info
    return XidInfo(code, "UNKNOWN", f"Unknown XID {code} (not in NVIDIA's catalog as of R575)",
                   "Not in this catalog: a newer driver? Look it up in NVIDIA's current XID catalog.",
                   "driver", "none", "warn", "", "", in_use=False)


@dataclass(frozen=True)
class Assessment:
    """The judgement for one occurrence: the catalog row refined by the message."""

    severity: str
    responsibility: str
    action: str
    name: str
    note: str = ""  # why the message changed the catalog default


# XID 154: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot
# Required)"; NVIDIA lists the texts None, Drain P2P, Drain and Reset, GPU
# Reset Required, Node Reboot Required. Order matters: first match wins.
_RECOVERY_ACTIONS: Tuple[Tuple[str, str, str], ...] = (
    ("reboot", "reboot", "fail"),
    ("drain and reset", "reset_gpu", "fail"),
    ("drain p2p", "reset_gpu", "fail"),
    ("reset", "reset_gpu", "fail"),
    ("none", "none", "info"),
)


def recovery_action(text: str) -> Optional[Tuple[str, str]]:
    """Map XID 154's recovery-action text to (action, severity)."""
    low = text.lower()
    for needle, action, sev in _RECOVERY_ACTIONS:
        if needle in low:
            return action, sev
    return None


def assess(code: int, decoded: Optional[Mapping[str, object]] = None) -> Assessment:
    """Judge one occurrence of ``code`` given what the parser decoded from it.

    ``decoded`` keys (all optional): ``recovery_action`` (154),
    ``reset_required`` / ``drain_reset_required`` (94/95 "RST: Yes, D-RST: No"),
    ``nvlink_fatal``, ``nvlink_injected``, ``nvlink_subcode`` (144-150).
    """
    info = lookup(code)
    d = decoded or {}
    sev, resp, action, note = info.severity, info.responsibility, info.action, ""
    if code == 154 and d.get("recovery_action"):
        mapped = recovery_action(str(d["recovery_action"]))
        if mapped:
            action, sev = mapped
            note = f"recovery action: {d['recovery_action']}"
    elif code == 94 and (d.get("reset_required") or d.get("drain_reset_required")):
        # Newer drivers say whether the contained error still needs a reset.
        action, sev, note = "reset_gpu", "fail", "driver reports a reset is required"
    elif 144 <= code <= 150 and "nvlink_fatal" in d:
        sub = d.get("nvlink_subcode") or "?"
        if d.get("nvlink_injected"):
            action, sev, note = "none", "info", f"{sub}: injected error (test)"
        elif d["nvlink_fatal"]:
            action, sev, note = "reset_gpu", "fail", f"{sub}: fatal"
        else:
            action, sev, note = "none", "warn", f"{sub}: non-fatal"
    return Assessment(sev, resp, action, info.name, note)
