"""The output place of a command: checked before any work, claimed exclusively for the whole
command, written atomically, and replaced with ``--overwrite`` only where shallowflow made it.

Four rules (docs/architecture.md, "Output places"):

1. **Ownership** (:mod:`.folders`). Every folder shallowflow makes (a run, sweep, reproduction
   or demo) holds a marker, :data:`MARKER`, naming its kind and every entry shallowflow wrote
   into it (files a later command adds are added by :func:`record_entries`). ``--overwrite``
   replaces a folder only when it holds the marker and nothing else; anything else (a user's
   folder, a file put into a run folder, a symbolic link, the current folder or one above it)
   is refused before any work, naming what was found.
2. **Exclusive claim.** A command holds an advisory lock (``flock``) on ``.NAME.lock`` beside
   its output from before its checks until it ends (:func:`claim`; for files,
   :func:`claim_files` in :mod:`.file_claims`); a second command is refused at once. The kernel
   drops the lock when a process dies, so a killed command never blocks the next one.
3. **Atomic replacement.** The result is written into a hidden temporary folder (or files, all
   or none) and renamed into place at the end. A folder that appeared at the output meanwhile
   is never deleted: the finished result is moved to a visible sibling and the command says
   where.
4. **A full disk** (:mod:`.writes`) met while a file is written is
   :class:`~shallowflow.errors.DiskFull`, naming the file as it was going to be called, the bytes
   it needed and the bytes free; the temporary file is removed.
"""

from shallowflow.output.file_claims import (
    FILE_REMEDY,
    OutputFiles,
    check_output_file,
    check_output_files,
    claim_files,
)
from shallowflow.output.folders import (
    KINDS,
    MARKER,
    OutputExistsError,
    OutputFolder,
    check_disk,
    check_output_dir,
    check_place,
    check_replaceable,
    claim,
    clean_stale,
    exclusive,
    foreign_entries,
    lock_name,
    owner_alive,
    plain_output,
    read_marker,
    record_entries,
    write_marker,
)
from shallowflow.output.writes import (
    FULL,
    HOST,
    atomic_file,
    disk_errors,
    tmp_name,
    write_bytes,
    write_text,
)

__all__ = [
    "FILE_REMEDY", "FULL", "HOST", "KINDS", "MARKER", "OutputExistsError", "OutputFiles",
    "OutputFolder", "atomic_file", "check_disk", "check_output_dir", "check_output_file",
    "check_output_files", "check_place", "check_replaceable", "claim", "claim_files",
    "clean_stale", "disk_errors", "exclusive", "foreign_entries", "lock_name", "owner_alive",
    "plain_output", "read_marker", "record_entries", "tmp_name", "write_bytes", "write_marker",
    "write_text",
]
