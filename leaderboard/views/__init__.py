"""Read-only pages, the JSON API and CSV export of the leaderboard."""
