"""The documented systems (docs/systems.md, REFERENCE_CASES.md): one SSP file each in
``ssd/`` (read by ``systems.ssp.load_system``), the modules that name their parameters and
signals (``z3``, ``fan``, ``r3``, ``msl``), the monolithic references they are checked
against (``reference``, ``powered_vehicle``) and the baselines of Reiter's comparisons
(``pwa_methods``, ``thesis_clearance``).  The machinery that reads and runs them (master,
SSP, the system FMU) is ``systems``, beside this package."""
