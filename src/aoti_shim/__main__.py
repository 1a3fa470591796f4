from __future__ import annotations

from aoti_shim.cli import main

raise SystemExit(main())
