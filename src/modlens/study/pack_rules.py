"""What a study pack may not carry (docs/MULTI.md#what-a-pack-may-do), in one place: `study pack`
refuses to write it, `load_folder` refuses it in a folder (made to be packed), `study check` warns
of it in a lone study.toml (`join` refuses a pack that reads undeclared variables). A leaf module:
the folder loader and the pack both read it."""
from __future__ import annotations

import re
from typing import Any

from modlens.config import StudyConfig
from modlens.errors import Problem

SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|credential)", re.I)
SECRET_REFUSED = "looks like a secret, and a pack goes to every participant"
SECRET_FIX = "remove it and let each detector read its key from the environment"
# what such an option may hold without holding the secret: the name of the variable a detector reads
# its key from (perspective's `api_key_env`), or a `${VAR}` template, after an auth scheme at most
# ("Bearer ${KEY}"); both are environment reads the study must declare in `[secrets] names`
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_TEMPLATE = re.compile(r"(?:[A-Za-z]+ )?\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _secret_keys(value: Any, at: str, key_options: set[str]) -> list[str]:
    """Option keys that look like secrets, at any depth (a wrapped detector's options too), unless
    they hold a variable's name (`key_options`: where a detector reads its key's name) or template."""
    if isinstance(value, dict):
        return [found for k, v in value.items()
                for found in ([f"{at}.{k}"] if SECRET_NAME.search(str(k)) and not _names_variable(v, f"{at}.{k}", key_options)
                              else _secret_keys(v, f"{at}.{k}", key_options))]
    if isinstance(value, list):
        return [found for i, v in enumerate(value) for found in _secret_keys(v, f"{at}.{i}", key_options)]
    return []


def _names_variable(value: Any, at: str, key_options: set[str]) -> bool:
    return isinstance(value, str) and bool(ENV_TEMPLATE.fullmatch(value)
                                           or (at in key_options and ENV_NAME.fullmatch(value)))


def refusals(study: StudyConfig) -> list[Problem]:
    """What a pack may not carry (docs/MULTI.md#what-a-pack-may-do), and so a study folder, made to be
    packed (`load_folder`): environment reads the study does not declare and options that look like
    secrets. A lone study.toml may run with them (`serve --config`), but is not packed with them."""
    return [*study.undeclared_env(), *(Problem(f"{at}: {SECRET_REFUSED}", SECRET_FIX) for at in secret_options(study))]


def secret_options(study: StudyConfig) -> list[str]:
    """Where the study's detector options look like they hold a secret."""
    from modlens.detectors.dataflow import env_reads

    return [f"detectors[{d.key}].{found}" for d in study.detectors
            for found in _secret_keys(d.options, "options", {at for at, _ in env_reads(d.name, d.options)})]
