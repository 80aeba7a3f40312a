"""Files on disk, below every other room (imports nothing of the package): writing a file
whole or not at all (:mod:`.atomic`)."""
