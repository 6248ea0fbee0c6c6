"""Shared test settings."""

from hypothesis import HealthCheck, settings

# CI machines have 2 cores shared with Spark and hub processes: judge properties, not speed.
settings.register_profile(
    "hedwig", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("hedwig")
