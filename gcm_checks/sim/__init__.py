"""Simulated node: replaces hardware only (NVML, sysfs, kernel log, dcgmi).

Slurm is never simulated. See docs/simulation.md for the scenario schema.
"""
