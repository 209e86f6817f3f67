"""Metrics: custom metrics, episode statistics and timers (metrics_logger.py)."""
