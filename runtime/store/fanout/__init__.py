"""Fan-out on the database side: branch claims, fan-in reports, group rows and the branch sweep."""
