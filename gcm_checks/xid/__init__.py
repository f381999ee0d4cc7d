"""XIDs: NVIDIA's catalog, the kernel-line parser, and the windowed scan.

Import the submodules you need (``gcm_checks.xid.catalog``, ``.parse``,
``.scan``); this package imports nothing so the epilog pays only for them.
"""
