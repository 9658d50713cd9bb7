"""`python -m drivetrain_cli ...`: the drivetrain-fmu command."""
import sys

from drivetrain_cli import main

sys.exit(main())
