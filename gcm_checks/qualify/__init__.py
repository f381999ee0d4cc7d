"""Node qualification: run every suite plus a performance probe before a node
enters production, and publish the outcome in Slurm.

A GPU that is alive but slow is worse than a dead one: every synchronous job
that lands on it runs at its pace. Qualification therefore judges speed as
well as health, against a per-model baseline and against the node's other
GPUs.

Modules, each one concern:

* ``baselines`` - expected figures per GPU model (shipped data + config);
* ``probe`` - measuring: simulation, PyTorch, CuPy, DCGM targeted tests;
* ``judge`` - pure functions from measurements to results;
* ``levels`` - what quick / standard / deep run;
* ``results`` - the versioned JSON result file (atomic) the fleet report reads;
* ``qualification`` - the orchestration the ``qualify`` command calls: run
  the level's phases, then publish the outcome.

Nothing here is imported on the prolog path; PyTorch and CuPy are imported
only inside the probe that uses them.
"""
