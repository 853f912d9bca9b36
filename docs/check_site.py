"""Open the built documentation in a real headless browser and check that it renders.

    python docs/check_site.py [docs/_build/html]

Serves the built site on localhost, then with Debian's chromium (``apt-get install
chromium``; ``CHROMIUM`` names another binary):

* loads each checked page inside a same-origin probe page and reads, after the page has
  loaded, its title and every ``<img>``'s natural size (an image that failed to load has
  width 0), and fails when a page misses its expected title, has fewer images than expected,
  or any image did not load;
* takes a screenshot of each page into ``<site>/../screenshots/`` and fails when it is blank
  (almost all one colour).

Exit status 0 when every check passes; CI runs it after the Sphinx build.
"""
import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

# page, words its title must contain, the fewest images it must show, screenshot height
# (tall enough that the page's figure is in the picture)
PAGES = [
    ("index.html", "hsskern", 1, 1400),
    ("user_guide/exact_svc.html", "ExactSVC", 1, 2600),
    ("generated/hsskern.HSSSVC.html", "HSSSVC", 1, 1400),
    ("auto_examples/plot_c_grid.html", "C grid", 1, 3400),
]

PROBE = """<!doctype html><html><body><pre id="out">pending</pre>
<iframe id="page" src="/{page}" style="width:1280px;height:1000px"></iframe>
<script>
const frame = document.getElementById("page");
frame.addEventListener("load", () => {{
  const doc = frame.contentDocument;
  const images = Array.from(doc.images);
  images.forEach(img => img.scrollIntoView());  // lazy images load when seen
  const report = () => {{
    const result = {{title: doc.title,
      images: images.map(img => ({{src: img.getAttribute("src"), complete: img.complete,
                                  width: img.naturalWidth, height: img.naturalHeight}}))}};
    document.getElementById("out").textContent = JSON.stringify(result);
  }};
  Promise.all(images.map(img => img.decode().catch(() => null))).then(report);
}});
</script></body></html>"""


def chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    sys.exit("check_site: no chromium found (Debian: apt-get install -y chromium)")


def browser(binary, *args, height=1600, timeout=120):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", f"--window-size=1280,{height}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def probe(binary, base, root, page, budgets=(20000, 60000, 180000)):
    """The page's title and images as the probe page reports them, or (None, why).

    A loaded machine can leave the probe's ``<pre>`` at "pending" when the virtual time runs
    out (CI saw it once): each try gives it a longer budget before calling it a failure.
    """
    name = f"_probe_{page.replace('/', '_')}"
    (root / name).write_text(PROBE.format(page=page))
    why = ""
    try:
        for budget in budgets:
            out = browser(binary, f"--virtual-time-budget={budget}", "--dump-dom",
                          f"{base}/{name}", timeout=120 + budget // 1000)
            found = re.search(r'<pre id="out">(.*?)</pre>', out.stdout, re.S)
            text = html.unescape(found.group(1)) if found else ""
            if text.startswith("{"):
                return json.loads(text), None
            why = (f"probe said {text[:40]!r} after {budget // 1000} s of virtual time; "
                   f"stderr: {out.stderr[-1000:]}")
    finally:
        (root / name).unlink()
    return None, why


def blank(png):
    import matplotlib.image as mpimg
    pixels = mpimg.imread(png)[..., :3].reshape(-1, 3)
    # the share of pixels that differ from the most common colour (the background)
    colours, counts = np.unique((pixels * 255).astype(np.uint8), axis=0, return_counts=True)
    background = colours[counts.argmax()]
    share = np.mean(np.any(np.abs(pixels * 255 - background) > 8, axis=1))
    return share < 0.02, share


def main(site):
    site = Path(site).resolve()
    if not (site / "index.html").exists():
        sys.exit(f"check_site: {site}/index.html not found: build the site first")
    shots = site.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    binary = chromium()
    server = serve(site)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    failures = []
    try:
        for page, title, min_images, height in PAGES:
            result, err = probe(binary, base, site, page)
            if result is None:
                failures.append(f"{page}: the browser gave no result ({err})")
                continue
            broken = [i["src"] for i in result["images"] if not i["width"]]
            if title not in result["title"]:
                failures.append(f"{page}: title {result['title']!r} lacks {title!r}")
            if len(result["images"]) < min_images:
                failures.append(f"{page}: {len(result['images'])} images, expected "
                                f">= {min_images}")
            if broken:
                failures.append(f"{page}: images that did not load: {broken}")
            png = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
            png.unlink(missing_ok=True)
            browser(binary, "--virtual-time-budget=10000", f"--screenshot={png}",
                    f"{base}/{page}", height=height)
            if not png.exists():
                failures.append(f"{page}: no screenshot written")
                continue
            is_blank, share = blank(png)
            if is_blank:
                failures.append(f"{page}: the screenshot is blank ({share:.1%} non-background)")
            print(f"{page}: title {result['title']!r}, {len(result['images'])} images loaded "
                  f"{len(result['images']) - len(broken)}, screenshot {png.name} "
                  f"({share:.0%} non-background)")
    finally:
        server.shutdown()
    if failures:
        print("check_site FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"check_site: {len(PAGES)} pages render with their figures; screenshots in {shots}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "_build/html"))
