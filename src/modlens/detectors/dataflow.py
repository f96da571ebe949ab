"""Where a configured detector sends data, and which environment variables it reads, known from its
name and options alone (nothing is loaded): what `modlens join` shows a participant and what the
consent text says, and what a study pack may not do unasked (docs/MULTI.md#what-a-pack-may-do).

Remote detectors post every comment they score to their endpoint; a `${VAR}` in their options
is expanded from the environment of the computer running them (detectors/remote.py `expand_env`).
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

# registry name -> (option holding the endpoint, its default); every detector that sends comments
# off this computer is here (tests/test_study_pack_trust.py checks it against the plugins)
REMOTE_ENDPOINTS: dict[str, tuple[str, str | None]] = {
    "http": ("url", None),
    "perspective": ("endpoint", "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"),
}
# registry name -> (option naming the environment variable it reads its key from, its default)
KEY_ENV_OPTIONS: dict[str, tuple[str, str]] = {"perspective": ("api_key_env", "PERSPECTIVE_API_KEY")}

ENV_REF = re.compile(r"\$\{([^}]*)\}")


def is_remote(name: str) -> bool:
    return name in REMOTE_ENDPOINTS


def destination(name: str, options: dict[str, Any]) -> str | None:
    """`scheme://host[:port]` a remote detector posts comments to (None: it runs here). The path and
    query are left out: the host is where the data goes, and a query may hold a secret's template."""
    if name not in REMOTE_ENDPOINTS:
        return None
    option, default = REMOTE_ENDPOINTS[name]
    url = options.get(option, default)
    if not isinstance(url, str) or not url:
        return "(no endpoint set)"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else url


def env_refs(value: Any, at: str = "options") -> list[tuple[str, str]]:
    """Every `${VAR}` in the strings of `value` (nested dicts and lists): [(where, VAR)]."""
    if isinstance(value, dict):
        return [ref for k, v in value.items() for ref in env_refs(v, f"{at}.{k}")]
    if isinstance(value, list):
        return [ref for i, v in enumerate(value) for ref in env_refs(v, f"{at}.{i}")]
    if isinstance(value, str):
        return [(at, var) for var in ENV_REF.findall(value)]
    return []


def env_reads(name: str, options: dict[str, Any]) -> list[tuple[str, str]]:
    """Every environment variable the detector would read: `${VAR}` references and key options."""
    reads = env_refs(options)
    if name in KEY_ENV_OPTIONS:
        option, default = KEY_ENV_OPTIONS[name]
        reads.append((f"options.{option}", str(options.get(option, default))))
    return reads
