"""`run_audit`: one dataset file through the engine into the study log, resumable.

The dataset is streamed: items are read chunk by chunk (`--chunk`) as the audit goes, so memory
does not grow with the file, `--limit` stops reading early, and a bad row far down the file stops
the audit there with everything before it logged (the same command resumes after the fix)."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from modlens.audit.attack_checks import unmade, unmade_warnings
from modlens.audit.attacks import AttackSpec, attack_limits, build_attack, plan_attacks
from modlens.audit.auditor import Auditor, dataset_platform
from modlens.audit.declared import KeptTexts
from modlens.chunks import ChunkPipeline, Compute, LocalCompute
from modlens.chunks.sinks import CHUNK_ITEMS, GROUP_COMMIT_S
from modlens.chunks.steps import normalizer_identity
from modlens.config import DetectorConfig, StudyConfig
from modlens.datasets.base import (Dataset, DatasetError, DatasetItem, DatasetNotFound, blank_reason, count_rows,
                                   named_by_content)
from modlens.detectors.base import Detector
from modlens.trainingdata import run_record as training_record
from modlens.engine import Engine
from modlens.scale.sources import load_dataset, location
from modlens.services.detectors import load_detectors, parse_detector_spec
from modlens.errors import ErrorKind, ModlensError
from modlens.services.errors import SetupError
from modlens.services.recording import register
from modlens.studylog.connection import UNWRITABLE_ERRNOS, LogUnwritable, unwritable
from modlens.studylog.records.runs import completed_keys, find_run, n_completed, record_bytes_read
from modlens.studylog.store import StudyLog


@dataclass
class AuditResult:
    run_id: int
    dataset: str
    path: str
    n_items: int
    n_skipped: int            # already complete from an earlier (interrupted) attempt
    n_scored: int             # (text, detector) scores computed in this call
    n_missing: int            # scores a detector had no answer for (e.g. cached table misses)
    detectors: dict[str, str] # key -> name@version
    seconds: float
    resumed: bool
    unavailable: dict[str, str] = field(default_factory=dict)
    # target key -> {status: count, "reused": n, "unknown": of the attacks run, those whose result is
    # unknown (`perturb.attack_record.result_known`)}
    attacks: dict[str, dict[str, int]] = field(default_factory=dict)
    format: str = ""          # the layout read (given, implied by a shorthand, or detected)
    notes: list[str] = field(default_factory=list)  # what was detected and assumed, as printed
    # items read whose text is blank, per reason (`datasets.base.blank_reason`): logged, never scored,
    # left out of every metric
    not_scored: dict[str, int] = field(default_factory=dict)
    # a declared data set's rows whose text is not the one the log keeps under their key (`declared.py`),
    # and the lines the CLI prints on stderr about them
    n_edited: int = 0
    warnings: list[str] = field(default_factory=list)
    # per detector key whose scores this run include errors (a call that raised, a text it had no answer
    # for): {"scores": texts scored (one score per text, as the log keeps it), "errors": of them those
    # whose score is an error, "first": the first error's text}; a resumed run adds "earlier" and
    # "earlier_first": of the texts its earlier attempts scored, those whose score is still an error
    score_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per step ("normalize", "variants") that failed for some texts of this run (`step_errors` rows:
    # a component that raised, a Ray variant actor that died every time): {"component": name@version,
    # "errors": those texts, "first": the first one's message}; their texts are still scored. Counted over
    # the whole run (`run_step_errors`, `whole_run_steps`): a resumed run's "earlier", those only an earlier
    # attempt met
    step_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    # with --attack: per model-dependent check (`attack_checks.unmade`), the successful attacks of the log still
    # without it because its model is missing here: {"attacks": n, "why": ...}; said, not a failure
    unchecked_attacks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def audit_study(study: StudyConfig, normalize: bool, perturb: Sequence[str] | None) -> StudyConfig:
    """The study as the engine should see it for this audit: normalizer and generator only on request."""
    norm = study.normalizer.model_copy(update={"enabled": normalize})
    pert = study.perturbation.model_copy(update={"enabled": bool(perturb), **({"strategies": list(perturb)} if perturb else {})})
    return study.model_copy(update={"normalizer": norm, "perturbation": pert})


RECORDED = "recorded"


def setup_error(err: BaseException, suffix: str = "") -> SetupError:
    """A reader's error as a SetupError: its message with `suffix` after it, and its `fix` (the
    CLI prints it on its own line). A file or shorthand that does not exist keeps the not-found
    kind (the CLI exits with the not-found code)."""
    message, fix = (err.message, err.fix) if isinstance(err, ModlensError) else (str(err), None)
    not_found = isinstance(err, (DatasetNotFound, FileNotFoundError))
    return SetupError(message + suffix, fix, kind=ErrorKind.NOT_FOUND if not_found else None)


class AuditInterrupted(KeyboardInterrupt):
    """Ctrl-C during an audit: what is in the log, for the line that says how to resume."""

    def __init__(self, run_id: int, n_done: int):
        super().__init__(f"{n_done} items are in the log (run {run_id}, interrupted)")
        self.run_id, self.n_done = run_id, n_done


def estimated_total(data: Dataset, limit: int | None, encoding: str | None = None) -> int | None:
    """The progress bar's total: the reader's size, else the file's records counted (`count_rows`:
    records, not lines, so a quoted field with line breaks counts once), capped by `limit`."""
    size = data.size
    if size is None and data.path.is_file():
        size = count_rows(data.path, encoding)
    if size is None:
        return limit
    return min(size, limit) if limit else size


def recorded_detectors(spec: str, data: Dataset) -> list[DetectorConfig]:
    """`recorded` (every score the dataset file records) or `recorded:NAME` as cached detectors
    on the file itself: the same name and version as the equivalent `cached:PATH:TEXT=SCORE:NAME`."""
    name = spec.partition(":")[2]
    known = data.recorded_scores
    if not known:
        raise SetupError(f"detector {spec!r}: {data.path.name} ({data.format}) records no detector scores",
                         fix="name a detector to score it with (--detectors minilm-toxicity; `modlens detectors` lists "
                             "them), or audit the file that records the scores (SASS: toxicity_benchmark_scores.csv)")
    if name and name not in known:
        raise SetupError(f"detector {spec!r}: {data.path.name} records scores of {', '.join(known)} only")
    return [DetectorConfig(name="cached", id=n, options={"path": str(data.path), "mappings": m, "name": n})
            for n, m in known.items() if not name or n == name]


def _detector_configs(specs: Sequence[str] | None, study: StudyConfig, data: Dataset) -> list[DetectorConfig]:
    if not specs:
        return list(study.detectors)
    out: list[DetectorConfig] = []
    for s in dict.fromkeys(specs):  # each spec once
        is_recorded = s == RECORDED or s.startswith(RECORDED + ":")
        out += recorded_detectors(s, data) if is_recorded else [parse_detector_spec(s, study)]
    return out


def run_audit(dataset: str, *, db: str | Path, fmt: str | None = None, study: StudyConfig | None = None,
              detectors: Sequence[str] | None = None, normalize: bool = False, perturb: Sequence[str] | None = None,
              limit: int | None = None, chunk_size: int = CHUNK_ITEMS, reader_options: dict[str, Any] | None = None,
              progress: bool = True, on_chunk: Callable[[int], None] | None = None,
              detector_objects: dict[str, Detector] | None = None, attack: AttackSpec | None = None,
              on_note: Callable[[str], None] | None = None, engine: str = "local",
              ray_options: Any = None, out_parquet: str | Path | None = None,
              group_commit_s: float = GROUP_COMMIT_S) -> AuditResult:
    """Audit one dataset into the study log at `db`. `detector_objects` bypasses the registry
    (tests and embedding code); otherwise `detectors` specs (plus `recorded`: the scores the file
    records), else the study's detectors. `reader_options`: `text_col`, `id_col`, `label_cols`,
    `label` (a `--label` spec). `attack`: also attack every seed comment (see AttackSpec) and log
    each outcome. `on_note` gets each line saying what the reader detected, before any work.
    `group_commit_s` > 0: fast chunks share a transaction for up to that long (a log no other
    process writes meanwhile: another writer waits for a whole group; chunks/sinks.py).
    `engine`: "local" (this process) or "ray" (`modlens.scale`, with `ray_options`, a `RayOptions`);
    both write the same rows, and a run interrupted on one resumes on the other. `out_parquet`: shards
    in that folder instead of the log at `db` (`modlens import` loads them), on either engine.
    Raises SetupError (nothing written) when the audit cannot start: on Ray, that includes a detector
    a worker cannot load (or loads at another version), checked before the first write."""
    t0 = time.perf_counter()
    study = study or StudyConfig()
    reader_options = {k: v for k, v in (reader_options or {}).items() if v is not None}
    try:
        data = load_dataset(dataset, fmt, engine, **reader_options)
    except (ValueError, OSError) as err:
        raise setup_error(err) from None
    for note in data.notes:
        if on_note:
            on_note(note)
    if engine not in ("local", "ray"):
        raise SetupError(f"unknown engine {engine!r}; known: local, ray")
    if engine == "ray" and attack is not None:
        raise SetupError("--attack runs on the local engine only; drop --engine ray")
    if out_parquet is not None and "name" in reader_options:  # edited rows are checked against the log (declared.py)
        raise SetupError("--name and --out-parquet exclude each other: a declared data set's edited rows are checked "
                         "against the study log's texts, and --out-parquet writes none",
                         fix="drop --out-parquet (the audit resumes in the log), or --name")
    unavailable: dict[str, str] = {}
    specs: dict[str, Any] = {}  # key -> DetectorConfig (what a Ray worker loads), else the object itself
    if detector_objects is None:
        configs = _detector_configs(detectors, study, data)
        loaded = load_detectors(configs)
        # one the command line named (--detectors, --targets, --ensemble) that cannot load, or none
        # that loads: stopped with why, nothing written
        loaded.require([*(c.key for c in configs if detectors), *(attack.targets or () if attack else ()),
                        *(attack.ensemble or () if attack else ())])
        detector_objects, unavailable = loaded.detectors, loaded.unavailable
        specs = {c.key: c for c in configs}
    elif not detector_objects:  # a caller's own objects, none given: nothing to audit with
        raise SetupError("no detector given: detector_objects is empty")
    params = {"format": data.format, "detectors": {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
              "normalize": normalize, "perturb": list(perturb or []), "limit": limit}
    # what each detector was trained on, against this dataset (docs/DETECTORS.md#training-data)
    overlap, overlap_notes = training_record(detector_objects, data.name)
    if overlap:
        params["training"] = overlap
    for note in overlap_notes:
        if on_note:
            on_note(note)
    if perturb:  # other variants of the same file are another run, not a resume
        pc = study.perturbation
        params["perturbation"] = {"budget": pc.budget, "importance_threshold": pc.importance_threshold,
                                  "seed": pc.seed, "target": pc.target}
    if data.text_steps:  # texts decoded as read (html_unescape): another reading is another run
        params["text_steps"] = list(data.text_steps)
    if data.source_id:  # rows keyed by the file's content hash: another version of the file is another run
        params["source"] = data.source_id
    elif data.digest and "name" not in reader_options:
        # rows keyed by ids, or a folder's (the digest of its files' paths and hashes): the run says which
        # bytes it read all the same (its data set's name, the catalog's or the content's, already changes
        # with them: no resume is lost). A declared --name
        # resumes over an edited file by design, so one digest would not be all it read: none is recorded
        params["file_digest"] = data.digest
    if reader_options:  # another labelling of the same file is another run
        params["reader"] = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in reader_options.items()}
    plan, seed = None, study.perturbation.seed
    if attack is not None:
        plan = plan_attacks(attack, detector_objects)
        built = [build_attack(attack, key, detector_objects[key], [detector_objects[j] for j in judges], seed)
                 for key, judges in plan.items()]  # bad budgets or strategies fail here, before anything is written
        # the limits the attacks run with (the attack's own where the spec leaves them None), so the
        # run records the same numbers whichever command started it
        max_queries, max_edit_ratio = attack_limits(built[0])
        attack_params: dict[str, Any] = {"goal": attack.goal, "targets": plan, "max_queries": max_queries,
                                         "max_edit_ratio": max_edit_ratio, "strategies": attack.strategies,
                                         "seed": seed}
        if attack.recipe:  # another recipe over the same file is another run, not a resume
            attack_params["recipe"] = attack.recipe
        params["attack"] = attack_params
    the_engine = Engine(audit_study(study, normalize, perturb), detectors=detector_objects)
    if normalize and the_engine.normalizer is None:
        raise SetupError(f"normalize: the normalizer is unavailable ({the_engine.component_errors.get('normalizer')})")
    if normalize and the_engine.normalizer is not None:  # another normalizer version is another run, not a resume
        params["normalizer"] = f"{the_engine.normalizer.name}@{the_engine.normalizer.version}"
    if perturb and the_engine.generator is None:
        raise SetupError(f"perturb: the variant generator is unavailable ({the_engine.component_errors.get('perturbation')})")
    # the total only feeds the bar: without one, the file is not read an extra time to count its rows
    total = estimated_total(data, limit, reader_options.get("encoding")) if progress else None
    compute: Compute | None = None
    if engine == "ray":
        from modlens.scale.ray_audit import RayCompute, RayOptions
        # connects to Ray and starts the actors, every one loading its detector, before anything is
        # written: no cluster, or a detector a worker cannot load, is a SetupError with no log made,
        # no row added to one (no run left behind) and no --out-parquet folder
        compute = RayCompute(the_engine, {k: specs.get(k, d) for k, d in detector_objects.items()},
                             ray_options or RayOptions())
    if out_parquet is not None:
        return _to_parquet(Path(out_parquet), data, the_engine, params, study, compute or LocalCompute(the_engine),
                           limit, chunk_size, total, progress, on_chunk, unavailable, t0)
    try:
        log = StudyLog(db)
    except BaseException as err:  # a full disk or a read-only folder: a new log cannot be made
        if compute is not None:
            compute.close()
        if not isinstance(err, sqlite3.Error) or (opening := unwritable(err, db)) is None:
            raise
        raise stopped_before_chunks(opening) from None
    try:
        with log.transaction():
            det_ids = register(log, study, detector_objects)
        path, url = location(data)
        page_id = log.ensure_page(dataset_platform(data), data.path.name, url, data.name)
        run_id = find_run(log, data.name, path, params, unfinished_only=True)
        resumed = run_id is not None
        if run_id is None:
            run_id = log.start_run(data.name, path, params)
        else:  # (one an earlier modlens started may lack the record of the bytes read: added)
            record_bytes_read(log, run_id, params)
            log.set_run_status(run_id, "running")
        # a name the user declared: an edited file is this data set, its rows checked against the log's texts
        kept = KeptTexts(log, dataset_platform(data)) if "name" in reader_options else None
        feed = Feed(kept.items(data.iter_items()) if kept else data.iter_items(), completed_keys(log, run_id), limit)
        auditor = Auditor(log, the_engine, data, run_id, det_ids, attack, plan, seed, page_id=page_id, compute=compute,
                          group_s=group_commit_s)
        status = "interrupted"
        failed: LogUnwritable | None = None  # the log stopped taking writes: reported below, with what it holds
        try:
            with heap_frozen():
                asyncio.run(_drive(auditor, feed, data.name, chunk_size, total, progress, on_chunk))
            status = "finished"
        except DatasetError as err:  # a bad row met mid-file: the chunks before it are logged
            # a data set named by its file's content (a plain file, with or without --id-col) is
            # another source once the file is edited: its rows are logged again as comments of their own
            again = ("run the same command again to resume" if not named_by_content(data.name) else
                     "run the same command again (the edited file is a new source, named by its content: "
                     "its rows are logged anew)")
            raise SetupError(f"{err.message}; {n_completed(log, run_id)} items before it are in the log (run "
                             f"{run_id}, interrupted)",
                             fix=f"{err.fix + ', then ' if err.fix else 'fix the file, then '}{again}") from None
        except KeyboardInterrupt:  # Ctrl-C: what is logged stays; the CLI says how to resume
            raise AuditInterrupted(run_id, n_completed(log, run_id)) from None
        except (sqlite3.Error, LogUnwritable) as err:  # a full disk, a log made read-only, an I/O error, a lock
            failed = unwritable(err, log.path)
            if failed is None:
                raise
        finally:
            feed.close()
            closed = close_run(log, auditor, run_id, status)
        failed = failed or closed
        if failed is not None:
            raise failed.stopped(f"{n_completed(log, run_id)} items are in the log (run {run_id})",
                                 ": it resumes after them") from None
        steps = run_step_errors(log, run_id, auditor.pipeline.step_failed_texts())
        unchecked = unmade(log) if attack is not None else {}  # the checks the chunks could not make
        errors = auditor.pipeline.score_errors()
        if feed.done_keys:  # resumed: the errors the items an earlier attempt finished still have as their score
            errors = with_earlier_errors(errors, earlier_score_errors(
                log, run_id, feed.done_keys, det_ids, the_engine.normalizer, auditor.pipeline.error_texts()),
                auditor.pipeline.scores)
    except sqlite3.Error as err:  # the log stopped taking writes before the first chunk (the run's own rows)
        if (starting := unwritable(err, db)) is None:
            raise
        raise stopped_before_chunks(starting) from None
    finally:
        log.close()
        if compute is not None:  # closed by the run's end already, unless the log failed before it
            compute.close()
    warnings = [*(kept.warnings() if kept else []), *error_warnings(errors), *step_error_warnings(steps),
                *unknown_attack_warnings(auditor.attack_counts), *unmade_warnings(unchecked)]
    return AuditResult(run_id, data.name, path, feed.n_read, feed.n_skipped, auditor.pipeline.n_scored, auditor.pipeline.n_missing,
                       {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
                       time.perf_counter() - t0, resumed, unavailable, auditor.attack_counts,
                       format=data.format, notes=[*data.notes, *feed.blank_notes(), *warnings],
                       not_scored=dict(feed.blank), n_edited=kept.n_edited if kept else 0, warnings=warnings,
                       score_errors=errors, step_errors=steps, unchecked_attacks=unchecked)


def earlier_score_errors(log: StudyLog, run_id: int, done_keys: set[str], det_ids: dict[str, int], normalizer: Any,
                         attempt: dict[str, set[str]]) -> dict[str, tuple[int, str]]:
    """Per detector key: (how many, the first's error) of the texts of the items earlier attempts of the
    run finished (`done_keys`: skipped by this one, so never scored again) whose score in the log is an
    error: their text, the variants the run logged of them (`variants.run_id`: one another run logged first
    is left out, so is another run's of the same comment) and those texts' normalized forms (the run's
    normalizer), as the chunks scored them. The log keeps one score row per text and detector, so this is what the run holds
    now (a text `modlens rescore` scored since counts no more); `attempt`'s texts (per key, those whose
    row this attempt wrote is an error) are counted by this attempt's tally, not here."""
    ids = [cid for cid, key in log.conn.execute(
        "SELECT c.comment_id, c.comment_key FROM run_items ri JOIN comments c USING (comment_id) WHERE ri.run_id = ?",
        (run_id,)) if key in done_keys]
    if not ids:
        return {}
    name, version = normalizer_identity(normalizer) if normalizer is not None else ("", "")
    rows = log.conn.execute(
        "WITH e(comment_id) AS (SELECT value FROM json_each(?)), "
        "own(text_id) AS (SELECT c.text_id FROM comments c JOIN e USING (comment_id) "
        "                 UNION SELECT v.text_id FROM variants v JOIN e USING (comment_id) WHERE v.run_id = ?), "
        "texts_of(text_id) AS (SELECT text_id FROM own UNION SELECT n.result_text_id FROM normalizations n "
        "                      WHERE n.normalizer = ? AND n.version = ? AND n.source_text_id IN (SELECT text_id FROM own)) "
        "SELECT s.detector_id, t.text, s.error FROM scores s JOIN texts t USING (text_id) "
        "WHERE s.error IS NOT NULL AND s.text_id IN (SELECT text_id FROM texts_of) "
        "AND s.detector_id IN (SELECT value FROM json_each(?)) ORDER BY s.created_at, s.rowid",
        (json.dumps(ids), run_id, name, version, json.dumps(list(det_ids.values())))).fetchall()
    key_of = {det_id: key for key, det_id in det_ids.items()}
    out: dict[str, tuple[int, str]] = {}
    for det_id, text, error in rows:
        key = key_of[det_id]
        if text not in attempt.get(key, ()):
            n, first = out.get(key, (0, error))
            out[key] = (n + 1, first)
    return out


def with_earlier_errors(errors: dict[str, dict[str, Any]], earlier: dict[str, tuple[int, str]],
                        scored: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """`AuditResult.score_errors` of a resumed run: this attempt's tally per detector key, with `earlier`,
    the texts earlier attempts scored that still have an error as their score, and `earlier_first`, the
    first one's error (`earlier_score_errors`); a key with errors in earlier attempts only is there too."""
    out = {k: dict(t) for k, t in errors.items()}
    for key, (n, first) in earlier.items():
        t = out.setdefault(key, {"scores": (scored or {}).get(key, {}).get("scores", 0), "errors": 0, "first": None})
        t.update(earlier=n, earlier_first=first)
    return out


def run_step_errors(log: StudyLog, run_id: int, attempt: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Per step that failed for some texts of the run (`AuditResult.step_errors`), from its `step_errors`
    rows in the log (`run_id`: the run that last met the failure), not from this attempt's chunks alone: an
    audit that resumes skips the items an earlier attempt finished, so it never meets their failures
    again, and its summary and exit code would say the run had none. `attempt`: per step, the texts this
    attempt's chunks failed for (a text whose row another run met since is still this run's); `earlier`
    counts the texts only an earlier attempt of the run met."""
    rows = log.conn.execute(
        "SELECT e.step, e.component || '@' || e.version, e.message, t.text FROM step_errors e JOIN texts t USING (text_id) "
        "WHERE e.run_id = ? ORDER BY e.created_at, e.rowid", (run_id,)).fetchall()
    return whole_run_steps(rows, attempt)


def whole_run_steps(rows: Iterable[tuple[str, str, str, str]], attempt: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """`AuditResult.step_errors` of a run from its step errors, (step, component@version, message, text)
    oldest first, and per step the texts this attempt failed for (`run_step_errors`)."""
    texts: dict[str, set[str]] = {step: set(mine) for step, mine in attempt.items()}
    first: dict[str, tuple[str, str]] = {}  # step -> (component, message) of its earliest row
    components: dict[str, dict[str, None]] = {}
    for step, component, message, text in rows:
        texts.setdefault(step, set()).add(text)
        first.setdefault(step, (component, message))
        components.setdefault(step, {})[component] = None
    out: dict[str, dict[str, Any]] = {}
    for step, failed in texts.items():
        if step not in first:  # (this attempt's failures are rows of the run: not reached)
            continue
        out[step] = {"component": ", ".join(components[step]), "errors": len(failed), "first": first[step][1],
                     "earlier": len(failed - attempt.get(step, set()))}
    return out


def error_warnings(errors: dict[str, dict[str, Any]],
                   again: str = "the same command again, or `modlens rescore`, scores them again", what: str = "texts") -> list[str]:
    """The line per detector whose scores this run include errors (`AuditResult.score_errors`); `again`:
    what scores them again (a finished run's rerun is a new run, which scores every error again)."""
    lines = [f"detector {key}: {t['errors']} of the {t['scores']} {what} it scored have an error as their score "
             f"(the first: {t['first']}), "
             f"logged as errors and left out of every metric; {again}" for key, t in errors.items() if t["errors"]]
    return lines + [f"detector {key}: {earlier_errors(t)} (the first: {t['earlier_first']}), logged as errors and left "
                    f"out of every metric; {again}" for key, t in errors.items() if t.get("earlier")]


def earlier_errors(t: dict[str, Any]) -> str:
    """What a resumed run's `earlier` count says (`with_earlier_errors`)."""
    n = t["earlier"]
    return (f"{n} text{'s' * (n != 1)} an earlier attempt of the run scored {'has' if n == 1 else 'have'} an error "
            "as their score")


# what tries a failed step's texts again: a finished run's rerun is a new run, which runs every step again
STEP_AGAIN = "the same command, run again once the cause is fixed, tries them again"


def _earlier(counts: dict[str, Any]) -> str:
    """'of which N in an earlier attempt; ' where a resumed run's earlier attempts met N of its errors."""
    return f"of which {counts['earlier']} in an earlier attempt; " if counts.get("earlier") else ""


def step_error_warnings(steps: dict[str, dict[str, Any]], again: str = STEP_AGAIN) -> list[str]:
    """The line per step that failed for some texts of this run (`AuditResult.step_errors`)."""
    lost = {"normalize": "its normalized form", "variants": "its variants"}
    return [f"step {step} ({s['component']}) failed for {s['errors']} text{'s' * (s['errors'] != 1)} ("
            f"{_earlier(s)}the first: {s['first']}), each logged as a step_errors row and still scored, without {lost.get(step, 'its output')}; "
            f"{again}" for step, s in steps.items()]


# what a rerun does with an unknown result: it tells only where a score was missing for a failed call
UNKNOWN_AGAIN = ("the same command attacks them again, which tells only where a call failed: a judge that is a "
                 "cached table without the text, or a target whose answer lacks the goal's label, leaves them "
                 "unknown again (leave that judge out with --ensemble, or attack another target)")


def unknown_attack_warnings(counts: dict[str, dict[str, int]]) -> list[str]:
    """The line per target some of whose attacks run have an unknown result (`AuditResult.attacks`)."""
    lines = []
    for key, c in counts.items():
        if c.get("unknown"):
            n, ran = c["unknown"], c["success"] + c["failed"] + c["skipped"]
            lines.append(f"attacks on {key}: {n} of the {ran} attacks run {'has' if n == 1 else 'have'} an unknown "
                         "result (the target had no score for the seed or for candidates, or a judge for a flip; "
                         "the records count them, unscored_by_target and unscored_by_ensemble), counted as "
                         f"`unknown` beside their status; {UNKNOWN_AGAIN}")
    return lines


def close_run(log: StudyLog, auditor: Auditor, run_id: int, status: str) -> LogUnwritable | None:
    """The run's end in the log: the open group of chunks committed, the count of items done and the
    status written. A log that stopped taking writes is returned, not raised, so the error that
    stopped the audit, if any, is the one reported; what the log holds is then what was committed
    (an uncommitted group is rolled back), and the run, left `running`, resumes as an interrupted one."""
    try:
        auditor.sink.commit()  # (closing the auditor did, unless the loop never got there)
        log.set_run_progress(run_id, n_completed(log, run_id))
        log.finish_run(run_id, status)
    except (sqlite3.Error, LogUnwritable) as err:
        failed = unwritable(err, log.path)
        if failed is None:
            raise
        if log.conn.in_transaction:
            log.conn.execute("ROLLBACK")
        return failed
    return None


def stopped_before_chunks(failed: LogUnwritable) -> LogUnwritable:
    """An unwritable log met before the audit's first chunk, as the audit reports it."""
    return failed.stopped("the audit stopped before its first chunk")


def _to_parquet(out: Path, data: Dataset, engine: Engine, params: dict[str, Any], study: StudyConfig,
                compute: Compute, limit: int | None, chunk_size: int, total: int | None,
                progress: bool, on_chunk: Callable[[int], None] | None, unavailable: dict[str, str],
                t0: float) -> AuditResult:
    """The audit into `--out-parquet` shards (`modlens.chunks.parquet`), resumable the same way; computed
    by `compute` (on Ray, its actors already started, or this process's engine)."""
    from modlens.chunks.parquet import ParquetSink, done_keys, folder_errors, manifest

    try:
        sink = ParquetSink(out, manifest(data, dataset_platform(data), location(data), params, study, engine.detectors))
        feed = Feed(data.iter_items(), done_keys(out), limit)
    except BaseException:  # (the pipeline closes it once it runs)
        compute.close()
        raise
    pipeline = ChunkPipeline(compute, sink)
    try:
        with heap_frozen():
            asyncio.run(_drive(pipeline, feed, data.name, chunk_size, total, progress, on_chunk))
    except DatasetError as err:
        raise setup_error(err, f"; the chunks before it are in {out}") from None
    except OSError as err:  # a full disk, a read-only folder: the shards written before it are whole
        if err.errno not in UNWRITABLE_ERRNOS:
            raise
        raise SetupError(f"cannot write the shards in {out}: {err.strerror or err}; {len(done_keys(out))} items are "
                         f"in {out}", fix="free space on its disk (or make it writable again), then run the same "
                         "command again: it resumes after them", kind=ErrorKind.FAILED) from None
    finally:
        feed.close()
    errors, steps = pipeline.score_errors(), pipeline.step_errors()
    if feed.n_skipped:  # resumed: the folder's earlier chunks are the run's too (this attempt skipped their items)
        step_rows, failing = folder_errors(out)
        steps = whole_run_steps(step_rows, pipeline.step_failed_texts())
        attempt = pipeline.error_texts()
        earlier: dict[str, tuple[int, str]] = {}
        for key, texts in failing.items():
            if left := [e for t, e in texts.items() if t not in attempt.get(key, ())]:
                earlier[key] = (len(left), left[0])
        errors = with_earlier_errors(errors, earlier, pipeline.scores)
    warnings = [*error_warnings(errors, f"once imported (`modlens import {out}`), `modlens rescore` scores them again"),
                *step_error_warnings(steps, "this folder's audit resumes after its items: an audit into a new folder "
                                            "tries them again")]
    return AuditResult(0, data.name, location(data)[0], feed.n_read, feed.n_skipped, pipeline.n_scored,
                       pipeline.n_missing, {k: f"{d.name}@{d.version}" for k, d in engine.detectors.items()},
                       time.perf_counter() - t0, feed.n_skipped > 0, unavailable, format=data.format,
                       notes=[*data.notes, *feed.blank_notes(), f"results in {out} (load them with `modlens import {out}`)",
                              *warnings],
                       not_scored=dict(feed.blank), warnings=warnings, score_errors=errors, step_errors=steps)


class Feed:
    """The dataset's items as the audit takes them: at most `limit`, those an earlier attempt
    finished skipped (and counted), read lazily in chunks. Blank texts are counted per reason
    (`blank`) among every item read, finished earlier or not: the pipeline logs them unscored."""

    def __init__(self, items: Iterator[DatasetItem], done_keys: set[str], limit: int | None):
        self.source = items
        self.items: Iterable[DatasetItem] = islice(items, limit) if limit else items
        self.done_keys = done_keys
        self.n_read = self.n_skipped = 0
        self.blank: Counter[str] = Counter()

    def blank_notes(self) -> list[str]:
        """The line the audit prints about blank texts (none when there were none)."""
        if not self.blank:
            return []
        n = sum(self.blank.values())
        return [f"{n} blank text{'s' * (n != 1)} not scored ({', '.join(f'{why} {k}' for why, k in sorted(self.blank.items()))}): "
                "logged, left out of every metric"]

    def chunks(self, size: int) -> Iterator[list[DatasetItem]]:
        todo = self._todo()
        while chunk := list(islice(todo, size)):
            yield chunk

    def _todo(self) -> Iterator[DatasetItem]:
        for it in self.items:
            self.n_read += 1
            if (why := blank_reason(it.text)) is not None:
                self.blank[why] += 1
            if it.key in self.done_keys:
                self.n_skipped += 1
            else:
                yield it

    def close(self) -> None:
        """Closes the reader's file now (a `--limit` stops reading before the end)."""
        close = getattr(self.source, "close", None)
        if close is not None:
            close()


class Runner(Protocol):
    """What `_drive` runs chunks through: the `Auditor` (log), or a bare `ChunkPipeline` (Parquet)."""
    engine: Engine

    @property
    def depth(self) -> int: ...

    async def process(self, items: Sequence[DatasetItem]) -> None: ...

    def close(self) -> None: ...


# the collector's first threshold while the chunks run: the rows they make die by their reference
# counts, so a young collection every 700 new objects (Python's default) walked them for nothing
YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """The objects alive before the chunks (the ~45,000 of the imports, the engine, the detectors)
    out of the collector's way while they run (`gc.freeze`), back in after (`gc.unfreeze`), and
    young collections less often (`YOUNG_THRESHOLD`, the threshold put back after). The chunks' rows
    pushed two full collections per Davidson audit, each walking all of those objects again for
    nothing (1.4 of the 2.5 µs per row the collector took, free detector), and a young collection
    every 700 objects took most of the rest. Nothing is kept longer than it would be but cyclic
    garbage: among those older objects, collected after; among new ones, up to YOUNG_THRESHOLD
    objects. Process-global state, so taken only where nobody else froze objects (an embedding
    program that did keeps its own) and the collector runs at all."""
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


async def _drive(runner: Runner, feed: Feed, name: str, chunk_size: int, n_total: int | None,
                 progress: bool, on_chunk: Callable[[int], None] | None) -> None:
    """Chunks through the runner, `runner.depth` at a time (2 where a detector frees the loop while it
    computes, `LocalCompute.depth`, and on Ray: the next chunk computes while the loop records one).
    Chunks are recorded, counted and their errors raised in the order they came, as one after the
    other: `n_done` (the bar, the run's progress, `on_chunk`) counts recorded chunks only, a chunk's
    error stops the audit after the chunks before it are recorded, and so does a bad row the reader
    meets. The bar shows items/s and, when the size is known, the ETA."""
    from tqdm import tqdm

    bar = tqdm(total=n_total, desc=f"audit {name}", unit="item", disable=not progress)
    depth = max(1, runner.depth)
    record_progress = getattr(runner, "progress", None)  # the Parquet sink keeps no run row
    pending: dict[asyncio.Future[None], int] = {}  # in flight, oldest first -> its size
    n_recorded = 0

    async def settle() -> None:
        nonlocal n_recorded
        # the oldest chunk: the first to be recorded (a later one ends first only when it fails)
        task = next(iter(pending))
        await asyncio.wait([task])
        size = pending.pop(task)
        task.result()  # a chunk's error stops the audit here
        n_recorded += size
        # skipped (done before) + recorded: not the rows read, which include those of a chunk the
        # reader was filling when it met a bad row (never recorded)
        n_done = feed.n_skipped + n_recorded
        if record_progress is not None:
            record_progress(n_done)
        bar.update(n_done - bar.n)
        if on_chunk:
            on_chunk(n_done)

    chunks = feed.chunks(chunk_size)
    try:
        while True:
            try:
                chunk = next(chunks, None)
            except Exception:  # a bad row: the chunks read before it are recorded first
                while pending:
                    await settle()
                raise
            if chunk is None:
                break
            pending[asyncio.ensure_future(runner.process(chunk))] = len(chunk)
            if len(pending) >= depth:
                await settle()
        while pending:
            await settle()
        finish = getattr(runner, "finish", None)  # the Auditor's pending attack checks (a bare pipeline has none)
        if finish is not None:
            await finish()
        bar.update(feed.n_read - bar.n)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        bar.close()
        runner.close()
        await runner.engine.close()
