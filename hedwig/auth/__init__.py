"""Authentication and authorization: off in the embedded default, `[auth] enabled` on.

users.py      the users file (JSON the operator edits with `hedwig user`): scrypt password
              hashes, TLS certificate names, permissions on topic name patterns
hashing.py    scrypt hashes and their constant-time check
scram.py      SCRAM-SHA-256/512 keys kept beside the hash, and the server side of an exchange
principal.py  who a connection acts as, and what it may do (patterns, cached per topic)
interface.py  IAuthenticator and IAuthorizer, the seams the hub is assembled with
"""

from hedwig.auth.hashing import hash_password, verify_password
from hedwig.auth.principal import ANONYMOUS, Principal
from hedwig.auth.users import UsersFile, UsersFileError

__all__ = ["ANONYMOUS", "Principal", "UsersFile", "UsersFileError", "hash_password", "verify_password"]
