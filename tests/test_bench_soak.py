"""bench/bench_soak.py compares runs (variants off vs on), so every run must send the model the
same texts: a run-specific marker once made the variants-on runs' texts 38% longer in tokens."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_soak.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_soak_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def sent_by_drive(bench, monkeypatch, tag: str, variants: bool, warm: bool = False) -> list[list[str]]:
    """The pages `drive` sends, its socket and daemon replaced: 2 clients, 3 pages each."""
    pages: list[list[str]] = []
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: clock.now))

    class Socket:
        async def close(self):
            pass

    class Hello:
        def __init__(self, ws, name):
            pass

        async def say_hello(self, *args, **kwargs):
            pass

    async def connect(url, token):
        return Socket()

    async def read(self):
        pass

    async def page(self, p):
        pages.append([item.text for item in p.items])
        if len(pages) >= 6:
            clock.now = float("inf")  # the run's time is up: every client stops
        return 1.0

    monkeypatch.setattr(bench, "connect", connect)
    monkeypatch.setattr(bench, "Client", Hello)
    monkeypatch.setattr(bench.Conn, "read", read)
    monkeypatch.setattr(bench.Conn, "page", page)
    await bench.drive("ws://unused", "token", bench.base_texts(bench.DEFAULT_DATA), 2, 3600.0, variants, tag,
                      warm=warm)
    return sorted(pages)


async def test_every_run_sends_the_same_texts_and_warm_up_pages_differ(monkeypatch):
    bench = load_bench()
    off = await sent_by_drive(bench, monkeypatch, "off", False)
    on = await sent_by_drive(bench, monkeypatch, "r1000s0.0625", True)
    warm = await sent_by_drive(bench, monkeypatch, "wr1000s0.0625", False, warm=True)  # as one_run warms up
    assert len(off) == 6 and off == on
    flat = [t for page in off for t in page]
    assert len(set(flat)) == len(flat)  # distinct texts: no de-duplication or cache flatters a run
    assert not {t for page in warm for t in page} & set(flat)  # the warm-up's texts are not the measured ones
