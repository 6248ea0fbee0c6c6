"""Python clients of the hub."""
