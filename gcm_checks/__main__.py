import sys

from gcm_checks.cli import main

sys.exit(main())
