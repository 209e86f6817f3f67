"""Metrics: custom metrics, episode statistics and timers."""
