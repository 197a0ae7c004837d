"""tf.flags / tf.app.flags: TF 1.15's flags (absl.flags behind python/platform/flags.py),
written here without absl.

``DEFINE_string/integer/float/boolean/bool/list`` register flags on ``FLAGS`` (or on
``flag_values``); ``FLAGS(argv)`` parses ``--name=value``, ``--name value``, ``-name=value``,
``--flag``/``--noflag`` for booleans, stops at ``--`` and keeps positional arguments (GNU
style), returning ``[argv[0]] + the arguments not parsed``. An unknown flag raises
``UnrecognizedFlagError("Unknown command line flag 'x'")`` (with absl's "Did you mean"
suggestions), unless ``known_only=True`` (what ``tf.app.run`` uses), which leaves it in the
result. Reading a flag of ``FLAGS`` before any parse parses ``sys.argv`` first, as TF 1.15's
wrapper does. Bad values raise ``IllegalFlagValueError("flag --n=abc: ...")``.

Not implemented: flag files (``--flagfile``), ``--undefok``, validators, bounds
(``lower_bound``/``upper_bound``), enums, multi-flags and the ``--help`` output.
"""
from __future__ import annotations

import sys


class Error(Exception):
    """The base class of the flags errors."""


class DuplicateFlagError(Error):
    pass


class IllegalFlagValueError(Error):
    pass


class UnrecognizedFlagError(Error):
    def __init__(self, flagname, flagvalue="", suggestions=None):
        self.flagname = flagname
        self.flagvalue = flagvalue
        tip = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{tip}")


class UnparsedFlagAccessError(Error):
    pass


def _parse_bool(argument):
    if isinstance(argument, str):
        if argument.lower() in ("true", "t", "1"):
            return True
        if argument.lower() in ("false", "f", "0"):
            return False
        raise ValueError("Non-boolean argument to boolean flag", argument)
    if argument in (0, 1) or isinstance(argument, bool):
        return bool(argument)
    raise TypeError(f"Non-boolean argument to boolean flag {argument}")


def _parse_list(argument):
    if isinstance(argument, list):
        return argument
    if not argument:
        return []
    import csv

    return [s.strip() for s in list(csv.reader([argument], strict=True))[0]]


_PARSERS = {"string": lambda a: a if a is None else str(a), "int": int, "float": float, "bool": _parse_bool,
            "list": _parse_list}


class Flag:
    """One flag: name, default, help, current value (``present`` once set on a command line)."""

    def __init__(self, kind, name, default, help_string, module_name):
        self.kind = kind
        self.name = name
        self.help = help_string
        self.module_name = module_name
        self.boolean = kind == "bool"
        self.present = 0
        self.using_default_value = True
        self.default = None if default is None else self._parse(default)
        self.value = self.default

    def _parse(self, argument):
        try:
            return _PARSERS[self.kind](argument)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={argument}: {e}") from None

    def parse(self, argument):
        self.value = self._parse(argument)
        self.present += 1

    def unparse(self):
        self.value = self.default
        self.using_default_value = True
        self.present = 0


def _damerau_levenshtein(a, b):
    memo = {}

    def distance(x, y):
        if (x, y) in memo:
            return memo[x, y]
        if not x:
            d = len(y)
        elif not y:
            d = len(x)
        else:
            d = min(distance(x[1:], y) + 1, distance(x, y[1:]) + 1, distance(x[1:], y[1:]) + (x[0] != y[0]))
            if len(x) >= 2 and len(y) >= 2 and x[0] == y[1] and x[1] == y[0]:
                t = distance(x[2:], y[2:]) + 1
                if d > t:
                    d = t
        memo[x, y] = d
        return d

    return distance(a, b)


def _suggestions(attempt, names):
    """absl's get_flag_suggestions: the closest flag-name prefixes, when close enough."""
    if len(attempt) <= 2 or not names:
        return []
    distances = sorted((_damerau_levenshtein(attempt, name[:len(attempt)]), name) for name in names)
    least_errors = distances[0][0]
    if least_errors >= 0.5 * len(attempt):
        return []
    return [name for errors, name in distances if errors == least_errors]


class FlagValues:
    """A registry of flags; attribute access gives their values."""

    def __init__(self, parse_on_access=False):
        self.__dict__["_flags"] = {}
        self.__dict__["_parsed"] = False
        self.__dict__["_parse_on_access"] = parse_on_access

    # -- registration ----------------------------------------------------------------------
    def _register(self, flag):
        existing = self._flags.get(flag.name)
        if existing is not None:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. First from {existing.module_name}, second from "
                f"{flag.module_name}. Description from first occurrence: {existing.help}")
        self._flags[flag.name] = flag

    def __contains__(self, name):
        return name in self._flags

    def __iter__(self):
        return iter(self._flags)

    def __len__(self):
        return len(self._flags)

    def __getitem__(self, name):
        return self._flags[name]

    def __delattr__(self, name):
        if name not in self._flags:
            raise AttributeError(name)
        del self._flags[name]

    # -- values ------------------------------------------------------------------------------
    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(name)
        if not self.__dict__["_parsed"]:
            if self.__dict__["_parse_on_access"]:
                self(sys.argv)
            else:
                raise UnparsedFlagAccessError(f"Trying to access flag --{name} before flags were parsed.")
        return flags[name].value

    def __setattr__(self, name, value):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(name)
        flags[name].value = flags[name]._parse(value)
        flags[name].using_default_value = False

    def flag_values_dict(self):
        return {name: flag.value for name, flag in self._flags.items()}

    def is_parsed(self):
        return self._parsed

    def mark_as_parsed(self):
        self.__dict__["_parsed"] = True

    def unparse_flags(self):
        for flag in self._flags.values():
            flag.unparse()
        self.__dict__["_parsed"] = False

    def set_default(self, name, value):
        flag = self._flags[name]
        flag.default = flag._parse(value)
        if flag.using_default_value:
            flag.value = flag.default

    # -- parsing -------------------------------------------------------------------------------
    def __call__(self, argv, known_only=False):
        """Parse ``argv`` (argv[0] is the program); returns [argv[0]] + what was not parsed."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name as the first element.")
        unknown, unparsed = self._parse_args(list(argv[1:]), known_only)
        for name, _ in unknown:
            raise UnrecognizedFlagError(name, "", suggestions=_suggestions(name, list(self._flags)))
        self.mark_as_parsed()
        return [argv[0]] + unparsed

    def _parse_args(self, args, known_only):
        unparsed_names_and_args = []
        args_it = iter(args)
        for arg in args_it:
            if not arg.startswith("-"):
                unparsed_names_and_args.append((None, arg))
                continue
            if arg == "--":
                if known_only:
                    unparsed_names_and_args.append((None, arg))
                break
            arg_without_dashes = arg[2:] if arg.startswith("--") else arg[1:]
            if "=" in arg_without_dashes:
                name, value = arg_without_dashes.split("=", 1)
            else:
                name, value = arg_without_dashes, None
            if not name:
                unparsed_names_and_args.append((None, arg))
                continue
            flag = self._flags.get(name)
            if flag is not None:
                if flag.boolean and value is None:
                    value = "true"
                elif value is None:
                    try:
                        value = next(args_it)
                    except StopIteration:
                        raise Error("Missing value for flag " + arg) from None
            elif name.startswith("no") and len(name) > 2:
                noflag = self._flags.get(name[2:])
                if noflag is not None and noflag.boolean:
                    if value is not None:
                        raise ValueError(arg + " does not take an argument")
                    flag = noflag
                    value = "false"
            if flag is not None:
                flag.parse(value)
                flag.using_default_value = False
            else:
                unparsed_names_and_args.append((name, arg))
        unknown, unparsed = [], []
        for name, arg in unparsed_names_and_args:
            if name is None or known_only:
                unparsed.append(arg)
            else:
                unknown.append((name, arg))
        unparsed.extend(args_it)
        return unknown, unparsed


FLAGS = FlagValues(parse_on_access=True)


def _caller_module() -> str:
    frame = sys._getframe(3)
    name = frame.f_globals.get("__name__", "")
    if name == "__main__":
        return sys.argv[0] if sys.argv and sys.argv[0] else name
    return name


def _define(kind, name, default, help, flag_values, **unsupported):  # noqa: A002 (TF's argument name)
    if unsupported:
        raise NotImplementedError(f"tfc's flags do not support {sorted(unsupported)} (DEFINE_* of {name!r})")
    flag = Flag(kind, name, default, help, _caller_module())
    (flag_values if flag_values is not None else FLAGS)._register(flag)
    return flag


def DEFINE_string(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is a string."""
    return _define("string", name, default, help, flag_values, **kwargs)


def DEFINE_integer(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is an integer."""
    return _define("int", name, default, help, flag_values, **kwargs)


def DEFINE_float(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is a float."""
    return _define("float", name, default, help, flag_values, **kwargs)


def DEFINE_boolean(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A boolean flag: ``--name``, ``--noname``, ``--name=true|false|t|f|1|0``."""
    return _define("bool", name, default, help, flag_values, **kwargs)


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is a list of strings, given comma-separated."""
    return _define("list", name, default, help, flag_values, **kwargs)


EXPORTS = ["DEFINE_bool", "DEFINE_boolean", "DEFINE_float", "DEFINE_integer", "DEFINE_list", "DEFINE_string",
           "DuplicateFlagError", "Error", "FLAGS", "FlagValues", "IllegalFlagValueError", "UnparsedFlagAccessError",
           "UnrecognizedFlagError"]
