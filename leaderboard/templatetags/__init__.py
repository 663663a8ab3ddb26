"""Template tags and filters of the site."""
