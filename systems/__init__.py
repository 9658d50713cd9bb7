"""The machinery that runs drivetrains assembled from the element FMUs: the master
(master), SSP files (ssp), the system as one FMU (composite, composite_slave), multi-rate
steps (rates), what a run records (signals), studies (study); the documented systems
themselves are the catalog (systems.catalog)."""
