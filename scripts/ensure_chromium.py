"""Make sure a Chromium exists for the browser tests.

Playwright cannot download its own browser on this kind of machine, so as root on Debian we
install Debian's `chromium` (the e2e fixtures point Playwright at /usr/bin/chromium); anywhere
else we fall back to `playwright install chromium`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")


def main() -> int:
    if DEBIAN_CHROMIUM.exists():
        return 0
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        if subprocess.run(install, env=env, check=False).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, check=True)
            subprocess.run(install, env=env, check=True)
        return 0
    return subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
