"""The Twisted hub server."""
