"""Marking a query's Spark work so it can be cancelled: job groups on a classic session,
operation tags on a Spark Connect one.

A classic ``SparkSession`` lives in this process: each query runs in a job group of its own
(``setJobGroup(…, interruptOnCancel=True)``, cleared after), and a cancel stops the group's
running jobs and those submitted after (``cancelJobGroupAndFutureJobs``). A Spark Connect
session talks to a server over gRPC and has no ``SparkContext``: each query's operations carry
a tag of its own (``addTag``, thread-local like a job group), and a cancel interrupts every
operation with that tag on the server (``interruptTag``). Both are marked on the thread that
runs the query, so concurrent queries never cancel each other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

_T = TypeVar("_T")

__all__ = ["JobMarks", "is_connect_session", "job_marks", "once_more_if_pool_shut"]

_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def is_connect_session(session: Any) -> bool:
    """A Spark Connect session (``pyspark.sql.connect``), told without importing pyspark."""
    return ".connect." in type(session).__module__ or not hasattr(session, "sparkContext")


class JobMarks:
    """Job groups (classic); :class:`_Tags` is the Spark Connect form."""

    def __init__(self, session: Any) -> None:
        self.session = session

    @contextlib.contextmanager
    def marked(self, mark: str, description: str) -> Iterator[None]:
        """Run the body's Spark work under ``mark``; the thread is clean again after."""
        context = self.session.sparkContext
        # PySpark pins a JVM thread to each Python thread: the group is this thread's own
        context.setJobGroup(mark, description, True)
        try:
            yield
        finally:
            for key in _GROUP_PROPERTIES:  # the thread runs other work next
                with contextlib.suppress(Exception):
                    context.setLocalProperty(key, None)

    def cancel(self, mark: str) -> None:
        context = self.session.sparkContext
        with contextlib.suppress(Exception):
            context.cancelJobGroup(mark)
        with contextlib.suppress(Exception):  # Spark 4: also the jobs submitted later
            context._jsc.sc().cancelJobGroupAndFutureJobs(mark, "cancelled by relay_nb")


class _Tags(JobMarks):
    @contextlib.contextmanager
    def marked(self, mark: str, description: str) -> Iterator[None]:
        self.session.addTag(mark)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                self.session.removeTag(mark)

    def cancel(self, mark: str) -> None:
        with contextlib.suppress(Exception):
            self.session.interruptTag(mark)


def job_marks(session: Any) -> JobMarks:
    """How queries on ``session`` are marked and cancelled."""
    return _Tags(session) if is_connect_session(session) else JobMarks(session)


def once_more_if_pool_shut(call: Callable[[], _T]) -> _T:
    """``call()``, made once more when it met PySpark's shut Spark Connect pool.

    PySpark 4.0's Connect client shares one thread pool among all its sessions and shuts it
    down whenever *any* session is stopped or garbage-collected (``SparkSession.__del__``),
    even in the middle of another session's operation on the same thread; that operation then
    fails with ``RuntimeError: cannot schedule new futures after shutdown`` though nothing is
    wrong with it. The pool is made again on its next use, so a second call succeeds.
    """
    try:
        return call()
    except RuntimeError as exc:
        if "cannot schedule new futures after shutdown" not in str(exc):
            raise
    return call()
