"""Make sure Node and the TypeScript library's packages exist for the interop tests, and axe-core
(testkit/rejelly/package.json) for the browser tests' accessibility checks (e2e/axe.py).

The tests run `@rejelly/core` (vendored in testkit/rejelly/vendor) under Node. As root on Debian
without a `node`, install Debian's `nodejs` and `npm`; then `npm install` in testkit/rejelly when
its node_modules do not match its package.json. A machine where this fails fails here, loudly:
the interop tests never skip for want of Node.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "testkit" / "rejelly"
STAMP = FOLDER / "node_modules" / ".installed"


def apt_install(*packages: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    if subprocess.run(install, env=env, check=False).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, check=True)
        subprocess.run(install, env=env, check=True)


def main() -> int:
    missing = [tool for tool, package in (("node", "nodejs"), ("npm", "npm")) if shutil.which(tool) is None]
    if missing:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            print(f"ensure_node: {', '.join(missing)} missing: install Node 18 or newer with npm", file=sys.stderr)
            return 1
        apt_install(*("nodejs" if tool == "node" else "npm" for tool in missing))
    manifest = FOLDER / "package.json"
    if STAMP.exists() and STAMP.stat().st_mtime >= manifest.stat().st_mtime:
        return 0
    npm = shutil.which("npm")
    assert npm is not None
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-package-lock"], cwd=FOLDER, check=True)
    STAMP.touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
