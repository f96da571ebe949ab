"""Detectors from a study: one loader for the engine, the audits and the `perturb` / `score`
commands, so a detector that cannot load is reported the same way everywhere."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from modlens.config import DetectorConfig, StudyConfig
from modlens.detectors import registry
from modlens.detectors.base import Detector, DetectorStatus, DetectorUnavailable
from modlens.errors import ErrorKind, inline_fix
from modlens.names import close_matches
from modlens.services.errors import SetupError


class DetectorsNotLoaded(SetupError):
    """A detector the command line named that cannot load here, or none that loads
    (`LoadedDetectors.require`): the command ran and could not start, before writing anything."""

    kind = ErrorKind.FAILED


class DetectorSpecError(SetupError):
    """A detector spec that names nothing loadable (unknown name, malformed cached: spec);
    `fix` suggests the close matches or the right form."""


@dataclass
class LoadedDetectors:
    detectors: dict[str, Detector] = field(default_factory=dict)  # study key -> detector
    statuses: list[DetectorStatus] = field(default_factory=list)  # one per config, loaded or not

    @property
    def unavailable(self) -> dict[str, str]:
        """study key -> why it did not load, with its fix."""
        return {s.name: describe(s) for s in self.statuses if s.status != "loaded"}

    def require(self, named: Iterable[str] = (), fix: str = "`modlens detectors` shows each detector's status and "
                                                             "fix; drop one from the command line to go on without it") -> None:
        """The one rule of every command that loads detectors (README, "Exit codes"): each detector
        the command line named (`named`: the keys of --detectors, a target, judges) must load, and
        some detector must load in any case; else the command stops before it scores or writes
        anything (`DetectorsNotLoaded`, exit 1, saying why each named one cannot load), its detectors
        closed. Exit 0 with no score of a detector asked for would say it did what was asked. A
        study's detector nobody named that cannot load is only said (`warnings`) and left out; a
        named key no config has is the caller's to refuse (nothing was asked to load under it)."""
        unavailable = self.unavailable
        missing = {k: unavailable[k] for k in dict.fromkeys(named) if k in unavailable and k not in self.detectors}
        if missing or not self.detectors:
            self.close()
            why = "; ".join(f"detector {k} cannot load: {w}" for k, w in (missing or unavailable).items())
            if not self.detectors and not missing:
                why = f"no detector could be loaded: {why}" if why else "no detector to load"
            raise DetectorsNotLoaded(why, fix=fix)

    def warnings(self) -> list[str]:
        """One line per detector that did not load, for a command's stderr."""
        return [f"detector {s.name} not loaded ({s.status}): {describe(s)}" for s in self.statuses if s.status != "loaded"]

    def close(self) -> None:
        for det in self.detectors.values():
            det.close()


def describe(status: DetectorStatus) -> str:
    """'message; fix: fix' (as `modlens serve` and `modlens status` list detectors), or the
    message alone when there is no fix."""
    return inline_fix(status.message, status.fix)


def status_lines(statuses: Sequence[DetectorStatus], component_errors: Mapping[str, str]) -> list[str]:
    """One line per detector (its status and version, or why it did not load) and one per component
    that is unavailable (an engine's `statuses` and `component_errors`), as `modlens serve` lists them."""
    lines = [f"detector {s.name}: {s.status}" + (f" ({s.version})" if s.version else "")
             + (f" — {describe(s)}" if s.status != "loaded" else "") for s in statuses]
    return lines + [f"{what}: unavailable — {problem}" for what, problem in component_errors.items()]


def load_detectors(configs: Sequence[DetectorConfig]) -> LoadedDetectors:
    """Creates each configured detector. One that cannot load (missing dependency or weights,
    unknown name, bad options) becomes a status with its fix; the others still load."""
    out = LoadedDetectors()
    for cfg in configs:
        try:
            det = out.detectors[cfg.key] = registry.create(cfg.name, **cfg.options)
            out.statuses.append(DetectorStatus(cfg.key, "loaded", version=det.version))
        except (DetectorUnavailable, KeyError, TypeError) as err:
            out.statuses.append(DetectorStatus(cfg.key, getattr(err, "status", "error"), str(err), getattr(err, "fix", "")))
    return out


def parse_detector_spec(spec: str, study: StudyConfig | None = None) -> DetectorConfig:
    """A detector spec -> DetectorConfig.

    - a key of the study file's `[[detectors]]` (with its options), else a registry name;
    - `cached:PATH` with the columns `text`/`score`, or
      `cached:PATH:TEXT=SCORE[,TEXT=SCORE...][:NAME]` (e.g. the Perspective scores in NoisyHate:
      `cached:dev.csv:clean=perspective_clean,perturbed=perspective_perturbed:perspective`).
    """
    if study is not None:
        for cfg in study.detectors:
            if cfg.key == spec:
                return cfg
    if spec.startswith("cached:"):
        parts = spec.split(":")
        path = parts[1] if len(parts) > 1 else ""
        mappings = [["text", "score"]]
        if len(parts) > 2 and parts[2]:
            try:
                mappings = [list(pair.split("=", 1)) for pair in parts[2].split(",")]
            except ValueError:
                mappings = []
            if any(len(m) != 2 or not all(m) for m in mappings):
                raise DetectorSpecError(f"detector {spec!r}: columns must read TEXT=SCORE[,TEXT=SCORE]", CACHED_FORM)
        name = parts[3] if len(parts) > 3 and parts[3] else "cached"
        if len(parts) > 4:
            raise DetectorSpecError(f"detector {spec!r}: expected cached:PATH[:TEXT=SCORE,...][:NAME]", CACHED_FORM)
        return DetectorConfig(name="cached", id=name, options={"path": path, "mappings": mappings, "name": name})
    if spec not in registry.DETECTORS:
        keys = [c.key for c in study.detectors] if study is not None else []
        close = close_matches(spec, dict.fromkeys([*registry.available(), *keys]))
        fix = f"did you mean {' or '.join(close)}?" if close else \
            f"use a registry name ({', '.join(registry.available())}; `modlens detectors` shows each one's status)"
        raise DetectorSpecError(f"unknown detector {spec!r}: not a registry name, "
                                f"{'not a key of the study file, ' if study is not None else ''}not cached:PATH", fix)
    return DetectorConfig(name=spec)


CACHED_FORM = "write cached:PATH[:TEXT=SCORE,...][:NAME], e.g. cached:scores.csv:text=score:perspective"


def detector_configs(specs: Sequence[str], study: StudyConfig | None = None) -> list[DetectorConfig]:
    """Detector specs given on a command line -> configs, each spec once. An unknown name is an
    error (DetectorSpecError with the close matches), never a detector silently left out; a
    known one that cannot load here is reported later by `load_detectors`."""
    return [parse_detector_spec(spec, study) for spec in dict.fromkeys(specs)]
