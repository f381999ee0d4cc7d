"""The scenario schema's names: the keys a scenario may use and its error.

Its own module so that ``sim/scenario`` (which loads scenarios and expands
the PCI view through ``sim/tree``) and ``sim/tree`` (which validates the
``pci`` section) both read it without importing each other.
"""

from __future__ import annotations

TOP_KEYS = {"description", "extends", "gpus", "infiniband", "kernel_log", "dcgm_diag", "nvml_init_error",
            "nvml_init_hang", "driver_version", "perf", "boot_time", "pci"}
GPU_KEYS = {"index", "pci_bus_id", "name", "uuid", "lost", "hang", "ecc_uncorrected_volatile", "ecc_other",
            "retired_pages_pending", "remapped_rows", "temperature_c", "pcie", "throttle_reasons",
            "persistence_mode", "processes", "unsupported", "nvml_errors", "perf",
            "sm_clock_mhz", "power_w"}  # sampled by gcm-run on a straggling node
PCI_KEYS = {"nvidia_module", "gpus", "hcas", "other"}


class ScenarioError(ValueError):
    pass
