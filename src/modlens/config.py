"""Study configuration (`study.toml`), validated by pydantic.

Files are read by `modlens.study.load` (a study.toml, or a study folder with its side files);
without a file the embedded defaults below apply. Errors name the offending key and say how
to fix it (`StudyConfigError`). The subset a browser client needs is `client_settings()`,
which the daemon hands to the extension at hello.
"""
from __future__ import annotations

import re
from typing import Any, Collection, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from modlens.errors import ModlensError, Problem, problem_lines
from modlens.names import close_matches


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DetectorConfig(_Strict):
    """One detector to load. `name` is a registry key (`modlens detectors` lists them);
    `id` lets a study load the same plugin twice with different options."""

    name: str
    id: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.id or self.name


class NormalizerConfig(_Strict):
    enabled: bool = True
    steps: list[str] | None = None  # None: the default pipeline


class PerturbationConfig(_Strict):
    enabled: bool = True
    strategies: list[str] = Field(
        default_factory=lambda: ["repeat_char", "abbr", "special_char", "mixed_case", "mixed_case_plus", "human_lookup", "char_attack"]
    )
    budget: int = Field(3, ge=0, le=50, description="variants generated per comment")
    importance_threshold: float = Field(0.1, ge=0.0, le=1.0)
    importance_method: Literal["leave_one_out", "pooled"] = Field(
        "leave_one_out",
        description="how word importance is computed: leave_one_out (NoisyHate's Algorithm 1: the text re-scored "
                    "without each word, one model text per word) or pooled (each word left out of the mean pooling "
                    "of ONE forward pass; only for a target with `word_importance_pooled`, such as minilm-toxicity, "
                    "else leave_one_out is used and recorded). bench/bench_variants.py --compare measures the two")
    target: str | None = Field(None, description="detector key whose word importance guides the edits")
    seed: int = 0
    live_rate: float | Literal["auto"] = Field(
        "auto",
        description="comments per second (all connections together) whose variants the daemon makes while "
                    "participants browse, comments the study asks about first; the rest are recorded as deferred "
                    "(deferred_variants) and made by `modlens rescore --variants`. \"auto\": no fixed rate; variant "
                    "work may take at most 0.75x the time pages wait for their scores (live/variants.py "
                    "LatencyBudget), so a device that makes variants cheaply makes nearly all live and a 2-core "
                    "CPU defers most; `modlens status` says which. 0: defer every comment")
    live_backlog: int = Field(256, ge=0, le=100_000,
                              description="comments waiting for live variants, at most; past it they are deferred")
    live_share: float = Field(
        0.0625, gt=0.0, le=0.5,
        description="the share of the model's texts that live variant work (word importance, variants) gets while "
                    "pages keep every model call busy: more variants, fewer pages scored per second "
                    "(docs/PERFORMANCE.md, \"Live variants under load\"). Idle cores go to variants whatever it is")
    strategy_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per-strategy options, e.g. {human_lookup = {path = '.../perturbations.json'}}")

    @field_validator("live_rate", mode="before")
    @classmethod
    def _rate_or_auto(cls, v: Any) -> float | str:
        # one clear message, not the union's two ("constrained-float", "literal['auto']")
        if v == "auto":
            return "auto"
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 10_000:
            return float(v)
        raise PydanticCustomError("live_rate", "{value} is not a rate", {
            "value": repr(v), "fix": 'give comments per second from 0 to 10000, or "auto" (the default)'})

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, v: list[str]) -> list[str]:
        from modlens.perturb import registry
        for i, key in enumerate(v):
            _check_name("perturbation strategy", key, registry.available(), at=f"perturbation.strategies.{i}")
        return v

    @field_validator("strategy_options")
    @classmethod
    def _options_of_known_strategies(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from modlens.perturb import registry
        for key in v:
            _check_name("perturbation strategy", key, registry.available(), at=f"perturbation.strategy_options.{key}")
        return v


class AttributeConfig(_Strict):
    name: str
    label: str
    definition: str
    levels: list[str] = Field(min_length=2)


class AnchorConfig(_Strict):
    key: str
    text: str
    role: Literal["hard_to_say", "extreme"]
    rating: Literal["not toxic", "hard to say", "toxic"]


class GoldConfig(_Strict):
    key: str
    text: str
    expected: dict[str, str]


class ReviewConfig(_Strict):
    """An adversarial text queued for the human check (`modlens study add-attacks`): rated like
    any comment in the calibration round; `labels` (attack.recipe, attack.target, ...) say
    which attack made it, so the report can group the verdicts."""
    key: str
    text: str
    labels: dict[str, str] = Field(default_factory=dict)


class SamplingConfig(_Strict):
    mode: Literal["all", "random", "deciles"] = "all"
    rate: float = Field(1.0, gt=0.0, le=1.0, description="share of comments asked about in 'random' mode")
    per_decile: int = Field(10, ge=1, le=100, description="percent of each score decile asked about in 'deciles' mode "
                            "(used when decile_rates is unset); a percentage, not a count, so every participant "
                            "gets the same comments whatever order they arrive in")
    decile_rates: list[float] | None = Field(None, min_length=10, max_length=10,
                                             description="share (0-1] of each score decile asked about, lowest decile "
                                             "first; to balance a skewed score distribution")

    @field_validator("decile_rates")
    @classmethod
    def _rates_are_shares(cls, rates: list[float] | None) -> list[float] | None:
        if rates is not None and not all(0.0 < r <= 1.0 for r in rates):
            raise ValueError("every decile rate must be above 0 and at most 1")
        return rates
    detector: str | None = Field(None, description="detector whose score defines the deciles (default: the first)")
    seed: int = 0


class TaskConfig(_Strict):
    """A page every participant of the study visits (so comments are rated by several people)."""

    url: str = Field(pattern=r"^https?://\S+$", description="YouTube video, X thread, news article ...")
    title: str | None = None
    target: int | None = Field(None, ge=1, le=1000, description="rate this many comments here (default: no target)")


class LimitsConfig(_Strict):
    max_comment_chars: int = Field(5000, ge=100)
    max_message_bytes: int = Field(1_048_576, ge=4096)
    max_items_per_message: int = Field(200, ge=1)
    messages_per_second: float = Field(20.0, gt=0)
    burst: int = Field(40, ge=1)


class MediaConfig(_Strict):
    """Images attached to comments (docs/FUSION.md). Off by default: a study collects media only
    when it says so, and the consent text then says so too."""
    collect: bool = Field(False, description="capture images attached to comments, score them and log their hashes")
    keep_bytes: bool = Field(False, description="also keep the image files in the study's media folder "
                             "(otherwise only their SHA-256 and size are logged)")
    max_bytes: int = Field(2_000_000, ge=1024, le=20_000_000, description="largest image the extension sends")
    max_per_comment: int = Field(4, ge=1, le=16)
    detectors: list[str] | None = Field(None, description="study detector keys that score media (default: every "
                                        "detector that reads images)")


class SecretsConfig(_Strict):
    """Environment variables a study's detectors may read (API keys): each participant sets their
    own; a study pack may use `${NAME}` in detector options only for these (docs/MULTI.md)."""
    names: list[str] = Field(default_factory=list, description="e.g. [\"PERSPECTIVE_API_KEY\"]")

    @field_validator("names")
    @classmethod
    def _variable_names(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", n)]
        if bad:
            raise ValueError(f"not environment variable names: {bad}; use letters, digits and '_'")
        return v


class PerspectiveAttributeConfig(_Strict):
    """Which detector answers one Perspective attribute (docs/PERSPECTIVE.md)."""
    detector: str = Field(description="a study detector key")
    label: str | None = Field(None, description="the detector's label to report (default: its toxicity label)")
    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1,
                                 description="languages the detector is trusted for (ISO 639-1)")


class PerspectiveConfig(_Strict):
    """The Perspective-compatible endpoint (`POST /v1alpha1/comments:analyze`). Attributes not
    listed keep the defaults: TOXICITY -> minilm-toxicity, PROFANITY -> profanity-check, any other
    -> a study detector with a label of that name (a Hugging Face multi-label model), else refused."""
    attributes: dict[str, PerspectiveAttributeConfig] = Field(default_factory=dict)
    calibrate: bool = Field(False, description="map scores onto Perspective's scale with the fitted calibrations "
                            "(`modlens perspective calibrate`) unless a request says otherwise")
    max_text_bytes: int = Field(20_480, ge=1, le=1_000_000, description="longest comment.text (Perspective: 20480)")
    languages: dict[str, str] = Field(default_factory=dict, description="language (ISO 639-1) -> a study detector key "
                                      "that answers, in that language, every attribute it has a label for (a "
                                      "multilingual model); attributes whose own source covers the language keep it")

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not re.fullmatch(r"[a-z]{2,3}", k)]
        if bad:
            raise ValueError(f"languages are ISO 639-1 codes in lower case like es, not {bad}")
        return v

    @field_validator("attributes")
    @classmethod
    def _upper_case_names(cls, v: dict[str, PerspectiveAttributeConfig]) -> dict[str, PerspectiveAttributeConfig]:
        bad = [k for k in v if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", k)]
        if bad:
            raise ValueError(f"attribute names are upper case like TOXICITY, not {bad}")
        return v


TOXICITY_LEVELS = ["not toxic", "hard to say", "toxic"]

DEFAULT_ATTRIBUTES = [
    AttributeConfig(
        name="formality", label="Formality",
        definition="How formal the language is: from very formal written English with proper grammar "
        "to very informal texting style (LOL, brb).",
        levels=["very formal", "formal", "informal", "very informal"],
    ),
    AttributeConfig(
        name="respectfulness", label="Respectfulness",
        definition="Whether the comment shows deference, care, or understands the potential feelings of the reader.",
        levels=["respectful", "partially respectful", "slightly disrespectful", "disrespectful"],
    ),
    AttributeConfig(
        name="stereotypes", label="Stereotypes",
        definition="A widely held but fixed and oversimplified image or idea about a particular type of person, group or thing.",
        levels=["not present", "possibly present", "present", "heavily present"],
    ),
    AttributeConfig(
        name="toxicity", label="Toxicity",
        definition="A rude, disrespectful, or unreasonable comment that is likely to make people leave a discussion.",
        levels=TOXICITY_LEVELS,
    ),
]

DEFAULT_ANCHORS = [
    AnchorConfig(key="anchor-hard", role="hard_to_say", rating="hard to say",
                 text="Honestly this is the dumbest policy I've seen in years, but fine, whatever."),
    AnchorConfig(key="anchor-extreme", role="extreme", rating="toxic",
                 text="You are a worthless idiot and everyone here would be better off without you."),
]


class StudyConfig(_Strict):
    study_id: str = Field("default", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    title: str = "modlens default study"
    # a consent form of some pages fits; what is longer is no consent text (and travels to every participant)
    consent_text: str = Field(
        "modlens records the comments shown on the pages you enable, the address and title of each of "
        "those pages, the scores of the study's toxicity detectors, and your ratings, in a study log on "
        "this computer. Authors' handles and names are not in the log: comment authors are hashed "
        "before they leave the browser, and page addresses and titles are recorded without the author "
        "a site names in them (on X, a post's address without the handle, its title without the "
        "name). Comments and titles are kept as written, names they mention included. You can pause "
        "or withdraw at any time.",
        max_length=50_000)
    detectors: list[DetectorConfig] = Field(
        default_factory=lambda: [DetectorConfig(name="minilm-toxicity"), DetectorConfig(name="profanity-check")]
    )
    normalizer: NormalizerConfig = Field(default_factory=NormalizerConfig)
    perturbation: PerturbationConfig = Field(default_factory=PerturbationConfig)
    attributes: list[AttributeConfig] = Field(default_factory=lambda: list(DEFAULT_ATTRIBUTES))
    toxicity_mode: Literal["anchors", "direct"] = "anchors"
    anchors: list[AnchorConfig] = Field(default_factory=lambda: list(DEFAULT_ANCHORS))
    gold: list[GoldConfig] = Field(default_factory=list)
    review: list[ReviewConfig] = Field(default_factory=list, description="attack texts for the human check")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    display: Literal["blind", "scores"] = "blind"
    author_salt: str | None = Field(
        None, min_length=16,
        description="salt for hashing author names in the browser; the same for every rater so hashes link "
        "across raters (default: a random salt kept per study in the modlens home folder)")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    media: MediaConfig = Field(default_factory=MediaConfig)
    tasks: list[TaskConfig] = Field(default_factory=list, description="pages every participant visits (docs/MULTI.md)")
    free_browsing: bool = Field(True, description="false: comments are collected on the task pages only")
    secrets: SecretsConfig = Field(default_factory=SecretsConfig)
    perspective: PerspectiveConfig = Field(default_factory=PerspectiveConfig)
    # what the participant's side knows about this study beyond its file (pack signer, detectors
    # left off at join): set by `modlens serve` for a joined study, appended to the consent text
    _provenance: list[str] = PrivateAttr(default_factory=list)

    @field_validator("tasks")
    @classmethod
    def _unique_task_urls(cls, v: list[TaskConfig]) -> list[TaskConfig]:
        urls = [t.url for t in v]
        dup = sorted({u for u in urls if urls.count(u) > 1})
        if dup:
            raise ValueError(f"task urls must be unique, repeated: {dup}; list each page once")
        return v

    @field_validator("detectors")
    @classmethod
    def _unique_detector_keys(cls, v: list[DetectorConfig]) -> list[DetectorConfig]:
        from modlens.detectors import registry
        for i, d in enumerate(v):
            # unknown: an error (a typo must not silently drop a detector); known but unable to
            # load here (optional package or weights missing) stays a warning at load time
            _check_name("detector", d.name, registry.available(), at=f"detectors.{i}.name")
            _check_options(d.name, d.options, at=f"detectors.{i}.options")
        keys = [d.key for d in v]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"detector keys must be unique, repeated: {sorted(dup)}; give each an `id`")
        return v

    @model_validator(mode="after")
    def _anchors_cover_roles(self) -> "StudyConfig":
        if self.toxicity_mode == "anchors":
            roles = {a.role for a in self.anchors}
            if roles != {"hard_to_say", "extreme"}:
                raise ValueError("toxicity_mode 'anchors' needs one anchor with role 'hard_to_say' and one with role 'extreme'")
        names = [a.name for a in self.attributes]
        if "toxicity" not in names:
            raise ValueError("attributes must include 'toxicity'")
        keys = [d.key for d in self.detectors]
        if self.perturbation.target is not None:
            _check_name("detector key", self.perturbation.target, keys, at="perturbation.target")
        if self.sampling.detector is not None:
            _check_name("detector key", self.sampling.detector, keys, at="sampling.detector")
        for attr, mapped in self.perspective.attributes.items():
            _check_name("detector key", mapped.detector, keys, at=f"perspective.attributes.{attr}.detector")
        return self

    def client_settings(self, running: Collection[str] | None = None) -> dict[str, Any]:
        """What the extension needs: consent, attributes, anchors, sampling, display, limits.
        `running`: the keys of the detectors that loaded (None: all of them), which the consent text names."""
        return {
            "study_id": self.study_id,
            "title": self.title,
            "consent_text": f"{self.consent_text.rstrip()}\n\n{self.data_flow_notice(running)}",
            "attributes": [a.model_dump() for a in self.attributes],
            "toxicity_mode": self.toxicity_mode,
            "anchors": [a.model_dump() for a in self.anchors],
            "gold": [{"key": g.key, "text": g.text} for g in self.gold],
            "review": [{"key": r.key, "text": r.text} for r in self.review],
            "sampling": self.sampling.model_dump(),
            "display": self.display,
            "max_comment_chars": self.limits.max_comment_chars,
            "author_salt": self.author_salt,
            "detectors": [d.key for d in self.detectors],
            "tasks": [t.model_dump() for t in self.tasks],
            "free_browsing": self.free_browsing,
        }


    # --- where data goes (docs/MULTI.md#what-a-pack-may-do) -------------------------------------
    def destinations(self) -> dict[str, list[str]]:
        """detector key -> every place that detector (or one it wraps) may send data; local ones absent."""
        from modlens.detectors.dataflow import destinations

        return {d.key: dest for d in self.detectors if (dest := destinations(d.name, d.options))}

    def secret_reads(self) -> dict[str, list[str]]:
        """detector key -> the environment variables it reads (its declared secrets)."""
        from modlens.detectors.dataflow import env_reads

        out = {d.key: sorted({var for _, var in env_reads(d.name, d.options)}) for d in self.detectors}
        return {k: v for k, v in out.items() if v}

    def undeclared_env(self) -> list[Problem]:
        """Environment reads a study pack may not make: every variable not in `secrets.names`."""
        from modlens.detectors.dataflow import env_reads

        allowed = set(self.secrets.names)
        return [Problem(f"detectors[{d.key}].{at}: reads the environment variable ${{{var}}}, which the study does "
                        "not declare as a secret",
                        fix=f"remove it, or add {var!r} to [secrets] names (participants set their own; it is "
                            "shown to them at join)")
                for d in self.detectors for at, var in env_reads(d.name, d.options) if var not in allowed]

    def data_flow_notice(self, running: Collection[str] | None = None) -> str:
        """The consent text's account of where comments go, from the remote detectors that run:
        `running`, the keys of those that loaded (None: every one of the study's). A remote detector
        that did not load sends nothing, and the text says it is off instead of naming its destination
        as one comments go to; the text changes when it does load, so a consent given while it was off
        is `consent_outdated` then (the extension sends no comment until the participant agreed again).
        Only a remote detector's loading changes the text: a local one sends nothing whether it loaded
        or not, so the consents given to the text stay good across starts where one fails to load."""
        loaded = {d.key for d in self.detectors} if running is None else set(running)
        destinations = self.destinations()
        remote = {k: v for k, v in destinations.items() if k in loaded}
        off = {k: v for k, v in destinations.items() if k not in loaded}
        local = [d.key for d in self.detectors if d.key not in destinations]
        lines = []
        if remote:
            lines.append("Each comment you see is also sent, to be scored, to: "
                         + "; ".join(f"{', '.join(dest)} (detector {key})" for key, dest in remote.items()) + ".")
            reads = {k: v for k, v in self.secret_reads().items() if k in remote}
            if reads:
                lines.append("These detectors use your own " + "; ".join(
                    f"{', '.join(v)} ({k})" for k, v in reads.items()) + " from this computer's environment; "
                    "they are never written into the study log.")
            if local:
                lines.append(f"These detectors run on this computer: {', '.join(local)}.")
        elif off:  # "every detector of this study" would include the remote one that is off
            lines.append(f"The study's other detectors run on this computer ({', '.join(local) or 'none'}); "
                         "no comment is sent anywhere else.")
        else:
            lines.append(f"Every detector of this study runs on this computer ({', '.join(local) or 'none'}); "
                         "no comment is sent anywhere else.")
        lines.extend(f"Detector {key} did not load on this computer and is off: it would send each comment to "
                     f"{', '.join(dest)}; should it run later, you will be asked to agree again." for key, dest in off.items())
        return " ".join([*lines, *self._provenance])

    def with_provenance(self, notes: list[str], detectors: list[DetectorConfig] | None = None) -> "StudyConfig":
        """A copy that says `notes` in its consent text (and runs `detectors` instead, when given)."""
        update: dict[str, Any] = {}
        if detectors is not None:
            keys = {d.key for d in detectors}
            update["detectors"] = detectors
            # a detector left off cannot guide edits or define deciles: the defaults (the first) do
            if self.perturbation.target not in keys | {None}:
                update["perturbation"] = self.perturbation.model_copy(update={"target": None})
            if self.sampling.detector not in keys | {None}:
                update["sampling"] = self.sampling.model_copy(update={"detector": None})
        copy = self.model_copy(update=update)
        copy._provenance = list(notes)
        return copy


def _check_options(name: str, options: dict[str, Any], *, at: str) -> None:
    """Each option a detector's `create` takes, and so for every detector it wraps (`ocr`'s
    `text_detector`, a known name, with `text_options`): checked here, not only when `serve` builds
    it on every participant's computer, after study check and pack said ok."""
    from modlens.detectors import registry
    from modlens.detectors.dataflow import wrapped

    for option in registry.unknown_options(name, options):
        takes = registry.accepted_options(name) or []
        close = close_matches(option, takes)
        fix = f"did you mean {' or '.join(close)}?" if close else f"use one of: {', '.join(takes) or '(none)'}"
        raise PydanticCustomError("unknown_option", "detector {detector} takes no option {name}",
                                  {"detector": name, "name": repr(option), "at": f"{at}.{option}", "fix": fix})
    for key, inner, inner_options in wrapped(options):
        _check_name("detector", inner, registry.available(), at=f"{at}.{key}")
        _check_options(inner, inner_options, at=f"{at}.{key.removesuffix('detector')}options")


def _check_name(what: str, name: str, known: list[str], *, at: str) -> None:
    """A name that must be one of `known`; the error says where, and suggests the close matches."""
    if name in known:
        return
    close = close_matches(name, known)
    fix = f"did you mean {' or '.join(close)}?" if close else f"use one of: {', '.join(known) or '(none)'}"
    raise PydanticCustomError("unknown_name", "unknown {what} {name}", {"what": what, "name": repr(name), "at": at, "fix": fix})


class StudyConfigError(ModlensError, ValueError):
    """A study file that does not validate; the message lists every bad key with its fix
    (`problem_lines`). `fix`: the one fix when there is one; `kind` is not found when the file
    or folder does not exist (the CLI's exit 3)."""


_FIXES = {
    "extra_forbidden": "remove it or check its spelling against docs/STUDY.md",
    "missing": "add this key",
    "literal_error": "use one of the allowed values",
    "string_pattern_mismatch": "use letters, digits, '_', '.', '-' only (max 64)",
}


# (error type, last key) -> fix, where the type's general fix would mislead
_KEY_FIXES = {
    ("string_pattern_mismatch", "url"): "give the page's full http:// or https:// address, without spaces",
}


def _format_errors(err: ValidationError, source: str, key_files: dict[str, str] | None = None) -> str:
    problems = []
    for e in err.errors():
        ctx = e.get("ctx") or {}
        loc = str(ctx["at"]).split(".") if "at" in ctx else [str(p) for p in e["loc"]]  # a name checked in a list: its item
        key = ".".join(loc) or "(top level)"
        fix = str(ctx["fix"]) if "fix" in ctx else \
            _KEY_FIXES.get((e["type"], loc[-1] if loc else ""), _FIXES.get(e["type"], "see docs/STUDY.md"))
        where = (key_files or {}).get(loc[0]) if loc else None
        problems.append(Problem(f"{key}{f' (in {where})' if where else ''}: {e['msg']}", fix))
    return f"{source}: invalid study configuration\n{problem_lines(problems)}"


def parse_study(data: dict[str, Any], source: str = "study", key_files: dict[str, str] | None = None) -> StudyConfig:
    """`key_files` names the file each top-level key came from, for a study folder split in files."""
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as err:
        raise StudyConfigError(_format_errors(err, source, key_files)) from None

