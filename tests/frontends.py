"""Live notebook frontends (JupyterLab, Notebook 7, classic Notebook 6.5) driven in headless Chromium.

Not a test module: ``test_frontends.py`` and ``scripts/screenshots.py`` use it. Each server
runs from its own virtualenv built by the Makefile (``make frontends``), on 127.0.0.1 with a
random token and private ``JUPYTER_*``/``IPYTHONDIR`` folders, and is stopped by its PID.
Playwright drives Debian's ``/usr/bin/chromium`` (never a downloaded browser).

A session writes a small notebook, opens it, runs it all (the app's own "run all" command,
what the Run menu calls), watches for the progress view, takes screenshots, saves, shuts the
kernel down, then reopens the notebook twice: as saved (trusted) and as a modified copy
(untrusted, as a notebook downloaded from GitHub), and reads what each page shows.
"""

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from browser import CHROMIUM, CHROMIUM_ARGS, ROOT

VENVS = {"lab": ROOT / ".venv-frontends", "notebook7": ROOT / ".venv-frontends", "classic": ROOT / ".venv-classic"}
CELLS = [
    "%load_ext ipython_cudatime\nimport time\nfails = []\nfrom IPython.display import HTML\n"
    "HTML(\"<svg id='trust-probe' width='2' height='2'></svg>\")  # an untrusted page strips inline <svg>",
    "%cudatime -n 20 sum(range(1000))",
    "%%cudatime -n 20\ntotal = sum(range(20000))",
    # a two-name sweep of 4 x 2 points: a grid that fits a phone's output area
    "%%cudatime -n 3 --sweep n=1000,10000,100000,300000 --sweep kind='list','tuple'\n"
    "sum(list(range(n)) if kind == 'list' else tuple(range(n)))",
    "%%cudatime -n 3 --sweep n=100,10000,1000000\nsum(range(n))",
    "r = %cudatime -o -n 10 sorted(range(5000))\nr",
    "%%cudatime -n 1\ntime.sleep(2)",  # a 2 s cold run and one 2 s warm run: the progress view must move
    "%%cudatime -n 3\nfails.append(1)\nif len(fails) > 1:\n    raise ValueError('boom in a warm run')",
    "print('ran after the failure')",
]
SETTLE_MS = 3000
REPORTS = 7  # cells 1-7 each show one report (line, cell, grid, sweep, -o, slow cell, the runs before the failure)
OUTPUT_WIDTHS = (360, 500, 1280)  # CSS px of the output area: a phone, a narrow panel, a wide screen
VIEWPORT_WIDTHS = (360, 500, 1280)  # CSS px of the whole window, whose output area is narrower
FAILING, AFTER = 7, 8

# What each frontend's page looks like (CSS selectors) and how it is driven.
UI = {
    "classic": {"cell": ".cell.code_cell", "error": ".output_error", "prompt": ".input_prompt", "output": ".output_subarea",
                "open": "/notebooks/{name}?", "ready": "Jupyter.notebook && Jupyter.notebook.kernel"
                " && Jupyter.notebook.kernel.is_connected()", "run_all": "Jupyter.notebook.execute_all_cells()", "panel": "#notebook-container"},
    "lab": {"cell": ".jp-CodeCell", "error": "[data-mime-type='application/vnd.jupyter.stderr']", "output": ".jp-OutputArea-output",
            "prompt": ".jp-InputPrompt", "open": "/lab/tree/{name}?reset&",
            "ready": "document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=idle]')",
            "run_all": None, "panel": ".jp-NotebookPanel:not(.lm-mod-hidden)"},
}
UI["notebook7"] = {**UI["lab"], "open": "/notebooks/{name}?"}


def skip_reason(kind):
    """Why the ``kind`` frontend cannot be tested here, or None."""
    from browser import browser_skip_reason

    venv = VENVS[kind]
    if not (venv / ".installed").exists():
        return f"the {kind} frontend needs {venv.name} (make frontends)"
    return browser_skip_reason()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(kind, root_dir):
    """A Jupyter server of ``kind`` serving ``root_dir``; yields (base URL, token)."""
    venv, port, token = VENVS[kind], _free_port(), secrets.token_hex(16)
    private = Path(root_dir).parent / f"{kind}-home"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IPYTHONDIR": str(private / "ipython"),
           "JUPYTER_CONFIG_DIR": str(private / "config"), "JUPYTER_DATA_DIR": str(private / "data"),
           "JUPYTER_RUNTIME_DIR": str(private / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(private / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(private / "lab-workspaces"), "JUPYTER_PLATFORM_DIRS": "1"}
    app = ["jupyter", "notebook"] if kind == "classic" else ["jupyter", "lab"]
    options = [f"--port={port}", "--ip=127.0.0.1", "--no-browser", "--allow-root", f"--notebook-dir={root_dir}",
               f"--NotebookApp.token={token}" if kind == "classic" else f"--IdentityProvider.token={token}"]
    if kind != "classic":
        # window.jupyterapp: the app's commands, for switching the theme
        options += ["--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True"]
    _write_settings(private / "lab-settings")
    log = open(private.with_suffix(".log"), "w")
    process = subprocess.Popen([str(venv / "bin" / app[0]), *app[1:], *options], env=env, cwd=root_dir,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_up(url, token, process)
        yield url, token
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the kernels it started, by its PID
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


# JupyterLab and Notebook 7 user settings: start the notebook's kernel without asking, render
# every cell (no windowing, so that the whole notebook is in the page), fetch no news (offline).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"autoStartDefaultKernel": True,
                                                                   "windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _write_settings(folder):
    for name, values in LAB_SETTINGS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _wait_until_up(url, token, process, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as reply:
                if reply.status == 200:
                    return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.25)  # a pause that also notices the server exiting
    raise RuntimeError(f"the server did not answer within {timeout} s")


def write_notebook(path, cells=CELLS):
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def untrusted_copy(path, copy):
    """A copy with one changed byte of metadata: its signature no longer matches, so the
    frontend opens it untrusted, as it would a notebook downloaded from elsewhere."""
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata["copied"] = True
    nbformat.write(nb, str(copy))


READ_REPORTS = """([panelSel, cellSel]) => Array.from(document.querySelector(panelSel).querySelectorAll(cellSel), (cell) => ({
    reports: Array.from(cell.querySelectorAll('.cudatime-report, .cudatime-sweep, .cudatime-compare'), (r) => ({
        cls: r.className, text: r.innerText, details: r.querySelectorAll('details').length,
        charts: Array.from(r.querySelectorAll('img'), (i) => ({
            svg: i.src.startsWith('data:image/svg+xml;base64,'), complete: i.complete,
            natural: i.naturalWidth, shown: i.clientWidth, src: i.src})),
        width: r.getBoundingClientRect().width,
        table: Math.max(0, ...Array.from(r.querySelectorAll('table'), (t) => t.getBoundingClientRect().width))})),
    text: cell.innerText,
    output: Array.from(cell.querySelectorAll('.jp-OutputArea, .output_wrapper'), (o) => o.innerText).join(' '),
    panel: document.querySelector(panelSel).clientWidth,
    widgetErrors: /Error displaying widget|widget state could not be found|model not found/i.test(cell.innerText),
    progress: cell.querySelectorAll('.widget-hprogress').length,
}))"""


# How each report fits its output area: elements whose content is wider than they are and that do
# not scroll (clipped, or spilling out), how far the report reaches past the area, the smallest
# text, and each chart's shown and natural width.
READ_LAYOUT = """([panelSel, outSel]) => Array.from(document.querySelector(panelSel).querySelectorAll(
        '.cudatime-report, .cudatime-sweep, .cudatime-compare'), (r) => {
    const area = r.closest(outSel) || r.parentElement;
    const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
    const all = [r, ...r.querySelectorAll('*')];
    const ownText = (el) => Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    return {
        area: area.clientWidth,
        past: r.getBoundingClientRect().right - area.getBoundingClientRect().right,
        clipped: all.filter((el) => el.clientWidth && el.scrollWidth > el.clientWidth + 1 && !scrolls(el))
                    .map((el) => `${el.tagName}.${el.className}: ${el.innerText.slice(0, 80)}`),
        font: Math.min(...all.filter(ownText).map((el) => parseFloat(getComputedStyle(el).fontSize))),
        charts: Array.from(r.querySelectorAll('img'), (i) => ({shown: i.clientWidth, natural: i.naturalWidth})),
        text: r.innerText,
    };
})"""

# What a reader sees of each report, measured: every chart's text as rendered and every shown table's fit.
# A chart is an <img> of an SVG whose text is glyph paths (matplotlib's) or <text> (the run chart's): its SVG is
# parsed and laid out at the image's rendered size, and each label's size read from the transform the browser
# applies to its glyphs (matplotlib draws a glyph 100 units to the em), with its bounding box, or from its font
# size and transform. A table shown (not in a closed section) should
# not scroll sideways, and no word in it should break across lines ("dtype / ='flo / at32'").
READ_SIZES = """([panelSel]) => {
    const shownLabels = (img) => {
        const bytes = Uint8Array.from(atob(img.src.split(',')[1]), (c) => c.charCodeAt(0));
        const svg = document.importNode(new DOMParser().parseFromString(
            new TextDecoder().decode(bytes), 'image/svg+xml').documentElement, true);
        svg.querySelectorAll('style').forEach((style) => style.remove());
        const rect = img.getBoundingClientRect();
        svg.setAttribute('width', `${rect.width}px`);
        svg.setAttribute('height', `${rect.height}px`);
        const box = document.createElement('div');
        box.style.cssText = 'position:absolute;left:0;top:0;visibility:hidden';
        box.appendChild(svg);
        document.body.appendChild(box);
        const labels = Array.from(svg.querySelectorAll('g[id^="text_"] > g[transform]'), (g) => {
            const m = g.getScreenCTM(), r = g.getBoundingClientRect();
            const note = Array.from(g.parentNode.childNodes).find((n) => n.nodeType === 8);
            return {label: note ? note.textContent.trim() : '', px: 100 * Math.hypot(m.a, m.b),
                    height: r.height, rotated: Math.abs(m.b) > 1e-6};
        }).concat(Array.from(svg.querySelectorAll('text'), (t) => {
            const m = t.getScreenCTM();
            return {label: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
                    height: null, rotated: Math.abs(m.b) > 1e-6};
        }));
        box.remove();
        return {shown: rect.width, natural: img.naturalWidth, labels};
    };
    const brokenWords = (cell) => {
        const broken = [], walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const word of node.textContent.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                if (range.getClientRects().length > 1) broken.push(word[0]);
            }
        }
        return broken;
    };
    const fit = (table) => {
        const box = table.parentElement;
        return {cls: table.className, scrolls: box.scrollWidth > box.clientWidth + 1,
                clipped: Array.from(table.querySelectorAll('td, th'), (c) => c)
                    .filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.innerText),
                broken: Array.from(table.querySelectorAll('td, th'), brokenWords).flat()};
    };
    return Array.from(document.querySelector(panelSel).querySelectorAll(
            '.cudatime-report, .cudatime-sweep, .cudatime-compare'), (r) => ({
        text: r.innerText.slice(0, 80),
        area: (r.closest('.jp-OutputArea-output, .output_subarea') || r.parentElement).clientWidth,
        charts: Array.from(r.querySelectorAll('img'), shownLabels),
        tables: Array.from(r.querySelectorAll('table'), (t) => t).filter((t) => t.offsetParent !== null).map(fit),
    }));
}"""

# The first section's marker, closed and then opened by a click as a person would.
READ_MARKER = """async (panelSel) => {
    const summary = document.querySelector(panelSel).querySelector('.cudatime-report details > summary');
    const look = () => ({display: getComputedStyle(summary).display,
                         marker: getComputedStyle(summary).listStyleType, open: summary.parentElement.open});
    const closed = look();
    summary.click();
    await new Promise((done) => setTimeout(done, 300));
    const opened = look();
    summary.click();
    return {closed, opened};
}"""

PROGRESS_TEXT = "Array.from(document.querySelectorAll('.widget-hprogress'), (p) => p.parentElement.innerText)"


class Session:
    """One browser page on one frontend, recording console errors."""

    def __init__(self, browser, kind, url, token, viewport=(1200, 3200)):
        self.kind, self.url, self.token, self.ui = kind, url, token, UI[kind]
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.page.set_default_timeout(60000)
        self.errors = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def open(self, name, timeout_ms=60000):
        self.page.goto(f"{self.url}{self.ui['open'].format(name=name)}token={self.token}")
        self.page.wait_for_function(self.ui["ready"], timeout=timeout_ms)
        self.page.wait_for_selector(self.ui["cell"], timeout=timeout_ms)
        # The widget manager registers with the kernel a moment after the kernel is idle; a
        # widget opened before that is lost ("widget model not found"), for any widget library.
        self.page.wait_for_timeout(SETTLE_MS)

    def _click_run_all(self):
        if self.ui["run_all"]:
            self.page.evaluate(self.ui["run_all"])
        else:  # the Run menu, as a person would
            self.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            self.page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

    def run_all(self, progress_shot=None, timeout_ms=120000):
        """Run all cells; return the progress view's texts seen while they ran, in order, each
        once (a screenshot of its cell is saved as ``progress_shot`` once a run's time so far shows).

        A kernel that has just started can drop the first requests while its connection
        settles: Run All is asked again if the first cell has not started within 5 s."""
        self._click_run_all()
        started = lambda: self.prompts()[0].strip() not in ("[ ]:", "In [ ]:", "[\u00a0]:", "In\u00a0[\u00a0]:")
        for _ in range(50):
            if started():
                break
            self.page.wait_for_timeout(100)
        else:
            self._click_run_all()
        seen = []
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            for text in self.page.evaluate(PROGRESS_TEXT):
                if text not in seen[-1:]:
                    seen.append(text)
                    if progress_shot and "warm run" in text and "so far" in text:
                        self._shoot_progress(progress_shot)
                        progress_shot = None
            if self.page.locator(self.ui["error"]).count():
                break
            self.page.wait_for_timeout(100)
        self.page.wait_for_timeout(1500)  # let the aborted queue and the last updates settle
        return seen

    def _shoot_progress(self, path):
        cell = self.page.locator(self.ui["cell"], has=self.page.locator(".widget-hprogress")).first
        with contextlib.suppress(Exception):  # the view may be replaced while the picture is taken
            cell.screenshot(path=str(path), timeout=2000)

    def reports(self):
        return self.page.evaluate(READ_REPORTS, [self.ui["panel"], self.ui["cell"]])

    def layout(self):
        return self.page.evaluate(READ_LAYOUT, [self.ui["panel"], self.ui["output"]])

    def sizes(self):
        return self.page.evaluate(READ_SIZES, [self.ui["panel"]])

    def marker(self):
        return self.page.evaluate(READ_MARKER, self.ui["panel"])

    def output_width(self, width, tries=3):
        """Resize the window until the reports' output area is ``width`` CSS px wide (or as near as
        the frontend's layout allows: classic Notebook's page stops growing at 1140 px); returns
        the layout read there."""
        for _ in range(tries):
            found = self.layout()
            area = found[0]["area"]
            if abs(area - width) <= 4:
                break
            viewport = self.page.viewport_size
            self.page.set_viewport_size({"width": max(viewport["width"] + width - area, 320),
                                         "height": viewport["height"]})
            self.page.wait_for_timeout(800)
        return self.layout()

    def prompts(self):
        return [p.inner_text() for p in self.page.locator(self.ui["panel"]).first.locator(self.ui["prompt"]).all()]

    def save(self):
        self.page.keyboard.press("Control+s")
        self.page.wait_for_timeout(1500)

    def shutdown_kernels(self):
        """Shut every kernel down through the server's REST API (what the Kernel menu calls)."""
        for kernel in self._api("GET", "/api/kernels"):
            self._api("DELETE", f"/api/kernels/{kernel['id']}")

    def _api(self, method, path):
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def dark(self):
        self.page.evaluate("void window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        self.page.wait_for_timeout(1500)

    def narrow_layout(self):
        """Close JupyterLab's file browser, as a person on a narrow screen would (Notebook 7 has none open)."""
        if self.kind == "lab":
            self.page.evaluate("void window.jupyterapp.commands.execute('application:toggle-left-area')")
            self.page.wait_for_timeout(500)

    def screenshot(self, path):
        """The notebook as a person sees it (the viewport is tall enough for every cell)."""
        self.page.locator(self.ui["panel"]).first.screenshot(path=str(path))

    def close(self):
        self.page.close()


def exported_sizes(chromium, notebook, shots):
    """{(theme, viewport width): what ``READ_SIZES`` reads} on ``notebook`` exported by nbconvert in its
    light and dark themes, opened from the file in a page that may load nothing from the network."""
    from browser import export_html

    found = {}
    for theme in ("light", "dark"):
        page = chromium.new_page(viewport={"width": VIEWPORT_WIDTHS[0], "height": 3200})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
        page.goto(export_html(notebook, notebook.with_suffix(f".{theme}.html"), theme=theme).resolve().as_uri())
        for width in VIEWPORT_WIDTHS:
            page.set_viewport_size({"width": width, "height": 3200})
            page.wait_for_timeout(500)
            found[theme, width] = page.evaluate(READ_SIZES, ["body"])
            page.screenshot(path=str(shots / f"nbconvert-{theme}-{width}px-window.png"), full_page=True)
        page.close()
    return found


def launch():
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    return playwright, playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
