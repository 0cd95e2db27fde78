"""Make sure Debian's PostgreSQL (its `initdb` and `pg_ctl`) exists for the lake's tests.

The tests start a throw-away cluster of their own (`testkit/postgres.py`); none is left running. As
root on Debian this installs the `postgresql` package when it is missing (apt-get update only when
the install fails on stale lists); anywhere else it says what to install and fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INITDB = Path("/usr/lib/postgresql/15/bin/initdb")


def main() -> int:
    if INITDB.exists():
        return 0
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "postgresql"]
        if subprocess.run(install, env=env, check=False).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, check=True)
            subprocess.run(install, env=env, check=True)
        # Debian's package starts a cluster of its own; the tests need none running.
        subprocess.run(["pg_ctlcluster", "15", "main", "stop"], env=env, check=False, capture_output=True)
        return 0 if INITDB.exists() else 1
    print(f"PostgreSQL 15 is needed for the lake tests ({INITDB}): install Debian's postgresql", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
