"""The web viewer's files as shipped (service/web/), checked without a browser: what the
Content-Security-Policy would block and what would turn record text into markup must not be
there, and every module an import names must exist. (tests/test_web_browser.py runs it.)"""

from __future__ import annotations

import re
from pathlib import Path

WEB = Path(__file__).resolve().parent.parent / "service" / "web"
MODULES = sorted(WEB.rglob("*.js"))

# Ways a string becomes markup or code. The app builds the page with DOM calls only.
MARKUP_SINKS = re.compile(
    r"\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|\beval\(|new Function\b"
    r"|setTimeout\(\s*['\"`]|setInterval\(\s*['\"`]"
)
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"]*?from\s+["']([^"']+)["']""", re.M)


def _code(text: str) -> str:
    """The module without its comments (the rule's explanation names innerHTML)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(^|[^:\"'])//[^\n]*", r"\1", text)


def test_the_app_has_its_pages_and_modules() -> None:
    names = {p.relative_to(WEB).as_posix() for p in WEB.rglob("*") if p.is_file()}
    pages = {f"pages/{n}.js" for n in ("matches", "match", "replay", "live", "stats", "validate")}
    assert {"index.html", "app.js", "app.css", "tableview.js", "events.js"} | pages <= names


def test_no_module_writes_markup_from_a_string_or_runs_a_string_as_code() -> None:
    found = [
        f"{path.relative_to(WEB)}: {hit.group(0)}"
        for path in MODULES
        for hit in MARKUP_SINKS.finditer(_code(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_index_html_has_no_inline_script_style_or_handler_the_csp_would_block() -> None:
    html = (WEB / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, flags=re.S | re.I)
    assert scripts, "the app's entry module"
    for attributes, body in scripts:
        assert 'type="module"' in attributes and "src=" in attributes and not body.strip()
    assert not re.search(r"\son[a-z]+\s*=", html, flags=re.I), "an inline event handler"
    assert not re.search(r"<style\b|\sstyle\s*=", html, flags=re.I), "inline style"
    assert not re.search(r"https?://", html), "nothing from elsewhere (no CDN)"


def test_every_import_names_a_module_that_exists() -> None:
    for path in MODULES:
        for target in IMPORT.findall(path.read_text(encoding="utf-8")):
            assert target.startswith("./") or target.startswith("../"), f"{path}: {target}"
            assert (path.parent / target).resolve().is_file(), f"{path.name} imports {target}"


def test_the_stylesheet_and_modules_fetch_nothing_from_elsewhere() -> None:
    for path in [*MODULES, WEB / "app.css"]:
        text = _code(path.read_text(encoding="utf-8"))
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), path.name
        assert "@import" not in text
