"""Serving the site in production: the application server's settings, request limits, health, supervision."""
