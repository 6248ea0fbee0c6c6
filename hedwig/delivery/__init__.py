"""The delivery manager: per-subscriber cursors, push and pull, windows, consume pointers."""
