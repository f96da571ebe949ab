"""The ONNX Runtime twin of minilm-toxicity: a detector of its own (name, version naming onnxruntime and
the quantization), its ONNX file built once into the cache, agreeing with fp32 within
`minilm_onnx.TOLERANCE` on a few texts (bench/bench_detectors.py --onnx measures the agreement on the
shipped benchmarks), and a clear error with the fix when onnxruntime is not installed."""
from __future__ import annotations

import sys

import pytest

from modlens.detectors import minilm_int8, minilm_onnx, registry
from modlens.detectors.base import DetectorUnavailable

from twin_helpers import assert_agrees_with_fp32

TEXTS = ["you are a stupid idiot", "have a nice day", "I hate all of you people", "what a lovely video, thanks!",
         "go away, nobody wants your worthless opinion", "the policy is wrong and I disagree"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def pair(cache):
    return registry.create("minilm-toxicity", device="cpu"), registry.create(minilm_onnx.NAME, cache_dir=str(cache))


def test_without_onnxruntime_it_is_unavailable_with_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ModuleNotFoundError
    with pytest.raises(DetectorUnavailable, match="needs onnxruntime") as err:
        registry.create(minilm_onnx.NAME)
    assert err.value.status == "missing_dependency" and "modlens[onnx]" in err.value.fix
    status = registry.status(minilm_onnx.NAME)
    assert status.status == "missing_dependency" and "modlens[onnx]" in status.fix


def test_it_has_its_own_name_and_a_version_naming_the_engine_and_quantization(pair, cache):
    import onnxruntime

    fp32, onnx = pair
    tag = "int8dyn-pc-s8" if minilm_int8.full_range_supported() else "int8dyn-pc-s8w7"
    assert onnx.name == "minilm-toxicity-onnx-int8" != fp32.name
    config = onnx.config()
    assert onnx.version == f"{fp32.version}+ort{onnxruntime.__version__}-{tag}.{config['onnx_model_sha256'][:12]}"
    assert "onnxruntime dynamic int8" in config["quantization"] and len(config["onnx_model_sha256"]) == 64
    assert [p.name for p in cache.iterdir()] == [config["onnx_model"]]  # built once, nothing left beside it


def test_the_built_file_is_reused_and_a_broken_one_is_a_clear_error(pair, cache, monkeypatch):
    _, onnx = pair

    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt although the file is cached")

    monkeypatch.setattr(minilm_onnx, "build", no_build)
    again = registry.create(minilm_onnx.NAME, cache_dir=str(cache))
    assert again.version == onnx.version and again.score(TEXTS) == onnx.score(TEXTS)
    # a truncated copy under the cached name (a crash mid-copy, a full disk) is not scored with
    broken = cache / "broken"
    broken.mkdir()
    (broken / onnx.onnx_path.name).write_bytes(onnx.onnx_path.read_bytes()[:4096])
    with pytest.raises(DetectorUnavailable, match="cannot load") as err:
        registry.create(minilm_onnx.NAME, cache_dir=str(broken))
    assert "delete the file" in err.value.fix


def test_seven_bit_weights_are_a_different_version_and_file(pair, cache, tmp_path):
    fp32, onnx = pair
    # without full-range int8 the default already is the 7-bit build: `pair` built that very file
    # into `cache` (same key), so it is reused there instead of exported and quantized again
    where = tmp_path if minilm_int8.full_range_supported() else cache
    w7 = minilm_onnx.convert(registry.create("minilm-toxicity", device="cpu"), cache_dir=where, reduce_range=True)
    assert "-int8dyn-pc-s8w7." in w7.version and "7 bits" in w7.config()["quantization"]
    scores = [s["toxic"] for s in w7.score(TEXTS)]
    assert scores != [s["toxic"] for s in fp32.score(TEXTS)]
    if minilm_int8.full_range_supported():
        assert w7.version != onnx.version and w7.onnx_path.name != onnx.onnx_path.name
        assert scores != [s["toxic"] for s in onnx.score(TEXTS)]
    else:
        assert w7.version == onnx.version and w7.onnx_path == onnx.onnx_path


def test_it_agrees_with_fp32_within_the_stated_tolerance(pair):
    fp32, onnx = pair
    assert_agrees_with_fp32(fp32, onnx, TEXTS, minilm_onnx.TOLERANCE)
    # the word-importance path runs on the same forward passes
    assert len(onnx.word_importance_pooled(TEXTS[:1])[0]) == len(TEXTS[0].split())


def test_its_version_names_the_graph_it_runs(pair, cache, tmp_path, monkeypatch):
    """The graph is exported and quantized by the installed torch and onnx: another build (a torch
    upgrade) may be another graph, so the version names the graph's bytes, not only the settings."""
    _, onnx = pair
    same = tmp_path / "same"
    same.mkdir()
    (same / onnx.onnx_path.name).write_bytes(onnx.onnx_path.read_bytes())
    copy = minilm_onnx.convert(registry.create("minilm-toxicity", device="cpu"), cache_dir=same)
    assert copy.version == onnx.version  # the same graph, wherever it lies: the same version

    real_build = minilm_onnx.build

    def another_export(det, out, reduce_range):  # as another torch would: the same settings, another graph
        real_build(det, out, not reduce_range)

    monkeypatch.setattr(minilm_onnx, "build", another_export)
    other = minilm_onnx.convert(registry.create("minilm-toxicity", device="cpu"), cache_dir=tmp_path / "other")
    assert other.onnx_path.name == onnx.onnx_path.name  # the same cache key (settings, versions)
    assert other.onnx_path.read_bytes() != onnx.onnx_path.read_bytes()
    assert other.version != onnx.version
    assert other.config()["onnx_model_sha256"][:12] in other.version


def test_its_config_names_the_graph_its_version_names_even_once_the_file_changed(pair, tmp_path):
    """The graph is hashed once, when the session is loaded: the config logged beside each score names
    those bytes, not whatever lies under the file's name when the config is asked for."""
    _, onnx = pair
    (tmp_path / onnx.onnx_path.name).write_bytes(onnx.onnx_path.read_bytes())
    loaded = minilm_onnx.convert(registry.create("minilm-toxicity", device="cpu"), cache_dir=tmp_path)
    before = loaded.config()
    loaded.onnx_path.write_bytes(b"another graph written over it after the load")  # e.g. another build
    after = loaded.config()
    assert after == before and after["onnx_model_sha256"][:12] in loaded.version == onnx.version
