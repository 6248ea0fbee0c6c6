"""`hedwig user add|passwd|remove|list`: the operator's tool for the users file.

Given a password, `add` and `passwd` store its scrypt hash and, for the Kafka port's
SCRAM-SHA-256/512, each mechanism's salt, iteration count, StoredKey and ServerKey
(hedwig/auth/scram.py), never the password; a user whose password was set before SCRAM
was served gets them when `passwd` sets it again.

The password is read from $HEDWIG_PASSWORD or asked for twice at a prompt, never taken
from the command line (where `ps` and shell histories would keep it). The file is
[auth] users_file of --conf, or --users-file. A running hub reads the file again when it
changes, for connections that authenticate afterwards.
"""

import getpass
import os
import sys

from hedwig.auth.hashing import hash_password
from hedwig.auth.principal import ACTIONS
from hedwig.auth.scram import MECHANISMS as SCRAM_MECHANISMS
from hedwig.auth.scram import stored_keys
from hedwig.auth.users import UsersFile, UsersFileError

PASSWORD_VARIABLE = "HEDWIG_PASSWORD"


class UserCommandError(Exception):
    """A failure to report as one line."""


def add_user_command(subparsers, client_options=None) -> None:
    """Register `hedwig user` on the `hedwig` command's subparsers."""
    parser = subparsers.add_parser("user", help="manage the users file ([auth] users_file)")
    parser.add_argument("--conf", metavar="FILE", help="the hub's configuration: its [auth] users_file")
    parser.add_argument("--users-file", metavar="FILE", help="the users file (instead of --conf)")
    actions = parser.add_subparsers(dest="user_action", required=True, metavar="ACTION")
    add = actions.add_parser(
        "add", help=f"add a user, or replace one (password: ${PASSWORD_VARIABLE} or a prompt)"
    )
    add.add_argument("name", metavar="NAME")
    for action in ACTIONS:
        add.add_argument(
            f"--{action}", action="append", default=[], metavar="PATTERN",
            help=f"topics the user may {action} (a name pattern with * and ?; repeatable)",
        )  # fmt: skip
    add.add_argument(
        "--admin", action="store_true", help="every permission, admin reads, others' subscriptions"
    )
    add.add_argument("--region", default="", help="the region this user's region link may link as")
    add.add_argument(
        "--relay-origin", action="append", default=[], metavar="PATTERN",
        help="origin regions the region's relays may carry (default: the region alone); repeatable",
    )  # fmt: skip
    add.add_argument("--certificate", action="append", default=[], metavar="NAME",
                     help="a TLS client certificate name standing for this user; repeatable")  # fmt: skip
    add.add_argument("--no-password", action="store_true", help="certificates only (or the anonymous user)")
    passwd = actions.add_parser(
        "passwd", help=f"set a user's password, keeping its permissions (${PASSWORD_VARIABLE} or a prompt)"
    )
    passwd.add_argument("name", metavar="NAME")
    remove = actions.add_parser("remove", help="remove a user")
    remove.add_argument("name", metavar="NAME")
    actions.add_parser("list", help="the users and their permissions (never the hashes)")
    parser.set_defaults(run=run_user_command)


def users_file_path(args) -> str:
    if args.users_file:
        return args.users_file
    if args.conf:
        # Only the file itself is read, not checked as a hub's would be: a hub with [auth]
        # enabled refuses to start without its users file, which `add` is here to create.
        from hedwig.config.files import read_config_file
        from hedwig.config.settings import Config

        config = Config()
        read_config_file(config, args.conf)
        path = config.auth.users_file
        if path:
            return path
        raise UserCommandError(f"{args.conf} names no [auth] users_file")
    raise UserCommandError("name the users file: --users-file FILE, or --conf FILE with [auth] users_file")


def read_password(name: str) -> str:
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is not None:
        return password
    if not sys.stdin.isatty():
        raise UserCommandError(f"no terminal to ask for {name}'s password: set ${PASSWORD_VARIABLE}")
    first = getpass.getpass(f"password for {name}: ")
    if getpass.getpass("again: ") != first:
        raise UserCommandError("the passwords differ")
    return first


def record_from(args) -> dict:
    record = {action: getattr(args, action) for action in ACTIONS if getattr(args, action)}
    if args.admin:
        record["admin"] = True
    if args.region:
        record["region"] = args.region
    if args.relay_origin:
        record["relay_origins"] = args.relay_origin
    if args.certificate:
        record["certificates"] = args.certificate
    if not args.no_password:
        record.update(password_fields(args.name))
    return record


def password_fields(name: str) -> dict:
    """The scrypt hash and the SCRAM keys of the password read for `name`."""
    password = read_password(name)
    try:
        return {"password": hash_password(password), "scram": stored_keys(password)}
    except ValueError as e:
        raise UserCommandError(str(e)) from None


def describe(name: str, record: dict) -> str:
    parts = [name]
    if record.get("admin"):
        parts.append("admin")
    for action in ACTIONS:
        if record.get(action):
            parts.append(f"{action}={','.join(record[action])}")
    if record.get("region"):
        parts.append(f"region={record['region']}")
        parts.append(f"relay_origins={','.join(record.get('relay_origins', [record['region']]))}")
    if record.get("certificates"):
        parts.append(f"certificates={','.join(record['certificates'])}")
    if "password" not in record:
        parts.append("no password")
    else:  # (keys missing: the user's password was set before SCRAM was served; `passwd` writes them)
        parts.append("password")
        parts.append(
            f"scram={','.join(m for m in SCRAM_MECHANISMS if m in record.get('scram', ())) or 'none'}"
        )
    return "  ".join(parts)


def run_user_command(args) -> int:
    try:
        path = users_file_path(args)
        users = UsersFile.load(path, missing_ok=args.user_action == "add")
        if args.user_action == "list":
            for name, record in sorted(users.users.items()):
                print(describe(name, record))
            return 0
        if args.user_action == "remove":
            if not users.remove(args.name):
                raise UserCommandError(f"{path} has no user {args.name}")
            users.save()
            print(f"removed {args.name}", file=sys.stderr)
            return 0
        if args.user_action == "passwd":
            record = users.users.get(args.name)
            if record is None:
                raise UserCommandError(f"{path} has no user {args.name}")
            users.put(args.name, {**record, **password_fields(args.name)})
            users.save()
            print(f"{args.name}: password set", file=sys.stderr)
            return 0
        users.put(args.name, record_from(args))
        users.save()
        print(f"{args.name}: {describe(args.name, users.users[args.name])}", file=sys.stderr)
        return 0
    except (UserCommandError, UsersFileError, ValueError, OSError) as e:
        print(f"hedwig user: {e}", file=sys.stderr)
        return 1
