"""Every byte the hub sends a client goes through HubConnection.write (hub/sending.py holds
what a read produces and sends it at the read's end): a module that wrote to a hub
connection's transport itself would overtake the bytes held, or close the connection
before they are sent."""

import re

from tests.structure.imports import module_names

# The modules that hold hub connections; sending.py is the one that writes.
HUB_SIDE = ("hedwig.hub.", "hedwig.delivery.", "hedwig.auth.", "hedwig.region.children")
DIRECT = re.compile(r"transport\.(write|writeSequence|loseConnection)\(")
# HubConnection.close_when_sent: it closes once sending.py has sent what it holds.
ALLOWED = {("hedwig.hub.connection", "self.transport.loseConnection()")}


def test_hub_modules_write_to_connections_only_through_the_connection():
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name, path in module_names().items()
        if name.startswith(HUB_SIDE) and name != "hedwig.hub.sending"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if DIRECT.search(line)
        and not line.lstrip().startswith(("#", '"'))
        and (name, line.strip()) not in ALLOWED
    ]
    assert offenders == [], "write with connection.write / write_sequence, close with close_when_sent"
