"""Files on disk, below every other room but the error tree: writing a file
whole or not at all (:mod:`.atomic`), and reading a declared output only if it is the
workdir's own regular file (:mod:`.outputs`)."""
