"""Numerics of the drivetrain elements; no FMI import anywhere in this package."""
