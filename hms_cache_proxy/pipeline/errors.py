"""The one exception the pipeline raises for problems the user can fix."""

from __future__ import annotations


class PipelineError(Exception):
    """A bad argument, a missing dependency or a failed check: printed, exit status 2 or 1."""
