"""Celery workers' heartbeats and their claims on checks: live workers told from dead ones."""
