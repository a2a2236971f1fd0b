"""`make screenshots`: the README's pictures, from real runs.

1. A notebook that times a torch.compile'd layer (its cold run compiles) is executed on a real kernel, exported
   and rendered offline in headless Chromium: docs/screenshots/report.png.
2. The same work timed in terminal IPython; its text report is shown in a
   terminal-style page and rendered the same way: docs/screenshots/text.png.
3. The live-frontend tests (tests/test_frontends.py) run with CUDATIME_SCREENSHOTS set: JupyterLab in
   its light and dark themes, the progress view during a 2 s warm run, Notebook 7 with a 360 px output area,
   and each of the three frontends in a 360 px window.
"""

import html
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook
from PIL import Image, ImageChops

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import browser  # noqa: E402  (the test suite's offline export-and-render tools)

OUT = ROOT / "docs" / "screenshots"
SETUP = ("%load_ext ipython_cudatime\nimport torch\na = torch.randn(512, 512)\n"
         "layer = torch.compile(lambda x: torch.nn.functional.gelu(x @ x), backend='eager')")
CELL = "%%cudatime -n 30 -p\ny = layer(a)"
TERMINAL_PAGE = """<html><body style="margin:0;background:#1e1e1e">
<pre style="color:#e0e0e0;font:14px/1.35 'DejaVu Sans Mono',monospace;padding:16px;margin:0;display:inline-block">{}</pre>
</body></html>"""
LIVE = ("lab-light.png", "lab-dark.png", "lab-progress.png", "notebook7-light-360px.png",  # kept for the docs
        "lab-light-360px-window.png", "notebook7-light-360px-window.png", "classic-light-360px-window.png")


def crop(path, margin=12):
    """Trim the page's empty border so the picture shows the output only."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))
    left, top, right, bottom = ImageChops.difference(rgb, background).getbbox()
    rgb.crop((max(left - margin, 0), max(top - margin, 0), min(right + margin, rgb.width),
              min(bottom + margin, rgb.height))).save(path)


def report_screenshot(tmp):
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(SETUP), new_code_cell(CELL)]), tmp)
    nbformat.write(nb, str(tmp / "report.ipynb"))
    page_html = browser.export_html(tmp / "report.ipynb", tmp / "report.html", exclude_input=True)
    page = browser.render(page_html, OUT / "report.png")
    if page["errors"]:
        sys.exit(f"the report did not render: {page['errors']}")
    crop(OUT / "report.png")


def text_screenshot(tmp):
    script = tmp / "text.ipy"
    script.write_text(SETUP + "\nprint('In [1]: %cudatime -n 30 -p y = layer(a)')\n%cudatime -n 30 -p y = layer(a)\n")
    ipython = Path(sys.executable).with_name("ipython")
    done = subprocess.run([str(ipython), "--no-banner", "--colors=NoColor", str(script)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    page_html = tmp / "text.html"
    page_html.write_text(TERMINAL_PAGE.format(html.escape(done.stdout.strip())), encoding="utf-8")
    browser.render(page_html, OUT / "text.png")
    crop(OUT / "text.png")


def live_screenshots(tmp):
    """Run the live-frontend tests with their screenshots kept, then keep the README's."""
    env = {**os.environ, "CUDATIME_SCREENSHOTS": str(tmp), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "test_frontends.py")],
                   check=True, cwd=ROOT, env=env)
    for name in LIVE:
        shutil.copy(tmp / name, OUT / name)
        crop(OUT / name)


def main():
    reason = browser.browser_skip_reason()
    if reason:
        sys.exit(f"cannot take screenshots: {reason}")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        report_screenshot(Path(tmp))
        text_screenshot(Path(tmp))
        live_screenshots(Path(tmp))
    print(f"wrote {', '.join(['report.png', 'text.png', *LIVE])} in {OUT}")


if __name__ == "__main__":
    main()
