"""tf.train.Coordinator and tf.train.LooperThread (TF 1.15's python/training/coordinator.py).

A Coordinator lets threads ask each other to stop: ``request_stop(ex)`` records the first
exception it is given (one of ``clean_stop_exception_types``, OutOfRangeError by default,
counts as a clean stop), ``should_stop()`` turns True, and ``join(threads)`` waits for the
threads, gives laggards ``stop_grace_period_secs`` (polling with doubling sleeps from 1 ms,
as TF does) and then re-raises the recorded exception, or raises RuntimeError naming the
threads still alive.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from .. import errors
from .. import tf_logging as logging


class Coordinator:
    """TF's Coordinator: a stop event, the first reported exception, registered threads."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads: set = set()

    def _filter_exception(self, ex):
        """``ex`` (an exception or an exc_info tuple), or None for a clean-stop type."""
        ex2 = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(ex2, self._clean_stop_exception_types):
            ex = None
        return ex

    def request_stop(self, ex=None) -> None:
        """Ask the threads to stop; the first exception given is re-raised by ``join()``.

        After ``join()`` has returned, an exception given here is raised at once (TF).
        An exception instance must be the one being handled (``sys.exc_info()`` is used).
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1]
                elif ex is not None:
                    raise sys.exc_info()[1]
            if not self._stop_event.is_set():
                if ex and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        logging.info("Error reported to Coordinator: %s", str(ex[1]), exc_info=ex)
                        self._exc_info_to_raise = ex
                    else:
                        logging.info("Error reported to Coordinator: %s, %s", type(ex), str(ex))
                        self._exc_info_to_raise = sys.exc_info()
                    if len(self._exc_info_to_raise) != 3 or not self._exc_info_to_raise[0] or \
                            not self._exc_info_to_raise[1]:
                        try:
                            raise ValueError("ex must be a tuple or sys.exc_info must return the current exception: "
                                             f"{self._exc_info_to_raise}")
                        except ValueError:
                            self._exc_info_to_raise = sys.exc_info()
                self._stop_event.set()

    def clear_stop(self) -> None:
        """``should_stop()`` is False again (and the recorded exception is forgotten)."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """``try: body except: coord.request_stop(sys.exc_info())``."""
        try:
            yield
        except:  # noqa: E722 - TF catches everything here
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None) -> bool:
        """True once a stop is requested; False if ``timeout`` seconds pass first."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False) -> None:
        """Wait for ``threads`` and the registered threads, then re-raise the reported exception.

        Threads still alive ``stop_grace_period_secs`` after the stop request: RuntimeError
        ``Coordinator stopped with threads still running: NAME ...`` (an INFO line instead
        with ``ignore_live_threads``).
        """
        with self._lock:
            if threads is None:
                threads = self._registered_threads
            else:
                threads = self._registered_threads.union(set(threads))
            threads = list(threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        stop_wait_secs = 0.001
        while any(t.is_alive() for t in threads) and stop_grace_period_secs >= 0.0:
            time.sleep(stop_wait_secs)
            stop_grace_period_secs -= stop_wait_secs
            stop_wait_secs = 2 * stop_wait_secs
            stop_wait_secs = max(min(stop_wait_secs, stop_grace_period_secs), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]
            elif stragglers:
                if ignore_live_threads:
                    logging.info("Coordinator stopped with threads still running: %s", " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: " + " ".join(stragglers))

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the exception given to ``request_stop``, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]


class LooperThread(threading.Thread):
    """TF's LooperThread: a daemon thread calling ``run_loop()`` (or ``target``) until its
    coordinator stops, back to back or every ``timer_interval_secs`` (the first call at
    once); an exception is reported to the coordinator."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None) -> "LooperThread":
        """Start a LooperThread calling ``target(*args, **kwargs)``."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(next_timer_time - time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called when the thread starts."""

    def stop_loop(self) -> None:
        """Called when the thread stops."""

    def run_loop(self) -> None:
        """Called at each ``timer_interval_secs`` boundary."""
        if self._target:
            self._target(*self._args, **self._kwargs)
