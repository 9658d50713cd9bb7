"""`python -m drivetrain_fmu.cli ...`: the drivetrain-fmu command."""
import sys

from drivetrain_fmu.cli import main

sys.exit(main())
