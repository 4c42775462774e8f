#!/usr/bin/awk -f
# docs/header_filter.awk — Doxygen input filter for include/tinytorch/** (docs/Doxyfile).
#
#   docs/header_filter.awk <header>      # prints the header as Doxygen should read it
#
# Every header opens with a block of plain // comments: what it implements, the math and shapes,
# the chapter that explains it, the reference it follows. Doxygen ignores plain comments, so this
# filter turns that block into the file's documentation: its first line becomes the brief
# description, the rest a verbatim block (the text is laid out with spaces, as in the source).
# Each line keeps its line number, so "Definition at line N" stays right; the rest of the file
# (and its /// docstrings) passes through unchanged. Doxygen's source pages show the unfiltered
# file (FILTER_SOURCE_FILES = NO). In /// lines, outside `code spans`, a placeholder such as
# <name> or <seconds> is escaped: Doxygen would take it for an HTML tag and drop it.
# awk, not Python: Doxygen runs the filter hundreds of times.
function text(line) {
  sub(/^\/\/ ?/, "", line)
  gsub(/\*\//, "* /", line)
  return line
}
function flush(   i) {
  if (n == 1) {
    print "/** @brief " text(block[1]) " @file */"
  } else if (n > 1) {
    print "/** @brief " text(block[1])
    print "@verbatim " text(block[2])
    for (i = 3; i < n; i++) print text(block[i])
    print text(block[n]) " @endverbatim @file */"
  }
  n = 0
}
function escape_placeholders(line,   parts, k, i, out, seg, tag, name) {
  k = split(line, parts, "`")
  out = ""
  for (i = 1; i <= k; i++) {
    seg = parts[i]
    if (i % 2 == 1) {                  # outside a code span
      while (match(seg, /<\/?[A-Za-z_][A-Za-z0-9_]*>/)) {
        tag = substr(seg, RSTART, RLENGTH)
        name = tolower(tag)
        gsub(/[<>\/]/, "", name)
        if (name in HTML)
          out = out substr(seg, 1, RSTART + RLENGTH - 1)
        else
          out = out substr(seg, 1, RSTART - 1) "&lt;" substr(tag, 2, RLENGTH - 2) "&gt;"
        seg = substr(seg, RSTART + RLENGTH)
      }
    }
    out = out seg (i < k ? "`" : "")
  }
  return out
}
BEGIN {
  in_block = 1; n = 0
  split("a b br blockquote caption center cite code dd del details div dl dt em h1 h2 h3 h4 h5 h6 " \
        "hr i img ins kbd li ol p pre s small span strike strong sub summary sup table td th tr " \
        "tt u ul var", tags, " ")
  for (t in tags) HTML[tags[t]] = 1
}
in_block && /^\/\// && !/^\/\/[\/!]/ { block[++n] = $0; next }
in_block { in_block = 0; flush() }
/^[ \t]*\/\/\// { print escape_placeholders($0); next }
{ print }
END { if (in_block) flush() }
