"""Package discovery lives here because two top-level folders ship inside the package, which
pyproject's `packages.find` cannot map: `daemon/` as `modlens.daemon`, and the browser
extension `extension/` as package data in `modlens.extension` (which files: pyproject's package-data)."""
from setuptools import find_namespace_packages, find_packages, setup

daemon_packages = ["modlens.daemon" + p[len("daemon"):] for p in find_packages(".", include=["daemon", "daemon.*"])]
# every extension folder is listed (as a namespace package) so setuptools ships its files without warnings
extension_packages = ["modlens.extension"] + ["modlens.extension." + p for p in find_namespace_packages(
    "extension", exclude=[f"{d}{s}" for d in ("test", "tests", "node_modules") for s in ("", ".*")])]
setup(
    # namespace discovery also lists the data folders (heads/, normalize/data/) as packages
    packages=find_namespace_packages("src") + daemon_packages + extension_packages,
    package_dir={"": "src", "modlens.daemon": "daemon", "modlens.extension": "extension"},
)
