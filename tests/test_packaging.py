"""The wheel carries static/, templates/ and the price table, and an installed wheel finds them; not testkit/.
It registers the pytest plugin (`pytest11`), so installing devtool is all a project does to use cassettes."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_wheel_contains_assets_and_finds_them(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("devtool-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    assert "devtool/_assets/templates/base.html" in names
    assert "devtool/_assets/static/app.css" in names
    assert any(n.startswith("devtool/_assets/static/vendor/htmx-2.0.") for n in names)
    assert any(n.startswith("devtool/_assets/static/vendor/htmx-ext-sse-2.2.") for n in names)
    assert "devtool/core/providers/prices.json" in names
    assert not any(n.startswith("testkit/") for n in names)
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    registered = (tmp_path / "site" / entry_points).read_text()
    assert "[pytest11]\ndevtool = devtool.testing.plugin\n" in registered

    # Run from the unpacked wheel, not the checkout: the assets must come from inside it.
    probe = (
        "from devtool.web.assets import asset_dir, vendored;"
        "from devtool.core.providers.pricing import load_price_table;"
        "print(asset_dir('static')); print(asset_dir('templates')); print(vendored('htmx'));"
        "print(load_price_table().taken)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site")},
    ).stdout.split()
    assert out[0] == str(tmp_path / "site" / "devtool" / "_assets" / "static")
    assert out[1] == str(tmp_path / "site" / "devtool" / "_assets" / "templates")
    assert out[2].startswith("htmx-2.0.")
    assert out[3] == "2026-12-01"
