"""``python -m bench [--quick] [--json FILE] [--only SECTION...]``: see bench/README.md."""

from bench.harness import main

raise SystemExit(main())
