"""Streamlit-side helpers for the s3task app: identity, cached services, formatting.

The core (``s3task``) never imports from here; pages import from here and from ``s3task``.
"""
