"""Pure helpers for the jobs. Nothing here imports mrjob, so each module is unit-tested alone."""

#: The buffer of a file the crawl streams lines through (side files, the driver's
#: splices, a task's stdin and stdout): with Python's default of 8 KiB, a system call
#: every few lines of page metadata made writing them about 4 x slower (bench/README.md,
#: "Buffered I/O").
BUFFER_BYTES = 1 << 20
