#!/usr/bin/env python3
"""docs/prepare.py — the docs site's Markdown pages, staged for Doxygen (run by scripts/docs.sh).

    prepare.py stage  <repo root> <stage dir>     # before Doxygen
    prepare.py finish <stage dir> <site dir>      # after Doxygen

Doxygen renders Markdown pages but knows nothing of GitHub's conventions, which the chapters
follow so that they read well on GitHub too. `stage` copies the pages into <stage>/pages and
rewrites, outside code blocks and code spans, every relative link so that it lands on the site:

  link in a page (relative to the page)   becomes
  -------------------------------------   ------------------------------------------------------
  other.md, other.md#heading, #heading    <page>.html#<heading label>: every heading gets an
                                          explicit {#label} (Doxygen's own anchors are
                                          autotoc_mdN; GitHub's are the heading's slug)
  ../include/tinytorch/x.hpp[#L12]        the header's page in the API reference (with #L12: its
                                          source page, at line 12); `finish` fills in the
                                          names Doxygen chose, from its tag file
  ../examples/y.cpp, ../tests/z.py, any   a generated page src_<path>.html that shows the file,
  other file of the repository            highlighted for C++ and Python, with line numbers
                                          (#L12 becomes #l00012); listed under "Source files"
  a directory                             a generated page tree_<path>.html listing its files
  img/x.png, img/x.svg (image or link)    images/<unique name>, copied next to the pages; when
                                          there is an x.dot, x.svg is drawn from it with
                                          Graphviz `dot` (every chapters/**/*.dot is); SVG
                                          images become <img> tags (Doxygen would embed an
                                          <object>)

Pages: README.md (the entry page, index.html), chapters/README.md, chapters/**/*.md, and every
.md they link to. Links to http(s)/mailto are left alone. A relative link to a file that does not
exist is left as it is and reported (it is broken on GitHub too); the site check catches it.
Two Doxygen 1.9.4 quirks are worked around: "# 7. Title" would become a numbered list (a
no-break space follows "7."), and a code span in a heading would show as "<tt>x</tt>" (`finish`
turns the escaped tags back into <code>).

`stage` writes <stage>/Doxyfile.inc (INPUT, IMAGE_PATH, EXAMPLE_PATH, ...: appended to
docs/Doxyfile) and <stage>/manifest.json (each generated page and the languages of its fenced
code blocks, in order), which docs/check_site.py reads.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

CODE_EXT = {".cpp": "cpp", ".hpp": "cpp", ".h": "cpp", ".cc": "cpp", ".c": "cpp", ".cu": "cpp",
            ".cuh": "cpp", ".py": "python"}
IMAGE_EXT = {".png", ".svg", ".jpg", ".jpeg", ".gif"}
HIGHLIGHTED = {"cpp": "cpp", "c++": "cpp", "cxx": "cpp", "c": "cpp", "cuda": "cpp",
               "python": "python", "py": "python"}
API_DIR, API_EXT = "include/tinytorch/", (".hpp", ".cuh")   # Doxygen's INPUT: the API
API_SCHEME = "tt-api:"       # placeholder href for a header, replaced by `finish`

ROOT = STAGE = None
warnings = []
pages = {}        # repo path of a .md -> label (its HTML file is <label>.html)
queue = []        # .md files still to stage
sources = {}      # repo path of a file or directory shown on a generated page -> label
images = {}       # repo path of an image -> file name in the site
labels_used = {"index", "tt_source_files"}
manifest = []     # {"label", "source", "code": [language or "", ...]}
_headings = {}    # repo .md -> ({line index: label}, {slug: label})


def mangle(path):
    return re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")


def unique_label(base):
    label, n = base, 1
    while label in labels_used:
        n += 1
        label = f"{base}_{n}"
    labels_used.add(label)
    return label


def page_label(md):
    if md not in pages:
        pages[md] = "index" if md == "README.md" else unique_label("page_" + mangle(md[:-3]))
        queue.append(md)
    return pages[md]


def source_page(rel, is_dir=False):
    """Label of the generated page that shows the repository file (or directory) `rel`."""
    if rel not in sources:
        sources[rel] = unique_label(("tree_" if is_dir else "src_") + mangle(rel))
    return sources[rel]


def image_name(rel):
    if rel not in images:
        stem, ext = os.path.splitext(rel)
        name = mangle(stem) + ext.lower()
        while name in images.values():
            name = "x" + name
        images[rel] = name
    return images[rel]


def render_dot(dot_rel, svg_rel):
    out = os.path.join(STAGE, "images", image_name(svg_rel))
    subprocess.run(["dot", "-Tsvg", "-o", out, os.path.join(ROOT, dot_rel)], check=True)


def fence_state(line, fence):
    """(fence open after this line, whether this line belongs to a fenced block)."""
    m = re.match(r"^ {0,3}(`{3,}|~{3,})(.*)$", line)
    if fence is None:
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            return m.group(1), True
        return None, False
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
        return None, True
    return fence, True


HEADING = re.compile(r"^( {0,3}#{1,6}[ \t]+)(.*?)(?:[ \t]+#+)?[ \t]*$")


def github_slug(text):
    """The anchor GitHub gives a heading: its text without markup, lower case, punctuation
    dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(md):
    """({line index: label}, {GitHub slug: label}) for the ATX headings of page `md` outside
    fenced code. A level-1 heading on the first non-blank line is the page's title: its label is
    the page label; the others get <page label>_<slug>. Duplicate slugs are numbered as GitHub
    does (slug, slug-1, slug-2, ...)."""
    if md not in _headings:
        with open(os.path.join(ROOT, md), encoding="utf-8") as f:
            lines = f.read().split("\n")
        by_line, by_slug, seen, fence, text_before = {}, {}, {}, None, False
        for i, line in enumerate(lines):
            fence, is_code = fence_state(line, fence)
            m = None if is_code else HEADING.match(line)
            if m:
                slug = github_slug(m.group(2))
                if slug in seen:
                    seen[slug] += 1
                    slug = f"{slug}-{seen[slug]}"
                else:
                    seen[slug] = 0
                title = m.group(1).strip() == "#" and not text_before
                label = page_label(md) if title else unique_label(page_label(md) + "_" + mangle(slug))
                by_line[i] = by_slug[slug] = label
            text_before = text_before or is_code or bool(line.strip())
        _headings[md] = (by_line, by_slug)
    return _headings[md]


def page_href(md, anchor=""):
    label = page_label(md)
    if anchor:
        heading = headings(md)[1].get(anchor)
        if heading is None:
            warnings.append(f"link to {md}#{anchor}: no such heading")
        elif heading != label:
            return f"{label}.html#{heading}"
    return f"{label}.html"


def resolve(page, target, is_image):
    """The href that replaces `target`, found in repository page `page`; None leaves it."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None                                   # http:, mailto:, ...
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        warnings.append(f"{page}: absolute link {target} (make it relative)")
        return None
    rel = os.path.normpath(os.path.join(os.path.dirname(page), path)).replace(os.sep, "/") if path else page
    if rel == ".." or rel.startswith("../"):
        warnings.append(f"{page}: link {target} leaves the repository")
        return None
    full = os.path.join(ROOT, rel)
    ext = os.path.splitext(rel)[1].lower()
    if ext == ".svg" and os.path.exists(full[:-4] + ".dot"):
        render_dot(rel[:-4] + ".dot", rel)            # drawn from its Graphviz source, even if
        return image_name(rel)                        # an .svg is committed beside it
    if not os.path.exists(full):
        warnings.append(f"{page}: link {target}: {rel} does not exist")
        return None
    if os.path.isdir(full):
        return source_page(rel.rstrip("/") if rel != "." else ".", is_dir=True) + ".html"
    if ext == ".md":
        return page_href(rel, anchor)
    if ext in IMAGE_EXT:
        shutil.copyfile(full, os.path.join(STAGE, "images", image_name(rel)))
        return image_name(rel)
    if ext == ".dot" and is_image:
        render_dot(rel, rel[:-4] + ".svg")
        return image_name(rel[:-4] + ".svg")
    line = re.match(r"^L(\d+)", anchor)
    if rel.startswith(API_DIR) and rel.endswith(API_EXT):
        return API_SCHEME + rel + (f"#L{line.group(1)}" if line else "")
    return source_page(rel) + ".html" + (f"#l{int(line.group(1)):05d}" if line else "")


LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^( {0,3}\[[^\]]+\]:\s*)<?([^\s>]+)>?(\s.*)?$")
HTML_ATTR = re.compile(r"(<(?:img|a)\b[^>]*?\b(?:src|href)=\")([^\"]+)(\")", re.I)


def code_spans(line):
    """[start, end) of the code spans of a line."""
    spans, pos = [], 0
    for m in re.finditer(r"`+", line):
        if m.start() < pos:
            continue
        ticks = m.group(0)
        close = re.compile(r"(?<!`)" + ticks + r"(?!`)").search(line, m.end())
        if close:
            spans.append((m.start(), close.end()))
            pos = close.end()
    return spans


def rewrite_line(page, line):
    m = REFDEF.match(line)                            # [name]: target
    if m:
        new = resolve(page, m.group(2), False)
        return line if new is None else m.group(1) + new + (m.group(3) or "")

    def outside_code(f):
        def g(m):
            spans = code_spans(m.string)
            return m.group(0) if any(a <= m.start() < b for a, b in spans) else f(m)
        return g

    def html(m):                                      # <img src=...>, <a href=...>
        new = resolve(page, m.group(2), m.group(1).lower().startswith("<img"))
        return m.group(0) if new is None else m.group(1) + new + m.group(3)

    def link(m):                                      # [text](target), ![alt](target)
        bang, text, target = m.group(1), m.group(2), m.group(3)
        new = resolve(page, target, bool(bang))
        if new is None:
            return m.group(0)
        if bang and new.endswith(".svg"):             # an <img>, not Doxygen's <object>
            return '<img src="{}" alt="{}"/>'.format(new, text.replace('"', "&quot;"))
        return f"{bang}[{text}]({new}{m.group(4) or ''})"

    line = HTML_ATTR.sub(outside_code(html), line)    # first: link() writes <img> tags
    return LINK.sub(outside_code(link), line)


def stage_page(md):
    label = pages[md]
    with open(os.path.join(ROOT, md), encoding="utf-8") as f:
        lines = f.read().split("\n")
    by_line = headings(md)[0]
    out, fence, code = [], None, []
    for i, line in enumerate(lines):
        was_in = fence is not None
        fence, is_code = fence_state(line, fence)
        if is_code:
            if not was_in:                             # an opening fence: note its language
                lang = re.match(r"^ {0,3}(?:`{3,}|~{3,})\s*\{?\.?([\w+-]*)", line).group(1).lower()
                code.append(HIGHLIGHTED.get(lang, ""))
            out.append(line)
            continue
        if i in by_line:
            m = HEADING.match(line)
            # "# 7. Title" would become a numbered list ("1. Title"): a no-break space after "7.".
            text = re.sub(r"^(\d+)\.[ \t]+", "\\1.\u00a0", m.group(2))
            line = m.group(1) + text + ("" if by_line[i] == "index" else " {#" + by_line[i] + "}")
        out.append(rewrite_line(md, line))
    if label != "index" and label not in by_line.values():   # no title heading: the path is
        out.insert(0, f"# {md} {{#{label}}}\n")            # the title
    dest = os.path.join(STAGE, "pages", md)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    manifest.append({"label": label, "source": md, "code": code})


def stage_sources():
    """One page per linked file or directory, all subpages of "Source files"."""
    done = set()
    while len(done) < len(sources):
        for rel, label in sorted(sources.items()):
            if rel in done:
                continue
            done.add(rel)
            full = os.path.join(ROOT, rel)
            page, code = [f"# {rel} {{#{label}}}", ""], []
            if os.path.isdir(full):
                page += [f"Directory `{rel}/` of the repository:", ""]
                for name in sorted(os.listdir(full)):
                    child = os.path.normpath(os.path.join(rel, name)).replace(os.sep, "/")
                    if name.startswith(".") or (os.path.isdir(os.path.join(ROOT, child)) and name.startswith("build")):
                        continue
                    if os.path.isdir(os.path.join(ROOT, child)):    # no recursion into subdirectories
                        href = sources[child] + ".html" if child in sources else None
                        name += "/"
                    elif child.endswith(".md"):
                        href = pages[child] + ".html" if child in pages else None
                    else:
                        href = resolve(rel + "/x", name, False)
                    page.append(f"- [{name}]({href})" if href else f"- `{name}`")
            else:
                ext = os.path.splitext(rel)[1].lower()
                copy = label + (ext if ext in CODE_EXT else ".txt")
                shutil.copyfile(full, os.path.join(STAGE, "src", copy))
                page += [f"File `{rel}` of the repository.", ""]
                if ext in CODE_EXT:
                    page.append(f"\\includelineno {copy}")
                    code.append(CODE_EXT[ext])
                else:
                    page.append(f"\\verbinclude {copy}")
            with open(os.path.join(STAGE, "pages", "_src", label + ".md"), "w", encoding="utf-8") as f:
                f.write("\n".join(page) + "\n")
            manifest.append({"label": label, "source": rel, "code": code})
    index = ["# Source files {#tt_source_files}", "", "The files of the repository the pages link to.", ""]
    index += [f"- @subpage {label}" for rel, label in sorted(sources.items())]
    with open(os.path.join(STAGE, "pages", "_src", "index.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(index) + "\n")


def stage(root, stage_dir):
    global ROOT, STAGE
    ROOT, STAGE = os.path.abspath(root), os.path.abspath(stage_dir)
    for d in ("pages", "pages/_src", "src", "images"):
        shutil.rmtree(os.path.join(STAGE, d), ignore_errors=True)
        os.makedirs(os.path.join(STAGE, d))
    page_label("README.md")
    if os.path.isfile(os.path.join(ROOT, "chapters", "README.md")):
        page_label("chapters/README.md")              # the list of chapters, then the chapters
    for dirpath, dirnames, filenames in sorted(os.walk(os.path.join(ROOT, "chapters"))):
        dirnames.sort()
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/")
            if name.endswith(".md"):
                page_label(rel)
            elif name.endswith(".dot"):               # pictures: img/x.dot -> img/x.svg
                render_dot(rel, rel[:-4] + ".svg")
    while queue:
        stage_page(queue.pop(0))
    stage_sources()
    inputs = [os.path.join(STAGE, "pages", md) for md in pages]      # in this order in the tree
    inputs += [os.path.join(STAGE, "pages", "_src"), os.path.join(ROOT, API_DIR)]
    with open(os.path.join(STAGE, "Doxyfile.inc"), "w") as f:
        f.write("INPUT = " + " ".join(f'"{p}"' for p in inputs) + "\n")
        f.write(f'USE_MDFILE_AS_MAINPAGE = "{os.path.join(STAGE, "pages", "README.md")}"\n')
        f.write(f'STRIP_FROM_PATH = "{ROOT}" "{os.path.join(STAGE, "pages")}"\n')
        f.write(f'STRIP_FROM_INC_PATH = "{os.path.join(ROOT, "include")}"\n')
        f.write(f'IMAGE_PATH = "{os.path.join(STAGE, "images")}"\n')
        f.write(f'EXAMPLE_PATH = "{os.path.join(STAGE, "src")}"\n')
        f.write(f'GENERATE_TAGFILE = "{os.path.join(STAGE, "tinytorch.tag")}"\n')
    with open(os.path.join(STAGE, "manifest.json"), "w") as f:
        json.dump({"root": ROOT, "pages": manifest, "images": sorted(images.values())}, f, indent=1)
    for w in warnings:
        print("docs/prepare.py: warning:", w, file=sys.stderr)
    print(f"docs/prepare.py: {len(pages)} pages, {len(sources)} source pages, {len(images)} images")


def finish(stage_dir, site):
    """Replaces the tt-api:<header>[#Ln] placeholders by the header's API page (or source page
    at line n), shows code spans in headings as code, and copies the images next to the pages
    (Doxygen copies only those it embeds)."""
    with open(os.path.join(stage_dir, "manifest.json")) as f:
        m = json.load(f)
    api = {}
    for c in ET.parse(os.path.join(stage_dir, "tinytorch.tag")).getroot().iter("compound"):
        if c.get("kind") == "file":
            path = os.path.join(c.findtext("path"), c.findtext("name"))
            rel = os.path.relpath(path, m["root"]).replace(os.sep, "/")
            name = c.findtext("filename")
            api[rel] = name if name.endswith(".html") else name + ".html"

    def href(mo):
        rel, line = mo.group(1), mo.group(2)
        if rel not in api:
            print(f"docs/prepare.py: warning: {rel} has no page in the API reference", file=sys.stderr)
            return mo.group(0)
        if line:
            return api[rel][:-5] + f"_source.html#l{int(line):05d}"
        return api[rel]

    for p in m["pages"]:
        path = os.path.join(site, p["label"] + ".html")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = re.sub(re.escape(API_SCHEME) + r"([^\"#]+)(?:#L(\d+))?", href, text)
        new = re.sub(r"<h([1-6])>(.*?)</h\1>", lambda h: h.group(0).replace("&lt;tt&gt;", "<code>")
                     .replace("&lt;/tt&gt;", "</code>"), new, flags=re.S)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    for name in m["images"]:
        shutil.copyfile(os.path.join(stage_dir, "images", name), os.path.join(site, name))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("stage", "finish"):
        sys.exit(__doc__)
    (stage if sys.argv[1] == "stage" else finish)(sys.argv[2], sys.argv[3])
