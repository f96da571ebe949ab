"""Package discovery lives here because the daemon sits in its own top-level folder
(`daemon/`, importable as `modlens.daemon`), which pyproject's `packages.find` cannot map."""
from setuptools import find_namespace_packages, find_packages, setup

daemon_packages = ["modlens.daemon" + p[len("daemon"):] for p in find_packages(".", include=["daemon", "daemon.*"])]
setup(
    # namespace discovery also lists the data folders (heads/, normalize/data/) as packages
    packages=find_namespace_packages("src") + daemon_packages,
    package_dir={"": "src", "modlens.daemon": "daemon"},
)
