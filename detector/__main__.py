from __future__ import annotations

import sys

from detector.cli.main import main

sys.exit(main())
