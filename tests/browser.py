"""Render executed notebooks in headless Chromium, offline, to check what a reader would see.

Not a test module: tests import it. ``scripts/install-browser-deps`` installs what it needs
(Debian's chromium and the pinned JS in browser/node_modules); the Python side is ``playwright``,
used only to drive that system Chromium (it never downloads a browser).
"""

import contextlib
import copy
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
NODE_MODULES = ROOT / "browser" / "node_modules"
REQUIRE_JS = NODE_MODULES / "requirejs" / "require.js"
# html-manager 1.0.x bundles the ipywidgets 7 and 8 models, so no widget code comes from a CDN.
WIDGET_RENDERER = NODE_MODULES / "@jupyter-widgets" / "html-manager" / "dist" / "embed-amd.js"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
# A rendered view is the child html-manager puts in the div.widget-subarea it inserts per output.
WIDGET_VIEW = ".widget-subarea > .jupyter-widgets"
VIEW_TAG = 'script[type="application/vnd.jupyter.widget-view+json"]'
STATE_TAG = 'script[type="application/vnd.jupyter.widget-state+json"]'


def browser_skip_reason():
    """Why browser tests cannot run here, or None when they can."""
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} (scripts/install-browser-deps)")
    if not (REQUIRE_JS.is_file() and WIDGET_RENDERER.is_file()):
        missing.append("browser/node_modules (scripts/install-browser-deps)")
    for module, dist in (("playwright", "playwright"), ("nbconvert", "nbconvert"), ("PIL", "pillow")):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"the {module} Python package (pip install {dist})")
    if missing:
        return "browser tests need " + ", ".join(missing)
    return None


@contextlib.contextmanager
def this_python_kernel(manager_class):
    """A ``manager_class`` (jupyter_client KernelManager or AsyncKernelManager) for a kernel of
    *this* interpreter. The kernelspec is written to a private directory so that no ``python3``
    kernelspec installed elsewhere (user, system, another venv) can pick a different Python."""
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as specs:
        # The env entry quiets debugpy's frozen-modules warning on Python >= 3.11 (ipykernel 6).
        write_kernel_spec(os.path.join(specs, "this-python"),
                          overrides={"env": {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}})
        yield manager_class(
            kernel_name="this-python",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[specs], ensure_native_kernel=False),
        )


def execute_notebook(nb, cwd):
    """Run ``nb`` in place, storing widget state, on a kernel of *this* interpreter."""
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    with this_python_kernel(AsyncKernelManager) as km:
        client = NotebookClient(
            nb, km=km, store_widget_state=True, timeout=120,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.execute()
    return nb


def export_html(ipynb_path, html_path, widgets=True, exclude_input=False, theme="light"):
    """Export to HTML that loads only local files (require.js, the widget renderer), in nbconvert's
    ``theme`` ("light" or "dark").

    ``widgets=False`` drops the saved widget state, as a front end that did not save it
    would: the page then shows each output's static fallback instead of widget views.
    MathJax is replaced by an empty script, as nothing here needs math and its CDN is offline.
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb_path), as_version=4)
    if not widgets:
        nb = copy.deepcopy(nb)
        nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(
        require_js_url=REQUIRE_JS.as_uri(),
        widget_renderer_url=WIDGET_RENDERER.as_uri(),
        mathjax_url="data:text/javascript,",
        exclude_input=exclude_input,
        exclude_input_prompt=exclude_input,
        exclude_output_prompt=exclude_input,
        theme=theme,
    )
    body, _ = exporter.from_notebook_node(nb)
    Path(html_path).write_text(body, encoding="utf-8")
    # The renderer loads its icon fonts (Accordion chevrons) from "@jupyter-widgets/" beside the page.
    fonts = Path(html_path).parent / "@jupyter-widgets"
    if not fonts.exists():
        fonts.symlink_to(WIDGET_RENDERER.parent, target_is_directory=True)
    return html_path


def export_and_render(ipynb_path, widgets):
    """Export beside the notebook and render; skip the calling test when the tools are missing."""
    import pytest

    reason = browser_skip_reason()
    if reason:
        pytest.skip(reason)
    html = export_html(ipynb_path, ipynb_path.with_suffix(f".{widgets}.html"), widgets=widgets)
    return render(html, ipynb_path.with_suffix(f".{widgets}.png"))


def render(html_path, screenshot_path, timeout_ms=20000):
    """Open the page in Chromium, wait for widgets, screenshot it, and say what it shows.

    Every request that is not a local file is refused and listed in ``blocked``, so a page
    that passes here needs no network.
    """
    from playwright.sync_api import sync_playwright

    errors, blocked = [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    # launch() gives Chromium a fresh temporary --user-data-dir and removes it afterwards.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.route("**/*", route)
            page.on("console", lambda m: m.type == "error" and errors.append(
                f"console: {m.text} {m.location.get('url', '')}".rstrip()))
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.goto(Path(html_path).resolve().as_uri(), wait_until="networkidle")
            if page.locator(STATE_TAG).count():
                _wait_for_widgets(page, timeout_ms)
            page.wait_for_timeout(300)  # let layout and image decoding settle
            page.screenshot(path=str(screenshot_path), full_page=True)
            result = page.evaluate(
                """(sel) => ({
                    text: document.body.innerText,
                    images: Array.from(document.images, (i) => ({
                        src_prefix: i.src.slice(0, 30), naturalWidth: i.naturalWidth,
                        naturalHeight: i.naturalHeight, complete: i.complete})),
                    widget_views: document.querySelectorAll(sel).length,
                })""",
                WIDGET_VIEW,
            )
        finally:
            browser.close()
    result.update(errors=errors, blocked=blocked, blank=_is_blank(screenshot_path))
    return result


def _wait_for_widgets(page, timeout_ms):
    """Wait until every widget-view tag has a rendered view, or give up quietly at the timeout
    (the caller then sees fewer ``widget_views`` and the renderer's errors)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            "([view, tag]) => document.querySelectorAll(view).length"
            " >= document.querySelectorAll(tag).length",
            arg=[WIDGET_VIEW, VIEW_TAG],
            timeout=timeout_ms,
        )
    except PlaywrightTimeout:
        pass


def _is_blank(png_path):
    """True when the screenshot is one flat colour: nothing was drawn."""
    from PIL import Image

    with Image.open(png_path) as img:
        return all(lo == hi for lo, hi in img.convert("RGB").getextrema())
