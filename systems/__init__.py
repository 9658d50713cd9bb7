"""Documented drivetrains assembled from the element FMUs, and the master that runs them."""
