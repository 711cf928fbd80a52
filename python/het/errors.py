"""Errors raised by the het package."""


class HetError(Exception):
    """Base class of every error the het package raises on bad input."""


class HetImportError(HetError):
    """A model could not be imported. `unsupported` lists each unsupported op
    (with the Python source line it came from) when that is the reason."""

    def __init__(self, message, unsupported=None):
        super().__init__(message)
        self.unsupported = list(unsupported or [])


class HetToolError(HetError):
    """A het tool (het-opt, het-eval, het-plan, ...) is missing or failed."""

    def __init__(self, message, returncode=None, stderr=""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
