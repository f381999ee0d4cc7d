"""Gatherers: read hardware once into frozen snapshots; checks judge them.

Every hardware reader lives here (NVML, sysfs InfiniBand and PCI, DCGM, the
kernel log). The XID and DCGM gatherers reach theirs through ``sources``: the
host's by default, or what the context builder injected (simulation's fakes).
"""
