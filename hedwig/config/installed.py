"""Where the files that come with hedwig are: the example configuration and the docs.

A wheel installs them under the environment's share/ (setup.cfg's data_files:
share/hedwig/conf/, share/doc/hedwig/), which is not a fixed place: a virtual
environment, `pip install --user` and a system install each have their own. The
installed distribution's file list says where they went; in a checkout (or an editable
install, which installs no data files) they are conf/ and docs/ beside the package.
"""

from importlib import metadata
from pathlib import Path

import hedwig

CHECKOUT = Path(hedwig.__file__).resolve().parents[1]


def _installed(suffix: str) -> Path | None:
    try:
        distribution = metadata.distribution("hedwig")
    except metadata.PackageNotFoundError:
        return None
    for file in distribution.files or ():
        if file.as_posix().endswith(suffix):
            return Path(distribution.locate_file(file)).resolve()
    return None


def example_conf() -> Path:
    """The example hub.conf: every setting, each at its default, with what it does."""
    checkout = CHECKOUT / "conf" / "hub.conf"
    if checkout.is_file():
        return checkout
    installed = _installed("share/hedwig/conf/hub.conf")
    if installed is None or not installed.is_file():
        raise FileNotFoundError("the example configuration is not installed (share/hedwig/conf/hub.conf)")
    return installed


def docs_dir() -> Path | None:
    """The directory of the docs (operations.md and the others); None if not installed."""
    checkout = CHECKOUT / "docs"
    if (checkout / "operations.md").is_file():
        return checkout
    installed = _installed("share/doc/hedwig/operations.md")
    return installed.parent if installed is not None else None
