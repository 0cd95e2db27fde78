"""DuckDB 1.5.5's Python client, where pandas is not installed, without a search for it at every parameter.

For each parameter of a statement (each element, for a list) the client tries `import pandas`, twice.
Where pandas is not installed, Python does not remember the failure: every try searches `sys.path`
again, about 90 µs on an idle machine and up to 0.7 ms under load. The runs search's snippets (fifty
finds of a few statements each) spent a third of their 0.73 s there. A `None` in `sys.modules` makes
the import fail at once, the way Python documents for a module known to be absent. It is set only
when pandas cannot be found at all, so a process that has pandas keeps it (the DevTool does not need
it; installing it while a process runs would need that process restarted).
"""

from __future__ import annotations

import importlib.util
import sys


def skip_lookups() -> None:
    """Mark pandas absent for this process, when it is (once a process; repeated calls do nothing)."""
    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.modules["pandas"] = None  # type: ignore[assignment]
