"""Reading one hub.conf over a Config: every mistake in the file is one line that names
the file, the section, the key and the value, so a user can fix it without a traceback.

A file that does not parse (a setting above any [section] header, a line that is not
`key = value`, a key given twice), an unknown section or key (with the nearest known one
suggested), and a value of the wrong kind or out of range (a port outside 0-65535) are
all refused here, before the hub opens anything. Values that name files or directories
(settings whose name ends in `_dir` or `_file`) are taken relative to the directory of the
file that sets them, so `hedwig hub --conf conf/regions/world.conf` means the same from
any working directory; command-line options (hedwig.hub.main) stay relative to the
working directory, as a shell user expects.

hedwig.config.loading applies the cross-setting checks afterwards (and hedwig.config.loading names this
file in their errors too); this module imports only hedwig.config.settings.
"""

import configparser
import dataclasses
import difflib
import os
from pathlib import Path

from hedwig.config.settings import Config, ConfigError

PORT_RANGE = range(0, 65536)


def is_path_setting(key: str) -> bool:
    """Whether a setting names a file or directory, taken relative to its conf file."""
    return key.endswith(("_dir", "_file"))


def is_port_setting(key: str) -> bool:
    return key == "port" or key.endswith("_port")


def check_port(value: int, where: str) -> int:
    """`value` if it is a TCP port (0: any free one), else ConfigError naming `where`."""
    if value not in PORT_RANGE:
        raise ConfigError(f"{where}: expected a port number from 0 to 65535 (0: a free one)")
    return value


def _suggestion(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _parse(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    try:
        with open(path, encoding="utf-8") as text:
            parser.read_file(text, source=str(path))
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot be read: {getattr(e, 'strerror', None) or e}") from None
    except configparser.MissingSectionHeaderError as e:
        raise ConfigError(
            f"{path}, line {e.lineno}: {e.line.strip()!r} comes before any [section] header"
            " (a setting goes under its section, e.g. [hub] for port)"
        ) from None
    except configparser.ParsingError as e:
        lineno, line = e.errors[0]
        raise ConfigError(f"{path}, line {lineno}: {line.strip()!r} is not 'key = value'") from None
    except configparser.DuplicateOptionError as e:
        raise ConfigError(f"{path}, line {e.lineno}: [{e.section}] {e.option} is set twice") from None
    except configparser.DuplicateSectionError as e:
        raise ConfigError(f"{path}, line {e.lineno}: [{e.section}] appears twice") from None
    except configparser.Error as e:
        raise ConfigError(f"{path}: {' '.join(str(e).split())}") from None
    return parser


def _convert(where: str, raw: str, kind):
    text = raw.strip()
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{where}: expected true or false")
    try:
        if kind is int:
            return int(text.replace("_", ""), 0)
        return kind(text)
    except ValueError:
        raise ConfigError(f"{where}: expected {'an integer' if kind is int else kind.__name__}") from None


def read_config_file(config: Config, path) -> None:
    """Set in `config` what the file at `path` sets; ConfigError (one line) if it cannot."""
    path = Path(path)
    parser = _parse(path)
    sections = [f.name for f in dataclasses.fields(config)]
    for section in parser.sections():
        if section not in sections:
            raise ConfigError(
                f"{path}: unknown section [{section}]{_suggestion(section, sections)};"
                f" the sections are {', '.join(f'[{s}]' for s in sections)}"
            )
        settings = getattr(config, section)
        kinds = {f.name: type(f.default) for f in dataclasses.fields(settings)}
        for key, raw in parser.items(section):
            where = f"{path}: [{section}] {key} = {raw.strip()}"
            if key not in kinds:
                raise ConfigError(f"{where}: unknown setting{_suggestion(key, kinds)}")
            value = _convert(where, raw, kinds[key])
            if is_port_setting(key) and kinds[key] is int:
                check_port(value, where)
            if is_path_setting(key) and value and kinds[key] is str:
                value = os.path.normpath(path.parent.absolute() / Path(value).expanduser())
            setattr(settings, key, value)
