"""One local Ray for a test module (tests that run audits on Ray's actors)."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def local_ray(module: str | None = None) -> Iterator[None]:
    """A two-CPU Ray for the module's tests, shut down after them unless it was already running.
    `module`: a test module whose classes (test detectors) must travel to Ray's workers by value."""
    import ray
    from ray import cloudpickle

    if module is not None:
        cloudpickle.register_pickle_by_value(sys.modules[module])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        if started:
            ray.shutdown()
