from __future__ import annotations

import sys

from detector.cli import main

sys.exit(main())
