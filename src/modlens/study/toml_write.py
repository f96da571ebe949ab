"""A small TOML writer for study configurations (the standard library only reads TOML).

Handles what a study holds: strings, numbers, booleans, lists of scalars, tables and arrays of
tables; `None` means "not set" and is left out. `dumps` parses its own output back and refuses to
return text that would not read as the same data, so a join can never write a different study."""
from __future__ import annotations

import json
import math
import tomllib
from typing import Any


def _scalar(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} cannot be written to TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v, where) for v in value if v is not None) + "]"
    if isinstance(value, dict):  # inline table, e.g. options = {preset = "..."}
        return "{" + ", ".join(f"{_key(k)} = {_scalar(v, f'{where}.{k}')}" for k, v in value.items() if v is not None) + "}"
    raise ValueError(f"{where}: {type(value).__name__} cannot be written to TOML")


def _key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(data: dict[str, Any], path: list[str], out: list[str]) -> None:
    plain = {k: v for k, v in data.items() if v is not None and not isinstance(v, dict) and not _is_table_list(v)}
    for k, v in plain.items():
        out.append(f"{_key(k)} = {_scalar(v, '.'.join(path + [k]))}")
    for k, v in data.items():
        if isinstance(v, dict):
            out += ["", f"[{'.'.join(_key(p) for p in path + [k])}]"]
            _table(v, path + [k], out)
        elif _is_table_list(v):
            for item in v:
                out += ["", f"[[{'.'.join(_key(p) for p in path + [k])}]]"]
                # nested tables inside array items are written inline: study items are flat
                for ik, iv in item.items():
                    if iv is not None:
                        out.append(f"{_key(ik)} = {_scalar(iv, '.'.join(path + [k, ik]))}")


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value


def dumps(data: dict[str, Any], header: str = "") -> str:
    out: list[str] = [f"# {line}".rstrip() for line in header.splitlines()]
    _table(data, [], out)
    text = "\n".join(out).strip("\n") + "\n"
    if tomllib.loads(text) != _without_none(data):
        raise ValueError("internal error: the TOML written does not read back as the same study")
    return text
