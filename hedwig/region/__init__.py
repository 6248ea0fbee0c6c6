"""Regions: relay links between hubs along a hierarchy set in configuration."""
