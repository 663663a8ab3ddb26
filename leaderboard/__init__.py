"""The leaderboard site: settings, URLs, models of methods, entries and scores, views and admin."""
