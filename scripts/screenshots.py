"""`make screenshots`: the README's pictures, from a real run.

1. A notebook that times a torch.compile'd layer (its cold run compiles) is executed on a real kernel, exported
   with its widget state and rendered offline in headless Chromium: docs/screenshots/widget.png.
2. The same work timed in terminal IPython; its text report is shown in a
   terminal-style page and rendered the same way: docs/screenshots/text.png.
"""

import html
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


def crop(path, margin=12):
    """Trim the page's empty border so the picture shows the output only."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))
    left, top, right, bottom = ImageChops.difference(rgb, background).getbbox()
    rgb.crop((max(left - margin, 0), max(top - margin, 0), min(right + margin, rgb.width),
              min(bottom + margin, rgb.height))).save(path)


def widget_screenshot(tmp):
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(SETUP), new_code_cell(CELL)]), tmp)
    nbformat.write(nb, str(tmp / "widget.ipynb"))
    page_html = browser.export_html(tmp / "widget.ipynb", tmp / "widget.html", exclude_input=True)
    page = browser.render(page_html, OUT / "widget.png")
    if page["errors"] or page["widget_views"] != 1:
        sys.exit(f"the widget did not render: {page['errors']}")
    crop(OUT / "widget.png")


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


def main():
    reason = browser.browser_skip_reason()
    if reason:
        sys.exit(f"cannot take screenshots: {reason}")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        widget_screenshot(Path(tmp))
        text_screenshot(Path(tmp))
    print(f"wrote {OUT / 'widget.png'} and {OUT / 'text.png'}")


if __name__ == "__main__":
    main()
