"""Files on disk, below every other room but the error tree: writing a file
whole or not at all (:mod:`.atomic`)."""
