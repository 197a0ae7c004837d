"""tf.app (TF 1.15's python/platform/app.py over absl.app.run, without absl).

``tf.app.run(main=None, argv=None)`` parses the flags of ``tf.flags.FLAGS`` from ``argv``
(``sys.argv`` when None), tolerating unknown flags (they stay in the arguments), then calls
``main`` (``__main__.main`` when None) with ``[program] + the arguments not parsed`` and
exits with ``sys.exit(main(argv))``. A bad flag value raises the flags error
(``IllegalFlagValueError``...) out of ``run``, as TF's own flags parser does (absl prints its
"FATAL Flags parsing error" only with its default parser).
"""
from __future__ import annotations

import sys

from . import flags


def run(main=None, argv=None):
    """Parse the flags, run ``main(argv)`` and exit with its result."""
    main = main or sys.modules["__main__"].main
    original_argv = sys.argv if argv is None else argv
    args_to_main = flags.FLAGS(original_argv, known_only=True)
    sys.exit(main(args_to_main))


EXPORTS = {"run": run, "flags": flags}
