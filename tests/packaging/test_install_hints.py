"""Hints that name an optional extra say how to add it where hedwig runs: from a checkout
`make extras EXTRAS=zk` (an editable `.venv/bin/pip install -e '.[zk]'`), never `pip
install 'hedwig[zk]'`, which fetches an unrelated project from the package index."""

import re
import subprocess
import sys

from hedwig.config.extras import install_hint
from hedwig.testing.hubprocess import hub_environment
from tests.hubprocess import ROOT

WRONG = re.compile(r"install\s+['\"]?hedwig\[")


def test_no_hint_anywhere_installs_hedwig_from_the_package_index():
    files = [ROOT / "README.md", ROOT / "Makefile", *ROOT.glob("docs/*.md"), *ROOT.glob("hedwig/**/*.py")]
    wrong = [
        f"{f.relative_to(ROOT)}: {line.strip()}"
        for f in files
        for line in f.read_text().splitlines()
        if WRONG.search(line)
    ]
    assert wrong == []


def test_a_checkout_is_told_the_make_target_and_the_editable_install():
    assert (
        install_hint("zk") == f"make extras EXTRAS=zk in {ROOT} (or .venv/bin/pip install -e '.[zk]' there)"
    )
    # An installed copy (no checkout) is told the extra's packages, from its metadata.
    assert install_hint("zk", checkout=None) == "pip install 'kazoo>=2.10' (hedwig's zk extra)"


def test_make_extras_adds_extras_to_the_editable_install():
    dry_run = subprocess.run(
        ["make", "-s", "-n", "extras", "EXTRAS=spark,zk"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert dry_run.stdout.strip().splitlines()[-1] == (
        ".venv/bin/python -m pip install --quiet -e '.[spark,zk]' --config-settings editable_mode=compat"
    )
    bare = subprocess.run(["make", "-s", "extras"], cwd=ROOT, capture_output=True, text=True)
    assert bare.returncode == 2 and "make extras EXTRAS=" in bare.stdout


def test_a_hub_without_kazoo_says_how_to_add_the_zk_extra(tmp_path):
    """`hedwig hub --zookeeper ...` where kazoo cannot be imported, as the user met it."""
    without_kazoo = "import sys; sys.modules['kazoo'] = sys.modules['kazoo.client'] = None; import runpy;"
    without_kazoo += " sys.argv[0] = 'hedwig'; runpy.run_module('hedwig', run_name='__main__')"
    command = [sys.executable, "-c", without_kazoo, "hub", "--zookeeper", "127.0.0.1:1"]
    command += ["--data-dir", str(tmp_path / "d"), "--port", "0", "--http-port", "0"]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=hub_environment()
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"hedwig hub: could not start: a region on ZooKeeper needs kazoo: {install_hint('zk')}"
    )
