import sys

from lazymcp.cli import main

sys.exit(main())
