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
# file (FILTER_SOURCE_FILES = NO). awk, not Python: Doxygen runs the filter hundreds of times.
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
BEGIN { in_block = 1; n = 0 }
in_block && /^\/\// && !/^\/\/[\/!]/ { block[++n] = $0; next }
in_block { in_block = 0; flush() }
{ print }
END { if (in_block) flush() }
