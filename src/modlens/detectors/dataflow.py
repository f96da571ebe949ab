"""Where a configured detector may send data, and which environment variables it reads: what
`modlens join` shows a participant, what the consent text says, and what a study pack may not do
unasked (docs/MULTI.md#what-a-pack-may-do).

Known from the configuration, without creating any detector: a built-in's name and options say
it all, and so do those of every detector it wraps (an option `<x>detector` naming a detector, with
its options in `<x>options`, as ocr and asr take one, followed at any depth). Any URL-like option
value whose host is not loopback counts as a destination too. An installed plug-in cannot be
checked: its module is imported to read its declaration, and it is remote unless it declares
`SENDS_DATA = False` (CONTRIBUTING.md). Remote detectors post every comment they score to their
endpoint; a `${VAR}` in their options is expanded from the environment of the computer running them
(detectors/remote.py `expand_env`).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Iterator
from urllib.parse import urlsplit

# built-in name -> (option holding the endpoint, its default); every built-in that sends comments
# off this computer is here (tests/test_study_pack_trust.py checks it against the plugins)
REMOTE_ENDPOINTS: dict[str, tuple[str, str | None]] = {
    "http": ("url", None),
    "perspective": ("endpoint", "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"),
}
# registry name -> (option naming the environment variable it reads its key from, its default)
KEY_ENV_OPTIONS: dict[str, tuple[str, str]] = {"perspective": ("api_key_env", "PERSPECTIVE_API_KEY")}

ENV_REF = re.compile(r"\$\{([^}]*)\}")
# `scheme://authority` anywhere in a string (an option may hold a URL inside other text)
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#\"'<>]+")
# an option naming a wrapped detector; its options are in the option of the same prefix + "options"
NESTED = re.compile(r"^(.*_)?detector$")


def _plugin_declares_local(name: str) -> bool | None:
    """None: not an installed plug-in. Else True only when its module says `SENDS_DATA = False`; one
    that cannot even be imported is not taken at its word (there is none)."""
    from modlens.detectors import registry
    from modlens.names import PluginError

    if name in registry.PLUGINS or name not in registry.DETECTORS:
        return None
    try:
        return getattr(registry.DETECTORS.load(name), "SENDS_DATA", True) is False
    except PluginError:
        return False


def is_remote(name: str) -> bool:
    """Whether a detector of this name (options aside) may send comments off this computer."""
    from modlens.detectors import registry

    if name in registry.PLUGINS:
        return name in REMOTE_ENDPOINTS
    return not _plugin_declares_local(name)  # a plug-in that does not say so, or a name nobody knows


def _unchecked(name: str) -> str:
    """The destination shown for a detector whose code cannot be checked."""
    from modlens.detectors import registry

    if name in registry.DETECTORS:
        return f"plug-in {name} of {registry.DETECTORS.origin(name)} (unverified: it may send comments anywhere)"
    return f"unknown detector {name!r} (cannot be checked)"


def _origin(url: str) -> str:
    """`scheme://host[:port]`: the path and query are left out (the host is where the data goes, and
    a query may hold a secret's template), and so is any user:password@."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed authority (`http://[x`): shown as written, up to the path
        return "/".join(url.split("/", 3)[:3])
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}" if parts.scheme and host else url


def _loopback(origin: str) -> bool:
    try:
        host = urlsplit(origin).hostname or ""
    except ValueError:  # a malformed authority (`http://[x/`) is shown, not trusted
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def _nested(options: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(option, name, options) of each detector these options wrap."""
    for key, value in options.items():
        match = NESTED.match(key)
        if match and isinstance(value, str):
            inner = options.get(f"{match.group(1) or ''}options")
            yield key, value, inner if isinstance(inner, dict) else {}


def wrapped(options: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(option, name, options) of each detector these options wrap (the study's checks walk them too)."""
    return list(_nested(options))


def destinations(name: str, options: dict[str, Any]) -> list[str]:
    """Every place this detector may send data, sorted (none: it and all it wraps run here): its
    endpoint, those of the detectors it wraps, any non-loopback URL in its options, and, for a
    plug-in that does not declare itself local or an unknown name, a line saying it is unchecked."""
    found: set[str] = set()
    if name in REMOTE_ENDPOINTS:
        option, default = REMOTE_ENDPOINTS[name]
        url = options.get(option, default)
        found.add(_origin(url) if isinstance(url, str) and url else "(no endpoint set)")
    elif is_remote(name):
        found.add(_unchecked(name))
    found.update(o for o in (_origin(m) for s in _strings(options) for m in URL.findall(s)) if not _loopback(o))
    for _, inner, inner_options in _nested(options):
        found.update(destinations(inner, inner_options))
    return sorted(found)


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
    """Every environment variable the detector would read: `${VAR}` references anywhere in its
    options, and the key options of it and of the detectors it wraps."""
    return [*env_refs(options), *_key_reads(name, options, "options")]


def _key_reads(name: str, options: dict[str, Any], at: str) -> list[tuple[str, str]]:
    reads = []
    if name in KEY_ENV_OPTIONS:
        option, default = KEY_ENV_OPTIONS[name]
        reads.append((f"{at}.{option}", str(options.get(option, default))))
    for key, inner, inner_options in _nested(options):
        reads.extend(_key_reads(inner, inner_options, f"{at}.{key.removesuffix('detector')}options"))
    return reads
