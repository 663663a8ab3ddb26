"""Site-wide protections: security headers and the login throttle."""
