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
    "%%cudatime -n 3 --sweep n=100,10000,1000000\nsum(range(n))",
    "r = %cudatime -o -n 10 sorted(range(5000))\nr",
    "%%cudatime -n 6\ntime.sleep(0.3)",  # ~2 s: long enough for the progress view
    "%%cudatime -n 3\nfails.append(1)\nif len(fails) > 1:\n    raise ValueError('boom in a warm run')",
    "print('ran after the failure')",
]
SETTLE_MS = 3000
REPORTS = 6  # cells 1-6 each show one report (line, cell, sweep, -o, long cell, the runs before the failure)
FAILING, AFTER = 6, 7

# What each frontend's page looks like (CSS selectors) and how it is driven.
UI = {
    "classic": {"cell": ".cell.code_cell", "error": ".output_error", "prompt": ".input_prompt",
                "open": "/notebooks/{name}?", "ready": "Jupyter.notebook && Jupyter.notebook.kernel"
                " && Jupyter.notebook.kernel.is_connected()", "run_all": "Jupyter.notebook.execute_all_cells()", "panel": "#notebook-container"},
    "lab": {"cell": ".jp-CodeCell", "error": "[data-mime-type='application/vnd.jupyter.stderr']",
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
            natural: i.naturalWidth, shown: i.clientWidth})),
        width: r.getBoundingClientRect().width})),
    text: cell.innerText,
    output: Array.from(cell.querySelectorAll('.jp-OutputArea, .output_wrapper'), (o) => o.innerText).join(' '),
    panel: document.querySelector(panelSel).clientWidth,
    widgetErrors: /Error displaying widget|widget state could not be found|model not found/i.test(cell.innerText),
    progress: cell.querySelectorAll('.widget-hprogress').length,
}))"""


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
        """Run all cells; return whether a progress view was seen while they ran (its cell is
        then saved as ``progress_shot``).

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
        seen = False
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            if not seen and self.page.locator(".widget-hprogress").count():
                seen = True
                if progress_shot:
                    self._shoot_progress(progress_shot)
            if self.page.locator(self.ui["error"]).count():
                break
            self.page.wait_for_timeout(100)
        self.page.wait_for_timeout(1500)  # let the aborted queue and the last updates settle
        return seen

    def _shoot_progress(self, path):
        self.page.wait_for_timeout(700)  # a few runs in: the running median shows
        cell = self.page.locator(self.ui["cell"], has=self.page.locator(".widget-hprogress")).first
        with contextlib.suppress(Exception):  # the view may be replaced while the picture is taken
            cell.screenshot(path=str(path), timeout=2000)

    def reports(self):
        return self.page.evaluate(READ_REPORTS, [self.ui["panel"], self.ui["cell"]])

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


def launch():
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    return playwright, playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
