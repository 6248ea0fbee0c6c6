"""The credentials options of every client command (`hedwig publish`, `hedwig drain`, ...).

`--user NAME` (or $HEDWIG_USER) authenticates as NAME after HELLO; the password comes from
$HEDWIG_PASSWORD, or else a prompt on the terminal. It is never an option: command lines
are visible to every user of the machine (`ps`) and kept in shell histories.
"""

import argparse
import getpass
import os
import sys

from hedwig.protocol.auth_request import MAX_PASSWORD_BYTES, Credentials

USER_VARIABLE = "HEDWIG_USER"
PASSWORD_VARIABLE = "HEDWIG_PASSWORD"


class CredentialsError(ValueError):
    """No password to be had: no $HEDWIG_PASSWORD and no terminal to ask on."""


def add_user_option(parser, top_level: bool) -> None:
    """--user on the top-level parser (its default) or a subcommand's (SUPPRESS, so that
    one given before the subcommand is kept)."""
    default = os.environ.get(USER_VARIABLE, "") if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--user",
        default=default,
        metavar="NAME",
        help=f"authenticate as NAME (or ${USER_VARIABLE}); the password is ${PASSWORD_VARIABLE} or asked for",
    )


def credentials_from(args) -> Credentials | None:
    """The Credentials the options ask for, None without --user."""
    user = getattr(args, "user", "")
    if not user:
        return None
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        if not sys.stdin.isatty():
            raise CredentialsError(f"--user {user}: set ${PASSWORD_VARIABLE}, or run on a terminal")
        password = getpass.getpass(f"password for {user}: ")
    if not 1 <= len(password.encode("utf-8")) <= MAX_PASSWORD_BYTES:
        raise CredentialsError(f"a password is 1 to {MAX_PASSWORD_BYTES} bytes")
    return Credentials(user, password)
