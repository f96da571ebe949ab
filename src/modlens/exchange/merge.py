"""Merging participant bundles into one study log (`modlens merge`), which `modlens report` reads as usual.

Rules (docs/MULTI.md):
- one transaction per bundle: a bundle is verified completely first, then merged whole or not at all;
- the same bundle twice adds nothing (its checksum is recorded in `bundles`), and every row is
  merged by its natural key, so a later, larger export of the same participant adds only what is new;
- texts by sha256; pages by platform + page key; comments by platform + comment key + text hash (a
  comment whose text differs from the one already merged under its key, i.e. edited between
  visits, is kept apart under `<key>#<first 12 hex of its text hash>`); detectors by name + version,
  so scores stay per detector version (a score replaces an earlier error, never the reverse);
  ratings per study + rater + client rating id, so every rater's ratings are kept;
- provenance: `bundles` (checksum, raters, versions, when merged, from which file) and `row_sources`
  (which bundle held each study, rater, session, page, comment, detector, score and rating, and
  whether it added it); texts, sightings, labels, normalizations, variants and rating values follow
  the comment, text or rating they belong to;
- refused, with nothing written: a bundle of another study (study key), a damaged, truncated or
  tampered bundle, a newer bundle format or schema, and a target log that is not a merged log;
- signatures: a bundle whose signature does not verify is refused when read; an unsigned one unless
  `allow_unsigned`; one whose rater was merged before under another key is refused (`check_signer`).
Older bundle schemas are upgraded on the fly: a column the bundle lacks is filled with NULL or its
default; a column that needs a value has an entry in UPGRADES.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Callable

from modlens.errors import UPGRADE, ModlensError
from modlens.studylog import schema
from modlens.exchange.bundle import TABLES, Bundle, BundleError, read_bundle
from modlens.studylog.records.labels import GOLD, LEGACY_DEFINITION
from modlens.studylog.codec import now_iso
from modlens.studylog.connection import TURNSTILE_SUFFIX
from modlens.studylog.page_address import canonical_page
from modlens.studylog.records.forget import held as withdrawn_held, withdrawals
from modlens.studylog.records.merged import insert_bundle
from modlens.studylog.store import StudyLog

# schema version of a bundle -> function upgrading its {table: (columns, rows)} to the next version.
# 1 -> 2 added only the merge tables (bundles, row_sources), which bundles never carry;
# 2 -> 3 added only new tables (media), which older bundles lack and read as empty;
# 3 -> 4 added sessions.ended_by (NULL: not known) and the label-set tables;
# 4 -> 5 added only rater_reviews, which bundles never carry;
# 6 -> 7 also added consent_texts and consents, which an older bundle lacks: its raters' consents are their
# raters.consent_at alone (the text unknown) and the merged log gets no consents row for them.
Tables = dict[str, tuple[list[str], list[tuple[Any, ...]]]]


def _gold_into_label_sets(tables: Tables) -> None:
    """3 -> 4: gold `toxic` labels leave `labels` for one label set per source, as migration 4 moves a log's."""
    cols, rows = tables["labels"]
    at = {c: n for n, c in enumerate(cols)}
    gold = [r for r in rows if r[at["name"]] == GOLD] if rows else []
    if not gold:
        return
    tables["labels"] = (cols, [r for r in rows if r[at["name"]] != GOLD])
    set_ids = {src: n for n, src in enumerate(dict.fromkeys(r[at["source"]] for r in gold), 1)}
    tables["label_sets"] = (["label_set_id", "source", "definition", "created_at"],
                            [(n, src, LEGACY_DEFINITION, now_iso()) for src, n in set_ids.items()])
    tables["gold_labels"] = (["label_set_id", "comment_id", "value"],
                             [(set_ids[r[at["source"]]], r[at["comment_id"]], r[at["value"]]) for r in gold])


def _pages_without_authors(tables: Tables) -> None:
    """6 -> 7: X and YouTube pages as the log keeps them (no author in address or title), as migration 7
    rewrites a log's; two that become one page are one row of the merged log (merge finds it by its key)."""
    cols, rows = tables["pages"]
    if not rows:
        return
    at = {c: n for n, c in enumerate(cols)}
    out = []
    for r in rows:
        row = list(r)
        _, row[at["page_key"]], row[at["url"]], row[at["title"]] = canonical_page(
            r[at["platform"]], r[at["page_key"]], r[at["url"]], r[at["title"]])
        out.append(tuple(row))
    tables["pages"] = (cols, out)


UPGRADES: dict[int, Callable[[Tables], None]] = {
    1: lambda tables: None, 2: lambda tables: None, 3: _gold_into_label_sets, 4: lambda tables: None,
    5: lambda tables: None,  # 6 added ratings.time_spent_over_limit_ms: NULL in older rows
    6: _pages_without_authors}
OLDEST_SCHEMA = 1


class MergeError(ModlensError, ValueError):
    """A bundle that is refused; nothing of it was written."""


def _target_study_keys(log: StudyLog) -> set[str]:
    return {r[0] for r in log.conn.execute("SELECT DISTINCT study_key FROM bundles")}


def _check_target(log: StudyLog) -> None:
    """Merging into a participant's own log would mix unconsented and merged rows: refuse."""
    if _target_study_keys(log):
        return
    used = [t for t in ("studies", "comments", "ratings") if log.conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
    if used:
        raise MergeError(f"{log.path} is not a merged study log (it has {', '.join(used)} but no merged bundles)",
                         fix="merge into a new file, e.g. --out merged.sqlite")


def _upgraded(bundle: Bundle, log: StudyLog) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The bundle's tables as {table: (current columns, rows)}, upgraded from its schema version."""
    from modlens.exchange.bundle import column_types

    version = int(bundle.manifest["schema_version"])
    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    for name in TABLES:
        table = bundle.table(name)
        if table is None:
            tables[name] = ([], [])
            continue
        tables[name] = (list(table.column_names), list(zip(*(col.to_pylist() for col in table.columns))))
    for v in range(version, schema.SCHEMA_VERSION):
        UPGRADES[v](tables)
    for name in TABLES:
        have, rows = tables[name]
        want = [c for c, _ in column_types(log.conn, name)]
        extra = [c for c in have if c not in want]
        if extra:
            raise MergeError(f"{bundle.name}: table {name} has columns {extra} this modlens does not know")
        # a table the bundle's schema did not have yet has no rows: nothing to fill in
        fill = _defaults(log, name, [c for c in want if c not in have], bundle.name) if rows else {}
        index = {c: i for i, c in enumerate(have)}
        tables[name] = (want, [tuple(row[index[c]] if c in index else fill[c] for c in want) for row in rows])
    return tables


def _defaults(log: StudyLog, table: str, missing: list[str], name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _cid, col, _decl, notnull, default, pk in log.conn.execute(f"PRAGMA main.table_info([{table}])"):
        if col not in missing:
            continue
        if default is not None:
            out[col] = log.conn.execute(f"SELECT {default}").fetchone()[0]
        elif notnull or pk:
            raise MergeError(f"{name}: table {table} lacks column {col}, which needs a value, and no upgrade rule "
                             "fills it", fix="ask the participant to export with a current modlens")
        else:
            out[col] = None
    return out


def _check_texts(bundle: Bundle, tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]]) -> None:
    """Texts are deduplicated by their hash, so a wrong hash would attach ratings to another text."""
    cols, rows = tables["texts"]
    h, t = cols.index("text_hash"), cols.index("text")
    for row in rows:
        if not isinstance(row[t], str) or hashlib.sha256(row[t].encode("utf-8")).hexdigest() != row[h]:
            raise MergeError(f"{bundle.name}: texts: text_id {row[cols.index('text_id')]} does not match its text_hash")


def verify_for(log: StudyLog, bundle: Bundle, study_key: str | None = None) -> None:
    """Everything that refuses a bundle before anything is written."""
    m = bundle.manifest
    version = m.get("schema_version")
    if not isinstance(version, int) or version > schema.SCHEMA_VERSION:
        raise MergeError(f"{bundle.name}: exported from study-log schema {version}, newer than this modlens "
                         f"merges ({schema.SCHEMA_VERSION})", fix=UPGRADE)
    if version < OLDEST_SCHEMA:
        raise MergeError(f"{bundle.name}: schema {version} is older than any this modlens can upgrade ({OLDEST_SCHEMA})")
    for key, holder in [(k, str(log.path)) for k in _target_study_keys(log)] + [(study_key, "--study")]:
        if key and m["study_key"] != key:
            raise MergeError(f"{bundle.name}: belongs to another study ({m['study_id']!r}, key {m['study_key']}); "
                             f"{holder} is study key {key}",
                             fix="merge each study into its own file; participants of one study must join the same "
                                 "study.modlens")
    studies = {r for r, in _rows(bundle, "studies", "study_id")}
    if studies - {m["study_id"]}:
        raise MergeError(f"{bundle.name}: holds rows of studies {sorted(studies)}, the manifest says {m['study_id']!r}")


def check_signer(log: StudyLog, bundle: Bundle, withdrawn: list[str], allow_unsigned: bool = False) -> None:
    """A participant's bundle is signed by their bundle key (read_bundle verified the signature);
    a rater merged before under another key is not that participant's bundle: an edited one,
    re-signed. Unsigned bundles (older modlens, or a signature stripped) only with allow_unsigned.
    `withdrawn`: the raters the bundle carries only a withdrawal of (`_withdrawn_in`)."""
    if bundle.signer is None:
        if not allow_unsigned:
            raise MergeError(f"{bundle.name}: unsigned, so it cannot be told from an edited bundle",
                             fix="ask the participant to export it again with this modlens, or pass --allow-unsigned")
        return
    # a withdrawal only its participant may send: its raters are recorded with the bundle too (insert_bundle)
    raters = [*bundle.manifest["rater_ids"], *withdrawn]
    if not raters:
        return
    other = log.conn.execute(
        f"SELECT j.value, b.signer FROM bundles b, json_each(b.rater_ids_json) j WHERE b.signer IS NOT NULL "
        f"AND b.signer != ? AND j.value IN ({', '.join('?' * len(raters))}) LIMIT 1",
        (bundle.signer, *raters)).fetchone()
    if other:
        raise MergeError(f"{bundle.name}: rater {other[0]}'s earlier bundles were signed by {other[1]}, this one by "
                         f"{bundle.signer}: not that participant's bundle (edited and signed again?)",
                         fix="ask the participant to export and send it again")


def _withdrawn_in(bundle: Bundle) -> list[str]:
    """The raters this bundle carries withdrawn consents of and no data: those who withdrew."""
    consenting = set(bundle.manifest["rater_ids"])
    return sorted({r for r, at in _rows(bundle, "consents", "rater_id", "withdrawn_at") if at is not None} - consenting)


def _withdrawals(log: StudyLog, bundle: Bundle, withdrawn: list[str]) -> list[dict[str, Any]]:
    """Each rater the bundle says withdrew (`withdrawn`) whom no consent in the merged log holds now: when, and
    what the merged log still holds of theirs (`records/forget.held` after the merge, of these raters
    alone), brought by earlier bundles (the participant was told to ask the researcher to delete it;
    nothing here deletes it). A rater who agreed again, in a bundle merged before this one, is left out: the
    log holds what they recorded since, and what the withdrawal covers the summary after the merge says
    (`cli/merge._withdrawn_held`)."""
    if not withdrawn:
        return []
    study = bundle.manifest["study_id"]
    now = {r["rater_id"]: r for r in withdrawn_held(log.conn, [(study, rater) for rater in withdrawn])
           if r["agreed_again"] is None}
    return [{k: v for k, v in now[rater].items() if k != "study_id"} for rater in withdrawn if rater in now]


def _rows(bundle: Bundle, table: str, *columns: str) -> list[tuple[Any, ...]]:
    t = bundle.table(table)
    return [] if t is None else list(zip(*(t.column(c).to_pylist() for c in columns)))


def merge_bundle(log: StudyLog, bundle: Bundle, study_key: str | None = None, allow_unsigned: bool = False) -> dict[str, Any]:
    """Merge one verified bundle in one transaction; returns {"status": "merged"|"already merged", ...}; a
    merged one's "withdrawn": the raters it carries the withdrawal of, with what the log holds of theirs
    (what the log holds of every rater who withdrew: `exchange/forget.still_held`, once after the last bundle)."""
    verify_for(log, bundle, study_key)  # first: a bundle of another study is refused, merged before or not
    done = log.conn.execute("SELECT merged_at, source_name FROM bundles WHERE bundle_sha256 = ?", (bundle.sha256,)).fetchone()
    if done:
        return {"status": "already merged", "merged_at": done[0], "source": done[1], "added": {}}
    _check_target(log)
    withdrawn = _withdrawn_in(bundle)  # read once: the signer check, the bundle's row and the notice
    check_signer(log, bundle, withdrawn, allow_unsigned)
    tables = _upgraded(bundle, log)
    _check_texts(bundle, tables)
    try:
        bundle_id, rows_info = insert_bundle(log.conn, bundle.sha256, bundle.manifest, Path(bundle.name).name,
                                             bundle.signer, tables, withdrawn)
    except sqlite3.Error as err:  # e.g. a row pointing at one the bundle lacks
        raise MergeError(f"{bundle.name}: {err}; rolled back, nothing of it was merged") from None
    return {"status": "merged", "bundle_id": bundle_id, "rows": rows_info, "withdrawn": _withdrawals(log, bundle, withdrawn)}


def merge_files(db: str | Path, paths: list[str | Path], study_key: str | None = None,
                report: Callable[[str, dict[str, Any] | Exception], None] | None = None,
                allow_unsigned: bool = False) -> list[dict[str, Any] | Exception]:
    """Merge each file in turn; a refused one is reported and skipped, the others still merge.
    A target that did not exist is created only if some bundle merges into it."""
    target = Path(db)
    existed = target.exists()
    results: list[dict[str, Any] | Exception] = []
    log: StudyLog | None = None
    try:
        for path in paths:
            outcome: dict[str, Any] | Exception
            try:
                bundle = read_bundle(path)
            except (BundleError, FileNotFoundError) as err:
                outcome = err
            else:
                try:
                    log = log or StudyLog(db)
                    outcome = merge_bundle(log, bundle, study_key, allow_unsigned)
                except (MergeError, BundleError) as err:  # BundleError: a table that does not read
                    outcome = err
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
                    # rows no modlens wrote, past every check above: still one line, and the next bundle
                    outcome = MergeError(f"{bundle.name}: cannot be merged ({type(err).__name__}: {err}); "
                                         "nothing of it was merged")
                finally:
                    bundle.close()
            results.append(outcome)
            if report:
                report(str(path), outcome)
    finally:
        if log is not None:
            log.close()
        if not existed and not any(isinstance(r, dict) and r["status"] == "merged" for r in results):
            for suffix in ("", "-wal", "-shm", "-journal", TURNSTILE_SUFFIX):
                target.with_name(target.name + suffix).unlink(missing_ok=True)
    return results


def listing(db: str | Path) -> list[dict[str, Any]]:
    """One entry per merged bundle and each rater in its `bundles.rater_ids_json` (the raters it carried
    data of, and those it carried only the withdrawal of): the rater's ratings that bundle held and those it
    added (`row_sources`), the rater's ratings in the merged log from every bundle, consent time, checksum,
    and `withdrawn_at`: when the rater withdrew if every consent of theirs in the merged log is withdrawn
    now (`records/forget.withdrawals` with no consent given again; then on each of their entries, data or not),
    else None; `agreed_again`:
    when a rater who withdrew agreed again (their consent counts from then on: `records/forget.withdrawals`),
    else None. `deleted`: the bundle
    carried the rater's data and what it brought of theirs was deleted (`merge --forget-withdrawn
    --delete`), so its counts no longer say what it held: the bundle's provenance of the rater's `raters`
    row (`row_sources`, written for every bundle that carries the rater, goes only with that row) is gone.
    A bundle's data-carrying raters are the first `rows_json.raters.in_bundle` of `rater_ids_json` (the
    manifest's raters; those whose withdrawal alone it carries follow: `records/merged.insert_bundle`)."""
    with StudyLog(db, readonly=True) as log:
        out = []
        # every consent of theirs withdrawn (`records/sessions.WITHDREW`), or agreed again since
        withdrawn = withdrawals(log.conn)
        withdrew = {(study, rater): at for study, rater, at, agreed in withdrawn if agreed is None}
        again = {(study, rater): agreed for study, rater, _, agreed in withdrawn if agreed}
        for b in log.query("SELECT * FROM bundles ORDER BY bundle_id"):
            raters = json.loads(b["rater_ids_json"])
            carried = json.loads(b["rows_json"]).get("raters", {}).get("in_bundle", len(raters))
            for n, rater in enumerate(raters):
                deleted = n < carried and not log.conn.execute(
                    "SELECT 1 FROM row_sources WHERE table_name = 'raters' AND row_key = ? AND bundle_id = ?",
                    (f"{b['study_id']}/{rater}", b["bundle_id"])).fetchone()
                row = log.conn.execute(
                    "SELECT r.consent_at, (SELECT count(*) FROM ratings x WHERE x.study_id = r.study_id "
                    "AND x.rater_id = r.rater_id) FROM raters r WHERE r.study_id = ? AND r.rater_id = ?",
                    (b["study_id"], rater)).fetchone()
                held, added = log.conn.execute(
                    "SELECT count(*), coalesce(sum(s.added), 0) FROM row_sources s JOIN ratings x "
                    "ON x.rating_id = CAST(s.row_key AS INTEGER) WHERE s.table_name = 'ratings' AND s.bundle_id = ? "
                    "AND x.rater_id = ?", (b["bundle_id"], rater)).fetchone()
                out.append({"bundle_id": b["bundle_id"], "rater_id": rater, "ratings_in_bundle": held,
                            "ratings_added": added, "ratings": row[1] if row else 0, "deleted": deleted,
                            "consent_at": row[0] if row else None,
                            "withdrawn_at": withdrew.get((b["study_id"], rater)),
                            "agreed_again": again.get((b["study_id"], rater)), "bundle_sha256": b["bundle_sha256"],
                            "source": b["source_name"], "merged_at": b["merged_at"], "study_id": b["study_id"],
                            "schema_version": b["schema_version"], "modlens_version": b["modlens_version"]})
        return out
