# .gdbinit — loads tinytorch's gdb pretty-printers and skip list when gdb starts in this directory
# (tools/gdb/tinytorch.py; chapters/01-training-loop.md, "Stepping through in gdb").
# gdb reads this file only from a directory you trust. Once, in ~/.gdbinit:
#     add-auto-load-safe-path /path/to/tinytorch/.gdbinit
# Without that line gdb prints a warning instead; `source tools/gdb/tinytorch.py` does the same by hand.
source tools/gdb/tinytorch.py
