"""What a Celery worker process runs besides its tasks: the background loops it starts, the
objects it freezes out of the collector, and the settings it changes in Celery."""
