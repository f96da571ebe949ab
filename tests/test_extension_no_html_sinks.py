"""The extension never renders page or daemon text as HTML: comments, consent texts,
study titles and error messages reach the DOM through textContent and createElement only. A guard,
so a later change cannot bring an HTML sink back: any of them in the extension's own scripts
(extension/test/ holds Node tests, not shipped code) fails here with the file and line."""
from __future__ import annotations

import re
from pathlib import Path

EXTENSION = Path(__file__).resolve().parents[1] / "extension"
# every DOM API that parses a string as HTML
SINKS = re.compile(r"\b(innerHTML|outerHTML|insertAdjacentHTML|document\s*\.\s*write(?:ln)?|createContextualFragment|"
                   r"setHTMLUnsafe|parseHTMLUnsafe)\b")


def shipped_scripts() -> list[Path]:
    return sorted(p for p in EXTENSION.rglob("*.js") if "test" not in p.relative_to(EXTENSION).parts[:-1])


def sinks_in(text: str) -> list[tuple[int, str]]:
    return [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1) for m in SINKS.finditer(line)]


def test_no_extension_script_renders_text_as_html():
    scripts = shipped_scripts()
    names = {p.relative_to(EXTENSION).as_posix() for p in scripts}
    assert {"content/ui.js", "options.js", "popup.js", "calibration.js", "tasks.js"} <= names
    assert not any(n.startswith("test/") for n in names)
    found = [f"{p.relative_to(EXTENSION)}:{n}: {sink}" for p in scripts for n, sink in sinks_in(p.read_text("utf-8"))]
    assert found == [], "render text with textContent / createElement instead:\n" + "\n".join(found)


def test_the_guard_sees_each_sink_however_it_is_written():
    bad = ['el.innerHTML = msg.text;', 'el["outerHTML"] = x', 'p.insertAdjacentHTML("beforeend", t)',
           'document.write(t)', 'document . writeln(t)', 'range.createContextualFragment(t)', 'el.setHTMLUnsafe(t)']
    assert [len(sinks_in(line)) for line in bad] == [1] * len(bad)
    assert sinks_in('el.textContent = msg.text; const innerHTMLish = 1; doc.writeFile()') == []
