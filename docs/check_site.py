#!/usr/bin/env python3
"""docs/check_site.py — check the docs site in headless Chromium: pages load, links resolve,
images render, code is highlighted.

    check_site.py --build <dir>     # scripts/docs.sh <dir>, then check it (ctest docs_site)
    check_site.py <dir>             # check a site built before

Drives Debian's chromium through chromedriver (python3-selenium).
 1. Chromium opens the pages people read and one page of each other kind: index.html, every
    Markdown page docs/prepare.py generated (<dir>/_stage/manifest.json: the chapters and the
    other Markdown pages), the first source page of each file type, and the first pages of the
    site the README and the chapters link to in their text (the API pages a chapter sends you to;
    not the menus, which reach every page). On each one:
    - it loads: a real file, not Chromium's error page, and the browser console shows no error
      (a missing script, stylesheet or image is one);
    - every <img> has rendered (complete, naturalWidth > 0), SVG pictures included;
    - on the generated pages, there is one code block per fenced block of the Markdown source,
      and each C++ or Python block is highlighted: it holds highlighting spans (keyword, comment,
      string literal, ...) whose colour, as Chromium computes it, differs from the block's text.
 2. Every other HTML file of the site (the other source pages, several hundred Doxygen API
    pages: the same scripts and stylesheet as the pages opened in 1., so Chromium would only
    repeat itself, for minutes) is parsed with Python's html.parser; on the other generated
    (source) pages, the code blocks are counted and their highlighting spans found in the HTML.
 3. On every page, every link into the site (href, src) resolves: the file exists inside <dir>,
    and a #fragment names an element (id or name) of the target page.
 4. Every image any page shows is loaded as an <img> in one Chromium page: naturalWidth > 0.
Links to other sites are not followed (the check runs offline).
Exit status: 0 all good; 1 something is wrong (each problem printed); 77 (ctest's "Skipped")
when doxygen, graphviz, chromium, chromedriver or selenium is missing.
"""
import collections
import html.parser
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse

SKIP = 77
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = ("chromedriver",)

# Collected on each page once it has loaded (and its images have settled).
PAGE_JS = r"""
const done = arguments[arguments.length - 1];
const imgs = Array.from(document.images);
Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })))
  .then(() => {
    const spans = 'span.keyword, span.keywordtype, span.keywordflow, span.comment, ' +
                  'span.stringliteral, span.charliteral, span.preprocessor';
    done({
      url: location.href,
      title: document.title,
      ids: Array.from(document.querySelectorAll('[id], a[name]')).map(e => e.id || e.name),
      links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
      content_links: Array.from(document.querySelectorAll('div.contents a[href]')).map(a => a.href),
      imgs: imgs.map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
      code: Array.from(document.querySelectorAll('.contents div.fragment')).map(f => {
        const base = getComputedStyle(f).color;
        const s = Array.from(f.querySelectorAll(spans));
        return {spans: s.length, coloured: s.filter(e => getComputedStyle(e).color !== base).length};
      }),
    });
  });
"""


def which(names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def skip(why):
    print(f"docs/check_site.py: SKIP: {why}")
    sys.exit(SKIP)


def start_browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip(f"selenium is not importable by {sys.executable} (Debian: python3-selenium)")
    chromium, driver = which(CHROMIUM), which(DRIVER)
    if not chromium or not driver:
        skip("chromium or chromedriver not found (Debian: chromium, chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    # Root in a container: no sandbox; no GPU, no /dev/shm (small in containers).
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    b = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    b.set_page_load_timeout(30)
    b.set_script_timeout(30)
    return b


# The highlighting spans PAGE_JS looks for, by class.
HIGHLIGHT = {"keyword", "keywordtype", "keywordflow", "comment", "stringliteral", "charliteral",
             "preprocessor"}
# At most this many pages a written page links to are opened in Chromium (the rest are parsed).
FOLLOW_IN_CHROMIUM = 8


class StaticPage(html.parser.HTMLParser):
    """The ids, links (href) and resources (src, stylesheet href) of one HTML file, and its code
    blocks (div.fragment inside div.contents): the number of highlighting spans in each."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.images, self.resources = set(), [], [], []
        self.code = []            # one count of highlighting spans per code block
        self._divs = []           # open <div>s: "contents", "fragment" or ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "div":
            kind = ""
            if "contents" in classes:
                kind = "contents"
            elif "fragment" in classes and "contents" in self._divs and "fragment" not in self._divs:
                kind = "fragment"
                self.code.append(0)
            self._divs.append(kind)
        elif tag == "span" and "fragment" in self._divs and HIGHLIGHT.intersection(classes):
            self.code[-1] += 1
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "link" and a.get("href"):
            self.resources.append(a["href"])
        elif tag == "img" and a.get("src"):
            self.images.append(a["src"])
        elif tag in ("script", "iframe") and a.get("src"):
            self.resources.append(a["src"])

    def handle_endtag(self, tag):
        if tag == "div" and self._divs:
            self._divs.pop()


def parse_static(site, rel):
    p = StaticPage()
    with open(os.path.join(site, rel), encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    return p


def as_file_url(site, rel, href):
    """href (as written in page `rel`) as an absolute file:// URL, or None for other schemes."""
    u = urllib.parse.urlsplit(href)
    if u.scheme and u.scheme != "file":
        return None
    base = "file://" + urllib.parse.quote(os.path.join(site, rel))
    return urllib.parse.urljoin(base, href)


class Checker:
    def __init__(self, site):
        self.site = site
        self.problems = []
        self.ids = {}              # site-relative page -> ids (Chromium's where it opened it)
        self.anchors = []          # (from page, target page, fragment)
        self.images = set()        # absolute paths of every image shown anywhere

    def link(self, rel, url, follow):
        """Checks one file:// URL found on page rel; returns the target page to visit, if any."""
        u = urllib.parse.urlsplit(url)
        if u.scheme != "file":
            return None                          # http(s), mailto, javascript: not ours to check
        target = os.path.normpath(urllib.parse.unquote(u.path))
        if not target.startswith(self.site + os.sep):
            self.problems.append(f"{rel}: link leaves the site: {url}")
            return None
        trel = os.path.relpath(target, self.site)
        if not os.path.isfile(target):
            self.problems.append(f"{rel}: broken link: {trel}")
            return None
        if trel.endswith(".html") and u.fragment:
            self.anchors.append((rel, trel, urllib.parse.unquote(u.fragment)))
        return trel if follow and trel.endswith(".html") else None

    def code_blocks(self, rel, page, blocks, unhighlighted):
        """Checks the code blocks of generated page rel (as Chromium or the parser saw them) against
        the fenced blocks of its source (`page`, from the manifest): as many, and each one with a
        language highlighted; unhighlighted(block) says why one is not, or None."""
        want, src = page["code"], page["source"]
        if len(want) != len(blocks):
            self.problems.append(f"{rel} ({src}): {len(blocks)} code blocks on the page, "
                                 f"{len(want)} fenced blocks in the source")
        for i, (lang, block) in enumerate(zip(want, blocks)):
            why = unhighlighted(block) if lang else None
            if why:
                self.problems.append(f"{rel} ({src}): code block {i + 1} ({lang}) {why}")


def main():
    args = sys.argv[1:]
    build = args and args[0] == "--build"
    if build:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    site = os.path.abspath(args[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if build:
        for tool in ("doxygen", "dot"):
            if not shutil.which(tool):
                skip(f"{tool} not found (Debian: doxygen, graphviz)")
        t0 = time.time()
        subprocess.run(["bash", os.path.join(root, "scripts", "docs.sh"), site], check=True)
        print(f"docs/check_site.py: scripts/docs.sh took {time.time() - t0:.1f} s")
    with open(os.path.join(site, "_stage", "manifest.json")) as f:
        manifest = json.load(f)
    generated = {p["label"] + ".html": p for p in manifest["pages"]}
    course = ["index.html"] + sorted(generated)
    c = Checker(site)

    t0 = time.time()
    browser = start_browser()
    try:
        # 1. The written pages (README, chapters), one source page of each file type and the
        # first pages the written ones link to, in Chromium.
        written = {"index.html"} | {r for r, p in generated.items() if p["source"].endswith(".md")}
        kinds = {}
        for rel in course:
            if rel not in written:
                kinds.setdefault(os.path.splitext(generated[rel]["source"])[1], rel)
        in_chromium = [rel for rel in course if rel in written] + sorted(kinds.values())
        queue = collections.deque((rel, rel in written) for rel in in_chromium)
        seen = set(in_chromium)
        followed = 0
        while queue:
            rel, follow = queue.popleft()
            if not os.path.isfile(os.path.join(site, rel)):
                c.problems.append(f"{rel}: missing")
                continue
            browser.get("file://" + urllib.parse.quote(os.path.join(site, rel)))
            info = browser.execute_async_script(PAGE_JS)
            if not info["url"].startswith("file://") or not info["title"]:
                c.problems.append(f"{rel}: did not load (at {info['url']!r}, title {info['title']!r})")
                continue
            for entry in browser.get_log("browser"):
                if entry.get("level") == "SEVERE":
                    c.problems.append(f"{rel}: browser console: {entry.get('message')}")
            c.ids[rel] = set(info["ids"])
            for img in info["imgs"]:
                if not img["ok"]:
                    c.problems.append(f"{rel}: image not rendered: {img['src']}")
            for href in info["links"]:
                c.link(rel, href, False)
            for href in info["content_links"] if follow else []:   # not the menus
                nxt = c.link(rel, href, True)
                if nxt and nxt not in seen and nxt not in generated and followed < FOLLOW_IN_CHROMIUM:
                    seen.add(nxt)
                    followed += 1
                    queue.append((nxt, False))   # one hop from a written page
            if rel in generated:
                c.code_blocks(rel, generated[rel], info["code"],
                              lambda b: None if b["spans"] and b["coloured"] else
                              f"is not highlighted ({b['spans']} spans, {b['coloured']} coloured)")
        n_chromium, t_chromium = len(c.ids), time.time() - t0

        # 2. Every HTML file of the site, parsed; its links and resources checked (3.).
        n_static = n_static_code = 0
        for dirpath, dirnames, filenames in os.walk(site):
            dirnames[:] = [d for d in dirnames if d != "_stage"]
            for name in filenames:
                if not name.endswith(".html"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), site)
                page = parse_static(site, rel)
                for href in page.images:             # every image, for step 4
                    url = as_file_url(site, rel, href)
                    if url and url.startswith("file:"):
                        c.link(rel, url, False)
                        c.images.add(os.path.normpath(urllib.parse.unquote(urllib.parse.urlsplit(url).path)))
                if rel in c.ids:
                    continue                     # its links were checked as Chromium saw them
                n_static += 1
                c.ids[rel] = page.ids
                if rel in generated:             # a source page Chromium did not open
                    n_static_code += 1
                    c.code_blocks(rel, generated[rel], page.code,
                                  lambda spans: None if spans else "has no highlighting spans")
                for href in page.links + page.resources:
                    url = as_file_url(site, rel, href)
                    if url:
                        c.link(rel, url, False)

        # 4. Every image, rendered by Chromium.
        harness = os.path.join(site, "_stage", "all_images.html")
        with open(harness, "w") as f:
            f.write("<!DOCTYPE html><html><head><title>images</title></head><body>\n")
            for img in sorted(i for i in c.images if os.path.isfile(i)):
                f.write(f'<img src="file://{urllib.parse.quote(img)}">\n')
            f.write("</body></html>\n")
        browser.get("file://" + urllib.parse.quote(harness))
        for img in browser.execute_async_script(PAGE_JS)["imgs"]:
            if not img["ok"]:
                c.problems.append(f"image does not render: {img['src']}")
    finally:
        browser.quit()

    for rel, trel, frag in c.anchors:
        if frag not in c.ids.get(trel, ()):
            c.problems.append(f"{rel}: link to {trel}#{frag}: no element with that id")
    n_code = sum(sum(1 for lang in p["code"] if lang) for p in manifest["pages"])
    print(f"docs/check_site.py: {n_chromium} pages opened in Chromium ({t_chromium:.1f} s), "
          f"{n_static} more parsed ({n_static_code} source pages' code blocks counted), "
          f"{len(c.anchors)} links with #anchors, {len(c.images)} images rendered, "
          f"{n_code} highlighted code blocks; {time.time() - t0:.1f} s")
    problems = list(dict.fromkeys(c.problems))
    for p in problems:
        print("docs/check_site.py: FAIL:", p)
    if problems:
        print(f"docs/check_site.py: {len(problems)} problem(s)")
        return 1
    print("docs/check_site.py: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
