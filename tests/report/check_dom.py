"""Checks the DOM Chromium dumped after the report's scripts ran: every chart's canvas was
rendered by Chart.js (width and height set, non-zero) and the page marked it; the page has only
its own three scripts, no injected element, its title unchanged, and the hostile seed's text
shown as text. Usage: check_dom.py DOM.html"""
import sys
from html.parser import HTMLParser


def fail(msg):
    sys.exit(f"FAIL: {msg}")


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.canvases, self.scripts, self.bad, self.title, self._in_title = [], 0, [], "", False
        self.text = []
        self.kernel_tables = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "kernels":
            self.kernel_tables += 1
        if tag == "canvas":
            self.canvases.append(a)
        elif tag == "script":
            self.scripts += 1
        elif tag in ("img", "svg", "iframe", "object", "embed") or any(
                k.startswith("on") for k in a):
            self.bad.append((tag, a))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)


d = Dom()
d.feed(open(sys.argv[1], encoding="utf-8").read())
if d.title != "kernelbrain report: rep":
    fail(f"title changed to {d.title!r}")
if d.bad:
    fail(f"injected elements in the page: {d.bad[:3]}")
if d.scripts != 3:
    fail(f"{d.scripts} script elements, want 3 (data, Chart.js, the page's)")
ids = {c.get("id") for c in d.canvases}
want = {"chart-funnel", "chart-burn", "chart-dist", "chart-task-0", "chart-task-1"}
if not want <= ids:
    fail(f"canvases {sorted(ids)}, want {sorted(want)}")
for c in d.canvases:
    w, h = int(c.get("width", "0")), int(c.get("height", "0"))
    if c.get("data-rendered") != "true" or w <= 0 or h <= 0:
        fail(f"chart {c.get('id')} not rendered: {c}")
if d.kernel_tables < 1:
    fail("no CUPTI kernel table (table.kernels) in the page")
text = "".join(d.text)
if "_Z4kernILi0EEvPf" not in text or "DRAM throughput" not in text:
    fail("the kernel table lacks profile_runner's kernel or the metrics")
if '</script><script>document.title = "pwned";</script>' not in text:
    fail("the hostile seed's source is not shown as text")
print(f"html: {len(d.canvases)} charts rendered, {d.kernel_tables} kernel tables, no console "
      "message, no injection")
