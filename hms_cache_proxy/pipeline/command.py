"""Runs a pipeline job from parsed arguments (``hms-cache-proxy pipeline JOB ...``)."""

from __future__ import annotations

import argparse
import sys

from hms_cache_proxy.pipeline.errors import PipelineError


def run(args: argparse.Namespace) -> int:
    """Exit status: 0 done, 1 verify found problems, 2 bad arguments or a failed job."""
    try:
        if args.job == "etl":
            from hms_cache_proxy.pipeline import etl

            return etl.run(args)
        if args.job == "backfill":
            from hms_cache_proxy.pipeline import backfill

            return backfill.run(args)
        if args.job == "verify":
            from hms_cache_proxy.pipeline import verify

            return verify.run(args)
    except PipelineError as exc:
        print(f"hms-cache-proxy pipeline {args.job}: {exc}", file=sys.stderr)
        return 2
    raise ValueError(f"unknown pipeline job {args.job!r}")
