"""Exceptions of infermeter, chosen by who must act.

::

    InfermeterError
    ├── ConfigError            the user: a bad flag, conf file or setting (exit 2)
    │   ├── ConfFileError      a line of mlperf.conf / user.conf (file, line, key)
    │   └── PathError          a file or folder the user named is missing or unusable
    │       ├── DatasetPathError  (also a DatasetError)
    │       └── StorePathError    (also a StoreError)
    ├── DatasetError           the user's data: a malformed file, a bad column
    ├── SUTError               the system under test
    │   ├── SUTConnectionError could not reach it
    │   ├── SUTProtocolError   it answered something malformed
    │   └── SUTTimeoutError    it did not answer in time
    ├── StoreError             the results store or a run folder
    └── MissingDependencyError an optional extra is not installed

A failed request is data (a status per sample), not an exception; a run that
misses a bound is an INVALID verdict, not an exception.
"""

from __future__ import annotations

import re


class InfermeterError(Exception):
    """Root of every error infermeter raises on purpose."""


class ConfigError(InfermeterError):
    """A setting, flag or configuration file is wrong; the user must fix it."""


class ConfFileError(ConfigError):
    """A line of an mlperf.conf / user.conf file is wrong."""

    def __init__(self, path: str, line_no: int, key: str, problem: str) -> None:
        self.path = path
        self.line_no = line_no
        self.key = key
        self.problem = problem
        # A key of control bytes would drive the terminal: show them escaped.
        shown = key if key.isprintable() else ascii(key)[1:-1]
        super().__init__(f"{path}:{line_no}: {shown}: {_clip_long_words(problem)}")


def _clip_long_words(text: str, keep: int = 24) -> str:
    """``text`` with each run of more than 64 non-blank characters (a value of
    100,000 digits) cut to its ends and its length: the line stays one line."""

    def clip(match: re.Match[str]) -> str:
        word = match.group()
        return f"{word[:keep]}...({len(word):,} characters)...{word[-8:]}"

    return re.sub(r"\S{65,}", clip, text)


class DatasetError(InfermeterError):
    """A dataset file is missing, malformed or does not match the benchmark."""


class PathError(ConfigError):
    """A file or folder the user named does not exist or cannot be used: fix the path."""


class DatasetPathError(PathError, DatasetError):
    """A dataset, tokenizer or accuracy-log path that does not exist."""


class SUTError(InfermeterError):
    """The system under test failed."""


class SUTConnectionError(SUTError):
    """The system under test could not be reached."""


class SUTProtocolError(SUTError):
    """The system under test answered something malformed."""


class SUTTimeoutError(SUTError):
    """The system under test did not answer in time."""


class StoreError(InfermeterError):
    """The results store or a run folder is unreadable or inconsistent."""


class StorePathError(PathError, StoreError):
    """A run folder or store path that does not exist or cannot be used."""


class MissingDependencyError(InfermeterError):
    """An optional extra is needed; the message says which one to install."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{package} is not installed; install the extra: "
            f"pip install 'infermeter[{extra}]'"
        )
