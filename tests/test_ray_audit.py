"""`modlens audit --engine ray` against the local engine, on a real local Ray (`ray.init(num_cpus=2)`):
the same rows, resume after the driver is killed, a failing detector's errors recorded."""
from __future__ import annotations

import csv
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import pytest
import ray_local

import ray  # noqa: E402  (the ray extra: make setup installs it)

from modlens.audit import run_audit  # noqa: E402
from modlens.datasets.base import file_digest  # noqa: E402
from modlens.detectors.base import Detector  # noqa: E402

pytestmark = pytest.mark.slow

WORDS = ("you are an idiot great post thanks stupid nice hate love this trash article fool damn wonderful "
         "moron kind shut up loser brilliant garbage").split()


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with ray_local.local_ray(__name__):  # the test detectors travel to the workers by value
        yield


def comments(path: Path, n: int, seed: int = 1) -> Path:
    rng = random.Random(seed)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "toxic"])
        for i in range(n):
            w.writerow([" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) + f" #{i}", rng.randint(0, 1)])
    return path


def tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = sqlite3.connect(db)
    try:
        return {
            "scores": con.execute(
                "SELECT t.text, d.name, d.version, s.toxicity, s.labels_json, s.error FROM scores s "
                "JOIN texts t USING (text_id) JOIN detectors d USING (detector_id) ORDER BY 1, 2").fetchall(),
            "normalizations": con.execute(
                "SELECT a.text, n.normalizer, n.version, b.text, n.edits_json FROM normalizations n "
                "JOIN texts a ON a.text_id = n.source_text_id JOIN texts b ON b.text_id = n.result_text_id "
                "ORDER BY 1, 2").fetchall(),
            "variants": con.execute(
                "SELECT c.comment_key, t.text, v.strategy, v.params_json, v.seed, v.positions_json, v.target_detector "
                "FROM variants v JOIN comments c USING (comment_id) JOIN texts t ON t.text_id = v.text_id "
                "ORDER BY 1, 2, 3, 4").fetchall(),
            "labels": con.execute("SELECT c.comment_key, l.name, l.value FROM labels l JOIN comments c "
                                  "USING (comment_id) ORDER BY 1, 2").fetchall(),
            "run_items": con.execute("SELECT c.comment_key FROM run_items JOIN comments c USING (comment_id) "
                                     "ORDER BY 1").fetchall(),
        }
    finally:
        con.close()


def assert_same(a: dict[str, list[tuple[Any, ...]]], b: dict[str, list[tuple[Any, ...]]]) -> None:
    for name in a:
        assert len(a[name]) == len(b[name]), name
        if name == "scores":  # float tolerance on the toxicity, everything else exact
            for x, y in zip(a[name], b[name]):
                assert x[:3] == y[:3] and x[5] == y[5]  # text, detector name and version, error
                assert (x[3] is None) == (y[3] is None) and (x[3] is None or abs(x[3] - y[3]) < 1e-6)
                lx, ly = json.loads(x[4] or "{}"), json.loads(y[4] or "{}")
                assert lx.keys() == ly.keys() and all(abs(lx[k] - ly[k]) < 1e-6 for k in lx)
        else:
            assert a[name] == b[name], name


def test_ray_and_local_engines_write_the_same_rows(tmp_path):
    """2,000 comments with normalization, and 50 of them with perturbed variants (the variant
    generator is the slow part on 2 CPUs): identical scores (float tolerance), normalizations,
    variants, labels and completed items."""
    data = comments(tmp_path / "c.csv", 2000)
    for extra, limit in (({"normalize": True}, None), ({"normalize": True, "perturb": ["homoglyph", "char_swap"]}, 150)):
        dbs = {}
        for engine in ("local", "ray"):
            dbs[engine] = tmp_path / f"{engine}-{limit}.sqlite"
            res = run_audit(str(data), db=dbs[engine], detectors=["profanity-check"], limit=limit, progress=False,
                            engine=engine, chunk_size=512, **extra)
            assert res.n_items == (limit or 2000) and res.n_missing == 0
        local, remote = tables(dbs["local"]), tables(dbs["ray"])
        assert len(local["scores"]) >= (limit or 2000) and len(local["run_items"]) == (limit or 2000)
        if limit:
            assert local["variants"], "the perturbed run generated variants"
        assert_same(local, remote)


KILL_SCRIPT = """
import sys, time
from modlens.audit import run_audit
from modlens.scale.ray_audit import RayOptions
def slow(n):
    time.sleep(0.25)  # time for the test to see progress and kill this driver mid-run
run_audit(sys.argv[1], db=sys.argv[2], detectors=["profanity-check"], normalize=True, chunk_size=100,
          progress=False, on_chunk=slow, engine="ray", ray_options=RayOptions(address=sys.argv[3]))
"""


def test_resume_after_the_driver_is_killed(tmp_path):
    """The driver (a subprocess on this test's Ray cluster) is SIGKILLed mid-run; the same audit
    again finishes with every item once, no duplicate scores, nothing missing, and recomputes
    none of the scores the killed run committed."""
    data, db = comments(tmp_path / "c.csv", 1000, seed=2), tmp_path / "log.sqlite"
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(data), str(db), address],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    done, deadline = 0, time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("SELECT count(*) FROM run_items").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if done >= 300:
                break
    assert proc.poll() is None, f"the driver ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    before = tables(db)
    assert 300 <= len(before["run_items"]) < 1000
    res = run_audit(str(data), db=db, detectors=["profanity-check"], normalize=True, chunk_size=100,
                    progress=False, engine="ray")
    assert res.resumed and res.n_skipped == len(before["run_items"])
    after = tables(db)
    keys = [k for (k,) in after["run_items"]]
    assert len(keys) == len(set(keys)) == 1000
    texts = [(t, n) for t, n, *_ in after["scores"]]
    assert len(texts) == len(set(texts))
    assert not [r for r in after["scores"] if r[5] is not None]
    assert set(before["scores"]) <= set(after["scores"])  # committed scores kept, not recomputed
    straight = tmp_path / "straight.sqlite"
    run_audit(str(data), db=straight, detectors=["profanity-check"], normalize=True, progress=False)
    assert_same(tables(straight), after)


class Flaky(Detector):
    """Fails a whole call when it holds a `boom` text; a `die` text kills the actor's process."""
    name, version, labels, toxicity_label = "flaky", "1", ("toxic",), "toxic"
    max_batch = 16

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        if any("die" in t for t in texts):
            os._exit(1)
        if any("boom" in t for t in texts):
            raise RuntimeError("model crashed on this batch")
        return [{"toxic": len(t) / 100} for t in texts]


def test_a_failing_detector_records_errors_and_the_audit_goes_on(tmp_path):
    path = tmp_path / "f.csv"
    rows = [f"comment {i}" for i in range(64)]
    rows[5], rows[40] = "boom goes the model", "die here"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *[[r] for r in rows]])
    res = run_audit(str(path), db=tmp_path / "l.sqlite", detector_objects={"flaky": Flaky()}, progress=False,
                    engine="ray", chunk_size=32)
    assert res.n_items == 64
    con = sqlite3.connect(tmp_path / "l.sqlite")
    errors = dict(con.execute("SELECT t.text, s.error FROM scores s JOIN texts t USING (text_id)").fetchall())
    assert len(errors) == 64 and con.execute("SELECT count(*) FROM run_items").fetchone()[0] == 64
    failed = {t for t, e in errors.items() if e}
    # the batch (16 texts) holding `boom` failed in its actor, the one holding `die` lost its actor
    assert "boom goes the model" in failed and "die here" in failed
    assert len(failed) == 32
    assert all("model crashed" in errors[t] for t in rows[0:16])
    assert all(errors[t] and "Error" in errors[t] for t in rows[32:48])
    assert all(errors[t] is None for t in rows[16:32] + rows[48:64])


def test_the_plan_asks_for_gpus_only_when_the_cluster_has_them():
    from modlens.scale.ray_audit import Plan, RayOptions

    gpu = Plan.of(16, 4, 2, False, RayOptions(gpus_per_detector=1))
    assert gpu.use_gpu and gpu.per_detector == 2  # 4 GPUs / (1 GPU x 2 detectors)
    half = Plan.of(16, 1, 1, False, RayOptions(gpus_per_detector=0.5))
    assert half.use_gpu and half.per_detector == 2
    cpu = Plan.of(2, 0, 1, False, RayOptions(gpus_per_detector=1))  # no GPU in the cluster: CPU actors
    assert not cpu.use_gpu and cpu.per_detector == 1 and cpu.cpus_per_actor + cpu.task_cpus <= 2
    assert not Plan.of(8, 2, 1, False, RayOptions()).use_gpu  # --gpus-per-detector 0: CPU actors
    assert Plan.of(8, 0, 1, True, RayOptions(actors_per_detector=3)).per_detector == 3



def test_out_parquet_resumes_after_ctrl_c_and_imports_as_the_same_rows(tmp_path):
    """A folder of CSV and Parquet files through `--out-parquet`: a run stopped by Ctrl-C after its
    first chunk, the same command again, then `modlens import`: the log holds the same rows as a
    direct local audit of the folder."""
    from modlens.cli import main
    from modlens.chunks.parquet import done_keys

    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    data, out = tmp_path / "corpus", tmp_path / "shards"  # a folder of CSV and Parquet shards
    (data / "2024").mkdir(parents=True)
    comments(data / "a.csv", 120, seed=3)
    pq.write_table(pacsv.read_csv(comments(tmp_path / "b.csv", 120, seed=4)), data / "2024" / "b.parquet")

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_audit(str(data), db=tmp_path / "unused.sqlite", detectors=["profanity-check"], normalize=True,
                  chunk_size=60, progress=False, engine="ray", out_parquet=out, on_chunk=stop)
    first = done_keys(out)
    assert 60 <= len(first) < 240 and not (tmp_path / "unused.sqlite").exists()
    res = run_audit(str(data), db=tmp_path / "unused.sqlite", detectors=["profanity-check"], normalize=True,
                    chunk_size=60, progress=False, engine="ray", out_parquet=out)
    assert res.n_skipped == len(first) and len(done_keys(out)) == 240
    assert {k.split(":")[0] for k in done_keys(out)} == {"a.csv", "2024/b.parquet"}
    assert main(["import", str(out), "--db", str(tmp_path / "imported.sqlite")]) == 0
    assert main(["import", str(out), "--db", str(tmp_path / "imported.sqlite")]) == 0  # again: nothing doubled
    direct = tmp_path / "direct.sqlite"
    run_audit(str(data), db=direct, detectors=["profanity-check"], normalize=True, progress=False)
    assert_same(tables(direct), tables(tmp_path / "imported.sqlite"))


def test_ray_data_reads_folders_and_uris_as_the_local_readers_do(tmp_path):
    """Ray Data (`scale/ray_read.py`) reads a folder of Parquet, CSV, TSV and JSONL shards (a hive-style
    `year=2024` folder among them), a `file://` URI of it and a URI of one file: the same items, keys and
    labels as the local readers, in the same order; the columns come from the generic reader's detection."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from modlens.scale.sources import load_dataset, location

    rng = random.Random(7)
    rows = [{"comment_id": f"c{i}", "comment_text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))),
             "is_toxic": rng.choice(["1", "0", "yes", ""]), "group": rng.choice(["women", "", "007"])} for i in range(90)]
    data = tmp_path / "shards"
    (data / "year=2024").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:30]), data / "part-0.parquet", row_group_size=7)
    with open(data / "part-1.csv", "w", newline="") as fh:  # a quoted newline, strings that look like numbers
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([{**r, "comment_text": r["comment_text"] + ("\nsecond line" if i % 5 == 0 else "")}
                     for i, r in enumerate(rows[30:50])])
    with open(data / "year=2024" / "part-2.tsv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        w.writeheader()
        w.writerows(rows[50:70])
    (data / "year=2024" / "part-3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[70:]))
    (data / "_SUCCESS").write_text("")

    def items(ds: Any) -> list[tuple[str, str, dict[str, Any]]]:
        return [(i.key, i.text, i.labels) for i in ds.iter_items()]

    here = load_dataset(str(data))
    local = items(here)
    assert len(local) == 90 and local[0][0] == f"part-0.parquet:{file_digest(data / 'part-0.parquet')}:row-0"
    assert here.name.startswith("file-")  # the folder's content names it, not `shards`
    for uri in (str(data), data.as_uri()):
        read = load_dataset(uri, engine="ray")
        assert read.notes[0].startswith("read shards with Ray Data: 4 file(s)")
        assert items(read) == local and read.name == here.name and read.digest == here.digest  # the bytes read
    with_ids = load_dataset(data.as_uri(), engine="ray", id_col="comment_id")
    assert items(with_ids) == items(load_dataset(str(data), id_col="comment_id")) and with_ids.name == here.name
    assert with_ids.digest == here.digest and here.digest is not None
    one = load_dataset((data / "part-0.parquet").as_uri(), engine="ray")
    assert one.size == 30 and items(one) == items(load_dataset(str(data / "part-0.parquet")))
    with pytest.raises(ValueError, match="a URI is read by Ray Data") as err:
        load_dataset("s3://bucket/corpus/")
    assert "--engine ray" in (err.value.fix or "")  # the remedy travels as fix=
    # a remote URI of a built-in layout is copied through pyarrow.fs and read by its reader (here driven
    # with a local listing: no bucket is reachable offline); a local folder of one stays file by file
    from modlens.paths import shipped_data
    from modlens.scale import ray_read, sources

    noisy = shipped_data() / "noisyhate"
    assert ray_read.load(str(noisy)) is None
    copied = sources.copied("s3://bucket/noisyhate", ray_read.list_files(str(noisy)), None)
    assert copied.name == "noisyhate" and location(copied) == ("s3://bucket/noisyhate",) * 2
    assert items(copied) == items(load_dataset(str(noisy)))


def test_an_audit_of_a_file_uri_on_ray_writes_the_local_rows(tmp_path):
    """A local audit of a Parquet folder, stopped by Ctrl-C after its first chunk, resumed by
    `modlens audit file:///…/folder --engine ray` (the URI is the same dataset, so the same run), against
    a whole local audit: the same scores, normalizations, labels and completed items."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    data = tmp_path / "corpus"
    data.mkdir()
    for n in range(3):
        pq.write_table(pacsv.read_csv(comments(tmp_path / f"{n}.csv", 100, seed=10 + n)), data / f"part-{n}.parquet")
    opts: dict[str, Any] = {"detectors": ["profanity-check"], "normalize": True, "progress": False, "chunk_size": 128}
    run_audit(str(data), db=tmp_path / "local.sqlite", **opts)

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_audit(str(data), db=tmp_path / "ray.sqlite", on_chunk=stop, **opts)
    res = run_audit(data.as_uri(), db=tmp_path / "ray.sqlite", engine="ray", **opts)
    assert res.resumed and res.n_skipped == 128 and res.n_items == 300
    assert_same(tables(tmp_path / "local.sqlite"), tables(tmp_path / "ray.sqlite"))


def test_a_file_audited_on_ray_is_the_data_set_the_local_engine_names(tmp_path):
    """One plain file, audited locally by its path and on Ray by its `file://` URI (Ray Data reads
    it), with and without an id column: the same data set name (its content hash, not its stem), so the
    same platform, comment keys and run parameters. Another file of the same stem is another data set. A
    name declared with an id column (`--name forum --id-col cid`) names it alike on both engines, and an
    edited row is checked against the log's text on Ray as on the local engine."""
    def write(path: Path, seed: int) -> Path:
        path.parent.mkdir()
        rng = random.Random(seed)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["cid", "text", "toxic"])
            w.writerows([f"c{i}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))), i % 2] for i in range(30))
        return path

    def logged(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        con = sqlite3.connect(db)
        try:
            return (con.execute("SELECT platform, comment_key FROM comments ORDER BY 1, 2").fetchall(),
                    con.execute("SELECT dataset, params_json FROM audit_runs ORDER BY run_id").fetchall())
        finally:
            con.close()

    first, other = write(tmp_path / "a" / "data.csv", 3), write(tmp_path / "b" / "data.csv", 4)
    opts: dict[str, Any] = {"detectors": ["profanity-check"], "progress": False, "chunk_size": 64}
    for reader in ({}, {"id_col": "cid"}, {"id_col": "cid", "name": "forum"}):
        local = run_audit(str(first), db=tmp_path / "local.sqlite", reader_options=reader, **opts)
        remote = run_audit(first.as_uri(), db=tmp_path / "ray.sqlite", engine="ray", reader_options=reader, **opts)
        assert remote.notes[0].startswith("read data.csv with Ray Data")  # Ray Data read it, not the local reader
        assert local.dataset == remote.dataset == reader.get("name", f"file-{file_digest(first)}")
    assert logged(tmp_path / "local.sqlite") == logged(tmp_path / "ray.sqlite")
    keys = logged(tmp_path / "ray.sqlite")[0]
    assert len(keys) == 90 and {k for _, k in keys} >= {"c0", f"{file_digest(first)}:row-0"}
    assert sum(p == "dataset:forum" for p, _ in keys) == 30
    # row c1 edited: on Ray too the log keeps its first text, and the audit counts the row
    lines = first.read_text().splitlines(keepends=True)
    first.write_text("".join([*lines[:2], "c1,an edited text,1\n", *lines[3:]]))
    edited = run_audit(first.as_uri(), db=tmp_path / "ray.sqlite", engine="ray",
                       reader_options={"id_col": "cid", "name": "forum"}, **opts)
    assert (edited.dataset, edited.n_items, edited.n_edited, edited.n_scored) == ("forum", 30, 1, 0)
    assert "(c1)" in edited.warnings[0]
    assert run_audit(other.as_uri(), db=tmp_path / "ray.sqlite", engine="ray", **opts).dataset == \
        f"file-{file_digest(other)}" != remote.dataset


class DriverOnly(Detector):
    """Loads in the driver's process only: a Ray worker that unpickles it fails, as a worker without
    the detector's packages or weights would."""
    name, version, labels, toxicity_label = "driver-only", "1", ("toxic",), "toxic"

    def __init__(self) -> None:
        self.home = os.getpid()

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["home"] != os.getpid():
            raise RuntimeError("this detector's weights are not on this node")
        self.__dict__.update(state)

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return [{"toxic": 0.5} for _ in texts]


def test_a_detector_a_worker_cannot_load_stops_the_audit_before_anything_is_written(tmp_path):
    """SetupError says the audit wrote nothing: no log made, an existing log's every row as it was
    (no study, detector, page or run row added, no run's status changed), no --out-parquet folder."""
    from modlens.services.errors import SetupError

    data, db, out = comments(tmp_path / "c.csv", 20), tmp_path / "log.sqlite", tmp_path / "shards"
    for where in (db, out):
        with pytest.raises(SetupError, match="could not load on a Ray worker"):
            run_audit(str(data), db=db, detector_objects={"d": DriverOnly()}, progress=False, engine="ray",
                      out_parquet=out if where == out else None)
        assert not where.exists()

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    # a log holding a run of the same audit, interrupted on the local engine: the Ray audit would resume it
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(data), db=db, detector_objects={"d": DriverOnly()}, progress=False, chunk_size=5, on_chunk=stop)
    con = sqlite3.connect(db)
    before = list(con.iterdump())
    assert con.execute("SELECT status, n_items FROM audit_runs").fetchall() == [("interrupted", 5)]
    con.close()
    with pytest.raises(SetupError, match="could not load on a Ray worker"):
        run_audit(str(data), db=db, detector_objects={"d": DriverOnly()}, progress=False, engine="ray")
    con = sqlite3.connect(db)
    assert list(con.iterdump()) == before
    con.close()


def test_a_variant_generator_or_normalizer_a_worker_cannot_match_stops_the_audit_before_anything_is_written(
        tmp_path, monkeypatch):
    """The variant actors and the normalizer's workers are checked as the detector actors are, before
    the log is opened: a strategy or normalizer step that only the driver has (a plug-in installed on
    the driver's node alone), and a human_lookup table the driver reads from $MODLENS_PERTURBATIONS
    while the workers read another, are a SetupError, and no log is made."""
    from importlib.metadata import EntryPoint

    from modlens.normalize.steps import REGISTRY as STEPS
    from modlens.perturb.registry import REGISTRY as STRATEGIES
    from modlens.perturb.strategies.human_lookup import ENV_VAR
    from modlens.services.errors import SetupError

    def driver_only(registry: Any, name: str, value: str) -> None:
        # found by the driver's registry only: Ray's workers, started before, discover what is installed
        monkeypatch.setattr(registry, "_plugins", {**registry.plugins(), name: EntryPoint(name, value, "test")})

    driver_only(STRATEGIES, "driver_swap", "modlens.perturb.strategies.char_swap:CharSwap")
    driver_only(STEPS, "driver_leet", "modlens.normalize.steps.leet:Leet")
    table = tmp_path / "perturbations.json"
    table.write_text(json.dumps({"idiot": ["id1ot"], "stupid": ["stup1d"]}))
    monkeypatch.setenv(ENV_VAR, str(table))  # the driver's table; the workers were started without it
    from modlens.config import NormalizerConfig, StudyConfig

    data, db = comments(tmp_path / "c.csv", 20), tmp_path / "log.sqlite"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"perturb": ["driver_swap"]}, "the variant generator could not load on a Ray worker: .*driver_swap"),
        ({"perturb": ["human_lookup"]}, "the variant generator: a Ray worker loaded .*human_lookup .*lexicon_sha"),
        ({"normalize": True, "study": StudyConfig(normalizer=NormalizerConfig(steps=["driver_leet"]))},
         "the normalizer could not load on a Ray worker: .*driver_leet"),
    ]
    for extra, error in cases:
        with pytest.raises(SetupError, match=error):
            run_audit(str(data), db=db, detectors=["profanity-check"], limit=4, progress=False, engine="ray", **extra)
        assert not db.exists(), extra


def test_a_cluster_the_driver_cannot_join_is_a_setup_error_before_anything_is_written(tmp_path):
    """`--ray-address ray://HOST:PORT` that cannot be joined (here: no Ray Client installed, or no server
    at the port): the CLI exits 2 with one line naming the address and why, no traceback, no log made. A
    subprocess: this module's own Ray is already joined, so its audits never call `ray.init`."""
    data, db = comments(tmp_path / "c.csv", 5), tmp_path / "log.sqlite"
    proc = subprocess.run([sys.executable, "-m", "modlens", "audit", str(data), "--engine", "ray", "--ray-address",
                           "ray://127.0.0.1:1", "--db", str(db), "--detectors", "profanity-check", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "cannot join the Ray cluster at ray://127.0.0.1:1" in proc.stderr
    assert not db.exists()
