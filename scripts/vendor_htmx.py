"""Refresh the vendored htmx 2.0.x and htmx-ext-sse 2.2.x from the npm registry.

We stay on htmx 2: htmx 4 streams SSE over fetch and changed the attributes, while
htmx 2's extension uses the browser's EventSource, which resends Last-Event-ID on
reconnect (the live view relies on that). Files land in static/vendor/ with their
versions in the names; older copies are removed.

Usage: python scripts/vendor_htmx.py
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import urllib.request
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"
VENDOR = Path(__file__).resolve().parent.parent / "static" / "vendor"
# (npm package, version prefix we accept, file inside the tarball, local name stem)
PACKAGES = [
    ("htmx.org", "2.0.", "package/dist/htmx.min.js", "htmx"),
    ("htmx-ext-sse", "2.2.", "package/dist/sse.min.js", "htmx-ext-sse"),
]


def _newest(package: str, prefix: str) -> tuple[str, str]:
    with urllib.request.urlopen(f"{REGISTRY}/{package}", timeout=30) as response:
        meta = json.load(response)
    versions = [v for v in meta["versions"] if v.startswith(prefix) and re.fullmatch(r"[\d.]+", v)]
    best = max(versions, key=lambda v: tuple(int(part) for part in v.split(".")))
    return best, meta["versions"][best]["dist"]["tarball"]


def _extract(tarball_url: str, member: str) -> bytes:
    with urllib.request.urlopen(tarball_url, timeout=60) as response:
        data = response.read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        extracted = archive.extractfile(member)
        if extracted is None:
            raise SystemExit(f"{tarball_url}: {member} is not a file")
        return extracted.read()


def main() -> None:
    VENDOR.mkdir(parents=True, exist_ok=True)
    for package, prefix, member, stem in PACKAGES:
        version, tarball = _newest(package, prefix)
        target = VENDOR / f"{stem}-{version}.min.js"
        for old in VENDOR.glob(f"{stem}-[0-9]*.min.js"):
            if old != target:
                old.unlink()
        target.write_bytes(_extract(tarball, member))
        print(f"{package} {version} -> {target.relative_to(VENDOR.parent.parent)}")


if __name__ == "__main__":
    main()
