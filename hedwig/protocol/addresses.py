"""Hub addresses as users write them: "host:port", a comma-separated list, or a list."""

DEFAULT_PORT = 4080


def parse_address(text: str) -> tuple[str, int]:
    """("host", port) from "host:port", "host" (port 4080) or "[v6]:port"."""
    text = text.strip()
    if not text:
        raise ValueError("empty hub address")
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep:
            raise ValueError(f"hub address {text!r} opens '[' without closing it")
        port_text = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"hub address {text!r}: expected ':port' after ']'")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"hub address {text!r} has no host")
    if not port_text:
        return host, DEFAULT_PORT
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"hub address {text!r}: port {port_text!r} is not a number") from None
    if not 0 < port < 65536:
        raise ValueError(f"hub address {text!r}: port {port} is outside 1-65535")
    return host, port


def parse_addresses(hubs) -> list[tuple[str, int]]:
    """A list of (host, port) from a string ("a:1,b:2"), a (host, port) pair or a list of either."""
    if isinstance(hubs, str):
        items = [part for part in hubs.split(",") if part.strip()]
    elif isinstance(hubs, tuple) and len(hubs) == 2 and isinstance(hubs[1], int):
        items = [hubs]
    else:
        items = list(hubs)
    addresses = []
    for item in items:
        address = parse_address(item) if isinstance(item, str) else (str(item[0]), int(item[1]))
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise ValueError("no hub address given")
    return addresses


def format_address(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
